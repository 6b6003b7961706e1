"""Evaluation rows of a trained model: ``gralc_kg`` (KG-infused chunks, cosine),
``gralc_graph`` (the same chunks scored by the model's learned score: beta*cos +
(1-beta)*kg_prox, and with the lexical term BM25 over the same chunks mixed in by the learned
w_lex),
and each fused with BM25 over the same chunks (``gralc_kg_hybrid``, ``gralc_graph_hybrid``,
the evaluation's ``fusion`` setting). Each row is a :class:`TrainedSearcher`, scored through
the :class:`~gralc.evaluation.methods.Scorer` protocol like every baseline row."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import Chunk
from gralc.config import config_conflicts
from gralc.data.benchmarks import Benchmark
from gralc.evaluation.methods import MethodResult, Run, RunSettings, score_scorer
from gralc.pipeline import MODEL_INPUT_KEYS, Pipeline, with_runtime
from gralc.retrieval.bm25 import BM25Config, BM25Index
from gralc.retrieval.fusion import FusionConfig, fuse
from gralc.retrieval.ranking import rank_chunks, rank_order
from gralc.retrieval.trained_scorer import TrainedScorer

logger = logging.getLogger(__name__)
ROWS = ("kg", "graph", "kg_hybrid", "graph_hybrid")


def _top(chunks, scores: torch.Tensor, k: int):
    """Top-k (chunk, score) with the metrics' fixed tie-break (score, doc id, chunk id)."""
    n = min(len(chunks), k + 50)  # slack so ties at the cut are ordered by the rule
    idx = torch.topk(scores, n).indices.tolist()
    return rank_chunks([(chunks[i], float(scores[i])) for i in idx])[:k]


class TrainedSearcher:
    """One trained row as a :class:`~gralc.evaluation.methods.Scorer`: each question's score of
    every chunk (``scores[i]`` (K,), computed once by the model and shared by the rows), fused
    with BM25 (``lexical[i]`` (K,)) when given."""

    def __init__(self, chunks: list[Chunk], scores: list[torch.Tensor],
                 lexical: list[np.ndarray] | None, fusion: FusionConfig, candidates: int) -> None:
        self.chunks, self.scores, self.lexical = chunks, scores, lexical
        self.fusion, self.candidates = fusion, candidates
        self.by_doc: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            self.by_doc.setdefault(c.doc_id, []).append(i)

    def search(self, depth: int) -> list[Run]:
        n = max(depth, self.candidates)
        runs = []
        for i, s in enumerate(self.scores):
            dense = _top(self.chunks, s, n)
            if self.lexical is None:
                runs.append(dense[:depth])
            else:
                lexical = _top(self.chunks, torch.from_numpy(self.lexical[i]), n)
                runs.append(_pairs(fuse(dense, lexical, self.fusion, depth)))
        return runs

    def within(self, qi: int, doc_id: str) -> Run:
        idx = self.by_doc.get(doc_id, [])
        own = [self.chunks[i] for i in idx]
        own_dense = _ranked(own, self.scores[qi].numpy()[idx])
        if self.lexical is None:
            return own_dense
        return _pairs(fuse(own_dense, _ranked(own, self.lexical[qi][idx]), self.fusion))


@dataclass
class TrainedScores:
    """A trained model's scores of one benchmark: its ``chunks`` (K), per question the
    ``cosine`` (K,) of the KG-infused chunk vectors, the model's learned score ``graph``
    (K,) and the ``lexical`` BM25 (K,) over the same chunks; the questions' vectors
    ``queries`` (Q, d) from the encoder the model runs with; seconds spent chunking and
    scoring."""

    chunks: list[Chunk]
    queries: torch.Tensor
    cosine: list[torch.Tensor]
    graph: list[torch.Tensor]
    lexical: list[np.ndarray]
    timings: dict[str, float]


