"""Semantic chunking (SemRAG, Algorithm 1): cut where adjacent sentences stop being similar.

Each sentence unit (:mod:`gralc.chunking.sentence_spans`) is embedded with its ``buffer_size``
neighbours on each side (BufferMerge); a boundary falls between units whose buffered
similarity is below ``threshold`` (the paper's 0.75) or, with ``percentile``, below that
percentile of the document's own; groups longer than ``max_tokens`` are split into sub-chunks
overlapping by ``sub_overlap`` tokens (SplitWithOverlap).

``groups`` (``"pooled"``: units encoded once, a group is the mean of its units' pieces;
``"encoded"``: every buffered group encoded, SemRAG to the letter) and ``chunk_vectors``
(``"encoded"`` or ``"pooled"``) choose how vectors are made; every text is encoded from at most
``encode_max_length`` word-pieces (default: the model card's ``max_seq_length``). Details:
docs/evaluation.md ("The chunkers in detail"); the measurements behind the defaults:
docs/log.md. Speed: ``python -m bench.index``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk, register
from gralc.chunking.sentence_spans import (
    Unit,
    check_window,
    embed_independently,
    embed_length,
    sentence_token_spans,
    token_windows,
)

if TYPE_CHECKING:
    from gralc.encoding.encoder import DocumentEncoder

NAME = "semantic"
log = logging.getLogger(__name__)


@dataclass
class SemanticConfig:
    """SemRAG's semantic chunking (``pipeline.chunking.semantic``); ``encode_max_length`` is
    checked against the encoder when the chunker is built.

    >>> SemanticConfig(percentile=90).threshold
    0.75
    """

    #: cut where consecutive buffered sentence groups are less similar than this (cosine)
    threshold: float = 0.75
    #: instead of threshold: cut below this percentile of the document's own similarities
    percentile: float | None = None
    #: sentences merged on each side of a sentence before comparing (SemRAG's buffer)
    buffer_size: int = 1
    #: longer groups are split into sub-chunks of at most this many tokens
    max_tokens: int = 1024
    #: tokens shared by those sub-chunks
    sub_overlap: int = 128
    #: buffered sentence groups: "pooled" from one encoding of each sentence, or "encoded"
    #: as text on their own (SemRAG to the letter, ~3x the sentence pass for buffer_size 1)
    groups: str = "pooled"
    #: chunk vectors: "encoded" (each chunk's text on its own) or "pooled" from the sentences
    chunk_vectors: str = "encoded"
    #: word-pieces (special tokens included) of every text it encodes (sentences, groups,
    #: chunks): null = the model card's max_seq_length (256 for MiniLM, as sentence-
    #: transformers' encode() truncates), at most the model's context (512 for MiniLM)
    encode_max_length: int | None = None

    def __post_init__(self) -> None:
        for key, value in (("groups", self.groups), ("chunk_vectors", self.chunk_vectors)):
            if value not in ("pooled", "encoded"):
                raise ValueError(
                    f"semantic chunking {key} must be 'pooled' or 'encoded', got {value!r}"
                )
        if self.percentile is not None and not 0 <= self.percentile <= 100:
            raise ValueError(
                f"semantic chunking percentile must be in [0, 100], got {self.percentile}")
        if self.buffer_size < 0:
            raise ValueError(f"semantic chunking buffer_size must be >= 0, got {self.buffer_size}")
        check_window("semantic", self.max_tokens, self.sub_overlap, "max_tokens", "sub_overlap")


@register(NAME)
class SemanticChunker:
    """Similarity-threshold chunking over buffered sentence embeddings.

    ``boundary_scores`` of a chunk: ``similarity`` (buffered cosine similarity across the
    boundary before it; absent for a document's first chunk and for sub-chunks),
    ``threshold`` (the cut-off used) and ``sub_chunk`` (1.0 for pieces of an over-long group).

    Example: ``SemanticChunker(pipeline.encoder).chunk(prepared)[1].boundary_scores`` ->
    ``{'similarity': ..., 'threshold': ..., 'sub_chunk': 0.0}`` (the cut before the second chunk).
    """

    needs_tokens = False

    def __init__(self, encoder: DocumentEncoder, config: SemanticConfig | None = None,
                 **settings: Any) -> None:
        """``config`` (default :class:`SemanticConfig`), with ``settings`` (its fields by name)
        replacing its values."""
        cfg = replace(config or SemanticConfig(), **settings)
        max_tokens, chunk_vectors = cfg.max_tokens, cfg.chunk_vectors
        encode_max_length = cfg.encode_max_length
        specials = encoder.tokenizer.num_special_tokens_to_add(pair=False)
        context = embed_length(encoder)
        if encode_max_length is None:
            encode_max_length = min(encoder.query_max_length, context)
        if not specials < encode_max_length <= context:
            raise ValueError(
                f"semantic chunking encode_max_length must be in ({specials}, {context}] for "
                f"{encoder.model_id} (word-pieces incl. special tokens), got "
                f"{encode_max_length}; use null for the model card's max_seq_length"
            )
        limit = encode_max_length - specials
        if chunk_vectors == "encoded" and max_tokens > limit:
            log.info(
                "semantic chunks may reach max_tokens=%d word-pieces; their vectors are encoded "
                "from the first %d (encode_max_length=%d; at most %d)",
                max_tokens, limit, encode_max_length, context,
            )
        self.encoder = encoder
        self.threshold = cfg.threshold
        self.percentile = cfg.percentile
        self.buffer_size = cfg.buffer_size
        self.max_tokens = max_tokens
        self.sub_overlap = cfg.sub_overlap
        self.groups = cfg.groups
        self.chunk_vectors = chunk_vectors
        self.encode_max_length = encode_max_length

    def similarities(self, text: str, units: list[Unit]) -> np.ndarray:
        """(len(units) - 1,) cosine similarity of each unit's buffered embedding with the next."""
        if len(units) < 2:
            return np.zeros(0, dtype=np.float32)
        if self.groups == "pooled":
            return self._similarities_pooled(self._unit_vectors(text, units))
        b, last = self.buffer_size, len(units) - 1
        buffered = [
            text[units[max(0, i - b)].char_start : units[min(last, i + b)].char_end]
            for i in range(len(units))
        ]
        z = F.normalize(
            self.encoder.encode_texts(buffered, max_length=self.encode_max_length).float(), dim=-1
        )
        return (z[:-1] * z[1:]).sum(-1).cpu().numpy()

    def _unit_vectors(self, text: str, units: list[Unit]) -> UnitVectors:
        return UnitVectors.encode(self.encoder, text, units, self.encode_max_length)

    def _similarities_pooled(self, unit_vectors: UnitVectors) -> np.ndarray:
        units, b, last = unit_vectors.units, self.buffer_size, len(unit_vectors.units) - 1
        z = unit_vectors.pool([
            (units[max(0, i - b)].tok_start, units[min(last, i + b)].tok_end)
            for i in range(len(units))
        ])
        return (z[:-1] * z[1:]).sum(-1).astype(np.float32)

    def cutoff(self, sims: np.ndarray) -> float:
        """Similarity below which a boundary is placed."""
        if self.percentile is None or len(sims) == 0:
            return float(self.threshold)
        return float(np.percentile(sims, self.percentile))

    def chunk(self, prepared: PreparedDocument) -> list[Chunk]:
        """Chunks of ``prepared.doc`` in document order."""
        doc = prepared.doc
        offsets = prepared.offsets(self.encoder.tokenizer)
        units = sentence_token_spans(doc, offsets)
        if not units:
            return []
        unit_vectors = None
        if "pooled" in (self.groups, self.chunk_vectors):
            unit_vectors = self._unit_vectors(doc.text, units)
        if self.groups == "pooled" and len(units) > 1:
            sims = self._similarities_pooled(unit_vectors)
        else:
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
        if self.chunk_vectors == "encoded":
            embed_independently(self.encoder, chunks, self.encode_max_length)
        else:
            vecs = unit_vectors.pool([(c.token_start, c.token_end) for c in chunks])
            for c, v in zip(chunks, vecs):
                c.embedding = v
        return chunks


class UnitVectors:
    """Each unit's own mean-pooled vector and position count, pooled over token ranges.

    ``means`` (U, d) float64, ``counts`` (U,) float64 (the encoder's positions per unit,
    special tokens included), ``units`` the token ranges they came from.

    Example: ``UnitVectors.encode(encoder, doc.text, units, 512).pool([(0, 40)])`` -> (1, d): the
    L2-normalised count-weighted mean of the units inside tokens 0-40.
    """

    def __init__(self, units: list[Unit], means: np.ndarray, counts: np.ndarray) -> None:
        self.units, self.means, self.counts = units, means, counts
        self._starts = np.array([u.tok_start for u in units])
        self._ends = np.array([u.tok_end for u in units])

    @classmethod
    def encode(
        cls, encoder: DocumentEncoder, text: str, units: list[Unit], max_length: int
    ) -> UnitVectors:
        """Encode every unit's text once, on its own, from at most ``max_length`` word-pieces
        (special tokens included)."""
        means, counts = encoder.mean_pool_texts(
            [text[u.char_start : u.char_end] for u in units], max_length=max_length
        )
        return cls(units, means.double().numpy(), counts.double().numpy())

    def pool(self, spans: list[tuple[int, int]]) -> np.ndarray:
        """(len(spans), d) float32 L2-normalised vectors of half-open token ranges: the
        count-weighted mean of the unit means, each unit weighted by its count times the
        share of its tokens inside the range."""
        out = np.zeros((len(spans), self.means.shape[1]), dtype=np.float64)
        lengths = self._ends - self._starts
        for k, (s, e) in enumerate(spans):
            # only the units the range overlaps (the others weigh 0): O(units inside), not
            # O(all units), per range, so a long document's pooling is not quadratic
            a = int(np.searchsorted(self._ends, s, side="right"))
            b = max(a, int(np.searchsorted(self._starts, e, side="left")))
            ends, starts = self._ends[a:b], self._starts[a:b]
            inside = np.clip(np.minimum(ends, e) - np.maximum(starts, s), 0, None)
            w = self.counts[a:b] * inside / lengths[a:b]
            out[k] = w @ self.means[a:b] / max(w.sum(), 1e-12)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return (out / np.clip(norms, 1e-12, None)).astype(np.float32)
