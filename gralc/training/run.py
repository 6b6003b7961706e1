"""``train(cfg) -> dict``: everything ``python train.py`` does, callable from tests.

Output layout (``paths.output_dir``)::

    checkpoints/best-*.ckpt   (ModelCheckpoint on val/mrr, top 1)
    initial.ckpt, initial.json (the untrained model, validated before fitting, and its
                               validation metrics; outside checkpoints/, which
                               ModelCheckpoint wants empty)
    checkpoints/last.ckpt     (rewritten after every validation: the state to resume from)
    config.yaml, run.json                            (resolved config, git hash and versions)
    csv/...                                          (CSVLogger, always), wandb/ (if enabled)
    result.json                                      (learned values, best score, paths)
    wandb_run_id.txt                                 (W&B run id, reused on resume)
    hpc_ckpt_N.ckpt                                  (SLURM only: saved on SIGUSR1 before requeue)

Model selection. With ``loader.dev_fraction=0`` (no dev split: a refit on every training
document once the epochs were chosen with one) nothing is validated and the last epoch is
``best_checkpoint`` (``selected: "last"``). With ``trainer.validate_before_fit`` (default) a fresh run validates the
untrained model first and saves it as ``initial.ckpt``; the result's ``best_checkpoint`` is
then the better of it and the best trained epoch by val/mrr (a trained epoch wins ties), so a
run whose training only hurts the dev score returns its initial model
(:func:`select_checkpoint`). ``learned_values`` are those of that selected model.

``copy_run(src, dst)`` copies a finished run so that it can be continued for more epochs in a
new directory (``resume=last`` there) without touching the original.

One run per folder (:func:`check_run_dir`, before any work): a ``paths.output_dir`` that holds
another run's checkpoints or ``result.json`` is refused (exit code 2, naming the folder and
the fix) unless this run continues it (``resume=last``, ``resume=auto`` or a checkpoint inside
it); ``paths.force=true`` moves the old content aside to ``<output_dir>.replaced-<time>``
(nothing is deleted). A folder holding files GraLC did not write needs ``paths.force`` too. A
new folder is marked as a training run (``.gralc-artefact.json``, kind ``train_run``).

Reproducibility (:func:`reproducible`): with ``deterministic`` (default) one seed trains
bit-identical weights on one machine at one torch intra-op thread count and one encoder
precision. The thread count (``trainer.num_threads``, else torch's count when ``train`` starts)
is pinned for the run, restored afterwards and recorded as ``torch_threads`` in run.json and
the checkpoints (``gralc.run``), with the resolved LoRA encoder precision
(``encoder_precision``): a parallel sum splits its work by thread count, so two counts give
other rounding (measured on test_lora's config: 1 vs 2 threads, 32 of 37 tensors differ after
two steps; every forward output of the first step is bit-identical, the first divergence is
the gradient of the broadcast scalar ``fusion.lam``, a parallel sum; the GAT's scatter is
deterministic). A resume at another thread count than the checkpoint's is logged. Under DDP
without ``OMP_NUM_THREADS``, Lightning's launcher sets each process's count itself.

A resume checkpoint that loads but lacks what Lightning restores (an ``initial.ckpt``, a
soup), holds non-tensors, or weights that do not fit the configured model is one error naming
the file (:mod:`gralc.training.checkpoints`), before any fitting.

``resume="last"`` resolves ``checkpoints/last.ckpt`` explicitly and fails if it is missing
(Lightning's ``ckpt_path="last"`` silently starts fresh, Lightning#14466). ``resume="auto"``
(SLURM jobs, which may be requeued) takes the newest of ``last.ckpt`` and ``hpc_ckpt_*.ckpt``,
or starts fresh when there is none. Any other string is a checkpoint path.

Under SLURM, Lightning's ``SLURMEnvironment(auto_requeue=True)`` is the one owner of requeue:
on SIGUSR1 (``#SBATCH --signal=SIGUSR1@90``) it saves ``hpc_ckpt_N.ckpt`` and runs
``scontrol requeue``; the requeued job (``resume=auto``) continues from it. See slurm/README.md.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from filelock import FileLock
from lightning_fabric.plugins.environments import SLURMEnvironment
from pytorch_lightning.callbacks import Callback, EarlyStopping, ModelCheckpoint, TQDMProgressBar
from pytorch_lightning.loggers import CSVLogger
from pytorch_lightning.utilities.rank_zero import rank_zero_only
from tqdm.contrib.logging import logging_redirect_tqdm

from gralc.artefacts import MARKER, OutputDirError, artefact_kind, check_output_dir, claim_dir
from gralc.atomic import atomic_path, write_json_atomic, write_text_atomic
from gralc.config import ConfigError, save_config, to_dict
from gralc.data.demo import check_vocabulary
from gralc.model.gralc_model import GraLCModel
from gralc.runinfo import expand_run_dir, run_metadata, seed_everything
from gralc.safe_load import load_torch
from gralc.training.callbacks import EpochReport
from gralc.training.checkpoints import (
    RESUME_KEYS,
    WHAT,
    MalformedCheckpointError,
    check_fits,
    read_checkpoint,
)
from gralc.training.config import TrainConfig, has_dev_split, validate
from gralc.training.datamodule import GraLCDataModule
from gralc.training.lit_module import GraLCLitModule

logger = logging.getLogger(__name__)


def resolve_resume(cfg: TrainConfig) -> str | None:
    """The checkpoint path to resume from, or None for a fresh run; checked before any data is
    built: a missing, truncated or code-carrying checkpoint is an error naming it
    (``resume="auto"`` skips unreadable ones, with a warning, and takes the newest readable)."""
    if cfg.resume is None:
        return None
    if cfg.resume == "auto":
        out = Path(cfg.paths.output_dir)
        found = [p for p in [out / "checkpoints" / "last.ckpt", *out.glob("hpc_ckpt_*.ckpt")]
                 if p.is_file()]
        for path in sorted(found, key=lambda p: p.stat().st_mtime, reverse=True):
            try:  # its content is checked with the model (check_resume_fits)
                load_torch(path, what=WHAT)
            except ValueError as exc:
                logger.warning("resume=auto: skipping %s (%s)", path, exc)
                continue
            return str(path.resolve())
        return None
    path = (
        Path(cfg.paths.output_dir) / "checkpoints" / "last.ckpt"
        if cfg.resume == "last"
        else Path(cfg.resume)
    )
    if not path.exists():
        raise FileNotFoundError(
            f"resume={cfg.resume!r}: checkpoint {path} does not exist; drop resume= to start a "
            "fresh run, or point paths.output_dir at the run to continue"
        )
    other = (f"resume from another checkpoint of the run (resume=PATH, e.g. one of "
             f"{path.parent}/*.ckpt)")
    try:  # weights only, never code; then what Lightning restores is there
        read_checkpoint(path, RESUME_KEYS, fix=f"{other}, or drop resume= to start a fresh run")
    except MalformedCheckpointError as exc:
        raise MalformedCheckpointError(f"resume={cfg.resume!r}: {exc}") from None
    except ValueError as exc:
        raise ValueError(
            f"resume={cfg.resume!r}: {exc}; or resume from another checkpoint of the run "
            f"(resume=PATH, e.g. one of {path.parent}/*.ckpt)"
        ) from None
    return str(path.resolve())


#: what :func:`copy_run` takes from a run: the state a resume needs and the run's records
_RUN_FILES = ("checkpoints", "initial.ckpt", "initial.json", "config.yaml", "run.json", "csv", MARKER)


def copy_run(src: str | Path, dst: str | Path) -> Path:
    """Copy the finished training run ``src`` to the new directory ``dst`` so that
    ``paths.output_dir=DST resume=last trainer.max_epochs=N`` continues it for more epochs
    while ``src`` stays as it was. Its checkpoints, initial model and logs are copied (not its
    result.json, W&B files or SLURM checkpoints); the checkpoint callbacks' paths inside
    ``last.ckpt`` and initial.json's path are rewritten to ``dst``, so the epochs already
    trained still compete for the best checkpoint (Lightning restores a callback's best score
    only when its directory is unchanged). Refuses an existing ``dst``; nothing is written to
    ``src``."""
    src, dst = Path(src).resolve(), Path(dst).resolve()
    last = src / "checkpoints" / "last.ckpt"
    if not last.is_file():
        raise FileNotFoundError(f"copy_run: {last} does not exist; {src} is not a training run "
                                "with a checkpoint to continue (paths.output_dir of train.py)")
    if dst.exists():
        raise FileExistsError(f"copy_run: {dst} exists; give a new directory (nothing is "
                              "overwritten)")
    state = load_torch(last, what="training checkpoint (.ckpt)")  # checked before any copy

    def rebase(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(str(src), str(dst))
        if isinstance(value, dict):
            return {rebase(k): rebase(v) for k, v in value.items()}
        return value

    with atomic_path(dst, folder=True) as tmp:  # the whole run appears at once
        for name in _RUN_FILES:
            if (src / name).is_dir():
                shutil.copytree(src / name, tmp / name)
            elif (src / name).is_file():
                shutil.copy2(src / name, tmp / name)
        state["callbacks"] = {k: rebase(v) for k, v in state["callbacks"].items()}
        torch.save(state, tmp / "checkpoints" / "last.ckpt")
        if (tmp / "initial.json").is_file():
            info = json.loads((tmp / "initial.json").read_text())
            info["path"] = str(dst / "initial.ckpt")
            write_json_atomic(tmp / "initial.json", info)
    return dst


#: the artefact kind (:mod:`gralc.artefacts`) of a training run's folder
RUN_KIND = "train_run"
#: how train.py spells the options that :mod:`gralc.artefacts` messages call --out / --force
OUT_KEY, FORCE_KEY = "paths.output_dir=", "paths.force=true"


def _train_keys(text: str) -> str:
    return text.replace("--out ", OUT_KEY).replace("--force", FORCE_KEY)


def run_outputs(out: Path) -> list[str]:
    """What a training run left in ``out`` that a new run there would overwrite: its
    checkpoints and ``result.json`` (paths relative to ``out``)."""
    if not out.is_dir():
        return []
    found = [n for n in ("result.json", "initial.ckpt") if (out / n).is_file()]
    found += sorted(f"checkpoints/{p.name}" for p in (out / "checkpoints").glob("*.ckpt"))
    found += sorted(p.name for p in out.glob("hpc_ckpt_*.ckpt"))
    return found


def _continues(cfg: TrainConfig, out: Path) -> bool:
    """``cfg`` continues the run in ``out``: ``resume=last`` / ``auto``, or a checkpoint in it."""
    if cfg.resume in ("last", "auto"):
        return True
    if cfg.resume is None:
        return False
    return out in Path(cfg.resume).expanduser().resolve().parents


def _is_run_folder(out: Path) -> bool:
    """``out`` was written by train.py: marked as a training run, or (an older run, or one
    stopped before its first checkpoint) holding a run's files."""
    return (artefact_kind(out) == RUN_KIND or bool(run_outputs(out))
            or all((out / n).is_file() for n in ("config.yaml", "run.json")))


