"""The one tie-break rule of every ranker (searchers, re-rankers, trained scorer, metrics).

Order: score descending, then ``doc_id`` descending, then ``chunk_id`` descending (plain
string comparison; trec_eval's rule). :func:`rank_chunks` orders ``(chunk, score)`` pairs,
:func:`rank_order` the indices of a score vector, :func:`rank_matrix` a (Q, K) score matrix
row by row; all give the same order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

ChunkLike = Any  # Chunk | dict with doc_id / chunk_id | (Chunk | dict, score) | Hit


def _get(item: ChunkLike, name: str) -> Any:
    if isinstance(item, tuple):
        item = item[0]
    elif hasattr(item, "chunk"):  # a retrieval Hit
        item = item.chunk
    if isinstance(item, Mapping):
        return item[name]
    return getattr(item, name)


def tie_key(item: ChunkLike) -> tuple[str, str]:
    """``(doc_id, chunk_id)``: sorted DESCENDING among equal scores.

    >>> from gralc.chunking.chunk import Chunk
    >>> tie_key(Chunk("d1", "d1::c3", "x", 0, 1))
    ('d1', 'd1::c3')
    """
    return _get(item, "doc_id"), _get(item, "chunk_id")


def _score(item: Any) -> float:
    return item.score if hasattr(item, "chunk") else item[1]


def rank_chunks(chunk_scores: Iterable[tuple[ChunkLike, float]]) -> list[tuple[ChunkLike, float]]:
    """Order ``(chunk, score)`` pairs (or Hits) by score desc, then doc_id desc, chunk_id desc.

    >>> from gralc.chunking.chunk import Chunk
    >>> a, b = Chunk("d1", "c0", "x", 0, 1), Chunk("d2", "c0", "y", 0, 1)
    >>> [(c.doc_id, s) for c, s in rank_chunks([(a, 0.5), (b, 0.5)])]
    [('d2', 0.5), ('d1', 0.5)]
    """
    pairs = sorted(chunk_scores, key=tie_key, reverse=True)
    return sorted(pairs, key=lambda p: -float(_score(p)))  # stable: keeps the id order among ties


def rank_order(chunks: Sequence[ChunkLike], scores: np.ndarray, k: int | None = None) -> list[int]:
    """Indices of the top ``k`` (all when None) of ``scores`` (shape (n,), one per chunk) in
    the rule's order; every chunk tied with the k-th score is considered before the cut.

    >>> from gralc.chunking.chunk import Chunk
    >>> chunks = [Chunk(d, "c0", "x", 0, 1) for d in ("d1", "d2", "d3")]
    >>> rank_order(chunks, np.array([0.5, 0.9, 0.5]), k=2)
    [1, 2]
    """
    scores = np.asarray(scores, dtype=np.float64)
    n = len(scores)
    if n != len(chunks):
        raise ValueError(f"{n} scores for {len(chunks)} chunks")
    if n == 0:
        return []
    k = n if k is None else min(k, n)
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        rows = np.flatnonzero(scores >= kth)
    else:
        rows = np.arange(n)
    rows = sorted(rows.tolist(), key=lambda i: tie_key(chunks[i]), reverse=True)
    rows.sort(key=lambda i: -scores[i])
    return rows[:k]


def rank_matrix(scores: torch.Tensor, keys: Sequence[Any]) -> torch.Tensor:
    """(Q, K) column indices ordering each row of ``scores`` (Q, K) by the rule: score
    descending, then ``keys[j]`` descending (``(doc_id, chunk_id)`` or ``(doc_id, position)``
    when positions order a document's chunks, as in Lightning validation). On CPU.

    >>> rank_matrix(torch.tensor([[0.5, 0.9, 0.5]]), [("d1", "c0"), ("d2", "c0"), ("d3", "c0")])
    tensor([[1, 2, 0]])
    """
    perm = torch.tensor(sorted(range(len(keys)), key=lambda j: keys[j], reverse=True),
                        dtype=torch.long)
    order = torch.argsort(scores[:, perm.to(scores.device)], dim=1, descending=True, stable=True)
    return perm[order.cpu()]
