"""The lexical inputs of a trained model's score, built in one place for training, validation,
the trained scorer, the trained search and the evaluation rows.

:meth:`GraLCModel.score_parts` reads, besides the question and chunk vectors, up to four
matrices of raw scores of Q questions against K chunks (U sentence units): BM25 over the
chunks' texts (``lexical``), over the sentence units' texts (``unit_lexical``), over pairs of
consecutive terms (``phrase``) and over linked concept ids (``concepts``, in the unit of
:func:`~gralc.model.lexical.idf_scale`). :class:`ScoreTerms` says which of them a model's
config turns on; :class:`ScoreInputBuilder` computes them from the scorers of one set of
chunks, over texts (:meth:`ScoreInputBuilder.over_texts`: a training batch's chunks and
units) or over indexes built once (:mod:`gralc.retrieval.indexes.bm25`'s ``BM25Index``: an
evaluation's or a search's chunks). Either way the numbers are those of the one BM25 core
(:mod:`gralc.model.lexical`). The setting that turns on each: docs/training.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from gralc.model.lexical import (
    CONCEPT_BM25,
    PHRASE_BM25,
    TermStats,
    bm25_matrix,
    concept_terms,
    idf_scale,
)
from gralc.model.sparse_scores import PostingsRow, SparseScores

if TYPE_CHECKING:
    from gralc.model.chunk_set import ChunkSet, Spans
    from gralc.model.doc_features import DocFeatures
    from gralc.model.gralc_model import ModelConfig
    from gralc.model.scoring_config import ScoringConfig


class Scorer(Protocol):
    """BM25 of queries against a fixed set of texts (:class:`~gralc.model.lexical.BM25Scorer`,
    a ``BM25Index``, :class:`TextScorer`)."""

    def __len__(self) -> int: ...

    def score_matrix(self, queries: Sequence[str]) -> np.ndarray:
        """(Q, K) raw BM25 of every query against every text."""
        ...


@dataclass(frozen=True)
class ScoreTerms:
    """Which lexical inputs a score reads: ``lexical`` (BM25 over the chunks), ``units`` (BM25
    over the sentence units), ``phrase`` (term-pair BM25), ``concepts`` (the concept match)."""

    lexical: bool = False
    units: bool = False
    phrase: bool = False
    concepts: bool = False

    @classmethod
    def of(cls, config: ModelConfig, scoring: ScoringConfig | None = None) -> ScoreTerms:
        """The inputs a model with ``config`` and inference ``scoring`` (None: off, as in
        training) reads: the units' BM25 with sentence evidence and the lexical term; the
        concept match for ``concept_weight`` > 0 (its scores) or ``scoring.kg_prox_idf`` (its
        index's IDF, and its best chunks as a search's candidates).

        >>> from gralc.model.model_config import ModelConfig
        >>> ScoreTerms.of(ModelConfig(phrase_weight=0.05))
        ScoreTerms(lexical=False, units=False, phrase=True, concepts=False)
        """
        return cls(lexical=config.use_lexical,
                   units=config.use_lexical and config.sentence_evidence > 0,
                   phrase=config.phrase_weight > 0,
                   concepts=config.concept_weight > 0 or bool(scoring and scoring.kg_prox_idf))


@dataclass
class ScoreInputs:
    """Raw score inputs of Q questions (float64, None where not read): ``lexical``,
    ``phrase``, ``concepts`` (Q, K) and ``unit_lexical`` (Q, U), dense or
    :class:`~gralc.model.sparse_scores.SparseScores`; see the module docstring.
    :meth:`tensors` gives them as the keyword arguments of :meth:`GraLCModel.score_parts`."""

    lexical: np.ndarray | SparseScores | None = None
    unit_lexical: np.ndarray | SparseScores | None = None
    phrase: np.ndarray | SparseScores | None = None
    concepts: np.ndarray | SparseScores | None = None

    def select(self, i: int, rows: np.ndarray | None = None,
               unit_rows: np.ndarray | None = None) -> ScoreInputs:
        """Question ``i``'s inputs (1, ·), at chunk ``rows`` and ``unit_rows`` (None: all)."""
        def pick(x, cols):
            if x is None:
                return None
            row = x[i]
            if isinstance(row, PostingsRow):
                return (row.toarray() if cols is None else row.take(cols))[None]
            return (row if cols is None else row[cols])[None]

        return ScoreInputs(pick(self.lexical, rows), pick(self.unit_lexical, unit_rows),
                           pick(self.phrase, rows), pick(self.concepts, rows))

    def tensors(self, device: torch.device | str | None = None,
                dtype: torch.dtype | None = None) -> dict[str, torch.Tensor | None]:
        """``{lexical, unit_lexical, phrase, concepts}`` as tensors (``dtype``; None keeps
        float64) on ``device``."""
        out = {}
        for f in fields(self):
            x = getattr(self, f.name)
            if isinstance(x, SparseScores):
                x = np.asarray(x)
            if x is not None:
                x = torch.from_numpy(np.ascontiguousarray(x)) if dtype is None \
                    else torch.as_tensor(x, dtype=dtype)
                x = x.to(device) if device is not None else x
            out[f.name] = x
        return out


class TextScorer:
    """BM25 of queries against ``texts`` with term statistics from these texts, or for ``stats``
    from a whole corpus (:func:`~gralc.model.lexical.bm25_matrix`): a training batch."""

    def __init__(self, texts: Sequence[str], config=None, stats: TermStats | None = None) -> None:
        self.texts, self.config, self.stats = list(texts), config, stats

    def __len__(self) -> int:
        return len(self.texts)

    def score_matrix(self, queries: Sequence[str]) -> np.ndarray:
        """(Q, K) raw BM25 of every query against every text (:func:`bm25_matrix`)."""
        return bm25_matrix(queries, self.texts, self.config, self.stats)


