"""Naive fixed-size chunking: windows of word-piece tokens, each chunk embedded on its own.

The paper's baseline "naive, 256 tokens, 32 overlap". Sizes count word-pieces of the encoder's
own tokenizer over the whole ``Document.text`` (not whitespace words, which the encoder would
silently truncate), and every chunk is encoded INDEPENDENTLY (chunk-then-embed), which is what
late chunking is compared against.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk, register
from gralc.chunking.sentence_spans import (
    check_window,
    embed_independently,
    text_token_limit,
    token_windows,
)

if TYPE_CHECKING:
    from gralc.encoding.encoder import DocumentEncoder

NAME = "fixed"
log = logging.getLogger(__name__)


@dataclass
class FixedConfig:
    """The fixed-size baseline (``naive``, ``pipeline.chunking.fixed``): windows of ``size``
    tokens overlapping by ``overlap``.

    >>> FixedConfig(size=128).overlap
    32
    """

    #: tokens per chunk
    size: int = 256
    #: tokens shared by consecutive chunks
    overlap: int = 32

    def __post_init__(self) -> None:
        check_window("fixed", self.size, self.overlap)


@register(NAME)
class FixedSizeChunker:
    """Windows of ``size`` tokens with stride ``size - overlap``; the last may be shorter.

    Uses ``prepared.tokens.offsets`` when present (same tokens as late chunking), else
    tokenises ``doc.text`` with ``encoder.tokenizer``. Embeddings: ``encoder.encode_texts``
    of the chunk texts, float32 (d,), L2-normalised.

    Example: ``FixedSizeChunker(pipeline.encoder, size=128, overlap=16).chunk(prepared)`` -> the
    document's chunks of 128 word-pieces, each starting 16 before the previous one ends.
    """

    needs_tokens = False

    def __init__(self, encoder: DocumentEncoder, config: FixedConfig | None = None,
                 **settings: Any) -> None:
        """``config`` (default :class:`FixedConfig`), with ``settings`` (its fields by name)
        replacing its values."""
        cfg = replace(config or FixedConfig(), **settings)
        size, overlap = cfg.size, cfg.overlap
        limit = text_token_limit(encoder)
        if size > limit:
            log.warning(
                "fixed chunk size %d exceeds the %d tokens encoder.encode_texts embeds: the "
                "last %d tokens of each full chunk do not reach its embedding; use size <= %d "
                "to embed every token",
                size, limit, size - limit, limit,
            )
        self.encoder = encoder
        self.size = size
        self.overlap = overlap

    def chunk(self, prepared: PreparedDocument) -> list[Chunk]:
        """Chunks of ``prepared.doc`` in document order."""
        doc = prepared.doc
        offsets = prepared.offsets(self.encoder.tokenizer)
        locator = SectionLocator(doc)
        chunks = [
            make_chunk(
                prepared, NAME, i, int(offsets[ts, 0]), int(offsets[te - 1, 1]), ts, te,
                locator=locator,
            )
            for i, (ts, te) in enumerate(token_windows(0, len(offsets), self.size, self.overlap))
        ]
        embed_independently(self.encoder, chunks)
        return chunks
