"""The README's tour runs as written (issue 55): every ``bash`` block between
``<!-- tour:begin -->`` and ``<!-- tour:end -->``, in order, in one shell, in a fresh folder
laid out as a clone after ``make demo`` (the package and the virtual environment of this
checkout, ``outputs/demo_train`` trained by the demo's own training stage). Any command that
fails, or two steps that collide, fail the test; ranx's MRR of the tour's TREC run must be the
evidence-level MRR ``gralc eval`` reports for the same index's strategy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- tour:begin -->", "<!-- tour:end -->"


def tour_blocks() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1, "README.md: the tour markers, once each"
    tour = text.split(BEGIN, 1)[1].split(END, 1)[0]
    return re.findall(r"```bash\n(.*?)```", tour, flags=re.S)


def test_the_tour_has_every_step():
    script = "\n".join(tour_blocks())
    for command in ("gralc inspect", "gralc chunk", "gralc index", "gralc search", "gralc export",
                    "gralc eval", "gralc qrels", "gralc train", "import gralc"):
        assert command in script, command


def tour_python() -> tuple[str, Path]:
    """``(interpreter, its gralc package folder)``: this checkout's, or with
    ``GRALC_TOUR_PYTHON`` set (CI, .ci/wheel_tour.sh) a fresh environment where the built wheel
    was installed (``pip install gralc-*.whl``, not editable)."""
    python = os.environ.get("GRALC_TOUR_PYTHON")
    if not python:
        return sys.executable, REPO / "gralc"
    found = subprocess.run([python, "-c", "import gralc, os; print(os.path.dirname(gralc.__file__))"],
                           cwd="/", capture_output=True, text=True, timeout=120)
    assert found.returncode == 0, found.stderr
    package = Path(found.stdout.strip())
    assert REPO not in package.parents, f"{package}: GRALC_TOUR_PYTHON must use an installed wheel"
    return python, package


@pytest.mark.slow  # ~2 min; CI runs it on every push through .ci/wheel_tour.sh (from the wheel)
def test_the_readme_tour_runs_as_written(tmp_path):
    python, package = tour_python()
    work = tmp_path / "clone"
    work.mkdir()
    (work / "gralc").symlink_to(package, target_is_directory=True)  # $A=gralc/data/demo/articles
    bin_dir = Path(python).parent
    if python == sys.executable and (REPO / ".venv" / "bin" / "activate").is_file():
        (work / ".venv").symlink_to(REPO / ".venv", target_is_directory=True)
    else:  # a checkout without make's environment: the running interpreter's
        (work / ".venv" / "bin").mkdir(parents=True)
        (work / ".venv" / "bin" / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg"}
    env.pop("GRALC_DEBUG", None)
    # what `make demo` leaves behind: its trained model in outputs/demo_train
    demo = subprocess.run([python, "-m", "gralc", "demo", "--stages", "train"], cwd=work,
                          env=env, capture_output=True, text=True, timeout=900)
    assert demo.returncode == 0, demo.stderr[-3000:]
    assert (work / "outputs" / "demo_train" / "result.json").is_file()
    script = "set -e\n" + "\n".join(tour_blocks())
    proc = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    # the TREC run and the evidence qrels score as gralc eval scores the same strategy
    ranx_mrr = float(re.findall(r"^(0\.\d+)$", proc.stdout, flags=re.M)[0])
    metrics = json.loads((work / "outputs" / "tour_eval" / "metrics.json").read_text())
    assert abs(ranx_mrr - metrics["demo"]["structure_aware"]["ev_mrr"]) < 1e-9
    assert {"demo", "demo_cosine", "demo_hybrid", "demo_cosine_hybrid"} <= set(metrics["demo"])
    assert (work / "outputs" / "tour_train" / "training_curve.png").is_file()
    assert (work / "outputs" / "tour_export" / "MODEL_CARD.md").is_file()
