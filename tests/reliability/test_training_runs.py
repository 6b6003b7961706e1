"""Training runs never overwrite another run, malformed checkpoints are named, and a run
trains at the thread count it records.

* ``train.py`` into a folder holding an earlier run's checkpoints or result is refused before
  any work (exit code 2, one message naming the folder and the fixes); ``paths.force=true``
  moves the old run aside (never deletes it); ``resume=last`` continues it.
* A soup ingredient or a resume checkpoint that ``torch.load(weights_only=True)`` reads but
  that is malformed (not a dict, entries missing, a non-tensor weight, NaN, weights of another
  shape) is one error naming the file and what is wrong, exit code 2, no traceback.
* ``trainer.num_threads`` is the torch thread count of the whole run, recorded in run.json and
  restored afterwards.

The small demo config of tests/training (features cached in data/cache/tests), two steps per
run: ~1 min on 2 cores with a warm cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from gralc import train as train_script
from gralc.artefacts import MARKER
from gralc.soup import main as soup_main
from gralc.training.datamodule import GraLCDataModule
from gralc.training.run import train

REPO = Path(__file__).resolve().parents[2]
#: on top of the root conftest's SMALL config (same feature cache): two training steps (a float:
#: 1 would be the whole epoch), no initial validation
TWO_STEPS = ("trainer.max_epochs=1", "trainer.limit_train_batches=2",
             "callbacks.early_stopping.enabled=false", "trainer.validate_before_fit=false",
             "trainer.num_threads=1")


@pytest.fixture(scope="session")
def run_cfg(make_cfg):
    """``run_cfg(out, *extra) -> TrainConfig``: SMALL, two steps."""
    return lambda out, *extra: make_cfg(out, *TWO_STEPS, *extra)


@pytest.fixture
def train_cli(monkeypatch, small_overrides):
    """``train_cli(out, *extra) -> exit code``: ``gralc train`` = ``python train.py`` (its error
    boundary included) with SMALL, two steps."""
    monkeypatch.chdir(REPO)
    return lambda out, *extra: train_script.main([*small_overrides, *TWO_STEPS,
                                                  f"paths.output_dir={out}", *extra])


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def no_work(monkeypatch):
    """Fail the test if training gets as far as building its data."""
    def setup(self, stage=None):
        raise AssertionError("the data module was set up: the run was not refused before any work")

    monkeypatch.setattr(GraLCDataModule, "setup", setup)


@pytest.fixture(scope="module")
def finished(run_cfg, tmp_path_factory) -> Path:
    """A finished small run (its folder)."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("runs") / "finished"
    train(run_cfg(out))
    return out


def assert_user_error(rc: int, err: str, *parts: str) -> None:
    assert rc == 2, err
    assert "\nerror: " in f"\n{err}" and "Traceback (most recent call last)" not in err, err
    for part in parts:
        assert part in err, (part, err)


# ----- one run per folder --------------------------------------------------------------------
def test_a_new_run_into_an_earlier_runs_folder_is_refused_before_any_work(tmp_path, train_cli,
                                                                          capsys, no_work):
    out = tmp_path / "run1"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "last.ckpt").write_bytes(b"the earlier run's state")
    (out / "result.json").write_text(json.dumps({"best_checkpoint": "checkpoints/last.ckpt"}))
    before = files(out)
    rc = train_cli(out)
    assert_user_error(rc, capsys.readouterr().err, f"paths.output_dir={out.resolve()}",
                      "already holds another training run", "checkpoints/last.ckpt",
                      "result.json", "resume=last", "paths.force=true", "nothing is deleted")
    assert files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run1"]


