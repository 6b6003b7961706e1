"""Lightning callbacks GraLC's benchmarks use beside training."""

from __future__ import annotations

import time

from pytorch_lightning import Callback


class EpochTimer(Callback):
    """Wall seconds of each training epoch (train batches only, validation excluded), in
    ``seconds``: the "seconds per epoch" the training benchmarks report."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._t0 = 0.0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self._t0 = time.perf_counter()

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.seconds.append(time.perf_counter() - self._t0)
