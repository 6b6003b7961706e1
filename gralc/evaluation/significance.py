"""How sure a gain is: a paired bootstrap over cross-validation folds, clustered by article.

Two rankers A and B answer the same held-out questions; a question's difference is
``d = metric_A - metric_B``. The gain reported is the one a CV table shows, the mean over folds
of each fold's mean ``d``. Questions about one article are not independent (they share its
chunks and its vocabulary), so the bootstrap resamples *articles* with replacement inside each
fold (stratified by fold, every question of a drawn article kept), recomputes the gain, and
reads a percentile interval off the resamples (Efron & Tibshirani 1993, ch. 13; clustered as in
Field & Welsh 2007). Resampling questions one by one would make the interval too narrow.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class SignificanceConfig:
    """``eval.py significance.*``: ``reference``, the row every other row's gain is measured
    against, paired by question (None: no gains); ``metrics``, the metrics compared (one a row
    lacks is left out); ``resamples`` and ``level`` of the bootstrap interval; ``seed``.

    >>> SignificanceConfig(reference="late").metrics
    ['ev_recall@512wp', 'ev_mrr', 'mrr']
    """

    reference: str | None = "bm25"
    metrics: list[str] = field(default_factory=lambda: ["ev_recall@512wp", "ev_mrr", "mrr"])
    resamples: int = 10_000
    level: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if self.resamples < 1:
            raise ValueError(f"significance.resamples={self.resamples}: must be >= 1")
        if not 0 < self.level < 1:
            raise ValueError(f"significance.level={self.level}: must lie in (0, 1), e.g. 0.95")
        if not self.metrics:
            raise ValueError("significance.metrics is empty: name at least one metric, e.g. [mrr]")


@dataclass(frozen=True)
class PairedGain:
    """The gain of A over B with its bootstrap interval.

    ``gain``: mean over folds of the fold's mean per-question difference; ``low``/``high``: the
    ``level`` percentile interval; ``share_not_above``: the share of resampled gains <= 0 (a
    one-sided bootstrap p-value for "A beats B"); ``resamples``: how many were drawn.

    >>> PairedGain(0.1, 0.02, 0.2, 0.95, 0.01, 10000).as_dict()["gain"]
    0.1
    """

    gain: float
    low: float
    high: float
    level: float
    share_not_above: float
    resamples: int

    def as_dict(self) -> dict[str, float]:
        """The fields as a JSON-ready dict."""
        return {"gain": self.gain, "low": self.low, "high": self.high, "level": self.level,
                "share_not_above": self.share_not_above, "resamples": self.resamples}


@dataclass(frozen=True)
class FoldPairs:
    """One fold's paired values: ``a``, ``b`` (Q,) the metric of each question under A and B,
    ``clusters`` (Q,) the article each question is about.

    >>> FoldPairs(a=[1.0, 0.0], b=[0.0, 0.0], clusters=["d1", "d2"]).clusters
    ['d1', 'd2']
    """

    a: Sequence[float]
    b: Sequence[float]
    clusters: Sequence[Hashable]


def paired_gain(folds: Sequence[FoldPairs], resamples: int = 10_000, level: float = 0.95,
                seed: int = 0) -> PairedGain:
    """Bootstrap the gain of A over B across ``folds`` (see the module docstring).

    Each resample draws, per fold, as many articles as the fold has, with replacement; the fold's
    mean difference is then (sum of the drawn articles' differences) / (their question count).

    >>> g = paired_gain([FoldPairs([1.0, 1.0, 0.0], [0.0, 1.0, 0.0], ["d1", "d2", "d3"])], resamples=200)
    >>> round(float(g.gain), 4), g.resamples
    (0.3333, 200)
    """
    if not folds:
        raise ValueError("paired_gain: no folds given")
    if resamples < 1 or not 0 < level < 1:
        raise ValueError(f"paired_gain: resamples={resamples} must be >= 1 and level={level} in (0, 1)")
    rng = np.random.default_rng(seed)
    gains = np.zeros(resamples)
    point = 0.0
    for k, fold in enumerate(folds):
        a, b = np.asarray(fold.a, dtype=float), np.asarray(fold.b, dtype=float)
        if not (a.shape == b.shape == (len(fold.clusters),)) or a.size == 0:
            raise ValueError(f"paired_gain: fold {k} has {a.size} A values, {b.size} B values and "
                             f"{len(fold.clusters)} articles; give one of each per question, at least one")
        _, cluster = np.unique(np.asarray([str(c) for c in fold.clusters]), return_inverse=True)
        sums = np.bincount(cluster, weights=a - b)  # (C,) each article's summed difference
        counts = np.bincount(cluster).astype(float)  # (C,) its question count
        drawn = rng.multinomial(len(sums), np.full(len(sums), 1 / len(sums)), size=resamples)  # (R, C)
        gains += (drawn @ sums) / (drawn @ counts)
        point += sums.sum() / counts.sum()
    gains /= len(folds)
    tail = (1 - level) / 2
    low, high = np.quantile(gains, [tail, 1 - tail])
    return PairedGain(gain=point / len(folds), low=float(low), high=float(high), level=level,
                      share_not_above=float(np.mean(gains <= 0)), resamples=resamples)