class ScoreInputBuilder:
    """Builds :class:`ScoreInputs` for questions against one set of chunks: ``terms`` says
    which; ``lexical``, ``units``, ``phrase``, ``concepts`` are the :class:`Scorer` of each
    (over the chunks' texts, the units' texts, the chunks' texts as term pairs, the chunks'
    concept texts :func:`~gralc.model.lexical.concept_terms`); each term that is on needs its
    scorer."""

    def __init__(self, terms: ScoreTerms, lexical: Scorer | None = None, units: Scorer | None = None,
                 phrase: Scorer | None = None, concepts: Scorer | None = None) -> None:
        self.terms = terms
        self.lexical, self.units, self.phrase, self.concepts = lexical, units, phrase, concepts
        for name in ("lexical", "units", "phrase", "concepts"):
            if getattr(terms, name) and getattr(self, name) is None:
                raise ValueError(f"the score reads the {name} BM25: pass its scorer of the same chunks")

    @classmethod
    def over_texts(cls, terms: ScoreTerms, texts: Sequence[str], unit_texts: Sequence[str] | None = None,
                   concept_ids: Sequence[Sequence[str]] | None = None,
                   stats: TermStats | None = None) -> ScoreInputBuilder:
        """Scorers over the chunks' ``texts``, their sentence units' ``unit_texts`` and the
        concept ids inside each chunk (``concept_ids``), term statistics from these texts (a
        training batch; ``stats``: the lexical term's from a whole corpus instead)."""
        return cls(terms,
                   TextScorer(texts, stats=stats) if terms.lexical else None,
                   TextScorer(unit_texts or []) if terms.units else None,
                   TextScorer(texts, PHRASE_BM25) if terms.phrase else None,
                   TextScorer([concept_terms(c) for c in concept_ids or []], CONCEPT_BM25)
                   if terms.concepts else None)

    def build(self, questions: Sequence[str],
              concept_ids: Sequence[Sequence[str]] | None = None, sparse: bool = False) -> ScoreInputs:
        """The inputs of ``questions`` (their texts) with their linked ``concept_ids`` (the
        concept match); ``sparse``: each as :class:`~gralc.model.sparse_scores.SparseScores`
        (the same numbers, only the texts sharing a term; scorers with ``sparse_matrix``),
        what a search over a large corpus reads."""
        t = self.terms

        def matrix(scorer, queries):
            return scorer.sparse_matrix(queries) if sparse else scorer.score_matrix(queries)

        concepts = None
        if t.concepts:
            if concept_ids is None or len(concept_ids) != len(questions):
                raise ValueError("the concept match needs each question's linked concept ids")
            concepts = matrix(self.concepts, [concept_terms(q) for q in concept_ids])
            concepts = concepts.scaled(idf_scale(len(self.concepts))) if sparse \
                else concepts / idf_scale(len(self.concepts))
        return ScoreInputs(
            matrix(self.lexical, questions) if t.lexical else None,
            matrix(self.units, questions) if t.units else None,
            matrix(self.phrase, questions) if t.phrase else None,
            concepts)


def chunk_texts(docs: Sequence[DocFeatures], spans: Sequence[Spans]) -> list[str]:
    """The text of every span of ``spans`` (one list per document of ``docs``), in order."""
    return [f.doc.text[slice(*f.char_span(s, e))] for f, doc_spans in zip(docs, spans)
            for s, e in doc_spans]


def chunk_concept_ids(docs: Sequence[DocFeatures], chunks: ChunkSet) -> list[list[str]]:
    """The concept ids of every chunk of ``chunks`` (those with a mention inside it, as
    ``Chunk.entity_ids`` of an index), in chunk order."""
    from gralc.model.gralc_model import span_concepts

    out = []
    for f, spans in zip(docs, chunks.spans):
        rows, chunk_of = span_concepts(f.mention_tokens, spans)
        per: list[list[str]] = [[] for _ in spans]
        for r, k in zip(rows.tolist(), chunk_of.tolist()):
            per[k].append(f.concept_ids[r])
        out.extend(per)
    return out


def batch_inputs(config: ModelConfig, questions: Sequence[str], docs: Sequence[DocFeatures],
                 chunks: ChunkSet, question_concepts: Sequence[Sequence[str]] | None = None,
                 stats: TermStats | None = None) -> ScoreInputs:
    """The score inputs of ``questions`` against ``chunks`` (what the model made of ``docs``,
    with their sentence units where it scores with them), term statistics from these chunks
    (``stats``: the lexical term's from a whole corpus): training and validation."""
    terms = ScoreTerms.of(config)
    if chunks.units is None:  # chunks made without their units score without them
        terms = ScoreTerms(terms.lexical, False, terms.phrase, terms.concepts)
    builder = ScoreInputBuilder.over_texts(
        terms, chunk_texts(docs, chunks.spans),
        chunk_texts(docs, chunks.units.spans) if terms.units else None,
        chunk_concept_ids(docs, chunks) if terms.concepts else None, stats)
    return builder.build(questions, question_concepts)


__all__ = ["ScoreInputBuilder", "ScoreInputs", "ScoreTerms", "TextScorer", "batch_inputs",
           "chunk_concept_ids", "chunk_texts"]