def test_force_moves_an_earlier_run_aside_and_resume_continues_it(finished, run_cfg, tmp_path,
                                                                  train_cli, capsys):
    out = tmp_path / "run"
    train(run_cfg(out))
    assert json.loads((out / MARKER).read_text())["kind"] == "train_run"
    first = files(out)
    # a second fresh run: refused, nothing touched
    assert_user_error(train_cli(out), capsys.readouterr().err, "already holds")
    assert files(out) == first
    # a checkpoint of another folder continued into this one would overwrite it too
    other = finished / "checkpoints" / "last.ckpt"
    assert_user_error(train_cli(out, f"resume={other}"), capsys.readouterr().err,
                      f"resume='{other}' is a checkpoint outside it")
    # resume=last continues the run in its own folder (a run written before the marker too)
    (out / MARKER).unlink()
    resumed = train(run_cfg(out, "trainer.max_epochs=2", "resume=last"))
    assert resumed["global_step"] == 4
    # paths.force=true: the earlier run moves aside whole, never deleted
    before = files(out)
    assert train_cli(out, "paths.force=true") == 0
    (aside,) = tmp_path.glob("run.replaced-*")
    assert files(aside) == before
    assert json.loads((out / "result.json").read_text())["global_step"] == 2


def test_folders_of_other_files_and_stopped_runs(tmp_path, train_cli, capsys):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    assert_user_error(train_cli(notes), capsys.readouterr().err,
                      f"paths.output_dir={notes.resolve()}", "todo.txt", "paths.force=true")
    assert files(notes) == {"todo.txt": b"mine"}
    # a run stopped before its first checkpoint (config.yaml, run.json) holds nothing to lose
    stopped = tmp_path / "stopped"
    stopped.mkdir()
    (stopped / "config.yaml").write_text("seed: 0\n")
    (stopped / "run.json").write_text("{}")
    assert train_cli(stopped) == 0
    assert (stopped / "checkpoints" / "last.ckpt").is_file()


# ----- malformed checkpoints -----------------------------------------------------------------
def _save(path: Path, obj) -> str:
    torch.save(obj, path)
    return str(path)


def malformed(good: dict, tmp_path: Path) -> dict[str, tuple[str, str]]:
    """name -> (path of a loadable but malformed checkpoint, what its error must say)."""
    state = good["state_dict"]
    first = next(k for k, v in state.items() if v.is_floating_point() and v.dim() == 2)
    nan = {**state, first: torch.full_like(state[first], float("nan"))}
    text = {**state, first: "not a tensor"}
    return {
        "list": (_save(tmp_path / "list.ckpt", [1, 2, 3]), "holds a list"),
        "no_state_dict": (_save(tmp_path / "nostate.ckpt", {k: v for k, v in good.items()
                                                             if k != "state_dict"}), "'state_dict'"),
        "text": (_save(tmp_path / "text.ckpt", {**good, "state_dict": text}),
                 f"state_dict entry '{first}' is a str, not a tensor"),
        "nan": (_save(tmp_path / "nan.ckpt", {**good, "state_dict": nan}), f"{first} holds NaN"),
    }


def test_malformed_soup_ingredients_are_named(finished, tmp_path, capsys):
    good_path = finished / "checkpoints" / "last.ckpt"
    good = torch.load(good_path, weights_only=True)
    out = tmp_path / "soup.ckpt"
    cases = malformed(good, tmp_path)
    cases["no_gralc"] = (_save(tmp_path / "nogralc.ckpt", {k: v for k, v in good.items()
                                                           if k != "gralc"}), "'gralc'")
    for name, (path, says) in cases.items():
        rc = soup_main([str(good_path), path, "--out", str(out)])
        assert_user_error(rc, capsys.readouterr().err, path, says)
        assert not out.exists() and not list(tmp_path.glob("soup.ckpt*")), name
    # both ingredients alike, but weights of another shape than their settings describe
    state = dict(good["state_dict"])
    key = next(k for k in state if k.startswith("model.") and state[k].dim() == 2)
    state[key] = torch.zeros(state[key].shape[0] + 1, state[key].shape[1])
    a = _save(tmp_path / "wide_a.ckpt", {**good, "state_dict": state})
    b = _save(tmp_path / "wide_b.ckpt", {**good, "state_dict": state})
    assert_user_error(soup_main([a, b, "--out", str(out)]), capsys.readouterr().err, b,
                      "do not fit the model", key)
    assert not out.exists() and not list(tmp_path.glob("soup.ckpt*"))
    assert soup_main([str(good_path), str(good_path), "--out", str(out)]) == 0  # the good one


