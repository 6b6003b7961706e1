"""A trained GraLC model at inference: chunk documents, score questions.

``TrainedScorer.load(ckpt_or_export)`` rebuilds the model; ``chunk(pipeline, prepared)``
decodes hard boundaries with the LEARNED alpha / gamma / tau and embeds each chunk as the
mean of its KG-enriched token vectors (Eq. 4); ``score_all`` gives the graph-guided hybrid
score beta * cos + (1 - beta) * kg_prox of a question against EVERY chunk (not a re-ranking
of a dense top-k, so Recall@k can change; reference pitfall 9).

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
from gralc.model.doc_features import doc_features
from gralc.model.query_features import QueryEncoder
from gralc.pipeline import Pipeline, PipelineConfig
from gralc.retrieval.hits import Hit
from gralc.retrieval.ranking import rank_order

logger = logging.getLogger(__name__)
ENTITY_FILE = "chunk_entities.safetensors"


class TrainedScorer:
    """Chunking and scoring with a trained :class:`~gralc.model.gralc_model.GraLCModel`.

    After :meth:`chunk`, ``entity_vectors`` (M, d') holds the GAT outputs u' of the concepts
    inside each chunk and ``entity_chunk`` (M,) the chunk row each belongs to."""

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
        """Chunks of every document with enriched vectors; fills the entity tables
        (``reset=False`` appends, so a corpus can be chunked batch by batch)."""
        self.check_encoder(pipeline)
        if reset or not hasattr(self, "n_chunks"):
            self.entity_vectors, self.entity_chunk, self.n_chunks = None, None, 0
        base = self.n_chunks
        chunks: list[Chunk] = []
        ent_vecs, ent_rows = [], []
        boundary_cfg = pipeline.config.chunking.boundary
        for p in prepared:
            f = doc_features(p, pipeline, self.embedder(pipeline), boundary_cfg)
            h_prime, u_prime = self.model.enrich(f)
            spans = self.model.hard_spans(f)
            vecs = F.normalize(self.model.hard_chunks(f, spans, h_prime), dim=-1)
            b = self.model.boundaries(f)
            locator = SectionLocator(p.doc)
            offsets = f.offsets.numpy()
            mt = f.mention_tokens.numpy()
            for i, ((s, e), v) in enumerate(zip(spans, vecs)):
                c = make_chunk(p, strategy, i, int(offsets[s, 0]), int(offsets[e - 1, 1]), s, e,
                               boundary_scores={"score": float(b[s]) if s > 0 else 0.0}, locator=locator)
                c.embedding = v.numpy().astype(np.float32)
                rows = sorted({int(r) for r in mt[(mt[:, 0] >= s) & (mt[:, 1] <= e), 2]}) if len(mt) else []
                for r in rows:
                    ent_vecs.append(u_prime[r])
                    ent_rows.append(base + len(chunks))
                chunks.append(c)
        dim = self.model.config.gat_out_dim if self.model.gat is not None else pipeline.encoder.dim
        new_vecs = F.normalize(torch.stack(ent_vecs), dim=-1) if ent_vecs else torch.zeros(0, dim)
        new_rows = torch.tensor(ent_rows, dtype=torch.long)
        if self.entity_vectors is not None:
            new_vecs = torch.cat([self.entity_vectors, new_vecs])
            new_rows = torch.cat([self.entity_chunk, new_rows])
        self.entity_vectors, self.entity_chunk = new_vecs, new_rows
        self.n_chunks = base + len(chunks)
        return chunks

    # ----- questions ----------------------------------------------------------------------
    @torch.no_grad()
    def query_entities(self, pipeline: Pipeline, question: str) -> torch.Tensor:
        """(Eq, d') normalised GAT outputs of the question's linked concepts."""
        _, u, ei = QueryEncoder(pipeline, self.embedder(pipeline)).concepts(question)
        if u.shape[0] == 0:
            dim = self.model.config.gat_out_dim if self.model.gat is not None else u.shape[1]
            return torch.zeros(0, dim)
        return F.normalize(self.model.concepts(u, ei), dim=-1)

    @torch.no_grad()
    def score_all(self, pipeline: Pipeline, question: str, q_vec: torch.Tensor,
                  chunk_vecs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(score (K,), cos (K,), kg_prox (K,))`` against every chunk (chunk_vecs normalised).

        kg_prox_k = mean over query concepts of the max cosine to chunk k's concepts (0 when
        either side has none), computed with one scatter-max over all chunk concepts."""
        cos = chunk_vecs @ F.normalize(q_vec, dim=-1)
        hybrid = self.model.hybrid
        if hybrid is None:
            return cos, cos, torch.zeros_like(cos)
        q_ent = self.query_entities(pipeline, question)
        prox = torch.zeros_like(cos)
        if q_ent.shape[0] and self.entity_vectors is not None and self.entity_vectors.shape[0]:
            sim = q_ent @ self.entity_vectors.T  # (Eq, M)
            best = torch.full((q_ent.shape[0], cos.shape[0]), float("-inf"))
            best = best.scatter_reduce(1, self.entity_chunk.expand_as(sim), sim, reduce="amax")
            has = torch.isfinite(best)
            prox = torch.where(has, best, torch.zeros_like(best)).sum(0) / q_ent.shape[0]
        beta = hybrid.beta
        return beta * cos + (1 - beta) * prox, cos, prox

    def rerank(self, pipeline: Pipeline, question: str, q_vec: np.ndarray,
               dense: list[tuple[Chunk, float]], chunk_vecs: torch.Tensor | None = None,
               chunks: list[Chunk] | None = None) -> list[Hit]:
        """Hybrid-scored hits over all chunks when given, else over the dense candidates."""
        if chunks is None:
            chunks = [c for c, _ in dense]
            chunk_vecs = torch.from_numpy(np.stack([c.embedding for c in chunks]))
        score, cos, prox = self.score_all(pipeline, question, torch.from_numpy(q_vec), chunk_vecs)
        order = rank_order(chunks, score.numpy())
        return [Hit(chunks[i], float(score[i]), {"cos": float(cos[i]), "kg_prox": float(prox[i])})
                for i in order]

    # ----- persistence with an index --------------------------------------------------------
    def save_index_state(self, directory: Path) -> None:
        from safetensors.torch import save_file

        save_file({"vectors": self.entity_vectors.contiguous(), "chunk": self.entity_chunk},
                  str(Path(directory) / ENTITY_FILE))

    def load_index_state(self, directory: Path, chunks: list[Chunk]) -> None:
        from safetensors.torch import load_file

        path = Path(directory) / ENTITY_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} missing: rebuild the index with --model")
        state = load_file(str(path))
        self.entity_vectors, self.entity_chunk = state["vectors"], state["chunk"]
        self.n_chunks = len(chunks)