def check_run_dir(cfg: TrainConfig) -> list[str]:
    """Validate ``paths.output_dir`` before any work (module docstring; global rank 0 only,
    the other ranks of a DDP job write into the folder rank 0 checked). Returns what
    :func:`claim_run_dir` will move aside (``paths.force``), else ``[]``. Raises
    :class:`~gralc.artefacts.OutputDirError` (a ValueError: exit code 2) naming the folder
    and the fix when the folder holds another run or files GraLC did not write."""
    if rank_zero_only.rank != 0:
        return []
    out = Path(cfg.paths.output_dir).expanduser().resolve()
    if not out.is_dir() or not any(out.iterdir()):
        if out.exists():  # a file: refused by name
            _check_foreign(cfg, out)
        return []
    found = run_outputs(out)
    if found:
        if _continues(cfg, out):
            return []
        if cfg.paths.force:
            return found
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        how = ("" if cfg.resume is None else
               f"resume={cfg.resume!r} is a checkpoint outside it, so this run would not continue "
               "that one but overwrite it; ")
        raise OutputDirError(
            f"{OUT_KEY}{out} already holds another training run ({shown}) that this run would "
            f"overwrite; {how}choose another folder ({OUT_KEY}NEW_FOLDER), continue that run "
            f"there (resume=last), or set {FORCE_KEY} to move its content aside to "
            f"{out.name}.replaced-<time> (nothing is deleted)")
    if not _is_run_folder(out):
        _check_foreign(cfg, out)
    return []


