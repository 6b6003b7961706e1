"""Which model a training run returns: the better of the untrained model (validated and saved
as ``initial.ckpt`` before fitting, :func:`validate_initial`) and the best trained epoch by the
monitored dev metric (:func:`select_checkpoint`; a trained epoch wins ties), or the last epoch
when there is no dev split (``loader.dev_fraction=0``: a refit)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytorch_lightning as pl

from gralc.atomic import write_json_atomic
from gralc.safe_load import load_torch, read_json_untrusted
from gralc.training.datamodule import GraLCDataModule
from gralc.training.lit_module import GraLCLitModule

logger = logging.getLogger(__name__)


def validate_initial(trainer: pl.Trainer, lit: GraLCLitModule, dm: GraLCDataModule,
                     out: Path) -> dict[str, float]:
    """Validation metrics of the untrained model; saves ``initial.ckpt`` and ``initial.json``
    (the metrics and the path) in ``out``.

    Lightning's sanity check neither logs nor checkpoints, so this is a plain
    ``trainer.validate`` before ``trainer.fit`` (checkpoint callbacks skip outside fitting).

    Example: ``validate_initial(trainer, lit, dm, out)`` -> ``{'val/mrr': ..., ...}``, with
    ``initial.ckpt`` and ``initial.json`` written to ``out``.
    """
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
    beats it by more than m (ties keep the initial model).

    >>> select_checkpoint("e3.ckpt", 0.81, "initial.ckpt", 0.80)
    ('e3.ckpt', 0.81, 'trained')
    >>> select_checkpoint("e3.ckpt", 0.81, "initial.ckpt", 0.80, min_improvement=0.02)
    ('initial.ckpt', 0.8, 'initial')
    """
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


def initial_record(out: Path, monitor: str) -> tuple[str | None, float | None]:
    """``(path, score of monitor)`` of the untrained model :func:`validate_initial` saved in
    ``out``; ``(None, None)`` when there is none.

    >>> import tempfile
    >>> initial_record(Path(tempfile.mkdtemp()), "val/mrr")
    (None, None)
    """
    path = out / "initial.json"
    if not path.is_file():
        return None, None
    info = read_json_untrusted(path, "initial.json")
    return info["path"], float(info["metrics"][monitor])


def learned_values(checkpoint: str) -> dict[str, float]:
    """The learned scalars stored in a checkpoint (see GraLCLitModule.on_save_checkpoint).

    Example: ``learned_values("runs/a/checkpoints/last.ckpt")`` -> ``{'alpha_struct': ...,
    'gamma': ..., 'tau': ..., ...}``.
    """
    ckpt = load_torch(checkpoint, what="training checkpoint (.ckpt)")  # weights only
    return dict(ckpt["gralc"]["learned_values"])
