"""The Lightning side of a training run: the Trainer (checkpoints, per-epoch report, early
stopping, CSV and W&B loggers, SLURM requeue), the pinned torch thread count and seeds
(:func:`reproducible`), and the LoRA encoder a run fine-tunes.

Under SLURM, Lightning's ``SLURMEnvironment(auto_requeue=True)`` is the one owner of requeue:
on SIGUSR1 (``#SBATCH --signal=SIGUSR1@90``) it saves ``hpc_ckpt_N.ckpt`` and runs
``scontrol requeue``; the requeued job (``resume=auto``) continues from it (slurm/README.md).
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from lightning_fabric.plugins.environments import SLURMEnvironment
from pytorch_lightning.callbacks import Callback, EarlyStopping, ModelCheckpoint
from pytorch_lightning.loggers import CSVLogger

from gralc.config import ConfigError, to_dict
from gralc.runinfo import seed_everything, wandb_logger
from gralc.training.callbacks import EpochReport
from gralc.training.config import TrainConfig, has_dev_split

logger = logging.getLogger(__name__)


@contextmanager
def reproducible(cfg: TrainConfig) -> Iterator[int]:
    """Seeds and, for the run, a pinned torch intra-op thread count (yielded):
    ``trainer.num_threads``, else torch's count now; with ``deterministic`` also
    deterministic algorithms (Lightning's ``Trainer(deterministic=True)`` then makes them
    strict). Thread count and deterministic-algorithm flags are restored afterwards.

    One seed then trains bit-identical weights on one machine at one thread count and one
    encoder precision (both recorded in run.json and the checkpoints): a parallel sum splits
    its work by thread count, so two counts round otherwise (test_lora's config, 1 vs 2
    threads: 32 of 37 tensors differ after two steps; the first divergence is the gradient of
    the broadcast scalar ``fusion.lam``). Under DDP without ``OMP_NUM_THREADS`` Lightning's
    launcher sets each process's count itself.

    Example: ``with reproducible(cfg) as threads: trainer.fit(lit, dm)`` -> bit-identical weights
    for one seed at ``threads`` torch threads.
    """
    before = (torch.get_num_threads(), torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled())
    threads = int(cfg.trainer.num_threads or before[0])
    torch.set_num_threads(threads)
    try:
        seed_everything(cfg.seed, cfg.deterministic)
        pl.seed_everything(cfg.seed, workers=True, verbose=False)
        if cfg.deterministic:
            logger.info("deterministic: seed %d, %d torch thread(s) (trainer.num_threads); "
                        "another thread count or precision trains other weights", cfg.seed, threads)
        yield threads
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1], warn_only=before[2])


def progress_bar(setting: bool | None) -> bool:
    """``trainer.enable_progress_bar``: None (the default) draws Lightning's bar only on a
    terminal (it writes to stdout; the log lines go to stderr), never into a log file or the
    result JSON train.py prints; true / false: always / never.

    >>> progress_bar(True), progress_bar(False)
    (True, False)
    """
    return sys.stdout.isatty() and sys.stderr.isatty() if setting is None else bool(setting)


def build_trainer(cfg: TrainConfig, callbacks: Sequence[Callback] = ()) -> pl.Trainer:
    """The Lightning trainer of ``cfg``: best and last checkpoints, the per-epoch report, early
    stopping, CSV (and W&B) logging, SLURM requeueing, and ``callbacks`` added.

    Example: ``build_trainer(cfg).max_epochs`` -> ``cfg.trainer.max_epochs``.
    """
    out = Path(cfg.paths.output_dir)
    es = cfg.callbacks.early_stopping
    dev = has_dev_split(cfg)  # without one (a refit): no validation, the newest epoch is "best"
    cbs: list[Callback] = [
        ModelCheckpoint(
            dirpath=out / "checkpoints",
            filename="best-{epoch}-{step}",
            monitor=cfg.callbacks.checkpoint.monitor if dev else None,
            mode=cfg.callbacks.checkpoint.mode,
            save_top_k=1,
        ),
        # last.ckpt after EVERY validation: Lightning 2.6's save_last=True rewrites it only
        # alongside a new top-k save, so a resume would lose the epochs since the best one.
        ModelCheckpoint(
            dirpath=out / "checkpoints",
            filename="last",
            monitor=None,
            save_top_k=1,
            enable_version_counter=False,
        ),
        EpochReport(out),  # a line per epoch, training_curve.png
        *callbacks,
    ]
    if es.enabled:
        cbs.append(EarlyStopping(monitor=es.monitor, mode=es.mode, patience=es.patience))
    loggers: list[Any] = [CSVLogger(save_dir=str(out), name="csv")]
    if cfg.wandb.enabled:
        loggers.append(wandb_logger(cfg.wandb, to_dict(cfg), out, "train"))
    t = cfg.trainer
    devices: Any = int(t.devices) if str(t.devices).isdigit() else t.devices
    # SLURM (sbatch + srun): Lightning reads ranks / world size from the SLURM variables;
    # SIGUSR1 -> hpc checkpoint + requeue. None elsewhere (Lightning picks the environment).
    plugins = (
        [SLURMEnvironment(auto_requeue=True, requeue_signal=signal.SIGUSR1)]
        if SLURMEnvironment.detect()
        else None
    )
    return pl.Trainer(
        max_epochs=t.max_epochs,
        accelerator=t.accelerator,
        devices=devices,
        strategy=t.strategy,
        num_nodes=t.num_nodes,
        plugins=plugins,
        # the batch sampler shards itself by rank (GraLCDataModule.batch_sampler)
        use_distributed_sampler=False,
        # a new batch sampler every epoch, built with the epoch: its shuffle and mix draws are
        # seeded by seed + epoch, and Lightning's set_epoch never reaches a batch sampler
        reload_dataloaders_every_n_epochs=1,
        precision=t.precision,
        log_every_n_steps=t.log_every_n_steps,
        limit_train_batches=t.limit_train_batches,
        limit_val_batches=None if dev else 0,
        val_check_interval=t.val_check_interval,
        gradient_clip_val=t.gradient_clip_val,
        enable_progress_bar=progress_bar(t.enable_progress_bar),
        deterministic=cfg.deterministic,
        detect_anomaly=False,
        callbacks=cbs,
        logger=loggers,
        default_root_dir=str(out),
        enable_model_summary=False,
    )


def lora_encoder(cfg: TrainConfig):
    """The base encoder with fresh LoRA adapters (``cfg.lora``), or None when disabled.
    Raises ConfigError naming ``lora.target_modules`` when they match no encoder layer.

    Example: ``lora_encoder(load_config(TrainConfig, overrides=["lora.enabled=true"]))`` -> a
    :class:`~gralc.encoding.lora.LoraEncoder` (``None`` with ``lora.enabled=false``).
    """
    if not cfg.lora.enabled:
        return None
    from gralc.encoding.lora import LoraEncoder, LoraTargetError

    lo = cfg.lora
    try:
        with torch.random.fork_rng(devices=[]):  # the model's initialisation stays as without LoRA
            torch.manual_seed(cfg.seed)
            return LoraEncoder.build(
                cfg.pipeline.encoder, lo.r, lo.alpha, lo.dropout, lo.target_modules, lo.layers,
                precision=lo.precision,
            )
    except LoraTargetError as exc:
        key = "lora.layers" if str(exc).startswith("layers=") else "lora.target_modules"
        value = lo.layers if key == "lora.layers" else list(lo.target_modules)
        raise ConfigError(f"{key}={value}: {exc}") from None
