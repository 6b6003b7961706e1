"""Late chunking with sentence boundaries: encode the whole document, then pool per chunk.

Boundaries really fall at sentence ends (the published code compared whitespace offsets with
token offsets, so its "sentence" boundaries never fired): whole sentence units (see
:mod:`gralc.chunking.sentence_spans`) are packed greedily into chunks of at most ``max_tokens``
word-pieces. A unit longer than ``max_tokens`` is split at token level (recorded as
``boundary_scores["forced_split"] = 1.0`` and logged). A chunk's vector is the mean of the
WHOLE-document contextual token vectors over its token span (late chunking), L2-normalised.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk, register
from gralc.chunking.sentence_spans import Unit, sentence_token_spans, token_windows

if TYPE_CHECKING:
    from gralc.encoding.encoder import DocumentEncoder

NAME = "late"
log = logging.getLogger(__name__)


def pack_units(units: list[Unit], max_tokens: int) -> list[tuple[int, int, bool]]:
    """Greedy packing of consecutive units into token ranges of <= ``max_tokens``.

    Returns ``(tok_start, tok_end, forced)``; ``forced`` marks pieces of a unit longer than
    ``max_tokens`` (split at token level, no overlap).

    >>> from gralc.chunking.sentence_spans import Unit
    >>> pack_units([Unit(0, 3, 0, 10), Unit(3, 5, 11, 20), Unit(5, 12, 21, 40)], max_tokens=6)
    [(0, 5, False), (5, 11, True), (11, 12, True)]
    """
    spans: list[tuple[int, int, bool]] = []
    start = end = None
    for u in units:
        if u.tok_end - u.tok_start > max_tokens:
            if start is not None:
                spans.append((start, end, False))
                start = end = None
            spans += [(s, e, True) for s, e in token_windows(u.tok_start, u.tok_end, max_tokens, 0)]
        elif start is not None and u.tok_end - start <= max_tokens:
            end = u.tok_end
        else:
            if start is not None:
                spans.append((start, end, False))
            start, end = u.tok_start, u.tok_end
    if start is not None:
        spans.append((start, end, False))
    return spans


@dataclass
class LateConfig:
    """Late chunking's spans over the whole-document token vectors
    (``pipeline.chunking.late``): sentences packed into spans of at most ``max_tokens``.

    >>> LateConfig().max_tokens
    256
    """

    #: tokens per chunk
    max_tokens: int = 256

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ValueError(f"late chunking max_tokens must be > 0, got {self.max_tokens}")


@register(NAME)
class LateChunker:
    """Sentence-aligned late chunking; needs ``prepared.tokens`` (computed with
    ``encoder.encode_document`` when absent).

    Example: ``LateChunker(pipeline.encoder).chunk(prepared)`` -> the chunks of sentences packed
    up to the token limit, each vector the mean of its tokens' whole-document embeddings.
    """

    needs_tokens = True

    def __init__(self, encoder: DocumentEncoder, config: LateConfig | None = None,
                 **settings: Any) -> None:
        """``config`` (default :class:`LateConfig`), with ``settings`` (its fields by name)
        replacing its values."""
        self.encoder = encoder
        self.max_tokens = replace(config or LateConfig(), **settings).max_tokens

    def chunk(self, prepared: PreparedDocument) -> list[Chunk]:
        """Chunks of ``prepared.doc`` in document order, embeddings float32 (d,)."""
        doc = prepared.doc
        tokens = prepared.tokens
        if tokens is None:
            tokens = self.encoder.encode_document(doc.text)
        offsets = tokens.offsets
        spans = pack_units(sentence_token_spans(doc, tokens), self.max_tokens)
        n_forced = sum(forced for _, _, forced in spans)
        if n_forced:
            log.info(
                "document %r: %d late chunks split inside a sentence longer than %d tokens",
                doc.id, n_forced, self.max_tokens,
            )
        locator = SectionLocator(doc)
        chunks = [
            make_chunk(
                prepared, NAME, i, int(offsets[ts, 0]), int(offsets[te - 1, 1]), ts, te,
                boundary_scores={"forced_split": float(forced)}, locator=locator,
            )
            for i, (ts, te, forced) in enumerate(spans)
        ]
        if chunks:
            pooled = self.encoder.pool_spans(tokens, [(ts, te) for ts, te, _ in spans])
            vecs = F.normalize(pooled.float(), dim=-1).cpu().numpy().astype(np.float32)
            for c, v in zip(chunks, vecs):
                c.embedding = v
        return chunks
