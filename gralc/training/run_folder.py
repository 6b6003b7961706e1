"""A training run's folder: one run per folder, resume, and copying a run to continue it.

:func:`check_run_dir` (before any work) refuses a ``paths.output_dir`` holding another run's
checkpoints or ``result.json`` unless this run continues it (``resume=last`` / ``auto`` or a
checkpoint inside it); ``paths.force=true`` moves the old content aside to
``<output_dir>.replaced-<time>`` (:func:`gralc.atomic.move_aside`, nothing is deleted);
:func:`claim_run_dir` marks a new folder as a training run (``.gralc-artefact.json``, kind
``train_run``). :func:`resolve_resume` finds the checkpoint to continue from
(``resume=last|auto|PATH``) and :func:`check_resume_fits` checks it against the model before
Lightning restores it; :func:`copy_run` copies a finished run so that it can go on elsewhere.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from pytorch_lightning.utilities.rank_zero import rank_zero_only

from gralc.artefacts import MARKER, OutputDirError, artefact_kind, check_output_dir, claim_dir
from gralc.atomic import atomic_path, move_aside, write_json_atomic
from gralc.safe_load import load_torch, read_json_untrusted
from gralc.training.checkpoints import (
    RESUME_KEYS,
    WHAT,
    MalformedCheckpointError,
    check_fits,
    read_checkpoint,
)
from gralc.training.config import TrainConfig
from gralc.training.lit_module import GraLCLitModule

logger = logging.getLogger(__name__)


def resolve_resume(cfg: TrainConfig) -> str | None:
    """The checkpoint path to resume from, or None for a fresh run; checked before any data is
    built: a missing, truncated or code-carrying checkpoint is an error naming it
    (``resume="auto"`` skips unreadable ones, with a warning, and takes the newest readable).

    ``"last"``: ``checkpoints/last.ckpt``, which must exist (Lightning's ``ckpt_path="last"``
    silently starts fresh, Lightning#14466); ``"auto"`` (SLURM jobs, which may be requeued):
    the newest of ``last.ckpt`` and ``hpc_ckpt_*.ckpt``, or None; any other string: a path.

    Example: ``resolve_resume(cfg)`` with ``resume=last`` -> ``'runs/a/checkpoints/last.ckpt'``;
    ``None`` for a fresh run.
    """
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
    ``src``.

    Example: ``copy_run("runs/a", "runs/a_more")`` -> ``Path('runs/a_more')``; then
    ``paths.output_dir=runs/a_more resume=last trainer.max_epochs=20`` trains on.
    """
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
            info = read_json_untrusted(tmp / "initial.json", "initial.json")
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
    checkpoints and ``result.json`` (paths relative to ``out``).

    >>> import tempfile
    >>> run_outputs(Path(tempfile.mkdtemp()))
    []
    """
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
    and the fix when the folder holds another run or files GraLC did not write.

    Example: ``check_run_dir(cfg)`` -> ``[]`` for a new or empty ``paths.output_dir``;
    ``OutputDirError`` when it holds another run (``paths.force=true``: what will move aside).
    """
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
    files aside under ``paths.force``).

    Example: ``claim_run_dir(cfg, check_run_dir(cfg))`` -> ``paths.output_dir`` created and marked
    as a training run.
    """
    if rank_zero_only.rank != 0:
        return
    out = Path(cfg.paths.output_dir).expanduser().resolve()
    if found and out.is_dir():
        aside = move_aside(out)
        logger.warning("%s: the previous run in %s (%s) was moved to %s", FORCE_KEY, out,
                       ", ".join(found[:3]), aside)
    if out.is_dir() and any(out.iterdir()) and _is_run_folder(out):
        return  # the run being continued (or one that stopped before its first checkpoint)
    try:
        claim_dir(out, RUN_KIND, cfg.paths.force)
    except OutputDirError as exc:
        raise OutputDirError(_train_keys(str(exc))) from None


def check_resume_fits(path: str, lit: GraLCLitModule, cfg: TrainConfig, threads: int) -> None:
    """Before Lightning restores ``path``: its weights fit ``lit`` (the model this configuration
    builds) and its optimiser state holds the parameters ``lit`` trains, else a
    :class:`~gralc.training.checkpoints.MalformedCheckpointError` naming it; with
    ``deterministic``, a resume at another thread count than the checkpoint's is logged.

    Example: ``check_resume_fits("runs/a/checkpoints/last.ckpt", lit, cfg, 2)`` -> None, or
    ``MalformedCheckpointError`` when its weights were trained with other model settings.
    """
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


def run_selected_checkpoint(run: Path) -> Path:
    """The checkpoint a finished run folder's ``result.json`` selected
    (:func:`gralc.model.persistence.resolve_model`). Raises ValueError naming what is missing.

    Example: ``run_selected_checkpoint(Path("runs/a"))`` -> ``Path('runs/a/checkpoints/epoch=3.ckpt')``
    (or ``initial.ckpt``), as ``result.json`` records it.
    """
    from gralc.model.persistence import resolve_model

    if not (run / "result.json").is_file():
        raise ValueError(f"{run}: a folder but no result.json; pass a finished run folder "
                         "(paths.output_dir) or a .ckpt file")
    return resolve_model(run)
