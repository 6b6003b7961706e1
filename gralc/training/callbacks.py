"""Lightning callbacks: the per-epoch report every training run gives, and the epoch timer
GraLC's benchmarks use beside training."""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

from pytorch_lightning import Callback

from gralc.atomic import atomic_write

logger = logging.getLogger(__name__)

#: the curve a run folder holds, redrawn as epochs end
CURVE_FILE = "training_curve.png"
#: the validation metrics an epoch's line and the curve show, when the run logs them
VAL_METRICS = ("val/mrr", "val/ev_mrr")
_PNG_META = {"Software": None}  # no version string: same inputs give the same bytes


class EpochTimer(Callback):
    """Wall seconds of each training epoch (train batches only, validation excluded), in
    ``seconds``: the "seconds per epoch" the training benchmarks report.

    Example: ``timer = EpochTimer(); pl.Trainer(callbacks=[timer], ...).fit(lit, dm)`` ->
    ``timer.seconds``: the wall seconds of each training epoch.
    """

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._t0 = 0.0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        """Start the epoch's clock."""
        self._t0 = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        """Append the epoch's wall seconds to ``seconds``."""
        self.seconds.append(time.perf_counter() - self._t0)


def _metric(metrics: dict[str, Any], *names: str) -> float | None:
    """The first of ``names`` in ``metrics`` as a float (None when absent or not finite)."""
    for name in names:
        if name in metrics:
            value = float(metrics[name])
            return value if math.isfinite(value) else None
    return None


class EpochReport(Callback):
    """One INFO line per training epoch (``epoch 3/10: train/loss 0.412, val/mrr 0.853,
    val/ev_mrr 0.561 (4.1 s; 12.6 s in all)``) and the run folder's :data:`CURVE_FILE`: the
    train loss and the validation metrics per epoch (epoch 0: the untrained model's
    validation, when the run has one), drawn at the end of fit and at an epoch's end at
    most every ``redraw_s`` seconds. The per-epoch values travel in the checkpoints, so a
    resumed run's line and curve go on from the epochs before. Rank 0 only.

    Example: ``build_trainer(cfg)`` adds ``EpochReport(out_dir)``; each epoch then logs
    ``epoch 3/10: train/loss 0.412, val/mrr 0.853 (4.1 s; 12.6 s in all)`` and redraws the curve.
    """

    def __init__(self, out_dir: str | Path, redraw_s: float = 60.0) -> None:
        self.out_dir = Path(out_dir)
        self.redraw_s = redraw_s
        self.history: list[dict[str, float | None]] = []  # {"epoch", "train/loss", val metrics}
        self.initial: dict[str, float | None] | None = None
        self._t_fit = self._t_epoch = self._drawn = 0.0

    # ----- the values ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The epochs logged so far (saved in the checkpoint, so a resumed run's curve continues)."""
        return {"history": [dict(h) for h in self.history], "initial": self.initial}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """The epochs of the run this one resumes."""
        self.history = [dict(h) for h in state_dict.get("history", [])]
        self.initial = state_dict.get("initial")

    def on_validation_end(self, trainer, pl_module) -> None:
        """Keep this validation's metrics for the epoch's line and the curve."""
        if trainer.validating:  # trainer.validate before fit: the untrained model
            m = trainer.callback_metrics
            self.initial = {name: _metric(m, name) for name in VAL_METRICS}

    def on_fit_start(self, trainer, pl_module) -> None:
        """Start the run's clock."""
        self._t_fit = time.perf_counter()

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        """Start the epoch's clock."""
        self._t_epoch = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        """Log the epoch's line; redraw the curve (at most once a minute)."""
        m = trainer.callback_metrics
        row: dict[str, float | None] = {"epoch": float(trainer.current_epoch + 1),
                                        "train/loss": _metric(m, "train/loss_epoch", "train/loss")}
        row.update({name: _metric(m, name) for name in VAL_METRICS})
        self.history = [h for h in self.history if h["epoch"] < row["epoch"]] + [row]
        if not trainer.is_global_zero:
            return
        now = time.perf_counter()
        parts = [f"{k} {v:.4f}" for k, v in row.items() if k != "epoch" and v is not None]
        total = f"/{trainer.max_epochs}" if trainer.max_epochs and trainer.max_epochs > 0 else ""
        logger.info("epoch %d%s: %s (%.1f s; %.1f s in all)", trainer.current_epoch + 1, total,
                    ", ".join(parts) or "no metrics", now - self._t_epoch, now - self._t_fit)
        if now - self._drawn >= self.redraw_s:
            self.draw()

    def on_fit_end(self, trainer, pl_module) -> None:
        """Draw the final training curve into the run folder."""
        if trainer.is_global_zero:
            self.draw()

    # ----- the curve ----------------------------------------------------------------------
    def draw(self) -> Path | None:
        """Write :data:`CURVE_FILE` into the run folder from the epochs so far; None when no
        epoch has ended."""
        if not self.history:
            return None
        from matplotlib.figure import Figure  # the object API (Agg), no pyplot state

        epochs = [h["epoch"] for h in self.history]
        fig = Figure(figsize=(10, 3.6))
        loss_ax, val_ax = fig.subplots(1, 2)
        losses = [(e, h["train/loss"]) for e, h in zip(epochs, self.history) if h["train/loss"] is not None]
        if losses:
            loss_ax.plot(*zip(*losses), "o-", label="train/loss")
        loss_ax.set(xlabel="epoch", ylabel="contrastive loss", title="training loss")
        for name in VAL_METRICS:
            points = [(0.0, self.initial[name])] if self.initial and self.initial.get(name) is not None else []
            points += [(e, h[name]) for e, h in zip(epochs, self.history) if h.get(name) is not None]
            if points:
                val_ax.plot(*zip(*points), "o-", label=name)
        val_ax.set(xlabel="epoch (0: untrained)", ylabel="dev metric", title="validation")
        for ax in (loss_ax, val_ax):
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=8)
            ax.xaxis.get_major_locator().set_params(integer=True)
        fig.tight_layout()
        path = self.out_dir / CURVE_FILE
        with atomic_write(path, "wb") as f:
            fig.savefig(f, format="png", dpi=100, metadata=_PNG_META)
        self._drawn = time.perf_counter()
        return path
