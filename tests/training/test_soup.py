"""Model soups (gralc.training.soup): the weighted mean of runs of one initialisation, loaded
and exported as any checkpoint; runs of other initial weights are refused by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gralc.model.persistence import export, load_model
from gralc.safe_load import load_torch
from gralc.soup import main
from gralc.training.soup import soup


@pytest.fixture(scope="module")
def runs(train_once, tmp_path_factory):
    """Two runs of one initialisation (other learning rates) and one of another seed."""
    base = tmp_path_factory.mktemp("soup")
    return (train_once(base / "a"), train_once(base / "b", "optim.lr=0.01"), train_once(base / "c", "seed=1"))


def test_a_soup_is_the_weighted_mean_and_exports_like_any_checkpoint(runs, tmp_path):
    a, b, _ = runs
    path = soup([a, b], tmp_path / "soup.ckpt", weights=[1, 3])
    sa, sb = (load_torch(p)["state_dict"] for p in (a, b))
    got = load_torch(path)
    moved = [k for k in sa if sa[k].is_floating_point() and not torch.equal(sa[k], sb[k])]
    assert moved  # the two runs differ, so the mean is a third model
    for k in sa:
        want = 0.25 * sa[k].double() + 0.75 * sb[k].double() if sa[k].is_floating_point() else sa[k]
        assert torch.allclose(got["state_dict"][k].double(), want, atol=1e-6), k
    assert "optimizer_states" not in got  # weights only: not a state of either run
    assert got["gralc"]["soup"] == {"checkpoints": [a, b], "weights": [0.25, 0.75]}
    model, _ = load_model(path)
    assert got["gralc"]["learned_values"] == pytest.approx(model.learned_values())
    assert got["gralc"]["learned_values"] != pytest.approx(load_torch(b)["gralc"]["learned_values"])
    reloaded, _ = load_model(export(path, tmp_path / "export"))
    assert reloaded.learned_values() == pytest.approx(model.learned_values())


def test_runs_of_other_initial_weights_are_refused_before_writing(runs, tmp_path, capsys):
    a, _, c = runs
    with pytest.raises(ValueError, match=r"c/checkpoints/last.ckpt: started from other initial "
                                         r"weights .*'seed': \(0, 1\)"):
        soup([a, c], tmp_path / "soup.ckpt")
    assert not (tmp_path / "soup.ckpt").exists()
    with pytest.raises(ValueError, match="at least two"):
        soup([a], tmp_path / "soup.ckpt")
    with pytest.raises(ValueError, match="one non-negative weight per checkpoint"):
        soup([a, a], tmp_path / "soup.ckpt", weights=[1.0])
    (tmp_path / "taken.ckpt").write_bytes(b"mine")
    assert main([a, a, "--out", str(tmp_path / "taken.ckpt")]) == 2
    assert (tmp_path / "taken.ckpt").read_bytes() == b"mine"  # never overwritten
    assert main([a, str(tmp_path / "missing.ckpt"), "--out", str(tmp_path / "s.ckpt")]) == 2
    assert "missing.ckpt" in capsys.readouterr().err


def test_a_run_folder_stands_for_the_model_its_result_selected(runs, tmp_path, capsys):
    runs_ab = [Path(p).parent.parent for p in runs[:2]]  # RUN/checkpoints/last.ckpt -> RUN
    path = soup(runs_ab, tmp_path / "soup.ckpt")
    used = [Path(p) for p in load_torch(path)["gralc"]["soup"]["checkpoints"]]
    for run, ckpt in zip(runs_ab, used):
        chosen = json.loads((run / "result.json").read_text())["best_checkpoint"]
        assert ckpt.name == Path(chosen).name and run in ckpt.parents and ckpt.is_file()
    empty = tmp_path / "not_a_run"
    empty.mkdir()
    assert main([str(runs_ab[0]), str(empty), "--out", str(tmp_path / "s.ckpt")]) == 2
    assert "not_a_run: a folder but no result.json" in capsys.readouterr().err
    assert not (tmp_path / "s.ckpt").exists()


def test_a_run_folder_whose_selected_checkpoint_is_gone_is_named(tmp_path):
    from gralc.training.run_folder import run_selected_checkpoint

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "result.json").write_text(json.dumps({"best_checkpoint": "/x/checkpoints/best-epoch=1.ckpt"}))
    with pytest.raises(ValueError, match=r"best-epoch=1.ckpt is neither in .*checkpoints"):
        run_selected_checkpoint(run)
    (run / "result.json").write_text("{}")
    with pytest.raises(ValueError, match="no readable best_checkpoint"):
        run_selected_checkpoint(run)
    (run / "checkpoints" / "best-epoch=1.ckpt").write_bytes(b"")
    (run / "result.json").write_text(json.dumps({"best_checkpoint": "/x/checkpoints/best-epoch=1.ckpt"}))
    assert run_selected_checkpoint(run) == run / "checkpoints" / "best-epoch=1.ckpt"  # a moved run