def test_malformed_resume_checkpoints_are_named(finished, tmp_path, train_cli, capsys, no_work):
    good = torch.load(finished / "checkpoints" / "last.ckpt", weights_only=True)
    cases = malformed(good, tmp_path)
    del cases["nan"]  # a run diverged to NaN is refused when it happens (NonFiniteLossError)
    weights_only = {k: v for k, v in good.items() if k not in ("optimizer_states", "lr_schedulers",
                                                                "loops")}
    cases["weights_only"] = (_save(tmp_path / "initial.ckpt", weights_only), "weights only")
    for name, (path, says) in cases.items():  # refused before any work
        rc = train_cli(tmp_path / f"run_{name}", "trainer.max_epochs=2", f"resume={path}")
        assert_user_error(rc, capsys.readouterr().err, f"resume='{path}'", path, says)
        assert not (tmp_path / f"run_{name}").exists()


def test_a_resume_checkpoint_of_another_model_is_named(finished, tmp_path, train_cli, capsys):
    """Weights of another shape (or an optimiser of other parameters) are found once the
    model is built, still before Lightning restores anything or the folder is written."""
    good = torch.load(finished / "checkpoints" / "last.ckpt", weights_only=True)
    state = dict(good["state_dict"])
    key = next(k for k in state if k.startswith("model.") and state[k].dim() == 2)
    state[key] = torch.zeros(state[key].shape[0] + 1, state[key].shape[1])
    wide = _save(tmp_path / "wide.ckpt", {**good, "state_dict": state})
    rc = train_cli(tmp_path / "run", "trainer.max_epochs=2", f"resume={wide}")
    assert_user_error(rc, capsys.readouterr().err, wide, "do not fit the model", key,
                      "config.yaml")
    opt = [{**good["optimizer_states"][0], "param_groups": good["optimizer_states"][0]["param_groups"][:1]}]
    fewer = _save(tmp_path / "fewer.ckpt", {**good, "optimizer_states": opt})
    rc = train_cli(tmp_path / "run", "trainer.max_epochs=2", f"resume={fewer}")
    assert_user_error(rc, capsys.readouterr().err, fewer, "optimiser state holds")
    assert not (tmp_path / "run").exists()


# ----- the thread count a run trains at -----------------------------------------------------
class Threads(pl.Callback):
    def __init__(self) -> None:
        self.seen: set[int] = set()

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self.seen.add(torch.get_num_threads())


@pytest.mark.slow  # two training runs; in make test: training/test_lora.py's thread check
def test_the_thread_count_is_pinned_for_the_run_recorded_and_restored(run_cfg, tmp_path):
    torch.set_num_threads(1)
    seen = Threads()
    train(run_cfg(tmp_path / "two", "trainer.num_threads=2"), callbacks=[seen])
    assert seen.seen == {2} and torch.get_num_threads() == 1
    run = json.loads((tmp_path / "two" / "run.json").read_text())
    assert (run["torch_threads"], run["deterministic"], run["encoder_precision"]) == (2, True, None)
    ckpt = torch.load(tmp_path / "two" / "checkpoints" / "last.ckpt", weights_only=True)
    assert ckpt["gralc"]["run"]["torch_threads"] == 2
    # unset: torch's count when train() starts, pinned and recorded the same way
    seen = Threads()
    cfg = run_cfg(tmp_path / "default")
    cfg.trainer.num_threads = None
    train(cfg, callbacks=[seen])
    assert seen.seen == {1}
    assert json.loads((tmp_path / "default" / "run.json").read_text())["torch_threads"] == 1
