"""Turn boundary scores into cut positions: threshold peak detection (GraLC-RAG) or the
globally optimal DP segmentation (ASCM).

Inputs are per-unit scores ``s`` of shape (N,) where ``s[i]`` scores a cut BEFORE unit ``i``
(units are tokens or sentences); ``s[0]`` is ignored. Outputs are the sorted interior cut
positions in ``1 .. N-1``; :func:`spans_from_cuts` turns them into half-open unit spans.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from itertools import pairwise

import numpy as np
import torch

log = logging.getLogger(__name__)

#: Cost added per violated constraint when a DP has to be relaxed (see :func:`dp_decode`).
VIOLATION_PENALTY = 1e6

#: ``cohesion(starts, end) -> costs``: penalty of the chunks ``[starts[k], end)``, shape (K,).
CohesionFn = Callable[[np.ndarray, int], np.ndarray]


class InfeasibleSegmentation(ValueError):
    """No segmentation satisfies the hard constraints and the min/max lengths.

    Example: ``dp_decode(scores, allowed=none_allowed, min_len=3, max_len=4, on_infeasible="raise")``
    -> ``InfeasibleSegmentation`` (no tiling meets the constraints).
    """


def _to_numpy(x: np.ndarray | torch.Tensor | None, dtype=np.float64) -> np.ndarray | None:
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=dtype)


def spans_from_cuts(cuts: list[int], n: int) -> list[tuple[int, int]]:
    """Half-open spans ``[(0, c1), (c1, c2), ..., (ck, n)]`` tiling ``[0, n)``.

    >>> spans_from_cuts([2, 5], 8)
    [(0, 2), (2, 5), (5, 8)]
    """
    bounds = [0, *cuts, n]
    return [(a, b) for a, b in pairwise(bounds)]


# ----- peak detection ---------------------------------------------------------------------
def peak_decode(
    scores: np.ndarray | torch.Tensor,
    tau: float,
    min_tokens: int,
    max_tokens: int,
    forbidden: np.ndarray | torch.Tensor | None = None,
    fallback: np.ndarray | torch.Tensor | None = None,
) -> list[int]:
    """Cuts at score peaks above ``tau``, every chunk within ``[min_tokens, max_tokens]``.

    1. Candidates: local maxima of the scores with forbidden positions masked out
       (``s[i] > s[i-1]`` and ``s[i] >= s[i+1]``, so a plateau yields its first position),
       strictly above ``tau``.
    2. Highest candidates first, a candidate is kept when it is at least ``min_tokens`` away
       from the document start, the end and every kept cut (so no chunk is shorter than
       ``min_tokens``, unless the document itself is).
    3. A chunk longer than ``max_tokens`` gets forced cuts, left to right: each at the
       best-scoring allowed position that keeps the piece before it within
       ``[min_tokens, max_tokens]`` and the rest at least ``min_tokens`` long (not blindly at
       ``max_tokens``). Only when no allowed position exists there (e.g. an entity span or,
       with sentence-level cuts, a sentence longer than ``max_tokens``) is a forbidden position
       used, with a warning: one ``fallback`` (N,) bool allows (e.g. a word start) when there
       is one, else any.

    >>> peak_decode(np.array([0.0, 0.1, 0.9, 0.1, 0.0, 0.2]), tau=0.5, min_tokens=2, max_tokens=6)
    [2]
    """
    s = _to_numpy(scores)
    n = len(s)
    if n <= 1:
        return []
    ok = np.ones(n, dtype=bool) if forbidden is None else ~_to_numpy(forbidden, dtype=bool)
    ok[0] = False
    masked = np.where(ok, s, -np.inf)
    nxt = np.append(masked[1:], -np.inf)
    prv = np.insert(masked[:-1], 0, -np.inf)
    is_peak = ok & (masked > prv) & (masked >= nxt) & (s > tau)

    kept = [0, n]
    for c in sorted(np.flatnonzero(is_peak), key=lambda i: (-s[i], i)):
        k = bisect.bisect_left(kept, c)
        if c - kept[k - 1] >= min_tokens and kept[k] - c >= min_tokens:
            kept.insert(k, int(c))

    cuts: list[int] = []
    for a, b in pairwise(kept):
        while b - a > max_tokens:
            a = _forced_cut(s, ok, a, b, min_tokens, max_tokens, fallback)
            cuts.append(a)
        cuts.append(b)
    return cuts[:-1]


def _forced_cut(s: np.ndarray, ok: np.ndarray, a: int, b: int, lo_len: int, hi_len: int,
                fallback: np.ndarray | torch.Tensor | None = None) -> int:
    """Best-scoring allowed cut in ``[a + lo_len, min(a + hi_len, b - lo_len)]``; when none is
    allowed, the best ``fallback`` position there, else the best position."""
    lo, hi = a + lo_len, min(a + hi_len, b - lo_len)
    if lo > hi:  # max < 2 * min: only the upper bound can be honoured
        lo, hi = a + 1, a + hi_len
    window = np.arange(lo, hi + 1)
    allowed = window[ok[window]]
    if len(allowed) == 0:
        log.warning(
            "peak_decode: no allowed cut in tokens [%d, %d] (a protected span or sentence longer "
            "than max_tokens?); cutting at a forbidden position",
            lo,
            hi,
        )
        second = window if fallback is None else window[_to_numpy(fallback, dtype=bool)[window]]
        allowed = second if len(second) else window
    return int(allowed[np.argmax(s[allowed])])


# ----- cohesion penalties for the DP ------------------------------------------------------
class InteriorScoreCohesion:
    """Penalty = mean of ``values[k]`` over the interior cut positions ``start < k < end``
    (0 for a one-unit chunk): a chunk that straddles strong boundaries is not cohesive. O(1)
    per chunk from prefix sums; suited to token-level DP (``values`` = b_sem).

    >>> InteriorScoreCohesion(np.array([0.0, 0.2, 0.6, 0.0]))(np.array([0, 1]), 3)
    array([0.4, 0.6])
    """

    def __init__(self, values: np.ndarray | torch.Tensor) -> None:
        v = _to_numpy(values)
        self._csum = np.concatenate([[0.0], np.cumsum(v)])

    def __call__(self, starts: np.ndarray, end: int) -> np.ndarray:
        inner = end - starts - 1
        total = self._csum[end] - self._csum[starts + 1]
        return np.where(inner > 0, total / np.maximum(inner, 1), 0.0)


class EmbeddingCohesion:
    """Penalty = 1 - mean cosine similarity over the distinct pairs of units in the chunk
    (0 for a one-unit chunk). ``vectors`` (N, d) are L2-normalised here, so for a chunk sum
    ``S`` the pairwise sum is ``(|S|^2 - n) / 2``: O(d) per chunk from prefix sums.

    >>> EmbeddingCohesion(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))(np.array([0, 1]), 3)
    array([0.66666667, 1.        ])
    """

    def __init__(self, vectors: np.ndarray | torch.Tensor) -> None:
        v = _to_numpy(vectors)
        v = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        self._csum = np.concatenate([np.zeros((1, v.shape[1])), np.cumsum(v, axis=0)])

    def __call__(self, starts: np.ndarray, end: int) -> np.ndarray:
        n = (end - starts).astype(np.float64)
        total = self._csum[end][None, :] - self._csum[starts]
        sq = np.einsum("kd,kd->k", total, total)
        mean_pair = (sq - n) / np.maximum(n * (n - 1), 1.0)
        return np.where(n > 1, 1.0 - mean_pair, 0.0)


# ----- DP-optimal segmentation (ASCM) -----------------------------------------------------
def dp_decode(
    scores: np.ndarray | torch.Tensor,
    allowed: np.ndarray | torch.Tensor | None = None,
    min_len: int = 1,
    max_len: int | None = None,
    target_len: float | None = None,
    length_weight: float = 0.0,
    cohesion: CohesionFn | None = None,
    cohesion_weight: float = 0.0,
    unit_lengths: np.ndarray | None = None,
    on_infeasible: str = "relax",
) -> list[int]:
    """Globally optimal cuts: shortest path over the DAG of allowed cut positions (ASCM).

    Nodes are positions ``0..N``; an edge ``i -> j`` is the chunk of units ``[i, j)``, present
    when ``j`` is an allowed cut (or ``N``) and ``min_len <= W(i, j) <= max_len``, where
    ``W`` sums ``unit_lengths`` (default 1 per unit, e.g. token counts of sentences). Its cost:

        -scores[j] (0 for j = N)
        + length_weight * ((W(i, j) - target_len) / target_len) ** 2   (if target_len)
        + cohesion_weight * cohesion(i, j)

    Time O(N * L_max) edges (times d for :class:`EmbeddingCohesion`), memory O(N).
    A document shorter than ``min_len`` is one chunk. If no segmentation satisfies the
    constraints, ``on_infeasible="raise"`` raises :class:`InfeasibleSegmentation`;
    ``"relax"`` (default) logs a warning and re-solves with forbidden cuts, chunks shorter than
    ``min_len`` and single units longer than ``max_len`` allowed at
    :data:`VIOLATION_PENALTY` each, so the fewest constraints are broken.

    >>> dp_decode(np.array([0.0, 0.1, 0.9, 0.1, 0.0, 0.2]), min_len=2)
    [2]
    """
    s = _to_numpy(scores)
    n = len(s)
    if on_infeasible not in ("relax", "raise"):
        raise ValueError(f"on_infeasible must be 'relax' or 'raise', got {on_infeasible!r}")
    lengths = np.ones(n) if unit_lengths is None else _to_numpy(unit_lengths)
    if len(lengths) != n or (lengths <= 0).any():
        raise ValueError("dp_decode: unit_lengths must have one positive length per unit")
    w = np.concatenate([[0.0], np.cumsum(lengths)])
    max_len = w[-1] if max_len is None else max_len
    if n <= 1 or w[-1] < min_len:
        return []
    ok = np.ones(n, dtype=bool) if allowed is None else _to_numpy(allowed, dtype=bool).copy()
    if len(ok) != n:
        raise ValueError(f"dp_decode: allowed has {len(ok)} entries for {n} scores")
    ok = np.append(ok, True)  # position N always ends the last chunk
    gain = np.append(s, 0.0)
    gain[0] = 0.0

    def edge_costs(starts: np.ndarray, j: int) -> np.ndarray:
        lens = w[j] - w[starts]
        cost = np.full(len(starts), -gain[j])
        if target_len:
            cost += length_weight * ((lens - target_len) / target_len) ** 2
        if cohesion is not None and cohesion_weight:
            cost += cohesion_weight * cohesion(starts, j)
        return cost

    def solve(relaxed: bool) -> list[int] | None:
        dp = np.full(n + 1, np.inf)
        dp[0] = 0.0
        parent = np.full(n + 1, -1)
        for j in range(1, n + 1):
            if not (ok[j] or relaxed):
                continue
            lo = int(np.searchsorted(w, w[j] - max_len, side="left"))
            hi = min(int(np.searchsorted(w, w[j] - min_len, side="right")) - 1, j - 1)
            if relaxed:
                lo, hi = min(lo, j - 1), j - 1
            if lo > hi:
                continue
            starts = np.arange(lo, hi + 1)
            cost = dp[starts] + edge_costs(starts, j)
            if relaxed:
                lens = w[j] - w[starts]
                broken = (lens < min_len).astype(float) + (lens > max_len) + float(not ok[j])
                cost += VIOLATION_PENALTY * broken
            k = int(np.argmin(cost))
            if np.isfinite(cost[k]):
                dp[j], parent[j] = cost[k], starts[k]
        if not np.isfinite(dp[n]):
            return None
        cuts, j = [], n
        while j > 0:
            j = int(parent[j])
            cuts.append(j)
        return sorted(cuts[:-1])

    cuts = solve(relaxed=False)
    if cuts is not None:
        return cuts
    msg = (
        f"no segmentation of {n} units with lengths in [{min_len}, {max_len}] avoids every "
        f"forbidden cut (a protected span or unit longer than max_len?)"
    )
    if on_infeasible == "raise":
        raise InfeasibleSegmentation(msg + "; pass on_infeasible='relax' or raise max_len")
    log.warning("dp_decode: %s; relaxing constraints at a penalty", msg)
    cuts = solve(relaxed=True)
    assert cuts is not None  # the relaxed DAG always has the path of one-unit chunks
    return cuts
