"""``resume=auto`` (SLURM requeue): newest of last.ckpt / hpc_ckpt_*.ckpt, else a fresh run;
the W&B run id survives a restart; the DDP batch sampler gives each rank its own batches."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from gralc.runinfo import wandb_run_id
from gralc.training.datamodule import NoDuplicateDocBatchSampler
from gralc.training.run import train
from gralc.training.run_folder import copy_run, resolve_resume


def test_auto_without_checkpoints_starts_fresh(make_cfg, tmp_path):
    assert resolve_resume(make_cfg(tmp_path, "resume=auto")) is None


def test_auto_takes_the_newest_of_last_and_hpc_checkpoints(make_cfg, tmp_path):
    cfg = make_cfg(tmp_path, "resume=auto")
    last = tmp_path / "checkpoints" / "last.ckpt"
    last.parent.mkdir()
    torch.save({"global_step": 1}, last)
    assert resolve_resume(cfg) == str(last.resolve())
    hpc = tmp_path / "hpc_ckpt_1.ckpt"
    torch.save({"global_step": 2}, hpc)
    now = time.time()
    os.utime(last, (now - 60, now - 60))
    os.utime(hpc, (now, now))
    assert resolve_resume(cfg) == str(hpc.resolve())  # saved on SIGUSR1 after the last epoch
    os.utime(last, (now + 60, now + 60))
    assert resolve_resume(cfg) == str(last.resolve())  # a later epoch finished after it


def test_wandb_run_id_is_created_once_and_reused(tmp_path):
    first = wandb_run_id(tmp_path)
    assert len(first) >= 8 and first.isalnum()
    assert (tmp_path / "wandb_run_id.txt").read_text().strip() == first
    assert wandb_run_id(tmp_path) == first


def test_train_and_eval_build_their_wandb_logger_the_one_way(tmp_path, monkeypatch):
    """One W&B path (gralc.runinfo.wandb_logger): the settings, the run folder and its kept id,
    the job type; offline=false is online even where WANDB_MODE says offline."""
    import gralc.evaluation.run as eval_run
    from gralc.config import WandbConfig
    from gralc.runinfo import wandb_logger
    from gralc.training.trainer import build_trainer

    monkeypatch.setenv("WANDB_MODE", "offline")
    w = wandb_logger(WandbConfig(enabled=True, project="p", entity="e", offline=False, name="n"),
                     {"seed": 1}, tmp_path, "eval")
    init = w._wandb_init
    assert {k: init[k] for k in ("project", "entity", "name", "dir", "id", "resume", "job_type", "mode",
                                 "config")} == {
        "project": "p", "entity": "e", "name": "n", "dir": str(tmp_path), "id": wandb_run_id(tmp_path),
        "resume": "allow", "job_type": "eval", "mode": "online", "config": {"seed": 1}}
    package = Path(eval_run.__file__).parents[1]
    assert [p.relative_to(package).as_posix() for p in sorted(package.rglob("*.py"))
            if "WandbLogger(" in p.read_text() or "wandb.init(" in p.read_text()] == ["runinfo.py"]
    from gralc.training.config import TrainConfig

    cfg = TrainConfig()
    cfg.paths.output_dir, cfg.wandb.enabled = str(tmp_path / "run"), True
    (tw,) = [lg for lg in build_trainer(cfg).loggers if type(lg).__name__ == "WandbLogger"]
    assert tw._wandb_init["job_type"] == "train" and tw._wandb_init["mode"] == "offline"
    assert tw._wandb_init["id"] == wandb_run_id(tmp_path / "run")


class FirstStep(pl.Callback):
    def __init__(self) -> None:
        self.first: int | None = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.first is None:
            self.first = trainer.global_step


def test_auto_resume_continues_the_step_count(datamodule, make_cfg, tmp_path):
    args = ("trainer.limit_train_batches=2", "callbacks.early_stopping.enabled=false", "resume=auto")
    fresh = train(make_cfg(tmp_path, "trainer.max_epochs=1", *args))
    assert fresh["global_step"] == 2
    assert torch.load(tmp_path / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == 2
    first = FirstStep()
    resumed = train(make_cfg(tmp_path, "trainer.max_epochs=2", *args), callbacks=[first])
    assert first.first == 2 and resumed["global_step"] == 4


def test_ddp_ranks_get_disjoint_equal_shares_of_the_batches():
    docs = [f"d{i % 7}" for i in range(23)]
    whole = NoDuplicateDocBatchSampler(docs, 3, seed=1).batches()
    shares = [NoDuplicateDocBatchSampler(docs, 3, seed=1, num_replicas=2, rank=r).batches() for r in (0, 1)]
    assert len(shares[0]) == len(shares[1]) == -(-len(whole) // 2)
    flat = [b for pair in zip(*shares) for b in pair]
    assert flat[: len(whole)] == whole  # interleaved shares = the single-process batches
    assert flat[len(whole) :] == whole[: len(flat) - len(whole)]  # padding repeats the first


def test_copy_run_continues_a_finished_run_elsewhere(datamodule, make_cfg, tmp_path):
    """A copied run resumes for more epochs in its new directory: the step count goes on,
    the checkpoint callbacks point at the copy (so epoch 0 still competes for the best), and
    the original's files are untouched."""
    args = ("trainer.limit_train_batches=2", "callbacks.early_stopping.enabled=false")
    src, dst = tmp_path / "src", tmp_path / "dst"
    train(make_cfg(src, "trainer.max_epochs=1", *args))
    before = {p: p.read_bytes() for p in src.rglob("*") if p.is_file()}
    with pytest.raises(FileExistsError, match="nothing is overwritten"):
        copy_run(src, src)
    with pytest.raises(FileNotFoundError, match="not a training run"):
        copy_run(tmp_path / "missing", tmp_path / "new")
    assert copy_run(src, dst) == dst.resolve()
    state = torch.load(dst / "checkpoints" / "last.ckpt", weights_only=True)
    paths = [v["best_model_path"] for v in state["callbacks"].values() if v.get("best_model_path")]
    assert paths and all(p.startswith(str(dst.resolve())) for p in paths)
    assert json.loads((dst / "initial.json").read_text())["path"] == str(dst.resolve() / "initial.ckpt")
    first = FirstStep()
    resumed = train(make_cfg(dst, "trainer.max_epochs=2", "resume=last", *args), callbacks=[first])
    assert first.first == 2 and resumed["global_step"] == 4
    assert resumed["trained_best_checkpoint"].startswith(str(dst.resolve()))
    assert {p: p.read_bytes() for p in src.rglob("*") if p.is_file()} == before