def _check_foreign(cfg: TrainConfig, out: Path) -> None:
    try:
        check_output_dir(out, RUN_KIND, cfg.paths.force)
    except OutputDirError as exc:
        raise OutputDirError(_train_keys(str(exc))) from None


def claim_run_dir(cfg: TrainConfig, found: Sequence[str]) -> None:
    """Just before the run writes into ``paths.output_dir`` (rank 0): with ``found`` (another
    run, ``paths.force``) move the folder aside, never deleting it; create a new folder marked
    as a training run (:func:`gralc.artefacts.claim_dir`, which also moves a folder of other
    files aside under ``paths.force``)."""
    if rank_zero_only.rank != 0:
        return
    out = Path(cfg.paths.output_dir).expanduser().resolve()
    if found and out.is_dir():
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = out.parent / f"{out.name}.replaced-{stamp}"
        n = 1
        while aside.exists():
            aside, n = out.parent / f"{out.name}.replaced-{stamp}-{n}", n + 1
        os.replace(out, aside)
        logger.warning("%s: the previous run in %s (%s) was moved to %s", FORCE_KEY, out,
                       ", ".join(found[:3]), aside)
    if out.is_dir() and any(out.iterdir()) and _is_run_folder(out):
        return  # the run being continued (or one that stopped before its first checkpoint)
    try:
        claim_dir(out, RUN_KIND, cfg.paths.force)
    except OutputDirError as exc:
        raise OutputDirError(_train_keys(str(exc))) from None


