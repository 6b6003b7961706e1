"""bench/gpu_smoke.sh is run where CI never runs (a lent GPU machine, no network), so it is kept
working here: its refusals are checked fast, and the whole path with the encoder on cpu
(``DEVICE=cpu``: the same steps the device runs, the cpu-vs-device comparison left out) is a
slow test."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "gpu_smoke.sh"


def _run(*args: str, env: dict | None = None, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PY": sys.executable, **(env or {})})


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_an_unknown_mode_and_an_unprepared_folder_are_refused(tmp_path):
    bad = _run("serve", str(tmp_path))
    assert bad.returncode == 2 and "prepare or run" in bad.stdout
    empty = _run("run", str(tmp_path), str(tmp_path / "out"))
    assert empty.returncode == 2 and "prepare" in empty.stdout and "config.json" in empty.stdout


@pytest.mark.slow  # trains one step, exports, indexes and searches the demo corpus (~3-5 min on 2 cores)
def test_the_whole_path_runs_on_cpu(tmp_path):
    prep = _run("prepare", str(tmp_path / "kit"), env={"WHEELS": ""})
    assert prep.returncode == 0, prep.stdout + prep.stderr
    assert not (tmp_path / "kit" / "encoder" / "model.safetensors").exists()  # no weights travel
    out = tmp_path / "out"
    run = _run("run", str(tmp_path / "kit"), str(out), env={"DEVICE": "cpu"}, timeout=1200)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    res = json.loads((out / "gpu_smoke.json").read_text())
    assert res["device"] == "cpu" and res["questions"] == 39
    assert set(res["steps_s"]) == {"train", "export", "index_cpu", "search_batched_cpu"}
    lat = res["latency_ms"]["cpu"]
    assert lat["single_p50"] > 0 and lat["batched_floor_per_question"] > 0
