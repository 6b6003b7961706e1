"""A trained GraLC model at inference: it chunks documents and prepares what its score reads.

``TrainedScorer.load(ckpt_or_export)`` rebuilds the model; ``chunk(pipeline, prepared)``
runs ``model(features, soft=False)`` (the forward pass training runs with ``soft=True``):
hard boundaries with the LEARNED alpha / gamma / tau, each chunk the mean of its KG-enriched
token vectors (Eq. 4), and keeps each chunk's score inputs in a
:class:`~gralc.retrieval.trained.chunk_table.ChunkTable`. Scoring questions against the
chunks is :class:`~gralc.retrieval.trained.search.TrainedSearch`, the one trained search.

A model trained with LoRA adapters must be used with a pipeline built from its
``pipeline_config`` (its merged, adapted encoder; :meth:`TrainedScorer.chunk` refuses any
other) and embeds concepts with the BASE encoder (``concept_encoder``), as training did.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk
from gralc.knowledge.concept_embeddings import ConceptEmbedder
from gralc.model.chunk_set import ChunkSet
from gralc.model.doc_features import doc_features
from gralc.model.lexical import PHRASE_BM25
from gralc.model.query_features import QueryEncoder
from gralc.model.score_inputs import ScoreInputBuilder, ScoreInputs, ScoreTerms
from gralc.pipeline import Pipeline, PipelineConfig
from gralc.retrieval.indexes.bm25 import BM25Index
from gralc.retrieval.trained.chunk_table import ChunkTable
from gralc.retrieval.trained.concept_match import concept_index
from gralc.retrieval.trained.token_codec import TokenCodec, TokenCodecConfig

logger = logging.getLogger(__name__)
TABLE_DIR = "trained"  # the ChunkTable of an index built with a trained model


class TrainedScorer:
    """Chunking with a trained :class:`~gralc.model.gralc_model.GraLCModel`.

    :meth:`chunk` appends what the model makes of each batch of documents to :attr:`table`
    (a :class:`~gralc.retrieval.trained.chunk_table.ChunkTable`: the chunks' concepts, sentence units
    and token codes, stored with :attr:`token_codec`), the per-chunk score inputs a search
    gathers for its candidates (:class:`~gralc.retrieval.trained.search.TrainedSearch`).

        scorer = TrainedScorer.load("model/")
        chunks = scorer.chunk(Pipeline(scorer.pipeline_config), prepared)
    """

    def __init__(self, model, pipeline_config: PipelineConfig, source: str = "",
                 concept_embedder: ConceptEmbedder | None = None,
                 concept_encoder: str | None = None) -> None:
        """``concept_embedder``: share one (e.g. disk-cached) across scorers; default: a
        fresh in-memory one built on first use from ``concept_encoder`` (a model name or
        folder; None: the pipeline's encoder)."""
        self.model, self.pipeline_config, self.source = model.eval(), pipeline_config, source
        self.concept_encoder = concept_encoder
        self._embedder = concept_embedder
        #: how :meth:`chunk` stores token vectors (a config, or a trained codec to share)
        self.token_codec: TokenCodecConfig | TokenCodec = TokenCodecConfig()
        self.table = ChunkTable(self.token_codec)

    @property
    def n_chunks(self) -> int:
        """Chunks in :attr:`table`."""
        return self.table.n_chunks

    @property
    def uses_units(self) -> bool:
        """The model mixes sentence evidence into chunk scores (``model.sentence_evidence``)."""
        return self.model.config.sentence_evidence > 0

    @property
    def uses_tokens(self) -> bool:
        """The model mixes late interaction into chunk scores (``scoring.late_interaction``)."""
        return self.model.scoring.late_interaction > 0

    @classmethod
    def load(cls, path: str | Path, concept_embedder: ConceptEmbedder | None = None) -> TrainedScorer:
        """The scorer of a saved model (an export, checkpoint or run folder:
        :func:`~gralc.model.persistence.load_trained`)."""
        from gralc.model.persistence import load_trained

        t = load_trained(path)
        return cls(t.model, t.pipeline_config, str(path), concept_embedder, t.concept_encoder)

    @property
    def adapted(self) -> bool:
        """Trained with LoRA adapters: only its own (merged) encoder may encode for it."""
        return self.concept_encoder is not None

    def check_encoder(self, pipeline: Pipeline) -> None:
        """Raise when a LoRA-trained model is given a pipeline with another encoder."""
        from gralc.encoding.models import model_name

        expected = model_name(self.pipeline_config.encoder.model)
        if self.adapted and pipeline.encoder.model_id != expected:
            raise ValueError(
                f"{self.source or 'this model'} was trained with LoRA adapters: encode with its "
                f"adapted encoder {expected} (Pipeline(scorer.pipeline_config)), not "
                f"{pipeline.encoder.model_id}"
            )

    def embedder(self, pipeline: Pipeline) -> ConceptEmbedder:
        """The concept embedder: the one given, else one built on first use over
        ``concept_encoder`` (a LoRA-trained model's own encoder) or else ``pipeline``'s."""
        if self._embedder is None:
            encode = pipeline.encoder.encode_texts
            if self.concept_encoder is not None:
                from dataclasses import replace

                from gralc.encoding.encoder import DocumentEncoder

                cfg = replace(pipeline.config.encoder, model=self.concept_encoder, cache_dir=None)
                encode = DocumentEncoder(cfg).encode_texts
            self._embedder = ConceptEmbedder(encode)
        return self._embedder

    def learned_values(self) -> dict[str, float]:
        """The model's learned weights
        (:meth:`~gralc.model.gralc_model.GraLCModel.learned_values`)."""
        return self.model.learned_values()

    # ----- documents ----------------------------------------------------------------------
    @torch.no_grad()
    def chunk(self, pipeline: Pipeline, prepared: list[PreparedDocument], strategy: str = "gralc",
              reset: bool = True) -> list[Chunk]:
        """Chunks of every document with enriched vectors, from ``model(features,
        soft=False)``; fills the entity tables (``reset=False`` appends, so a corpus can be
        chunked batch by batch)."""
        self.check_encoder(pipeline)
        if reset:
            self.table = ChunkTable(self.token_codec)
        boundary_cfg = pipeline.config.chunking.boundary
        feats = [doc_features(p, pipeline, self.embedder(pipeline), boundary_cfg) for p in prepared]
        made = self.model(feats, soft=False, units=self.uses_units, tokens=self.uses_tokens)
        vecs = F.normalize(made.vectors, dim=-1).numpy().astype(np.float32)
        chunks: list[Chunk] = []
        for p, f, spans, b in zip(prepared, feats, made.spans, made.boundaries):
            locator = SectionLocator(p.doc)
            offsets = f.offsets.numpy()
            for i, (s, e) in enumerate(spans):
                c = make_chunk(p, strategy, i, int(offsets[s, 0]), int(offsets[e - 1, 1]), s, e,
                               boundary_scores={"score": float(b[s]) if s > 0 else 0.0}, locator=locator)
                c.embedding = vecs[len(chunks)]
                chunks.append(c)
        units = self._unit_records(prepared, feats, made, strategy) if made.units is not None else None
        self.table.add(made, units)
        return chunks

    @staticmethod
    def _unit_records(prepared, feats, made: ChunkSet, strategy: str) -> list[Chunk]:
        """One batch's sentence-unit records (level ``sentences``, their texts for BM25)."""
        out = []
        for p, f, spans in zip(prepared, feats, made.units.spans):
            locator = SectionLocator(p.doc)
            offsets = f.offsets.numpy()
            for i, (s, e) in enumerate(spans):
                out.append(make_chunk(p, strategy, i, int(offsets[s, 0]), int(offsets[e - 1, 1]), s, e,
                                      level="sentences", locator=locator))
        return out

    # ----- questions ----------------------------------------------------------------------
    @torch.no_grad()
    def query_entities_batch(self, pipeline: Pipeline, questions: list[str], with_ids: bool = False):
        """``(q_ent (Q, Emax, d'), q_mask (Q, Emax))`` of several questions, one GAT pass
        (``with_ids``: and each question's linked concept ids, third)."""
        encoder = QueryEncoder(pipeline, self.embedder(pipeline))
        batch = encoder.concepts_batch(questions)
        ents, mask = self.model.query_entities([c[1:] for c in batch])
        return (ents, mask, [c[0] for c in batch]) if with_ids else (ents, mask)

    @property
    def terms(self) -> ScoreTerms:
        """The lexical inputs the model's score reads (:class:`ScoreTerms`)."""
        return ScoreTerms.of(self.model.config, self.model.scoring)

    @property
    def lexical(self) -> bool:
        """The model scores with its learned lexical term: its BM25 over the chunks."""
        return self.terms.lexical

    @property
    def phrase(self) -> bool:
        """The model adds a term-pair BM25 (``model.phrase_weight`` > 0)."""
        return self.terms.phrase

    @property
    def concept(self) -> bool:
        """The model reads the concept match's index (``model.concept_weight`` > 0: its scores;
        ``scoring.kg_prox_idf``: its IDF)."""
        return self.terms.concepts

    def indexes(self, chunks: list[Chunk], lexical: bool = False) -> ScoreIndexes:
        """The BM25 indexes of ``chunks`` the model's score reads (``lexical``: the chunks'
        BM25 also for a model without the lexical term, e.g. for a fusion with it), as
        ``gralc.index --model`` builds and saves them."""
        t = self.terms
        return ScoreIndexes(_index(chunks) if t.lexical or lexical else None,
                            _index(chunks, PHRASE_BM25) if t.phrase else None,
                            concept_index(chunks) if t.concepts else None)

    def score_inputs(self, questions: list[str], indexes: ScoreIndexes,
                     concept_ids: list[list[str]] | None = None, terms: ScoreTerms | None = None,
                     sparse: bool = False) -> ScoreInputs:
        """The lexical inputs of the model's score (:mod:`gralc.model.score_inputs`) of
        ``questions`` (their linked ``concept_ids`` for the concept match) against the chunks
        of :meth:`chunk`: ``indexes`` of the same chunks, the sentence units' BM25 of
        :attr:`table`. ``terms``: which (default :attr:`terms`); ``sparse``: held sparsely
        (:meth:`ScoreInputBuilder.build`)."""
        terms = terms or self.terms
        units = self.table.finish().units.bm25 if terms.units else None
        return ScoreInputBuilder(terms, indexes.lexical, units, indexes.phrase,
                                 indexes.concepts).build(questions, concept_ids, sparse)

    # ----- persistence with an index --------------------------------------------------------
    def save_index_state(self, directory: Path, chunks: list[Chunk]) -> None:
        """Write :attr:`table` into ``directory/trained`` (an index being written, whose
        chunk records, row by row, are ``chunks``)."""
        (Path(directory) / TABLE_DIR).mkdir()
        self.table.save(Path(directory) / TABLE_DIR, chunks)

    def load_index_state(self, directory: Path, n_chunks: int) -> None:
        """Read the table of an index of ``n_chunks`` chunks (memory-mapped)."""
        folder = Path(directory) / TABLE_DIR
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} missing: the index was built by an older GraLC or "
                                    "without --model; rebuild it with --model")
        self.table = ChunkTable.load(folder, n_chunks)
        self._check_table(folder)

    def _check_table(self, folder: Path) -> None:
        if self.uses_units and self.table.units is None:
            raise FileNotFoundError(f"{folder}: no sentence units, but the model scores with sentence "
                                    "evidence; rebuild the index with --model")
        if self.uses_tokens and self.table.tokens is None:
            raise FileNotFoundError(f"{folder}: no token codes, but the model scores with late "
                                    "interaction; rebuild the index with --model")


@dataclass
class ScoreIndexes:
    """BM25 indexes of one set of chunks a trained model's score reads (None: not read):
    over their texts (``lexical``), as term pairs (``phrase``), over their concept ids
    (``concepts``, :func:`~gralc.retrieval.trained.concept_match.concept_index`)."""

    lexical: BM25Index | None = None
    phrase: BM25Index | None = None
    concepts: BM25Index | None = None


def _index(chunks: list[Chunk], config=None) -> BM25Index:
    index = BM25Index(config)
    index.index(chunks)
    return index