def trained_scores(
    scorer: TrainedScorer,
    bench: Benchmark,
    prepared: list[PreparedDocument],
    pipeline: Pipeline,
    prefix: str = "gralc",
    model_path: str | Path = "",
) -> TrainedScores:
    """Chunk ``bench``'s documents with the trained model and score every question against
    every chunk. The model runs with the pipeline settings saved in it (encoder, LoRA-adapted
    or not, knowledge base, boundary window): where ``pipeline`` differs in any of them the
    documents and questions are prepared again with the model's (``pipeline``'s runtime
    settings, e.g. its encoder cache, are kept) and a warning names the differences."""
    own = with_runtime(scorer.pipeline_config, pipeline.config)
    differ = [c for c in config_conflicts(own, pipeline.config) if c.startswith(MODEL_INPUT_KEYS)]
    if differ:  # a trained model always runs with the settings saved in it
        logger.warning("%s runs with its own saved pipeline settings, not the evaluation's: %s",
                       model_path or "the model", "; ".join(differ))
        pipeline = Pipeline(own)
        prepared = pipeline.prepare([p.doc for p in prepared], progress=False)
    t0 = time.perf_counter()
    chunks = scorer.chunk(pipeline, prepared, strategy=prefix)
    t_chunk = time.perf_counter() - t0
    vecs = torch.from_numpy(np.stack([c.embedding for c in chunks]))
    t1 = time.perf_counter()
    q_vecs = pipeline.encoder.encode_queries([q.text for q in bench.questions])
    bm25 = BM25Index()
    bm25.index(chunks)
    lexical = [bm25.scores(q.text) for q in bench.questions]
    phrase: list[np.ndarray | None] = [None] * len(bench.questions)
    if scorer.phrase:  # the term-pair BM25 the model adds (model.phrase_weight)
        pairs = BM25Index(BM25Config(ngram=2))
        pairs.index(chunks)
        phrase = [pairs.scores(q.text) for q in bench.questions]
    cosine, graph = [], []
    for q, qv, lex, ph in zip(bench.questions, q_vecs, lexical, phrase):
        score, cos, _ = scorer.score_all(pipeline, q.text, qv, vecs,
                                         lex if scorer.lexical else None, phrase=ph)
        cosine.append(cos)
        graph.append(score)
    return TrainedScores(chunks, torch.as_tensor(np.asarray(q_vecs)), cosine, graph, lexical,
                         {"chunk_s": t_chunk, "score_s": time.perf_counter() - t1})


def trained_rows(scores: TrainedScores, bench: Benchmark, settings: RunSettings,
                 scorer: TrainedScorer, prefix: str = "gralc") -> list[MethodResult]:
    """The four rows (:data:`ROWS`) of ``scores``, each scored like every baseline row."""
    out = []
    for name in ROWS:
        searcher = TrainedSearcher(scores.chunks,
                                   scores.cosine if name.startswith("kg") else scores.graph,
                                   scores.lexical if name.endswith("_hybrid") else None,
                                   settings.fusion, settings.fusion.candidates)
        r = score_scorer(f"{prefix}_{name}", bench, scores.chunks, searcher, settings,
                         scores.timings)
        r.metrics.update({f"learned/{k}": v for k, v in scorer.learned_values().items()})
        out.append(r)
    return out


def evaluate_trained(
    model_path: str | Path,
    bench: Benchmark,
    prepared: list[PreparedDocument],
    pipeline: Pipeline,
    settings: RunSettings | None = None,
    scorer: TrainedScorer | None = None,
    prefix: str = "gralc",
) -> list[MethodResult]:
    """The trained rows on one benchmark (``scorer`` reuses an already loaded model; see
    :func:`trained_scores` for the pipeline the model runs with)."""
    scorer = scorer or TrainedScorer.load(model_path)
    scores = trained_scores(scorer, bench, prepared, pipeline, prefix, model_path)
    return trained_rows(scores, bench, settings or RunSettings(), scorer, prefix)


def _ranked(chunks, scores) -> list:
    return [(chunks[j], float(scores[j])) for j in rank_order(chunks, scores)]


def _pairs(hits) -> list:
    return [(h.chunk, h.score) for h in hits]
