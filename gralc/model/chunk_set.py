"""What the model makes of documents: their chunks as vectors plus the chunks' entity table."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

Spans = list[tuple[int, int]]


@dataclass
class ChunkSet:
    """K chunks (of one or more documents, in order) with M (concept, chunk) entity rows.

    ``vectors`` (K, d): pooled (enriched) token vectors; ``entity_vectors`` (M, d'): the
    concept vectors u' of every concept with a mention inside a chunk, ``entity_chunk`` (M,)
    int64 the chunk row each belongs to; ``spans``: per document its token spans
    ``[start, end)``; ``boundaries``: per document its boundary scores b (N,), detached.
    ``spans`` / ``boundaries`` are empty for a set rebuilt from an index. ``units``: the
    sentence units of :mod:`gralc.model.sentence_evidence` as a ChunkSet of their own, with
    ``unit_pairs`` (2, P) int64 rows (chunk row, unit row) of every overlapping pair; None when
    the chunks are scored alone. ``token_vectors`` (T, d) / ``token_chunk`` (T,) int64: the
    chunks' unit-length token vectors and the chunk row of each, for late interaction
    (:mod:`gralc.model.late_interaction`); None when not kept.

    >>> cs = ChunkSet(vectors=torch.zeros(3, 4), entity_vectors=torch.zeros(1, 2), entity_chunk=torch.tensor([2]))
    >>> cs.n_chunks
    3
    """

    vectors: torch.Tensor
    entity_vectors: torch.Tensor
    entity_chunk: torch.Tensor
    spans: list[Spans] = field(default_factory=list)
    boundaries: list[torch.Tensor] = field(default_factory=list)
    units: ChunkSet | None = None
    unit_pairs: torch.Tensor | None = None
    token_vectors: torch.Tensor | None = None
    token_chunk: torch.Tensor | None = None

    @property
    def n_chunks(self) -> int:
        """Number of chunks K (rows of ``vectors``)."""
        return int(self.vectors.shape[0])

    @property
    def starts(self) -> list[int]:
        """Row of each document's first chunk."""
        out, k = [], 0
        for spans in self.spans:
            out.append(k)
            k += len(spans)
        return out
