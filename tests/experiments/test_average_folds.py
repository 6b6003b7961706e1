"""gralc.experiments.average_folds: two checkpoints of a fold averaged weight by weight (through
gralc.training.soup), written as a fold folder gralc.experiments.inference_cv reads; an occupied
--out, a missing checkpoint and models of two seeds are refused before anything is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from gralc.experiments.average_folds import main
from gralc.experiments.inference_cv import selected_checkpoint
from gralc.safe_load import load_torch


@pytest.fixture(scope="module")
def runs(train_once, tmp_path_factory):
    """Two runs of one initialisation (other learning rates) and one of another seed."""
    base = tmp_path_factory.mktemp("average_folds")
    return tuple(Path(train_once(base / name, *extra)) for name, extra in
                 (("a", ()), ("b", ("optim.lr=0.01",)), ("c", ("seed=1",))))


def _fold(root: Path, name: str, ckpt: Path, as_name: str, fold: int = 0) -> Path:
    """A crossval variant folder ``root/name`` whose ``fold<fold>`` holds ``ckpt`` as
    ``checkpoints/<as_name>`` and its run's ``initial.ckpt``."""
    folder = root / name / f"fold{fold}"
    (folder / "checkpoints").mkdir(parents=True)
    shutil.copy2(ckpt, folder / "checkpoints" / as_name)
    shutil.copy2(ckpt.parents[1] / "initial.ckpt", folder / "initial.ckpt")
    return folder.parent


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return {k: v for k, v in load_torch(str(path), what="checkpoint")["state_dict"].items()
            if v.is_floating_point()}


def test_folds_are_averaged_and_readable_by_the_scorer(runs, tmp_path):
    a = _fold(tmp_path, "a", runs[0], "best-epoch=0-step=1.ckpt")
    b = _fold(tmp_path, "b", runs[1], "last.ckpt")
    out = tmp_path / "avg"
    assert main(["--a", str(a), "--b", str(b), "--t", "0.25", "--folds", "0", "--out", str(out)]) == 0
    got, wa, wb = _weights(selected_checkpoint(out / "fold0")), _weights(runs[0]), _weights(runs[1])
    assert wa.keys() == got.keys() and any(not torch.equal(wa[k], wb[k]) for k in wa)
    for k in got:
        assert torch.allclose(got[k], 0.75 * wa[k] + 0.25 * wb[k], atol=1e-6), k
    assert (out / "fold0" / "initial.ckpt").is_file()
    with pytest.raises(SystemExit, match="already holds files"):
        main(["--a", str(a), "--b", str(b), "--folds", "0", "--out", str(out)])
    with pytest.raises(SystemExit, match="missing"):
        main(["--a", str(a), "--b", str(b), "--b-checkpoint", "nope.ckpt", "--folds", "0",
              "--out", str(tmp_path / "x")])


def test_every_fold_is_checked_before_any_is_written(runs, tmp_path):
    a = _fold(tmp_path, "a", runs[0], "best-epoch=0-step=1.ckpt")
    b = _fold(tmp_path, "b", runs[1], "last.ckpt")  # fold0 only
    out = tmp_path / "avg"
    with pytest.raises(SystemExit, match="fold1"):
        main(["--a", str(a), "--b", str(b), "--folds", "0", "1", "--out", str(out)])
    assert not (out / "fold0").exists()


def test_models_of_two_seeds_are_refused_before_anything_is_written(runs, tmp_path):
    """Seeds start from other LoRA factors and GAT heads: their average is no model of either
    (measured: a soup of three seeds' soups lost 0.03 evidence recall on COVID-QA)."""
    a = _fold(tmp_path, "a", runs[0], "best-epoch=0-step=1.ckpt")
    b = _fold(tmp_path, "b", runs[2], "last.ckpt")
    out = tmp_path / "avg"
    with pytest.raises(SystemExit, match=r"other initial weights .*'seed': \(0, 1\)"):
        main(["--a", str(a), "--b", str(b), "--folds", "0", "--out", str(out)])
    assert not out.exists()
