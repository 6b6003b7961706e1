"""Evaluate retrieval methods on benchmarks: chunk, index, search, re-rank, score.

A *method* is a row of the paper's tables: a chunking strategy, a searcher (dense FAISS,
BM25, the two fused: ``hybrid``, or SemRAG's graph search over a corpus knowledge graph:
``graph_local`` / ``graph_global``, :mod:`gralc.retrieval.graph.search`) and an optional re-ranker (Chunk-Link expansion, MAL-RAG
selection, section-diverse re-ranking). Every row's ranking is cut to the same depth
(``max(ks)``) after re-ranking, and ordered by the one tie-break rule
(:mod:`gralc.retrieval.ranking`). Questions with evidence spans are also scored at the
evidence level (:mod:`gralc.evaluation.evidence`), including the within-article ranking of
their gold document's chunks by the row's searcher.
"""

from __future__ import annotations

import copy
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import Chunk
from gralc.data.benchmarks import Benchmark
from gralc.encoding.budget import PieceCounter, budget_counter
from gralc.evaluation.evidence import BUDGETS, evidence_metrics, resolve_evidence
from gralc.evaluation.generation import GenerationConfig, evaluate_generation
from gralc.evaluation.metrics import (
    aggregate,
    chunk_statistics,
    cross_section_recall_at_k,
    query_metrics,
)
from gralc.model.query_features import question_concepts
from gralc.pipeline import Pipeline, build_chunker
from gralc.retrieval.graph.search import (
    GRAPH_SEARCHERS,
    GraphConfig,
    GraphIndex,
    GraphSearcher,
    build_graph_index,
)
from gralc.retrieval.indexes.bm25 import BM25Index
from gralc.retrieval.indexes.dense import ChunkIndex, IndexConfig
from gralc.retrieval.indexes.fusion import FusionConfig, fuse
from gralc.retrieval.ranking import rank_order
from gralc.retrieval.rerank.diversity import SECTION_DIVERSE
from gralc.retrieval.trained.candidates import CandidateConfig

logger = logging.getLogger(__name__)


@dataclass
class MethodSpec:
    """One row: ``strategy`` (a registered chunker), ``searcher`` (dense | bm25 | hybrid |
    graph_local | graph_global),
    ``rerank`` (none | chunk_link | malrag | diverse), ``boundary`` overrides for
    structure-aware strategies (e.g. ``{decoder: dp}``), ``rerank_options`` keyword
    arguments of the re-ranker.

    >>> MethodSpec("late_hybrid", "late", searcher="hybrid").rerank
    'none'
    """

    name: str
    strategy: str
    searcher: str = "dense"
    rerank: str = "none"
    boundary: dict[str, Any] = field(default_factory=dict)
    rerank_options: dict[str, Any] = field(default_factory=dict)


SEARCHERS = ("dense", "bm25", "hybrid")
ALL_SEARCHERS = (*SEARCHERS, *GRAPH_SEARCHERS)

#: The section-diverse re-ranker of the ``*_diverse`` rows (chosen on a dev half of the PMC
#: cross-section questions; see gralc.retrieval.rerank.diversity).
DIVERSE = SECTION_DIVERSE

_BASE: list[MethodSpec] = [
    MethodSpec("naive", "fixed"),
    MethodSpec("semantic", "semantic"),
    MethodSpec("late", "late"),
    MethodSpec("structure_aware", "structure_aware"),
    MethodSpec("structure_aware_dp", "structure_aware", boundary={"decoder": "dp"}),
    MethodSpec("dp_sentences", "dp_sentences"),
    MethodSpec("multilevel", "multilevel", rerank="malrag"),
]

