"""Evaluate retrieval methods on benchmarks: chunk, index, search, re-rank, score.

A *method* is a row of the paper's tables: a chunking strategy, a searcher (dense FAISS,
BM25, or the graph-guided hybrid of a trained model) and an optional re-ranker
(Chunk-Link expansion, MAL-RAG selection, section-diverse re-ranking).
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import Chunk
from gralc.evaluation.benchmarks import Benchmark
from gralc.evaluation.metrics import (
    aggregate,
    chunk_statistics,
    cross_section_recall_at_k,
    query_metrics,
)
from gralc.pipeline import Pipeline, build_chunker
from gralc.retrieval.bm25 import BM25Index
from gralc.retrieval.index import ChunkIndex, IndexConfig

logger = logging.getLogger(__name__)


@dataclass
class MethodSpec:
    """One row: ``strategy`` (a registered chunker), ``searcher`` (dense | bm25),
    ``rerank`` (none | chunk_link | malrag | diverse), ``boundary`` overrides for
    structure-aware strategies (e.g. ``{decoder: dp}``), ``rerank_options`` keyword
    arguments of the re-ranker."""

    name: str
    strategy: str
    searcher: str = "dense"
    rerank: str = "none"
    boundary: dict[str, Any] = field(default_factory=dict)
    rerank_options: dict[str, Any] = field(default_factory=dict)


#: The section-diverse re-ranker of the ``*_diverse`` rows (chosen on a dev half of the PMC
#: cross-section questions; see gralc.retrieval.diversity).
DIVERSE = {"method": "complete", "per_section_quota": 1, "top_docs": 3, "complete_slots": 6}

#: The paper's strategies and ours, in table order. Trained GraLC rows are added by
#: ``gralc.training`` when a checkpoint or export is given (``gralc_kg``, ``gralc_graph``).
DEFAULT_METHODS: list[MethodSpec] = [
    MethodSpec("naive", "fixed"),
    MethodSpec("semantic", "semantic"),
    MethodSpec("late", "late"),
    MethodSpec("structure_aware", "structure_aware"),
    MethodSpec("structure_aware_dp", "structure_aware", boundary={"decoder": "dp"}),
    MethodSpec("dp_sentences", "dp_sentences"),
    MethodSpec("multilevel", "multilevel", rerank="malrag"),
    MethodSpec("chunk_link", "structure_aware", rerank="chunk_link"),
    MethodSpec("section_diverse", "structure_aware", rerank="diverse", rerank_options=DIVERSE),
    # the paper's future work (2)+(3): multi-level chunks for ranking strength, re-ranked
    # for section diversity
    MethodSpec("multilevel_diverse", "multilevel", rerank="diverse", rerank_options=DIVERSE),
    # the same re-ranker over plain fixed-size chunks: how much is the re-ranker alone
    MethodSpec("naive_diverse", "fixed", rerank="diverse", rerank_options=DIVERSE),
    MethodSpec("bm25", "late", searcher="bm25"),
]


@dataclass
class MethodResult:
    method: str
    benchmark: str
    metrics: dict[str, float]
    chunk_stats: dict[str, float]
    timings: dict[str, float]
    per_query: list[dict[str, Any]]


Reranker = Callable[[list[tuple[Chunk, float]], str], list[tuple[Chunk, float]]]


def make_chunker(pipeline: Pipeline, spec: MethodSpec) -> Any:
    """The chunker of a method (a fresh one when it overrides boundary settings)."""
    if not spec.boundary:
        return pipeline.chunker(spec.strategy)
    cfg = copy.deepcopy(pipeline.config.chunking)
    for key, value in spec.boundary.items():
        if not hasattr(cfg.boundary, key):
            raise ValueError(f"method {spec.name!r}: unknown boundary setting {key!r}")
        setattr(cfg.boundary, key, value)
    return build_chunker(spec.strategy, pipeline.encoder, cfg)


def _search(spec: MethodSpec, chunks: list[Chunk], bench: Benchmark, pipeline: Pipeline,
            depth: int, index_config: IndexConfig) -> list[list[tuple[Chunk, float]]]:
    texts = [q.text for q in bench.questions]
    if spec.searcher == "bm25":
        index = BM25Index()
        index.index(chunks)
        return index.search(texts, depth)
    if spec.searcher != "dense":
        raise ValueError(f"method {spec.name!r}: unknown searcher {spec.searcher!r}")
    index = ChunkIndex(pipeline.encoder.dim, index_config)
    index.add(chunks)
    return index.search(pipeline.encoder.encode_queries(texts).numpy(), depth)


def _reranker(spec: MethodSpec, bench: Benchmark, chunks: list[Chunk], k_max: int) -> Reranker | None:
    if spec.rerank == "none":
        return None
    if spec.rerank == "malrag":
        from gralc.retrieval.malrag import select_by_probability

        return lambda hits, _q: [(h.chunk, h.score) for h in _as_hits(select_by_probability(hits))] or hits[:1]
    if spec.rerank == "diverse":
        from gralc.retrieval.diversity import section_diverse_rerank

        opts = spec.rerank_options
        return lambda hits, _q: [(h.chunk, h.score) for h in _as_hits(section_diverse_rerank(hits, k_max, **opts))]
    if spec.rerank == "chunk_link":
        from gralc.retrieval.chunk_link import ChunkLinker

        linker = ChunkLinker()
        linker.fit(bench.documents, chunks)
        by_id = {c.chunk_id: c for c in chunks}
        return lambda hits, _q: [(h.chunk, h.score) for h in _as_hits(linker.expand(hits, by_id, k_max))]
    raise ValueError(f"method {spec.name!r}: unknown rerank {spec.rerank!r}")


def _as_hits(items):
    from gralc.retrieval.hits import as_hits

    return as_hits(items)


def evaluate_method(
    spec: MethodSpec,
    bench: Benchmark,
    prepared: list[PreparedDocument],
    pipeline: Pipeline,
    ks: tuple[int, ...] = (1, 5, 10, 20),
    candidates: int = 100,
    index_config: IndexConfig | None = None,
    chunker: Any = None,
) -> MethodResult:
    """Chunk every document, search every question, and score the runs."""
    t0 = time.perf_counter()
    chunker = chunker or make_chunker(pipeline, spec)
    chunks = [c for p in prepared for c in chunker.chunk(p)]
    t_chunk = time.perf_counter() - t0
    if not chunks:
        raise ValueError(f"method {spec.name!r} produced no chunks on {bench.name}")
    k_max = max(ks)
    depth = max(k_max, candidates if spec.rerank != "none" else k_max)
    t1 = time.perf_counter()
    runs = _search(spec, chunks, bench, pipeline, depth, index_config or IndexConfig())
    rerank = _reranker(spec, bench, chunks, k_max)
    if rerank is not None:
        runs = [rerank(run, q.id) for run, q in zip(runs, bench.questions)]
    t_search = time.perf_counter() - t1

    timings = {"chunk_s": t_chunk, "search_s": t_search,
               "ms_per_query": 1000 * t_search / max(1, len(bench.questions))}
    return score_runs(spec.name, bench, chunks, runs, ks, timings)


def score_runs(
    method: str,
    bench: Benchmark,
    chunks: list[Chunk],
    runs: list[list[tuple[Chunk, float]]],
    ks: tuple[int, ...],
    timings: dict[str, float],
) -> MethodResult:
    """Metrics of one method's ranked runs (one per question, best first)."""
    docs = {d.id: d for d in bench.documents}
    per_query, cross = [], []
    for q, run in zip(bench.questions, runs, strict=True):
        gold = docs[q.gold_doc_id]
        row = query_metrics(run, q.gold_doc_id, ks, gold_doc_section_ids=[s.id for s in gold.sections])
        per_query.append(row)
        if len(set(q.gold_section_types)) >= 2:
            cross.append({f"cross_section_recall@{k}": cross_section_recall_at_k(run, q.gold_doc_id, q.gold_section_types, k) for k in ks})
    metrics = aggregate(per_query)
    if cross:
        metrics.update(aggregate(cross))
        metrics["n_cross_section_questions"] = float(len(cross))
    metrics["n_questions"] = float(len(per_query))
    k_max = max(ks)
    detail = [
        {"question_id": q.id, "top": [c.chunk_id for c, _ in run[:k_max]], **row}
        for q, run, row in zip(bench.questions, runs, per_query)
    ]
    return MethodResult(method, bench.name, metrics, chunk_statistics(chunks), timings, detail)
