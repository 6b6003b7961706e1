"""Multiple-abstraction-level chunks (MAL-RAG): document, section, paragraph, sentence groups.

All four levels are returned together (``Chunk.level``), each on its own covering the
document's body, so single-level ablations stay possible: ``document`` (one chunk),
``section`` (every section of the tree, subsections included), ``paragraph`` (list items and
captions too) and ``sentences`` (groups of ``sentences_per_chunk`` sentences of a paragraph).

Higher levels are embedded from a summary (``summariser``, e.g. an LLM; by default extractive
and offline: the title and the ``summary_sentences`` sentences closest to the element's
centroid), lower levels late-pooled from ``prepared.tokens``; every chunk's char span is its
full extent and every vector L2-normalised float32 (d,). Details: docs/evaluation.md ("The
chunkers in detail").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk, register
from gralc.documents.model import Document, Sentence
from gralc.encoding.types import TokenEmbeddings
from gralc.knowledge.mention import token_span

if TYPE_CHECKING:
    from gralc.encoding.encoder import DocumentEncoder

NAME = "multilevel"
LEVELS = ("document", "section", "paragraph", "sentences")


@dataclass
class MultiLevelConfig:
    """MAL-RAG's levels (``pipeline.chunking.multilevel``).

    >>> MultiLevelConfig(sentences_per_chunk=2).summary_sentences
    3
    """

    #: consecutive sentences of a paragraph per finest-level chunk
    sentences_per_chunk: int = 3
    #: sentences of a document / section summary chunk
    summary_sentences: int = 3

    def __post_init__(self) -> None:
        if self.sentences_per_chunk <= 0 or self.summary_sentences <= 0:
            raise ValueError(
                "multilevel chunking needs sentences_per_chunk > 0 and summary_sentences > 0, "
                f"got {self.sentences_per_chunk} and {self.summary_sentences}"
            )


@register(NAME)
class MultiLevelChunker:
    """MAL-RAG four-level chunking; needs ``prepared.tokens`` (computed with
    ``encoder.encode_document`` when absent).

    Example: ``{c.level for c in MultiLevelChunker(pipeline.encoder).chunk(prepared)}`` ->
    ``{'document', 'section', 'paragraph', 'sentences'}``.
    """

    needs_tokens = True

    def __init__(
        self,
        encoder: DocumentEncoder,
        config: MultiLevelConfig | None = None,
        summariser: Callable[[str], str] | None = None,
        **settings: Any,
    ) -> None:
        """``config`` (default :class:`MultiLevelConfig`), with ``settings`` (its fields by
        name) replacing its values; ``summariser``: text -> summary (None: leading sentences)."""
        cfg = replace(config or MultiLevelConfig(), **settings)
        self.encoder = encoder
        self.sentences_per_chunk = cfg.sentences_per_chunk
        self.summary_sentences = cfg.summary_sentences
        self.summariser = summariser

    def chunk(self, prepared: PreparedDocument) -> list[Chunk]:
        """All levels, document first, then sections, paragraphs, sentence groups."""
        return self.chunk_with_summaries(prepared)[0]

    def chunk_with_summaries(
        self, prepared: PreparedDocument
    ) -> tuple[list[Chunk], dict[str, str]]:
        """Chunks, and the summary text embedded for each document/section chunk by chunk_id."""
        doc = prepared.doc
        tokens = prepared.tokens
        if tokens is None:
            tokens = self.encoder.encode_document(doc.text)
        if tokens.n_tokens == 0:
            return [], {}
        offsets = tokens.offsets
        locator = SectionLocator(doc)

        def chunk_of(level: str, index: int, start: int, end: int) -> Chunk:
            ts, te = token_span(offsets, start, end)
            return make_chunk(prepared, NAME, index, start, end, ts, te, level=level,
                              locator=locator)

        # higher levels: embedded from summaries
        titled = [(chunk_of("document", 0, 0, len(doc.text)), doc.title)]
        for i, sec in enumerate(doc.iter_sections()):
            titled.append((chunk_of("section", i, sec.start, sec.end), sec.title))
        titled = [(c, t) for c, t in titled if c.n_tokens > 0]
        high = [c for c, _ in titled]
        summaries = self._summaries(doc, tokens, titled)
        vecs = F.normalize(self.encoder.encode_texts(list(summaries.values())).float(), dim=-1)
        for c, v in zip(high, vecs.cpu().numpy().astype(np.float32)):
            c.embedding = v

        # lower levels: their own text, late-pooled
        low: list[Chunk] = []
        for p in doc.paragraphs:
            low.append(chunk_of("paragraph", len(low), p.start, p.end))
        n_par = len(low)
        k = self.sentences_per_chunk
        for p in doc.paragraphs:
            groups = [p.sentences[i : i + k] for i in range(0, len(p.sentences), k)]
            spans = [(g[0].start, g[-1].end) for g in groups] or [(p.start, p.end)]
            for start, end in spans:
                low.append(chunk_of("sentences", len(low) - n_par, start, end))
        low = [c for c in low if c.n_tokens > 0]
        if low:
            pooled = self.encoder.pool_spans(tokens, [(c.token_start, c.token_end) for c in low])
            for c, v in zip(low, F.normalize(pooled.float(), dim=-1).cpu().numpy()):
                c.embedding = v.astype(np.float32)
        return high + low, summaries

    # ----- summaries ----------------------------------------------------------------------
    def _summaries(
        self, doc: Document, tokens: TokenEmbeddings, titled: list[tuple[Chunk, str]]
    ) -> dict[str, str]:
        """Summary text per chunk_id of the (chunk, title) pairs, in their order."""
        if self.summariser is not None:
            return {c.chunk_id: self.summariser(c.text) for c, _ in titled}
        chunks = [c for c, _ in titled]
        sents, vecs = self._sentence_vectors(doc, tokens)
        starts = np.array([s.start for s in sents], dtype=np.int64)
        ends = np.array([s.end for s in sents], dtype=np.int64)
        centroids = F.normalize(
            self.encoder.pool_spans(tokens, [(c.token_start, c.token_end) for c in chunks]).float(),
            dim=-1,
        )
        out: dict[str, str] = {}
        for (c, title), centroid in zip(titled, centroids):
            inside = np.flatnonzero((starts >= c.char_start) & (ends <= c.char_end))
            if len(inside) == 0:
                out[c.chunk_id] = title or c.text
                continue
            scores = (vecs[inside] @ centroid).cpu().numpy()
            top = inside[np.argsort(-scores, kind="stable")[: self.summary_sentences]]
            picked = " ".join(doc.text[sents[i].start : sents[i].end] for i in sorted(top.tolist()))
            out[c.chunk_id] = f"{title}\n\n{picked}" if title else picked
        return out

    def _sentence_vectors(
        self, doc: Document, tokens: TokenEmbeddings
    ) -> tuple[list[Sentence], torch.Tensor]:
        """Sentences with at least one token, and their late-pooled unit vectors (S, d)."""
        sents, spans = [], []
        for s in doc.sentences:
            ts, te = token_span(tokens.offsets, s.start, s.end)
            if te > ts:
                sents.append(s)
                spans.append((ts, te))
        if not spans:
            return [], torch.zeros(0, tokens.vectors.shape[1])
        return sents, F.normalize(self.encoder.pool_spans(tokens, spans).float(), dim=-1)
