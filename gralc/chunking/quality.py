"""Chunk quality metrics of ASCM: SCS, EPR and ERL.

Chunks are given as :class:`~gralc.chunking.chunk.Chunk` records or as half-open character
spans ``(start, end)`` into ``Document.text``. A metric returns ``None`` when it is undefined
for the input (nothing to measure), never a made-up 1.0.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

import numpy as np
import torch

from gralc.chunking.chunk import Chunk
from gralc.documents.model import Sentence
from gralc.knowledge.mention import EntityMention

Spans = Sequence[Chunk] | Sequence[tuple[int, int]]


def _spans(chunks: Spans) -> list[tuple[int, int]]:
    out = [
        (c.char_start, c.char_end) if isinstance(c, Chunk) else (int(c[0]), int(c[1]))
        for c in chunks
    ]
    return sorted(out)


def _containing(spans: list[tuple[int, int]], start: int, end: int) -> int | None:
    """Index of a span containing all of ``[start, end)``, else None (spans sorted, disjoint)."""
    k = bisect_right([s for s, _ in spans], start) - 1
    if k >= 0 and spans[k][0] <= start and end <= spans[k][1]:
        return k
    return None


def semantic_coherence(
    chunks: Spans,
    sentences: Sequence[Sentence] | Sequence[tuple[int, int]],
    sentence_vectors: np.ndarray | torch.Tensor,
) -> float | None:
    """SCS: mean over chunks of the mean cosine similarity of all distinct sentence pairs in
    the chunk.

    A sentence belongs to the chunk whose character span contains its first character;
    ``sentence_vectors`` (S, d) are row-aligned with ``sentences``. Chunks with fewer than
    two sentences have no pair and are left out; ``None`` if no chunk has a pair.

    >>> round(semantic_coherence([(0, 20)], [(0, 9), (10, 20)], np.array([[1.0, 0.0], [0.6, 0.8]])), 6)
    0.6
    """
    vecs = np.asarray(
        sentence_vectors.detach().cpu()
        if isinstance(sentence_vectors, torch.Tensor)
        else sentence_vectors,
        dtype=np.float64,
    )
    if len(vecs) != len(sentences):
        raise ValueError(f"semantic_coherence: {len(vecs)} vectors for {len(sentences)} sentences")
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    spans = _spans(chunks)
    members: dict[int, list[int]] = {}
    for row, sent in enumerate(sentences):
        start = sent.start if isinstance(sent, Sentence) else int(sent[0])
        k = _containing(spans, start, start + 1)
        if k is not None:
            members.setdefault(k, []).append(row)
    per_chunk = []
    for rows in members.values():
        if len(rows) >= 2:
            sim = vecs[rows] @ vecs[rows].T
            n = len(rows)
            per_chunk.append((sim.sum() - np.trace(sim)) / (n * (n - 1)))
    return float(np.mean(per_chunk)) if per_chunk else None


def entity_preservation_rate(chunks: Spans, mentions: Sequence[EntityMention]) -> float | None:
    """EPR: share of entity mentions lying entirely inside one chunk.

    Mentions that overlap no chunk at all (text no chunk covers) are left out; ``None`` if no
    mention is left.

    >>> entity_preservation_rate([(0, 10), (10, 20)], [EntityMention(2, 8, "D1", "x", "x"),
    ...                                                 EntityMention(8, 12, "D2", "y", "y")])
    0.5
    """
    spans = _spans(chunks)
    kept = total = 0
    for m in mentions:
        if not any(s < m.end and m.start < e for s, e in spans):
            continue
        total += 1
        kept += _containing(spans, m.start, m.end) is not None
    return kept / total if total else None


def recommendation_evidence_linking_rate(
    chunks: Spans, pairs: Sequence[tuple[Sentence, Sentence]]
) -> float | None:
    """ERL: share of (recommendation, level-of-evidence) sentence pairs whose two sentences
    end up in the same chunk (from the recommendation's first character to the evidence's
    last). ``None`` when there are no pairs (see
    :func:`gralc.chunking.boundaries.recommendation_evidence_pairs`).

    >>> rec, ev = Sentence(0, 30, "p1"), Sentence(31, 52, "p1")
    >>> recommendation_evidence_linking_rate([(0, 52)], [(rec, ev)]), recommendation_evidence_linking_rate([(0, 31), (31, 52)], [(rec, ev)])
    (1.0, 0.0)
    """
    if not pairs:
        return None
    spans = _spans(chunks)
    kept = sum(_containing(spans, rec.start, ev.end) is not None for rec, ev in pairs)
    return kept / len(pairs)
