"""Structure-aware late chunking (GraLC-RAG strategy 4) and the DP sentence chunker (ASCM).

Both strategies encode the whole document once, score every cut position with Eq. 5-8
(:mod:`gralc.chunking.boundaries`), decode cuts (:mod:`gralc.chunking.decoders`) and represent
each chunk by mean-pooling the contextual token vectors over its span (late chunking).
Structure comes from the :class:`~gralc.documents.model.Document` sections, so PubMedQA's
context labels (BACKGROUND / METHODS / ...) count as section boundaries.
"""

from __future__ import annotations

from itertools import pairwise
from typing import TYPE_CHECKING

import numpy as np
import torch
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.boundaries import (
    BoundaryConfig,
    BoundarySignals,
    char_to_token_start,
    compute_signals,
    cut_allowed_mask,
    recommendation_evidence_pairs,
    word_start_mask,
)
from gralc.chunking.chunk import Chunk, register
from gralc.chunking.decoders import (
    EmbeddingCohesion,
    InteriorScoreCohesion,
    dp_decode,
    peak_decode,
    spans_from_cuts,
)
from gralc.chunking.sentence_spans import sentence_token_spans
from gralc.documents.model import Document
from gralc.encoding.types import TokenEmbeddings

if TYPE_CHECKING:
    from gralc.encoding.encoder import DocumentEncoder


def mean_pool(vectors: torch.Tensor, spans: list[tuple[int, int]]) -> torch.Tensor:
    """(K, d) means of ``vectors`` (N, d) over half-open token spans; differentiable.

    >>> mean_pool(torch.tensor([[1.0, 0.0], [3.0, 2.0], [5.0, 4.0]]), [(0, 2), (2, 3)])
    tensor([[2., 1.],
            [5., 4.]])
    """
    if not spans:
        return vectors.new_zeros(0, vectors.shape[1])
    return torch.stack([vectors[s:e].mean(dim=0) for s, e in spans])


class _LateChunker:
    """Shared plumbing: token embeddings, signals, pooling and chunk records."""

    name = ""
    needs_tokens = True

    def __init__(
        self, encoder: DocumentEncoder | None = None, config: BoundaryConfig | None = None
    ) -> None:
        self.encoder = encoder
        self.config = config or BoundaryConfig()

    def tokens(self, prepared: PreparedDocument) -> TokenEmbeddings:
        """``prepared.tokens``, or the encoder's ``encode_document(doc.text)``."""
        if prepared.tokens is not None:
            return prepared.tokens
        if self.encoder is None:
            raise ValueError(
                f"{self.name}: document {prepared.doc.id!r} has no token embeddings; pass an "
                "encoder to the chunker or fill PreparedDocument.tokens"
            )
        return self.encoder.encode_document(prepared.doc.text)

    def signals(self, prepared: PreparedDocument, tokens: TokenEmbeddings) -> BoundarySignals:
        return compute_signals(
            prepared.doc, tokens.vectors, tokens.offsets, prepared.mentions, self.config
        )

    def pool(self, vectors: torch.Tensor, spans: list[tuple[int, int]]) -> torch.Tensor:
        """Chunk vectors (K, d) from token vectors (N, d): the one place a learned model
        replaces (e.g. by pooling KG-enriched token vectors)."""
        return mean_pool(vectors, spans)

    def cut_tokens(
        self, prepared: PreparedDocument, tokens: TokenEmbeddings, signals: BoundarySignals
    ) -> list[int]:
        raise NotImplementedError

    def chunk(
        self, prepared: PreparedDocument, vectors_override: torch.Tensor | None = None
    ) -> list[Chunk]:
        """Chunks tiling the document's tokens. ``vectors_override`` (N, d) replaces the token
        vectors used for pooling (not for boundary scores)."""
        tokens = self.tokens(prepared)
        n = tokens.n_tokens
        if n == 0:
            return []
        signals = self.signals(prepared, tokens)
        spans = spans_from_cuts(self.cut_tokens(prepared, tokens, signals), n)
        vectors = tokens.vectors if vectors_override is None else vectors_override
        if vectors.shape[0] != n:
            raise ValueError(
                f"{self.name}: vectors_override has {vectors.shape[0]} rows for {n} tokens"
            )
        with torch.no_grad():
            pooled = F.normalize(self.pool(vectors, spans).float(), dim=1).cpu().numpy()
        locator = SectionLocator(prepared.doc)
        chunks = []
        for k, (s, e) in enumerate(spans):
            chunk = make_chunk(
                prepared,
                self.name,
                k,
                int(tokens.offsets[s, 0]),
                int(tokens.offsets[e - 1, 1]),
                token_start=s,
                token_end=e,
                boundary_scores=signals.components(s, self.config),
                locator=locator,
            )
            chunk.embedding = pooled[k]
            chunks.append(chunk)
        return chunks


