"""Semantic chunking (SemRAG, Algorithm 1): cut where adjacent sentences stop being similar.

Each sentence unit (see :mod:`gralc.chunking.sentence_spans`) is embedded together with its
``buffer_size`` neighbours on each side (SemRAG's BufferMerge); a boundary is placed between
units ``i`` and ``i+1`` when the cosine similarity of their buffered embeddings is below
``threshold`` (the paper's 0.75), or, when ``percentile`` is set, below that percentile of the
document's own similarities. Groups longer than ``max_tokens`` are split into sub-chunks that
overlap by ``sub_overlap`` tokens (SplitWithOverlap). Chunks are embedded independently.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk, register
from gralc.chunking.sentence_spans import (
    Unit,
    embed_independently,
    embed_length,
    sentence_token_spans,
    text_token_limit,
    token_windows,
    tokenize_offsets,
)

if TYPE_CHECKING:
    from gralc.encoding.encoder import DocumentEncoder

NAME = "semantic"
log = logging.getLogger(__name__)


@register(NAME)
class SemanticChunker:
    """Similarity-threshold chunking over buffered sentence embeddings.

    ``boundary_scores`` of a chunk: ``similarity`` (buffered cosine similarity across the
    boundary before it; absent for a document's first chunk and for sub-chunks),
    ``threshold`` (the cut-off used) and ``sub_chunk`` (1.0 for pieces of an over-long group).
    """

    needs_tokens = False

    def __init__(
        self,
        encoder: DocumentEncoder,
        threshold: float = 0.75,
        percentile: float | None = None,
        buffer_size: int = 1,
        max_tokens: int = 1024,
        sub_overlap: int = 128,
    ) -> None:
        if percentile is not None and not 0 <= percentile <= 100:
            raise ValueError(f"semantic chunking percentile must be in [0, 100], got {percentile}")
        if buffer_size < 0:
            raise ValueError(f"semantic chunking buffer_size must be >= 0, got {buffer_size}")
        if max_tokens <= 0 or not 0 <= sub_overlap < max_tokens:
            raise ValueError(
                f"semantic chunking needs 0 <= sub_overlap < max_tokens, got "
                f"max_tokens={max_tokens}, sub_overlap={sub_overlap}"
            )
        limit = text_token_limit(encoder)
        if max_tokens > limit:
            log.warning(
                "semantic max_tokens=%d exceeds the encoder's %d tokens: longer chunks are "
                "embedded from their first %d tokens only",
                max_tokens, limit, limit,
            )
        self.encoder = encoder
        self.threshold = threshold
        self.percentile = percentile
        self.buffer_size = buffer_size
        self.max_tokens = max_tokens
        self.sub_overlap = sub_overlap

    def similarities(self, text: str, units: list[Unit]) -> np.ndarray:
        """(len(units) - 1,) cosine similarity of each unit's buffered embedding with the next."""
        if len(units) < 2:
            return np.zeros(0, dtype=np.float32)
        b, last = self.buffer_size, len(units) - 1
        buffered = [
            text[units[max(0, i - b)].char_start : units[min(last, i + b)].char_end]
            for i in range(len(units))
        ]
        z = F.normalize(self.encoder.encode_texts(
            buffered, max_length=embed_length(self.encoder)
        ).float(), dim=-1)
        return (z[:-1] * z[1:]).sum(-1).cpu().numpy()

    def cutoff(self, sims: np.ndarray) -> float:
        """Similarity below which a boundary is placed."""
        if self.percentile is None or len(sims) == 0:
            return float(self.threshold)
        return float(np.percentile(sims, self.percentile))

    def chunk(self, prepared: PreparedDocument) -> list[Chunk]:
        """Chunks of ``prepared.doc`` in document order."""
        doc = prepared.doc
        if prepared.tokens is not None:
            offsets = prepared.tokens.offsets
        else:
            offsets = tokenize_offsets(self.encoder.tokenizer, doc.text)
        units = sentence_token_spans(doc, offsets)
        if not units:
            return []
        sims = self.similarities(doc.text, units)
        cut = self.cutoff(sims)
        # groups of consecutive units: (first unit, last unit + 1, similarity before the group)
        groups: list[tuple[int, int, float | None]] = []
        first, before = 0, None
        for i, s in enumerate(sims):
            if s < cut:
                groups.append((first, i + 1, before))
                first, before = i + 1, float(s)
        groups.append((first, len(units), before))

        locator = SectionLocator(doc)
        chunks: list[Chunk] = []
        for g0, g1, before in groups:
            ts, te = units[g0].tok_start, units[g1 - 1].tok_end
            pieces = token_windows(ts, te, self.max_tokens, self.sub_overlap)
            for k, (ps, pe) in enumerate(pieces):
                scores = {"threshold": cut, "sub_chunk": float(len(pieces) > 1)}
                if before is not None and k == 0:
                    scores["similarity"] = before
                chunks.append(
                    make_chunk(
                        prepared, NAME, len(chunks), int(offsets[ps, 0]), int(offsets[pe - 1, 1]),
                        ps, pe, boundary_scores=scores, locator=locator,
                    )
                )
        embed_independently(self.encoder, chunks)
        return chunks