@contextmanager
def reproducible(cfg: TrainConfig) -> Iterator[int]:
    """Seeds and, for the run, a pinned torch intra-op thread count (yielded):
    ``trainer.num_threads``, else torch's count now; with ``deterministic`` also
    deterministic algorithms (Lightning's ``Trainer(deterministic=True)`` then makes them
    strict). Thread count and deterministic-algorithm flags are restored afterwards."""
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


def check_resume_fits(path: str, lit: GraLCLitModule, cfg: TrainConfig, threads: int) -> None:
    """Before Lightning restores ``path``: its weights fit ``lit`` (the model this configuration
    builds) and its optimiser state holds the parameters ``lit`` trains, else a
    :class:`~gralc.training.checkpoints.MalformedCheckpointError` naming it; with
    ``deterministic``, a resume at another thread count than the checkpoint's is logged."""
    fix = ("resume with the configuration the run was trained with (its config.yaml), or drop "
           "resume= to start a fresh run")
    try:
        ckpt = read_checkpoint(path, RESUME_KEYS, fix)  # resume=auto: only its readability so far
        check_fits(path, ckpt["state_dict"], lit.state_dict(), fix)
        opt = ckpt["optimizer_states"]
        groups = opt[0].get("param_groups") if isinstance(opt, list) and len(opt) == 1 and \
            isinstance(opt[0], dict) else None
        if not isinstance(groups, list) or not all(
                isinstance(g, dict) and isinstance(g.get("params"), list) for g in groups):
            raise MalformedCheckpointError(f"{path}: its optimizer_states are not the state of "
                                           f"one optimiser; {fix}")
        saved = sum(len(g["params"]) for g in groups)
        trained = sum(1 for _, p in lit.trainable() if p.requires_grad)
        if saved != trained:
            raise MalformedCheckpointError(f"{path}: its optimiser state holds {saved} parameters, "
                                           f"the model trains {trained}; {fix}")
    except MalformedCheckpointError as exc:
        raise MalformedCheckpointError(f"resume={cfg.resume!r}: {exc}") from None
    info = ckpt.get("gralc")
    run = info.get("run") if isinstance(info, dict) else None
    saved_threads = run.get("torch_threads") if isinstance(run, dict) else None
    if cfg.deterministic and saved_threads is not None and saved_threads != threads:
        logger.warning("resuming %s with %d torch thread(s); it was trained with %s: the continued "
                       "run's weights will differ from an uninterrupted run's (trainer.num_threads=%s "
                       "continues it bit for bit)", path, threads, saved_threads, saved_threads)