@register("structure_aware")
class StructureAwareChunker(_LateChunker):
    """GraLC-RAG strategy 4: cuts at boundary-score peaks (``decoder="peak"``) or at the
    DP-optimal positions (``decoder="dp"``). Never cuts inside a word or an entity mention
    unless a span is longer than ``max_tokens``. Chunk embeddings are L2-normalised means of
    the token vectors; ``boundary_scores`` holds the score and components at the chunk's
    start cut (all 0 for the first chunk).

    Example: ``StructureAwareChunker(pipeline.encoder, decoder="dp").chunk(prepared)`` -> chunks cut
    at the DP-optimal boundaries, with ``boundary_scores`` of each start cut.
    """

    name = "structure_aware"

    def forbidden(self, doc: Document, tokens: TokenEmbeddings, signals: BoundarySignals) -> np.ndarray:
        """(N,) bool: cuts inside an entity mention, inside a word, or (``cut_unit=sentence``)
        inside a sentence."""
        allowed = cut_allowed_mask(doc, tokens.offsets, self.config.cut_unit)
        return (signals.entity_mask | ~allowed).numpy()

    def cut_tokens(
        self, prepared: PreparedDocument, tokens: TokenEmbeddings, signals: BoundarySignals
    ) -> list[int]:
        """Cut token positions: :func:`peak_decode` or :func:`dp_decode` (``config.decoder``) on
        the boundary scores; a :meth:`forbidden` position only where no span could stay within
        ``max_tokens`` otherwise."""
        cfg = self.config
        forbidden = self.forbidden(prepared.doc, tokens, signals)
        if cfg.decoder == "peak":
            return peak_decode(signals.score, cfg.tau, cfg.min_tokens, cfg.max_tokens, forbidden,
                               fallback=word_start_mask(tokens.offsets).numpy())
        return dp_decode(
            signals.score,
            allowed=~forbidden,
            min_len=cfg.min_tokens,
            max_len=cfg.max_tokens,
            target_len=cfg.dp_target_tokens,
            length_weight=cfg.dp_length_weight,
            cohesion=InteriorScoreCohesion(signals.sem),
            cohesion_weight=cfg.dp_cohesion_weight,
        )


@register("dp_sentences")
class DPSentenceChunker(_LateChunker):
    """ASCM on its own: DP-optimal cuts at sentence (and title) starts only.

    Units are the token ranges of titles and sentences (see :meth:`units`); lengths count
    tokens (``min_tokens`` / ``max_tokens`` / ``dp_target_tokens``). The gain of a cut is the Eq. 8 score at its token; cohesion is 1 - mean pairwise cosine of
    the units' pooled token vectors. Hard constraints (never cut): inside an entity mention,
    inside a list item, between a recommendation and its level-of-evidence sentence, and
    between a (document or section) title and its content.

    Example: ``Chunker("dp_sentences")(doc)`` or ``DPSentenceChunker(pipeline.encoder).chunk(prepared)``
    -> chunks that start only at sentence and title starts.
    """

    name = "dp_sentences"

    def units(
        self, doc: Document, tokens: TokenEmbeddings, signals: BoundarySignals
    ) -> tuple[np.ndarray, np.ndarray]:
        """Unit start tokens (U,) (first is 0) and whether a cut may precede each (U,) bool.

        Units are :func:`gralc.chunking.sentence_spans.sentence_token_spans` (titles,
        sentences, sentence-less paragraphs), the same units the late-chunking baseline packs.
        """
        offsets, n = tokens.offsets, tokens.n_tokens
        tok = lambda pos: char_to_token_start(offsets, pos)  # noqa: E731
        unit_starts = np.array([u.tok_start for u in sentence_token_spans(doc, tokens)])

        forbidden = signals.entity_mask.numpy().copy()
        for par in doc.paragraphs:
            if par.kind == "list_item":
                forbidden[tok(par.start) + 1 : tok(par.end)] = True
        after = [ev.start for _, ev in recommendation_evidence_pairs(doc)]
        titles = [(s.title_start, s.title_end) for s in doc.iter_sections()]
        after += [e for s, e in [(doc.title_start, doc.title_end), *titles] if e > s]
        for pos in after:  # the token right after a title, the first of an evidence sentence
            if tok(pos) < n:
                forbidden[tok(pos)] = True
        allowed = ~forbidden[unit_starts]
        allowed[0] = True
        return unit_starts, allowed

    def cut_tokens(
        self, prepared: PreparedDocument, tokens: TokenEmbeddings, signals: BoundarySignals
    ) -> list[int]:
        """Cut token positions: :func:`dp_decode` over the :meth:`units` (lengths in tokens,
        cohesion from their mean-pooled token vectors), each cut a unit's start token."""
        cfg = self.config
        unit_starts, allowed = self.units(prepared.doc, tokens, signals)
        bounds = np.append(unit_starts, tokens.n_tokens)
        unit_vectors = mean_pool(tokens.vectors.detach(), list(pairwise(bounds.tolist())))
        unit_cuts = dp_decode(
            signals.score.numpy()[unit_starts],
            allowed=allowed,
            min_len=cfg.min_tokens,
            max_len=cfg.max_tokens,
            target_len=cfg.dp_target_tokens,
            length_weight=cfg.dp_length_weight,
            cohesion=EmbeddingCohesion(unit_vectors),
            cohesion_weight=cfg.dp_cohesion_weight,
            unit_lengths=np.diff(bounds),
        )
        return [int(unit_starts[u]) for u in unit_cuts]