#: The paper's strategies and ours, in table order, then ``<method>_hybrid`` for every
#: chunking strategy (BM25 over the same chunks fused with the dense ranking). Trained GraLC
#: rows are added by ``gralc.training`` when a checkpoint or export is given.
DEFAULT_METHODS: list[MethodSpec] = [
    *_BASE,
    MethodSpec("chunk_link", "structure_aware", rerank="chunk_link"),
    MethodSpec("section_diverse", "structure_aware", rerank="diverse", rerank_options=DIVERSE),
    # the paper's future work (2)+(3): multi-level chunks for ranking strength, re-ranked
    # for section diversity
    MethodSpec("multilevel_diverse", "multilevel", rerank="diverse", rerank_options=DIVERSE),
    # the same re-ranker over plain fixed-size chunks: how much is the re-ranker alone
    MethodSpec("naive_diverse", "fixed", rerank="diverse", rerank_options=DIVERSE),
    MethodSpec("bm25", "late", searcher="bm25"),
    # BM25 over the fixed-size chunks: the lexical baseline at naive's chunking
    MethodSpec("naive_bm25", "fixed", searcher="bm25"),
    *[MethodSpec(f"{m.name}_hybrid", m.strategy, searcher="hybrid", rerank=m.rerank,
                 boundary=m.boundary) for m in _BASE],
    # SemRAG: its semantic chunks searched through the corpus knowledge graph
    MethodSpec("semantic_graph_local", "semantic", searcher="graph_local"),
    MethodSpec("semantic_graph_global", "semantic", searcher="graph_global"),
]


@dataclass
class EvidenceConfig:
    """Evidence-level scoring: ``min_coverage`` of the hit rule (share of the shorter of
    chunk and evidence span that must overlap), ``budgets`` in word-pieces of retrieved text.

    >>> EvidenceConfig(min_coverage=0.8).budgets
    [128, 256, 512, 1024, 2048]
    """

    min_coverage: float = 0.5
    budgets: list[int] = field(default_factory=lambda: list(BUDGETS))

    def __post_init__(self) -> None:
        if not 0.0 < self.min_coverage <= 1.0:
            raise ValueError(f"evidence.min_coverage={self.min_coverage}: must lie in (0, 1]")
        if any(b < 1 for b in self.budgets):
            raise ValueError(f"evidence.budgets={self.budgets}: every budget must be >= 1")