def wandb_run_id(out: Path) -> str:
    """The W&B run id of ``out``: read from ``out/wandb_run_id.txt``, else created (and
    written by rank 0), so a resumed or requeued run continues the same W&B run."""
    path = out / "wandb_run_id.txt"
    if path.is_file():
        return path.read_text().strip()
    run_id = uuid.uuid4().hex[:12]  # W&B ids: short, lowercase alphanumeric
    if rank_zero_only.rank == 0:
        write_text_atomic(path, run_id + "\n")
    return run_id


def progress_bar(setting: bool | None) -> bool:
    """``trainer.enable_progress_bar``: None (the default) draws Lightning's bar only on a
    terminal (it writes to stdout; the log lines go to stderr), never into a log file or the
    result JSON train.py prints; true / false: always / never."""
    return sys.stdout.isatty() and sys.stderr.isatty() if setting is None else bool(setting)


def build_trainer(cfg: TrainConfig, callbacks: Sequence[Callback] = ()) -> pl.Trainer:
    """The Lightning trainer of ``cfg``: best and last checkpoints, the per-epoch report, early
    stopping, CSV (and W&B) logging, SLURM requeueing, and ``callbacks`` added."""
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
        from pytorch_lightning.loggers import WandbLogger

        w = cfg.wandb
        loggers.append(
            WandbLogger(
                project=w.project,
                entity=w.entity,
                offline=w.offline,
                name=w.name,
                save_dir=str(out),
                config=to_dict(cfg),
                id=wandb_run_id(out),
                resume="allow",
            )
        )
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


def validate_initial(trainer: pl.Trainer, lit: GraLCLitModule, dm: GraLCDataModule,
                     out: Path) -> dict[str, float]:
    """Validation metrics of the untrained model; saves ``initial.ckpt`` and ``initial.json``
    (the metrics and the path) in ``out``.

    Lightning's sanity check neither logs nor checkpoints, so this is a plain
    ``trainer.validate`` before ``trainer.fit`` (checkpoint callbacks skip outside fitting)."""
    metrics = {k: float(v) for k, v in trainer.validate(lit, datamodule=dm, verbose=False)[0].items()}
    path = out / "initial.ckpt"
    # the untrained weights only: no optimiser exists before fit (and Lightning then says so)
    trainer.save_checkpoint(path, weights_only=True)
    if trainer.is_global_zero:
        write_json_atomic(out / "initial.json", {"metrics": metrics, "path": str(path)})
    logger.info("initial model: %s (%s)", metrics, path)
    return metrics


def select_checkpoint(
    best_path: str,
    best_score: float | None,
    initial_path: str | None,
    initial_score: float | None,
    mode: str = "max",
    min_improvement: float | None = None,
) -> tuple[str, float | None, str]:
    """``(path, score, "trained" | "initial")``: the initial model when no epoch was validated
    or, with ``min_improvement`` None, when it is strictly better (``mode``: higher or lower)
    than every trained epoch; with ``min_improvement`` m >= 0, unless the best trained epoch
    beats it by more than m (ties keep the initial model)."""
    if initial_path is None or initial_score is None:
        return best_path, best_score, "trained"
    if best_score is None or not best_path:
        return initial_path, initial_score, "initial"
    if min_improvement is None:
        keep = initial_score > best_score if mode == "max" else initial_score < best_score
    else:
        gain = best_score - initial_score if mode == "max" else initial_score - best_score
        keep = not gain > min_improvement
    return (initial_path, initial_score, "initial") if keep else (best_path, best_score, "trained")


