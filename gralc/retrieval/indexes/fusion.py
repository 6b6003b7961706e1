"""Hybrid lexical + dense search: fuse two rankings of the same chunks into one.

Both inputs are one query's candidates, best first, as ``(chunk, score)`` pairs or Hits
over the SAME chunks; a chunk is identified by ``(doc_id, chunk_id)``.

* ``rrf`` (reciprocal-rank fusion, Cormack et al. 2009): ``sum over lists of
  1 / (rrf_k + rank)``, rank 1-based; a chunk missing from a list adds nothing. ``rrf_k=60``.
* ``weighted``: ``(1 - lexical_weight) * dense_norm + lexical_weight * lexical_norm``, each
  list's scores min-max normalised over that list's candidates for this query (all equal
  -> 1); a chunk missing from a list gets 0 there.

The fused list is ordered by the one ranking rule (:mod:`gralc.retrieval.ranking`); each
hit keeps ``dense``, ``lexical`` (raw scores, NaN when absent) and the fused score in
``components``. In full: docs/evaluation.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gralc.retrieval.hits import Candidate, Hit, as_hits
from gralc.retrieval.ranking import rank_chunks

METHODS = ("rrf", "weighted")


@dataclass
class FusionConfig:
    """``method``: rrf | weighted; ``rrf_k``: RRF's rank constant; ``lexical_weight``: weight of
    the normalised lexical score in ``weighted`` (0.8: chosen in every fold of a 5-fold
    cross-validation by article on COVID-QA dev, ``python -m gralc.experiments.hybrid_weight``); ``candidates``: depth searched in each list before fusing.

    >>> FusionConfig(method="rrf").rrf_k
    60
    """

    method: str = "weighted"
    rrf_k: int = 60
    lexical_weight: float = 0.8
    candidates: int = 100

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"fusion.method={self.method!r}: use one of {', '.join(METHODS)}")
        if not 0.0 <= self.lexical_weight <= 1.0:
            raise ValueError(f"fusion.lexical_weight={self.lexical_weight}: must lie in [0, 1]")
        if self.rrf_k < 0:
            raise ValueError(f"fusion.rrf_k={self.rrf_k}: must be >= 0")
        if self.candidates < 1:
            raise ValueError(f"fusion.candidates={self.candidates}: must be >= 1")


def _normalised(hits: list[Hit]) -> dict[tuple[str, str], float]:
    if not hits:
        return {}
    lo, hi = min(h.score for h in hits), max(h.score for h in hits)
    span = hi - lo
    return {(h.chunk.doc_id, h.chunk.chunk_id): (h.score - lo) / span if span > 0 else 1.0
            for h in hits}


def _reciprocal(hits: list[Hit], k: int) -> dict[tuple[str, str], float]:
    return {(h.chunk.doc_id, h.chunk.chunk_id): 1.0 / (k + rank)
            for rank, h in enumerate(rank_chunks(hits), start=1)}


def fuse(dense: Sequence[Candidate], lexical: Sequence[Candidate], config: FusionConfig,
         k: int | None = None) -> list[Hit]:
    """One query's fused ranking (module docstring), cut to ``k`` when given.

    >>> from gralc.chunking.chunk import Chunk
    >>> a, b = Chunk("d1", "c0", "x", 0, 1), Chunk("d2", "c0", "y", 0, 1)
    >>> [h.chunk.doc_id for h in fuse([(a, 0.9), (b, 0.8)], [(b, 7.0)], FusionConfig(method="rrf"))]
    ['d2', 'd1']
    """
    d_hits, l_hits = as_hits(dense), as_hits(lexical)
    chunks = {(h.chunk.doc_id, h.chunk.chunk_id): h.chunk for h in [*d_hits, *l_hits]}
    raw_d = {(h.chunk.doc_id, h.chunk.chunk_id): h.score for h in d_hits}
    raw_l = {(h.chunk.doc_id, h.chunk.chunk_id): h.score for h in l_hits}
    if config.method == "rrf":
        a, b = _reciprocal(d_hits, config.rrf_k), _reciprocal(l_hits, config.rrf_k)
        w_d, w_l = 1.0, 1.0
    else:
        a, b = _normalised(d_hits), _normalised(l_hits)
        w_d, w_l = 1.0 - config.lexical_weight, config.lexical_weight
    fused = []
    for key, chunk in chunks.items():
        score = w_d * a.get(key, 0.0) + w_l * b.get(key, 0.0)
        fused.append(Hit(chunk, score, {"dense": raw_d.get(key, math.nan),
                                        "lexical": raw_l.get(key, math.nan), "fused": score}))
    ranked = rank_chunks(fused)
    return ranked if k is None else ranked[:k]
