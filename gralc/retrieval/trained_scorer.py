"""A trained GraLC model at inference: chunk documents, score questions.

``TrainedScorer.load(ckpt_or_export)`` rebuilds the model; ``chunk(pipeline, prepared)``
runs ``model(features, soft=False)`` (the forward pass training runs with ``soft=True``):
hard boundaries with the LEARNED alpha / gamma / tau, each chunk the mean of its KG-enriched
token vectors (Eq. 4); ``score_all`` gives the model's own hybrid score beta * cos +
(1 - beta) * kg_prox of a question against EVERY chunk (not a re-ranking of a dense top-k, so
Recall@k can change; reference pitfall 9).

A model trained with LoRA adapters on the encoder must be used with a pipeline built from
its ``pipeline_config`` (the merged, adapted encoder; :meth:`TrainedScorer.chunk` refuses any
other encoder), and embeds concepts with the BASE encoder (``concept_encoder``), as training
did.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk
from gralc.knowledge.concept_embeddings import ConceptEmbedder
from gralc.model.chunk_set import ChunkSet
from gralc.model.doc_features import doc_features
from gralc.model.query_features import QueryEncoder
from gralc.pipeline import Pipeline, PipelineConfig
from gralc.retrieval.hits import Hit
from gralc.retrieval.ranking import rank_order

logger = logging.getLogger(__name__)
ENTITY_FILE = "chunk_entities.safetensors"
UNITS_FILE = "sentence_units.safetensors"
UNIT_CHUNKS_FILE = "sentence_units.jsonl"
TOKENS_FILE = "chunk_tokens.safetensors"


class TrainedScorer:
    """Chunking and scoring with a trained :class:`~gralc.model.gralc_model.GraLCModel`.

    After :meth:`chunk`, ``entity_vectors`` (M, d') holds the GAT outputs u' of the concepts
    inside each chunk and ``entity_chunk`` (M,) the chunk row each belongs to. A model with
    ``sentence_evidence`` > 0 also keeps its sentence units (:mod:`gralc.model.sentence_evidence`):
    ``unit_chunks`` (U records, level ``sentences``), their :class:`ChunkSet` ``units`` and
    ``unit_pairs`` (2, P) rows (chunk row, unit row); their BM25 is built on first use. A
    model with ``late_interaction`` > 0 also keeps the chunks' token vectors
    ``token_vectors`` (T, d) and their chunk rows ``token_chunk`` (T,)
    (:mod:`gralc.model.late_interaction`; 4 bytes x d per token in memory, 2 in an index)."""

    def __init__(self, model, pipeline_config: PipelineConfig, source: str = "",
                 concept_embedder: ConceptEmbedder | None = None,
                 concept_encoder: str | None = None) -> None:
        """``concept_embedder``: share one (e.g. disk-cached) across scorers; default: a
        fresh in-memory one built on first use from ``concept_encoder`` (a model name or
        folder; None: the pipeline's encoder)."""
        self.model, self.pipeline_config, self.source = model.eval(), pipeline_config, source
        self.concept_encoder = concept_encoder
        self.entity_vectors: torch.Tensor | None = None
        self.entity_chunk: torch.Tensor | None = None
        self.n_chunks = 0
        self._embedder = concept_embedder
        self._reset_units()

    def _reset_units(self) -> None:
        self.token_vectors: torch.Tensor | None = None
        self.token_chunk: torch.Tensor | None = None
        self.unit_chunks: list[Chunk] = []
        self.units: ChunkSet | None = None
        self.unit_pairs: torch.Tensor | None = None
        self._unit_bm25 = None

    @property
    def uses_units(self) -> bool:
        """The model mixes sentence evidence into chunk scores (``model.sentence_evidence``)."""
        return self.model.config.sentence_evidence > 0

    @property
    def uses_tokens(self) -> bool:
        """The model mixes late interaction into chunk scores (``model.late_interaction``)."""
        return self.model.config.late_interaction > 0

    @classmethod
    def load(cls, path: str | Path, concept_embedder: ConceptEmbedder | None = None) -> TrainedScorer:
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
        return self.model.learned_values()

    # ----- documents ----------------------------------------------------------------------
    @torch.no_grad()
    def chunk(self, pipeline: Pipeline, prepared: list[PreparedDocument], strategy: str = "gralc",
              reset: bool = True) -> list[Chunk]:
        """Chunks of every document with enriched vectors, from ``model(features,
        soft=False)``; fills the entity tables (``reset=False`` appends, so a corpus can be
        chunked batch by batch)."""
        self.check_encoder(pipeline)
        if reset or not hasattr(self, "n_chunks"):
            self.entity_vectors, self.entity_chunk, self.n_chunks = None, None, 0
            self._reset_units()
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
        new_vecs = F.normalize(made.entity_vectors, dim=-1)
        new_rows = made.entity_chunk + self.n_chunks
        if self.entity_vectors is not None:
            new_vecs = torch.cat([self.entity_vectors, new_vecs])
            new_rows = torch.cat([self.entity_chunk, new_rows])
        self.entity_vectors, self.entity_chunk = new_vecs, new_rows
        if made.units is not None:
            self._add_units(prepared, feats, made, strategy)
        if made.token_vectors is not None:
            rows = made.token_chunk + self.n_chunks
            if self.token_vectors is not None:
                made.token_vectors = torch.cat([self.token_vectors, made.token_vectors])
                rows = torch.cat([self.token_chunk, rows])
            self.token_vectors, self.token_chunk = made.token_vectors, rows
        self.n_chunks += len(chunks)
        return chunks

    def _add_units(self, prepared, feats, made: ChunkSet, strategy: str) -> None:
        """Append one batch's sentence units (records, vectors, entity rows, overlap pairs)."""
        u = made.units
        for p, f, spans in zip(prepared, feats, u.spans):
            locator = SectionLocator(p.doc)
            offsets = f.offsets.numpy()
            for i, (s, e) in enumerate(spans):
                self.unit_chunks.append(make_chunk(p, strategy, i, int(offsets[s, 0]),
                                                   int(offsets[e - 1, 1]), s, e, level="sentences",
                                                   locator=locator))
        n_units = 0 if self.units is None else self.units.n_chunks
        batch = ChunkSet(F.normalize(u.vectors, dim=-1), F.normalize(u.entity_vectors, dim=-1),
                         u.entity_chunk + n_units)
        pairs = made.unit_pairs + torch.tensor([[self.n_chunks], [n_units]])
        if self.units is not None:
            batch = ChunkSet(*(torch.cat([a, b]) for a, b in zip(
                (self.units.vectors, self.units.entity_vectors, self.units.entity_chunk),
                (batch.vectors, batch.entity_vectors, batch.entity_chunk))))
            pairs = torch.cat([self.unit_pairs, pairs], dim=1)
        self.units, self.unit_pairs, self._unit_bm25 = batch, pairs, None

    def unit_lexical(self, question: str) -> np.ndarray:
        """(U,) BM25 of ``question`` against the sentence units (index built on first use)."""
        if self._unit_bm25 is None:
            from gralc.retrieval.bm25 import BM25Index

            self._unit_bm25 = BM25Index()
            self._unit_bm25.index(self.unit_chunks)
        return self._unit_bm25.scores(question)

    # ----- questions ----------------------------------------------------------------------
    @torch.no_grad()
    def query_entities(self, pipeline: Pipeline, question: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(q_ent (1, Eq, d'), q_mask (1, Eq))``: the GAT outputs of the question's linked
        concepts (:meth:`GraLCModel.query_entities`)."""
        _, u, ei = QueryEncoder(pipeline, self.embedder(pipeline)).concepts(question)
        return self.model.query_entities([(u, ei)])

    @property
    def lexical(self) -> bool:
        """The model scores with its learned lexical term: callers pass BM25 scores."""
        return self.model.lexical is not None

    @property
    def phrase(self) -> bool:
        """The model adds a term-pair BM25 (``model.phrase_weight`` > 0): callers pass the
        scores of a ``BM25Index(BM25Config(ngram=2))`` over the same chunks."""
        return self.model.config.phrase_weight > 0

    @torch.no_grad()
    def score_all(self, pipeline: Pipeline, question: str, q_vec: torch.Tensor,
                  chunk_vecs: torch.Tensor, lexical: np.ndarray | None = None,
                  q_tokens: tuple[torch.Tensor, torch.Tensor] | None = None,
                  phrase: np.ndarray | None = None,
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(score (K,), cos (K,), kg_prox (K,))`` against every chunk (its vectors
        ``chunk_vecs`` (K, d) and this scorer's entity table), with
        :meth:`GraLCModel.score_parts`, the scoring of training and validation; ``lexical``
        (K,): the question's BM25 over the same chunks, required when :attr:`lexical`. With
        sentence evidence, every chunk of :meth:`chunk` must be given (the units' overlap
        pairs index them); the units' BM25 is computed here. With late interaction, likewise
        (the token rows index them); ``q_tokens``: the question's word-piece vectors
        (``DocumentEncoder.encode_query_tokens``, (1, L, d) and (1, L)), encoded here when
        None. ``phrase`` (K,): the question's term-pair BM25 over the same chunks, required
        when :attr:`phrase`."""
        chunks = ChunkSet(chunk_vecs, self.entity_vectors, self.entity_chunk)
        if self.entity_vectors is None:
            chunks = ChunkSet(chunk_vecs, torch.zeros(0, 1), torch.zeros(0, dtype=torch.long))
        unit_lex = None
        if self.uses_units:
            self._require_all(chunk_vecs, self.units, "sentence evidence", "sentence_evidence")
            chunks.units, chunks.unit_pairs = self.units, self.unit_pairs
            if self.lexical:
                unit_lex = torch.as_tensor(self.unit_lexical(question), dtype=torch.float32)[None]
        if self.uses_tokens:
            self._require_all(chunk_vecs, self.token_vectors, "late interaction", "late_interaction")
            chunks.token_vectors, chunks.token_chunk = self.token_vectors, self.token_chunk
            if q_tokens is None:
                q_tokens = pipeline.encoder.encode_query_tokens([question])
        hybrid = self.model.hybrid is not None
        q_ent, q_mask = self.query_entities(pipeline, question) if hybrid else (None, None)
        lex = None if lexical is None else torch.as_tensor(lexical, dtype=torch.float32)[None]
        pairs = None if phrase is None else torch.as_tensor(phrase, dtype=torch.float32)[None]
        score, cos, prox = self.model.score_parts(q_vec[None].float(), q_ent, q_mask, chunks, lex,
                                                  unit_lex, q_tokens, pairs)
        return score[0], cos[0], prox[0]

    def _require_all(self, chunk_vecs: torch.Tensor, state, what: str, key: str) -> None:
        """Raise unless ``chunk_vecs`` are all the chunks of :meth:`chunk` and ``state`` (the
        per-chunk data of ``what``, indexed by chunk row) was kept for them."""
        if state is None or chunk_vecs.shape[0] != self.n_chunks:
            raise ValueError(
                f"{self.source or 'this model'} scores chunks with {what} "
                f"(model.{key}={getattr(self.model.config, key)}): score all {self.n_chunks} "
                f"chunks of chunk() (got {chunk_vecs.shape[0]}), or rebuild the index with this model")

    def rerank(self, pipeline: Pipeline, question: str, q_vec: np.ndarray,
               dense: list[tuple[Chunk, float]], chunk_vecs: torch.Tensor | None = None,
               chunks: list[Chunk] | None = None, lexical: np.ndarray | None = None,
               phrase: np.ndarray | None = None) -> list[Hit]:
        """Hybrid-scored hits over all chunks when given, else over the dense candidates
        (``lexical``: BM25 of the question over those chunks, for a model with the lexical
        term; each hit's components then hold ``bm25`` too; ``phrase``: the term-pair BM25,
        for a model with ``phrase_weight`` > 0, in the components as ``phrase_bm25``)."""
        if chunks is None:
            chunks = [c for c, _ in dense]
            chunk_vecs = torch.from_numpy(np.stack([c.embedding for c in chunks]))
        score, cos, prox = self.score_all(pipeline, question, torch.from_numpy(q_vec), chunk_vecs,
                                          lexical, phrase=phrase)
        order = rank_order(chunks, score.numpy())
        parts = [{"cos": float(cos[i]), "kg_prox": float(prox[i])} for i in range(len(chunks))]
        for name, values in (("bm25", lexical), ("phrase_bm25", phrase)):
            if values is not None:
                for part, value in zip(parts, values):
                    part[name] = float(value)
        return [Hit(chunks[i], float(score[i]), parts[i]) for i in order]

    # ----- persistence with an index --------------------------------------------------------
    def save_index_state(self, directory: Path) -> None:
        from safetensors.torch import save_file

        save_file({"vectors": self.entity_vectors.contiguous(), "chunk": self.entity_chunk},
                  str(Path(directory) / ENTITY_FILE))
        if self.token_vectors is not None:  # float16 holds them exactly (chunk_tokens rounds)
            save_file({"vectors": self.token_vectors.half().contiguous(),
                       "chunk": self.token_chunk.contiguous()}, str(Path(directory) / TOKENS_FILE))
        if self.units is not None:
            from gralc.retrieval.faiss_index import write_chunks

            u = self.units
            save_file({"vectors": u.vectors.contiguous(), "entity_vectors": u.entity_vectors.contiguous(),
                       "entity_chunk": u.entity_chunk, "pairs": self.unit_pairs.contiguous()},
                      str(Path(directory) / UNITS_FILE))
            write_chunks(Path(directory) / UNIT_CHUNKS_FILE, self.unit_chunks)

    def load_index_state(self, directory: Path, chunks: list[Chunk]) -> None:
        from safetensors.torch import load_file

        path = Path(directory) / ENTITY_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} missing: rebuild the index with --model")
        state = load_file(str(path))
        self.entity_vectors, self.entity_chunk = state["vectors"], state["chunk"]
        self.n_chunks = len(chunks)
        self._reset_units()
        if self.uses_tokens:
            tpath = Path(directory) / TOKENS_FILE
            if not tpath.is_file():
                raise FileNotFoundError(f"{tpath} missing: the model scores with late interaction; "
                                        "rebuild the index with --model")
            t = load_file(str(tpath))
            self.token_vectors, self.token_chunk = t["vectors"].float(), t["chunk"]
            if self.token_vectors.shape[0] != self.token_chunk.shape[0] or (
                    self.token_chunk.numel() and int(self.token_chunk.max()) >= self.n_chunks):
                raise ValueError(f"{tpath} does not match the index's chunks: rebuild the index")
        if self.uses_units:
            from gralc.retrieval.faiss_index import read_chunks

            upath = Path(directory) / UNITS_FILE
            if not upath.is_file() or not (Path(directory) / UNIT_CHUNKS_FILE).is_file():
                raise FileNotFoundError(f"{upath} missing: the model scores with sentence evidence; "
                                        "rebuild the index with --model")
            u = load_file(str(upath))
            self.unit_chunks = read_chunks(Path(directory) / UNIT_CHUNKS_FILE)
            self.units = ChunkSet(u["vectors"], u["entity_vectors"], u["entity_chunk"])
            self.unit_pairs = u["pairs"]
            if self.units.n_chunks != len(self.unit_chunks) or (
                    self.unit_pairs.numel() and int(self.unit_pairs[0].max()) >= self.n_chunks):
                raise ValueError(f"{upath} does not match the index's chunks: rebuild the index")