def run_selected_checkpoint(run: Path) -> Path:
    """The checkpoint a finished run folder's ``result.json`` selected
    (:func:`gralc.model.persistence.resolve_model`). Raises ValueError naming what is missing."""
    from gralc.model.persistence import resolve_model

    if not (run / "result.json").is_file():
        raise ValueError(f"{run}: a folder but no result.json; pass a finished run folder "
                         "(paths.output_dir) or a .ckpt file")
    return resolve_model(run)


def _initial_record(out: Path, monitor: str) -> tuple[str | None, float | None]:
    path = out / "initial.json"
    if not path.is_file():
        return None, None
    info = json.loads(path.read_text())
    return info["path"], float(info["metrics"][monitor])


def lora_encoder(cfg: TrainConfig):
    """The base encoder with fresh LoRA adapters (``cfg.lora``), or None when disabled.
    Raises ConfigError naming ``lora.target_modules`` when they match no encoder layer."""
    if not cfg.lora.enabled:
        return None
    from gralc.encoding.lora import LoraEncoder, LoraTargetError

    lo = cfg.lora
    try:
        with torch.random.fork_rng(devices=[]):  # the model's initialisation stays as without LoRA
            torch.manual_seed(cfg.seed)
            return LoraEncoder.build(
                cfg.pipeline.encoder, lo.r, lo.alpha, lo.dropout, lo.target_modules,
                precision=lo.precision,
            )
    except LoraTargetError as exc:
        raise ConfigError(f"lora.target_modules={list(lo.target_modules)}: {exc}") from None


def train(
    cfg: TrainConfig, model: GraLCModel | None = None, callbacks: Sequence[Callback] = ()
) -> dict[str, Any]:
    """Fit (or resume) and return learned values, best val/mrr and checkpoint paths.

    ``model``: a prebuilt model (tests inject one); ``callbacks``: extra Lightning callbacks.
    """
    validate(cfg)
    cfg.paths.output_dir = expand_run_dir(cfg.paths.output_dir)
    from gralc.encoding.encoder import resolve_device

    resolve_device(cfg.pipeline.encoder.device)  # checked even when cached features need no encoder
    aside = check_run_dir(cfg)  # before any work: never over another run
    ckpt_path = resolve_resume(cfg)
    check_vocabulary(cfg.pipeline.knowledge.vocabulary,
                     f"data={cfg.data.name} {cfg.data.path or ''}".strip(), cfg.data.name == "demo")
    with reproducible(cfg) as threads:
        return _fit(cfg, model, callbacks, ckpt_path, aside, threads)