@dataclass
class RunSettings:
    """How every row is run and scored: cut-offs ``ks`` (every ranking is cut to max(ks)),
    re-ranking depth ``candidates``, the FAISS index, the hybrid fusion, the evidence rule and
    the word-piece counter of the budgeted metrics (None: no budgeted metrics).

    >>> RunSettings(ks=(1, 10), candidates=50).depth
    10
    """

    ks: tuple[int, ...] = (1, 5, 10, 20)
    candidates: int = 100
    index: IndexConfig = field(default_factory=IndexConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    evidence: EvidenceConfig = field(default_factory=EvidenceConfig)
    pieces: PieceCounter | None = None
    #: answer generation scored against the gold long answers (``eval.py generation.*``)
    generation: GenerationConfig | None = None
    #: the corpus graph of the graph_local / graph_global rows (``eval.py graph.*``)
    graph: GraphConfig = field(default_factory=GraphConfig)
    #: a trained model's two-stage search (``eval.py search.*``; ``exhaustive=true``: every chunk)
    search: CandidateConfig = field(default_factory=CandidateConfig)

    @property
    def depth(self) -> int:
        """How deep every ranking is cut: ``max(ks)``."""
        return max(self.ks)


@dataclass
class MethodResult:
    """One row of an evaluation: ``method`` on ``benchmark``, its aggregated ``metrics``, chunk
    statistics, ``timings`` (seconds; ``ms_per_query``) and ``per_query`` detail (each
    question's metrics and top chunk ids).

    >>> MethodResult("bm25", "demo", {"mrr": 0.5}, {}, {}, []).metrics["mrr"]
    0.5
    """
    method: str
    benchmark: str
    metrics: dict[str, float]
    chunk_stats: dict[str, float]
    timings: dict[str, float]
    per_query: list[dict[str, Any]]


Reranker = Callable[[list[tuple[Chunk, float]], str], list[tuple[Chunk, float]]]
Run = list[tuple[Chunk, float]]


def make_chunker(pipeline: Pipeline, spec: MethodSpec) -> Any:
    """The chunker of a method (a fresh one when it overrides boundary settings).

    Example: ``make_chunker(pipeline, MethodSpec("gralc_dp", "structure_aware", boundary={"decoder": "dp"}))``
    -> a fresh StructureAwareChunker with the DP decoder (the pipeline's own chunker otherwise).
    """
    if not spec.boundary:
        return pipeline.chunker(spec.strategy)
    cfg = copy.deepcopy(pipeline.config.chunking)
    for key, value in spec.boundary.items():
        if not hasattr(cfg.boundary, key):
            raise ValueError(f"method {spec.name!r}: unknown boundary setting {key!r}")
        setattr(cfg.boundary, key, value)
    return build_chunker(spec.strategy, pipeline.encoder, cfg)


def chunk_key(spec: MethodSpec) -> tuple:
    """Rows with equal keys chunk identically (one chunking pass serves them all).

    >>> chunk_key(MethodSpec("late", "late")) == chunk_key(MethodSpec("late_hybrid", "late", searcher="hybrid"))
    True
    """
    return spec.strategy, tuple(sorted(spec.boundary.items()))


class Searcher:
    """One row's searcher over ``chunks``: ``search`` gives the top ``depth`` of the corpus,
    ``within`` ranks only the chunks of one document (the within-article setting).

    Example: ``Searcher("bm25", chunks, pipeline, [q.text for q in bench.questions], RunSettings()).search(20)``
    -> each question's top 20 ``(chunk, score)`` pairs.
    """

    def __init__(self, kind: str, chunks: list[Chunk], pipeline: Pipeline, queries: list[str],
                 settings: RunSettings, q_vecs: np.ndarray | None = None) -> None:
        if kind not in SEARCHERS:
            raise ValueError(f"unknown searcher {kind!r}; use one of {', '.join(SEARCHERS)}")
        self.kind, self.chunks, self.queries, self.settings = kind, chunks, queries, settings
        self.by_doc: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(chunks):
            self.by_doc[c.doc_id].append(i)
        self.bm25 = self.dense = None
        if kind in ("bm25", "hybrid"):
            self.bm25 = BM25Index()
            self.bm25.index(chunks)
        if kind in ("dense", "hybrid"):
            if q_vecs is None:
                q_vecs = pipeline.encoder.encode_queries(queries).numpy()
            self.q_vecs = _unit(np.asarray(q_vecs, dtype=np.float32))
            self.dense = ChunkIndex(pipeline.encoder.dim, settings.index)
            self.dense.add(chunks)
            self.vectors = _unit(np.stack([c.embedding for c in chunks]).astype(np.float32))

    def search(self, depth: int) -> list[Run]:
        """Per question its top ``depth`` ``(chunk, score)`` pairs over the corpus, best first."""
        if self.kind == "bm25":
            return self.bm25.search(self.queries, depth)
        if self.kind == "dense":
            return self.dense.search(self.q_vecs, depth)
        n = max(depth, self.settings.fusion.candidates)
        dense, lexical = self.dense.search(self.q_vecs, n), self.bm25.search(self.queries, n)
        return [[(h.chunk, h.score) for h in fuse(d, lx, self.settings.fusion, depth)]
                for d, lx in zip(dense, lexical)]

    def within(self, qi: int, doc_id: str) -> Run:
        """Query ``qi``'s ranking of the chunks of ``doc_id`` only."""
        idx = self.by_doc.get(doc_id, [])
        chunks = [self.chunks[i] for i in idx]
        runs = []
        if self.dense is not None:
            runs.append(self.vectors[idx] @ self.q_vecs[qi])
        if self.bm25 is not None:
            runs.append(self.bm25.scores(self.queries[qi])[idx])
        ranked = [[(chunks[j], float(s[j])) for j in rank_order(chunks, s)] for s in runs]
        if self.kind != "hybrid":
            return ranked[0]
        return [(h.chunk, h.score) for h in fuse(ranked[0], ranked[1], self.settings.fusion)]


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def _reranker(spec: MethodSpec, bench: Benchmark, chunks: list[Chunk], k_max: int) -> Reranker | None:
    if spec.rerank == "none":
        return None
    if spec.rerank == "malrag":
        from gralc.retrieval.rerank.malrag import select_by_probability

        return lambda hits, _q: [(h.chunk, h.score) for h in _as_hits(select_by_probability(hits))] or hits[:1]
    if spec.rerank == "diverse":
        return diverse_reranker(k_max, spec.rerank_options)
    if spec.rerank == "chunk_link":
        from gralc.retrieval.rerank.chunk_link import ChunkLinker

        linker = ChunkLinker()
        linker.fit(bench.documents, chunks)
        by_id = {c.chunk_id: c for c in chunks}
        return lambda hits, _q: [(h.chunk, h.score) for h in _as_hits(linker.expand(hits, by_id, k_max))]
    raise ValueError(f"method {spec.name!r}: unknown rerank {spec.rerank!r}")


def diverse_reranker(k_max: int, options: dict[str, Any] | None = None) -> Reranker:
    """The section-diverse re-ranker of the ``*_diverse`` rows (``options``: keyword arguments
    of :func:`~gralc.retrieval.rerank.diversity.section_diverse_rerank`, :data:`DIVERSE` when
    None), for any row's candidates: baseline or trained (``NAME_diverse``).

    >>> from gralc.chunking.chunk import Chunk
    >>> a, b = Chunk("d1", "c0", "x", 0, 1, section_ids=["s1"]), Chunk("d1", "c1", "y", 2, 3, section_ids=["s1"])
    >>> c = Chunk("d1", "c2", "z", 4, 5, section_ids=["s2"])
    >>> [c.chunk_id for c, _ in diverse_reranker(2, {"method": "quota"})([(a, 0.9), (b, 0.8), (c, 0.5)], "q")]
    ['c0', 'c2']
    """
    from gralc.retrieval.rerank.diversity import section_diverse_rerank

    opts = DIVERSE if options is None else options
    return lambda hits, _q: [(h.chunk, h.score) for h in _as_hits(section_diverse_rerank(hits, k_max, **opts))]


def _as_hits(items):
    from gralc.retrieval.hits import as_hits

    return as_hits(items)


def check_methods(specs: list[MethodSpec]) -> None:
    """Reject unknown searchers / re-rankers before any expensive work.

    >>> check_methods([MethodSpec("x", "late", searcher="sparse")])
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    for spec in specs:
        if spec.searcher not in ALL_SEARCHERS:
            raise ValueError(f"method {spec.name!r}: unknown searcher {spec.searcher!r}; "
                             f"use one of {', '.join(ALL_SEARCHERS)}")
        if spec.rerank not in ("none", "malrag", "diverse", "chunk_link"):
            raise ValueError(f"method {spec.name!r}: unknown rerank {spec.rerank!r}")


def evaluate_method(
    spec: MethodSpec,
    bench: Benchmark,
    prepared: list[PreparedDocument],
    pipeline: Pipeline,
    settings: RunSettings | None = None,
    chunker: Any = None,
    chunks: list[Chunk] | None = None,
    q_vecs: np.ndarray | None = None,
    graph_index: GraphIndex | None = None,
) -> MethodResult:
    """Chunk every document (unless ``chunks`` are given), search every question (``q_vecs``:
    the questions' encodings when already computed), re-rank, cut every ranking to
    ``max(ks)`` and score it. Graph rows build the corpus graph of ``chunks`` unless
    ``graph_index`` (built from the same chunks) is given.

    Example: ``evaluate_method(MethodSpec("late", "late"), demo_benchmark(), pipeline.prepare(bench.documents), pipeline).metrics["mrr"]``
    -> the late-chunking row's MRR on the demo benchmark.
    """
    settings = settings or RunSettings()
    t0 = time.perf_counter()
    if chunks is None:
        chunker = chunker or make_chunker(pipeline, spec)
        chunks = [c for p in prepared for c in chunker.chunk(p)]
    t_chunk = time.perf_counter() - t0
    if not chunks:
        raise ValueError(f"method {spec.name!r} produced no chunks on {bench.name}")
    rerank = _reranker(spec, bench, chunks, settings.depth)
    if spec.searcher in GRAPH_SEARCHERS:
        graph_index = graph_index or method_graph(prepared, chunks, pipeline, settings)
        searcher = graph_searcher(spec.searcher, bench, chunks, graph_index, pipeline, settings, q_vecs)
        result = score_scorer(spec.name, bench, chunks, searcher, settings,
                              {"chunk_s": t_chunk, **graph_index.timings}, rerank)
        result.chunk_stats.update(graph_index.stats(), graph_build_s=graph_index.timings["graph_total_s"])
        return result
    searcher = Searcher(spec.searcher, chunks, pipeline, [q.text for q in bench.questions], settings, q_vecs)
    return score_scorer(spec.name, bench, chunks, searcher, settings, {"chunk_s": t_chunk}, rerank)


def method_graph(prepared: list[PreparedDocument], chunks: list[Chunk], pipeline: Pipeline,
                 settings: RunSettings) -> GraphIndex:
    """The corpus graph (communities, reports, vectors) of ``chunks`` under ``settings.graph``;
    generative reports through ``settings.generation``'s endpoint when it is enabled.

    Example: ``method_graph(prepared, chunks, pipeline, RunSettings()).stats()`` -> the corpus
    graph's node, edge, community and report counts.
    """
    from gralc.knowledge.concept_embeddings import ConceptEmbedder

    summarize = None
    if settings.graph.reports.mode == "generative":
        if settings.generation is None or not settings.generation.enabled:
            raise ValueError("graph.reports.mode=generative needs generation.enabled=true and an "
                             "endpoint (generation.base_url, generation.model); or mode=extractive")
        from gralc.evaluation.generation import ChatClient

        client = ChatClient(settings.generation)
        summarize = lambda prompt: client.chat([{"role": "user", "content": prompt}])  # noqa: E731
    embedder = ConceptEmbedder(pipeline.encoder.encode_texts, k=settings.graph.concept_synonyms)
    index = build_graph_index(
        [(p.doc, p.mentions) for p in prepared], chunks,
        lambda texts: pipeline.encoder.encode_texts(texts).numpy(), settings.graph,
        pipeline.knowledge_base, pipeline.vocabulary, summarize,
        concept_vectors=lambda cs: embedder.embed(cs).numpy())
    logger.info("corpus graph: %d concepts, %d edges, %d reports in %.1f s",
                len(index.graph.nodes), len(index.graph.edges), len(index.reports),
                index.timings["graph_total_s"])
    return index


def graph_searcher(kind: str, bench: Benchmark, chunks: list[Chunk], index: GraphIndex,
                   pipeline: Pipeline, settings: RunSettings,
                   q_vecs: np.ndarray | None = None) -> GraphSearcher:
    """A :class:`GraphSearcher` of ``bench``'s questions (their concepts linked as documents' are).

    Example: ``graph_searcher("graph_local", bench, chunks, graph_index, pipeline, RunSettings()).search(20)``
    -> each question's top 20 hits of SemRAG's local search.
    """
    texts = [q.text for q in bench.questions]
    if q_vecs is None:
        q_vecs = pipeline.encoder.encode_queries(texts).numpy()
    pieces = settings.pieces or budget_counter(pipeline.encoder)
    return GraphSearcher(kind, chunks, index, q_vecs, question_concepts(pipeline.linker, texts),
                         settings.graph.search, pieces)


class Scorer(Protocol):
    """What evaluation scores: a ranker of a benchmark's questions (in order) over its chunks:
    a baseline :class:`Searcher` (dense, BM25, hybrid), a trained model's row
    (:class:`~gralc.evaluation.trained_rows.RankedRows`), anything else.

    Example: ``score_scorer("bm25", bench, chunks, Searcher("bm25", chunks, pipeline, texts, settings), settings)``:
    a :class:`Searcher` (or any object with ``search(depth)`` and ``within(...)``) is a Scorer.
    """

    def search(self, depth: int) -> list[Run]:
        """Per question its top ``depth`` ``(chunk, score)`` pairs, best first."""
        ...

    def within(self, qi: int, doc_id: str) -> Run:
        """Question ``qi``'s ranking of the chunks of ``doc_id`` only."""
        ...


def score_scorer(
    name: str,
    bench: Benchmark,
    chunks: list[Chunk],
    scorer: Scorer,
    settings: RunSettings,
    timings: dict[str, float] | None = None,
    rerank: Reranker | None = None,
) -> MethodResult:
    """Search every question with ``scorer`` (``candidates`` deep when ``rerank`` re-ranks),
    cut every ranking to ``max(ks)`` and score it (:func:`score_runs`). ``timings``: the
    row's earlier stages; ``score_s`` there is added to the search time.

    Example: ``score_scorer("bm25", bench, chunks, searcher, RunSettings())`` -> the row's
    :class:`MethodResult` (search timed, rankings cut to max(ks) and scored).
    """
    timings = dict(timings or {})
    depth = settings.depth
    t1 = time.perf_counter()
    runs = scorer.search(depth if rerank is None else max(depth, settings.candidates))
    if rerank is not None:
        runs = [rerank(run, q.id) for run, q in zip(runs, bench.questions)]
    # every row ranks to the same depth; Hits (graph rows) are scored as (chunk, score) pairs
    runs = [[(c, s) for c, s in run[:depth]] for run in runs]
    t_search = time.perf_counter() - t1 + timings.pop("score_s", 0.0)
    within = [[(c, s) for c, s in scorer.within(i, q.gold_doc_id)] for i, q in enumerate(bench.questions)]
    timings.update(search_s=t_search, ms_per_query=1000 * t_search / max(1, len(bench.questions)))
    return score_runs(name, bench, chunks, runs, settings, timings, within)


def generation_metrics(bench: Benchmark, runs: list[Run], config: GenerationConfig) -> dict[str, float]:
    """``gen_f1`` etc. (:func:`~gralc.evaluation.generation.evaluate_generation`) over the
    questions that carry a gold long answer (none: no generation metrics, with a warning).

    Example: ``generation_metrics(bench, runs, GenerationConfig(enabled=True, model="llama"))`` ->
    ``{'gen_f1': ..., ...}`` over the questions with a long answer (``{}`` with a warning if none).
    """
    pairs = [(q, r) for q, r in zip(bench.questions, runs) if q.long_answer.strip()]
    if not pairs:
        logger.warning("%s: no question has a gold long answer: generation not scored", bench.name)
        return {}
    return evaluate_generation([q for q, _ in pairs], [r for _, r in pairs], config)


def score_runs(
    method: str,
    bench: Benchmark,
    chunks: list[Chunk],
    runs: list[Run],
    settings: RunSettings,
    timings: dict[str, float],
    within: list[Run] | None = None,
) -> MethodResult:
    """Metrics of one method's ranked runs (one per question, best first): document-level
    ranking and structure metrics for every question (the ranking metrics count every
    relevant document of a question judged against several, ``Question.relevance``),
    evidence-level metrics for the questions whose evidence resolves in their gold document.

    Example: ``score_runs("bm25", bench, chunks, runs, RunSettings(), {}).metrics["recall@5"]`` ->
    the mean recall@5 of ``runs`` (one ranked list per question of ``bench``).
    """
    docs = {d.id: d for d in bench.documents}
    ks = settings.ks
    per_query, cross, evidence_rows = [], [], []
    if settings.pieces is not None:
        settings.pieces.prime([c for run in runs for c, _ in run])
    for i, (q, run) in enumerate(zip(bench.questions, runs, strict=True)):
        gold = docs[q.gold_doc_id]
        row = query_metrics(run, q.gold_doc_id, ks, gold_doc_section_ids=[s.id for s in gold.sections],
                            relevance=q.relevance or None)
        per_query.append(row)
        if len(set(q.gold_section_types)) >= 2:
            cross.append({f"cross_section_recall@{k}": cross_section_recall_at_k(run, q.gold_doc_id, q.gold_section_types, k) for k in ks})
            row.update(cross[-1])  # per-query detail (paired comparisons); aggregated below
        spans = resolve_evidence(q, gold)
        if spans:
            ev = evidence_metrics(run, q.gold_doc_id, spans, ks, settings.evidence.budgets,
                                  settings.pieces, None if within is None else within[i],
                                  settings.evidence.min_coverage)
            evidence_rows.append(ev)
            row.update(ev)  # per-query detail only; aggregated separately below
    metrics = aggregate([{k: v for k, v in r.items() if not k.startswith(("ev_", "wa_", "cross_section_"))}
                         for r in per_query])
    if cross:
        metrics.update(aggregate(cross))
        metrics["n_cross_section_questions"] = float(len(cross))
    if evidence_rows:
        metrics.update(aggregate(evidence_rows))
    metrics["n_evidence_questions"] = float(len(evidence_rows))
    metrics["n_questions"] = float(len(per_query))
    if settings.generation is not None and settings.generation.enabled:
        metrics.update(generation_metrics(bench, runs, settings.generation))
    metrics.update(bench.stats)
    stats = chunk_statistics(chunks)
    if settings.pieces is not None:
        settings.pieces.prime(chunks)
        stats["pieces_mean"] = float(np.mean([len(settings.pieces(c)) for c in chunks]))
    k_max = max(ks)
    detail = [
        {"question_id": q.id, "gold_doc_id": q.gold_doc_id, "top": [c.chunk_id for c, _ in run[:k_max]], **row}
        for q, run, row in zip(bench.questions, runs, per_query)
    ]
    return MethodResult(method, bench.name, metrics, stats, timings, detail)
