"""``precision=auto`` on a CPU: flags say whether bf16 can be fast, a measured probe whether it
is (issue 57: bf16 autocast ran at 0.73x fp32's speed on an avx512_bf16 Xeon without AMX); the
probe's answer is kept per machine in ``$GRALC_CACHE/precision.json``, a cache never trusted."""

from __future__ import annotations

import json

import pytest
import torch

import gralc.encoding.precision as precision


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRALC_CACHE", str(tmp_path))
    precision.bf16_speedup.cache_clear()
    calls = []

    def probe(*a, **k):
        calls.append(1)
        return 0.5

    monkeypatch.setattr(precision, "probe_bf16_speedup", probe)
    yield tmp_path / "precision.json", calls
    precision.bf16_speedup.cache_clear()


def test_probe_measures_both_precisions():
    # a real measurement on whatever CPU runs the suite: positive and finite, nothing more
    speedup = precision.probe_bf16_speedup((64, 32, 64), reps=2, rounds=2)
    assert 0 < speedup < float("inf")


def test_probe_result_is_cached_per_machine(cache):
    path, calls = cache
    assert precision.bf16_speedup() == 0.5 and len(calls) == 1
    assert json.loads(path.read_text()) == {precision.machine_key(): 0.5}
    precision.bf16_speedup.cache_clear()  # a new process reads the file, does not re-measure
    assert precision.bf16_speedup() == 0.5 and len(calls) == 1
    # another machine's entry is kept beside this one's
    path.write_text(json.dumps({"other CPU | none | torch 0 | 1 threads": 3.0}))
    precision.bf16_speedup.cache_clear()
    assert precision.bf16_speedup() == 0.5 and len(calls) == 2
    assert len(json.loads(path.read_text())) == 2


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"%s": "fast"}', '{"%s": -1}',
                                  '{"%s": true}', '{"%s": "${oc.env:HOME}"}'])
def test_a_malformed_cache_is_measured_again_and_rewritten(cache, text):
    path, calls = cache
    path.write_text(text.replace("%s", precision.machine_key()))
    assert precision.bf16_speedup() == 0.5 and len(calls) == 1
    assert json.loads(path.read_text()) == {precision.machine_key(): 0.5}


def test_an_unwritable_cache_still_answers(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("GRALC_CACHE", str(blocker / "sub"))  # a folder under a file: not creatable
    monkeypatch.setattr(precision, "probe_bf16_speedup", lambda *a, **k: 2.0)
    precision.bf16_speedup.cache_clear()
    try:
        assert precision.bf16_speedup() == 2.0
    finally:
        precision.bf16_speedup.cache_clear()


def test_auto_without_bf16_flags_never_probes(monkeypatch):
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2"}))
    monkeypatch.setattr(precision, "bf16_speedup", lambda: pytest.fail("probed without flags"))
    assert precision.explain_precision("auto", torch.device("cpu"))[0] == "fp32"