def _fit(cfg: TrainConfig, model: GraLCModel | None, callbacks: Sequence[Callback],
         ckpt_path: str | None, aside: list[str], threads: int) -> dict[str, Any]:
    encoder = lora_encoder(cfg)  # before the data: a bad lora.target_modules fails at once
    out = Path(cfg.paths.output_dir)
    dm = GraLCDataModule(cfg)
    cache = Path(cfg.paths.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(cache / ".features.lock"):  # DDP ranks: one builds the cache, the rest read it
        dm.setup("fit")
    model = model or GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, dm.token_dim, dm.concept_dim)
    # what the weights depend on besides the seed (module docstring), recorded with the run;
    # plain JSON types only, so Lightning can resume with torch.load(weights_only=True)
    reproducibility = {"torch_threads": threads, "deterministic": cfg.deterministic,
                       "encoder_precision": encoder.encoder.precision if encoder is not None else None}
    meta = json.loads(json.dumps(run_metadata(
        {"output_dir": str(out), "resumed_from": ckpt_path, **reproducibility}), default=str))
    lit = GraLCLitModule(
        model,
        cfg.optim,
        # what the model card of an export reports (gralc.model.model_card)
        extra_checkpoint={"train_config": to_dict(cfg), "run": meta, "data_summary": data_summary(dm)},
        encoder=encoder,
        sem_window=cfg.pipeline.chunking.boundary.window,
        windows_per_doc=cfg.lora.windows_per_doc,
        hard_windows=cfg.lora.hard_windows,
        search=cfg.search,
    )
    if ckpt_path is not None:  # before the run's config.yaml is rewritten
        check_resume_fits(ckpt_path, lit, cfg, threads)
    claim_run_dir(cfg, aside)  # the first write into the folder
    if rank_zero_only.rank == 0:
        save_config(cfg, out / "config.yaml")
        write_json_atomic(out / "run.json", meta)
    trainer = build_trainer(cfg, callbacks)
    dev = has_dev_split(cfg)  # else a refit: no initial-vs-trained choice, the last epoch is kept
    if cfg.trainer.validate_before_fit and dev and ckpt_path is None:
        validate_initial(trainer, lit, dm, out)
    monitor = cfg.callbacks.checkpoint.monitor
    initial_path, initial_score = (
        _initial_record(out, monitor) if cfg.trainer.validate_before_fit and dev else (None, None)
    )
    # log lines (one per epoch) above a progress bar, not through it: Lightning's Rich bar (its
    # default where rich is installed) takes what is written to sys.stderr above it, tqdm's
    # needs its write
    tqdm_bar = isinstance(trainer.progress_bar_callback, TQDMProgressBar)
    bar = logging_redirect_tqdm() if tqdm_bar else nullcontext()
    with warnings.catch_warnings(), bar:
        if encoder is not None:  # LoraEncoder keeps its frozen transformer in eval mode on purpose
            warnings.filterwarnings("ignore", message=r"Found \d+ module\(s\) in eval mode")
        trainer.fit(lit, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)  # never unpickle code
    ckpt = trainer.checkpoint_callback
    best = float(ckpt.best_model_score) if ckpt.best_model_score is not None else None
    path, score, selected = select_checkpoint(
        ckpt.best_model_path,
        best,
        initial_path,
        initial_score,
        cfg.callbacks.checkpoint.mode,
        cfg.callbacks.checkpoint.min_improvement,
    )
    result = {
        "learned_values": _learned_values(path) if path else model.learned_values(),
        "final_learned_values": model.learned_values(),
        "best_val_mrr": score if monitor == "val/mrr" else None,
        "best_checkpoint": path,
        "selected": selected if dev else "last",  # "last": no dev split (loader.dev_fraction=0)
        "monitor": monitor,  # the *_score entries are of this metric
        "best_score": score,
        "initial_score": initial_score,
        "trained_best_score": best,
        "trained_best_checkpoint": ckpt.best_model_path,
        "last_checkpoint": str(out / "checkpoints" / "last.ckpt"),
        "global_step": trainer.global_step,
        "epochs": trainer.current_epoch,
        **data_summary(dm),
    }
    if trainer.is_global_zero:
        write_json_atomic(out / "result.json", result)
    return result


def data_summary(dm: GraLCDataModule) -> dict[str, Any]:
    """How many questions a run trains and validates on, and its mixed-in sources (their
    training questions and how many each epoch draws); plain JSON types (stored in every
    checkpoint and in ``result.json``)."""
    return {
        "n_train_questions": len(dm.data.train),
        "n_dev_questions": len(dm.data.dev),
        "mix": [{"source": p.prefix[:-1], "weight": p.weight, "n_train_questions": len(p.examples),
                 "n_train_docs": len(p.doc_ids), "per_epoch": p.per_epoch} for p in dm.mix],
    }


def _learned_values(checkpoint: str) -> dict[str, float]:
    """The learned scalars stored in a checkpoint (see GraLCLitModule.on_save_checkpoint)."""
    ckpt = load_torch(checkpoint, what="training checkpoint (.ckpt)")  # weights only
    return dict(ckpt["gralc"]["learned_values"])
