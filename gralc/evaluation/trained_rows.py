"""Evaluation rows of a trained model named ``NAME`` (``gralc`` unless the evaluation names
its models):

* ``NAME``: the product: the model's chunks ranked by its own score, searched as ``gralc
  search`` searches (:class:`~gralc.retrieval.trained.search.TrainedSearch`, two stages
  unless ``settings.search.exhaustive``); its ``ms_per_query`` is one question's cost there;
* ``NAME_cosine``: the same KG-infused chunk vectors ranked by cosine alone;
* ``NAME_hybrid`` and ``NAME_cosine_hybrid``: each fused with BM25 over the same chunks;
* ``NAME_diverse`` (asked for by name, ``rows``): the product's top ``candidates`` re-ranked
  as the ``*_diverse`` rows are (:func:`~gralc.evaluation.methods.diverse_reranker`).

GraLC 0.1's names: :data:`ROW_ALIASES`. Each row is a :class:`RankedRows`, scored through the
:class:`~gralc.evaluation.methods.Scorer` protocol like every baseline row; a probe that needs
every chunk's score asks the same search (:meth:`TrainedSearch.scores`)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import Chunk
from gralc.config import config_conflicts
from gralc.data.benchmarks import Benchmark
from gralc.evaluation.methods import MethodResult, Run, RunSettings, score_scorer
from gralc.pipeline import MODEL_INPUT_KEYS, Pipeline, with_runtime
from gralc.retrieval.indexes.bm25 import BM25Index
from gralc.retrieval.indexes.fusion import FusionConfig, fuse
from gralc.retrieval.ranking import rank_order
from gralc.retrieval.rerank.diversity import section_diverse
from gralc.retrieval.trained.scorer import TrainedScorer

logger = logging.getLogger(__name__)
#: the row suffixes of a trained model (``""``: the product), in the order of GraLC 0.1's rows
ROWS = ("cosine", "", "cosine_hybrid", "hybrid")
PRODUCT = ""
#: the product's ranking re-ranked for section diversity (not in :data:`ROWS`: asked for by name)
DIVERSE_ROW = "diverse"
#: row names of GraLC 0.1 -> today's (``significance.reference`` reads them)
ROW_ALIASES = {"gralc_kg": "gralc_cosine", "gralc_graph": "gralc", "gralc_kg_hybrid": "gralc_cosine_hybrid",
               "gralc_graph_hybrid": "gralc_hybrid"}
#: questions timed one at a time for the product row's ms_per_query
TIMED_QUESTIONS = 16


def row_name(prefix: str, suffix: str) -> str:
    """``NAME`` for the product row, ``NAME_SUFFIX`` for the others.

    >>> row_name("gralc", ""), row_name("gralc", "cosine")
    ('gralc', 'gralc_cosine')
    """
    return f"{prefix}_{suffix}" if suffix else prefix


def row_names(prefix: str) -> list[str]:
    """Every row a trained model named ``prefix`` adds (:data:`ROWS`).

    >>> row_names("mine")
    ['mine_cosine', 'mine', 'mine_cosine_hybrid', 'mine_hybrid']
    """
    return [row_name(prefix, s) for s in ROWS]


class RankedRows:
    """One trained row from rankings already made: per question its top ``runs`` and its
    ranking of its gold document's chunks (``within``), fused with BM25 (``lexical`` runs)
    when given.

    Example: ``RankedRows(runs, within, gold, None, FusionConfig()).search(10)`` -> the trained
    row's top 10 of each question, already ranked (with ``lexical`` runs: fused with BM25).
    """

    def __init__(self, runs: list[Run], within: list[Run], gold: list[str],
                 lexical: list[Run] | None, fusion: FusionConfig) -> None:
        self.runs, self._within, self.gold, self.lexical, self.fusion = runs, within, gold, lexical, fusion

    def search(self, depth: int) -> list[Run]:
        """Per question its top ``depth`` of the kept ``runs`` (fused with the ``lexical`` runs when
        given), best first."""
        if self.lexical is None:
            return [run[:depth] for run in self.runs]
        return [_pairs(fuse(d, lex, self.fusion, depth)) for d, lex in zip(self.runs, self.lexical)]

    def within(self, qi: int, doc_id: str) -> Run:
        """Question ``qi``'s kept ranking of its gold document's chunks; ValueError for another
        document."""
        if doc_id != self.gold[qi]:
            raise ValueError(f"question {qi}: only its gold document's ranking is kept")
        return self._within[qi]


def evaluate_trained(
    model_path: str | Path,
    bench: Benchmark,
    prepared: list[PreparedDocument],
    pipeline: Pipeline,
    settings: RunSettings | None = None,
    scorer: TrainedScorer | None = None,
    prefix: str = "gralc",
) -> list[MethodResult]:
    """The trained rows (:data:`ROWS`) on one benchmark (``scorer`` reuses an already loaded
    model; the model runs with the pipeline settings saved in it, see :func:`own_pipeline`).
    ``gralc_graph`` is the product's search (:class:`TrainedSearch` with ``settings.search``:
    candidates, token codes) of every question over all the benchmark's chunks, each
    question's gold document ranked by the same score.

    Example: ``[r.method for r in evaluate_trained("export/", bench, prepared, pipeline)]`` ->
    ``['gralc_cosine', 'gralc', 'gralc_cosine_hybrid', 'gralc_hybrid']``.
    """
    settings = settings or RunSettings()
    scorer = scorer or TrainedScorer.load(model_path)
    pipeline, prepared = own_pipeline(scorer, pipeline, prepared, model_path)
    t0 = time.perf_counter()
    chunks = scorer.chunk(pipeline, prepared, strategy="gralc")
    search = searchable(scorer, pipeline, chunks, settings.search)
    return searched_rows(search, bench, settings, prefix, {"chunk_s": time.perf_counter() - t0})


def searchable(scorer: TrainedScorer, pipeline: Pipeline, chunks: list[Chunk], config=None):
    """A :class:`~gralc.retrieval.trained.search.TrainedSearch` over ``chunks`` (just made by
    ``scorer.chunk``): an exact FAISS index of their vectors, their BM25 and, for a model that
    adds them, their term-pair BM25 and concept match, as ``gralc.index --model`` builds them.

    Example: ``searchable(scorer, pipeline, scorer.chunk(pipeline, prepared)).search_batch(["What limits adherence?"], 10)``
    -> that question's top 10 hits (as ``gralc search`` ranks them).
    """
    from gralc.retrieval.indexes.dense import ChunkIndex
    from gralc.retrieval.trained.search import TrainedSearch

    index = ChunkIndex(pipeline.encoder.dim)
    index.add(chunks)
    made = scorer.indexes(chunks)
    return TrainedSearch(scorer, pipeline, index, made.lexical, made.phrase, config, made.concepts)


def _section_reranker(depth: int, name: str):
    """The ``diverse`` row's re-ranker: ``search.diverse=NAME`` at ``depth``."""
    return lambda hits, _q: [(h.chunk, h.score) for h in section_diverse(hits, depth, name)]


def searched_rows(search, bench: Benchmark, settings: RunSettings, prefix: str = "gralc",
                  timings: dict[str, float] | None = None, rows: tuple[str, ...] = ROWS,
                  diverse: str = "round_robin") -> list[MethodResult]:
    """The trained ``rows`` of ``bench`` from ``search`` (its chunks are the benchmark's):
    ``graph`` its top hits and each question's gold document ranked by the same score,
    ``cosine`` the chunk vectors' cosine, ``hybrid`` each fused with BM25, ``diverse`` the
    product's ranking re-ranked for section diversity (module docstring); ``rows``: the
    suffixes to score (:data:`ROWS`, and :data:`DIVERSE_ROW`, re-ranked by ``diverse``, a
    :data:`~gralc.retrieval.rerank.diversity.DIVERSE_METHODS` name, as ``search.diverse`` does).

    Example: ``[r.method for r in searched_rows(search, bench, RunSettings())]`` ->
    ``['gralc_cosine', 'gralc', 'gralc_cosine_hybrid', 'gralc_hybrid']``.
    """
    index, chunks = search.index, search.index.chunks
    texts = [q.text for q in bench.questions]
    gold = [q.gold_doc_id for q in bench.questions]
    by_doc: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        by_doc.setdefault(c.doc_id, []).append(i)
    own = [np.asarray(by_doc.get(d, []), dtype=np.int64) for d in gold]
    n = max(settings.depth, settings.fusion.candidates)
    if DIVERSE_ROW in rows:  # the re-ranker's pool: as deep as the *_diverse rows' (candidates)
        n = max(n, settings.candidates)
    t1 = time.perf_counter()
    q = search.encode(texts)
    graph = [_pairs(h) for h in search.search_encoded(q, n)]
    t_graph = time.perf_counter() - t1
    graph_within = [_pairs(h) for h in search.search_encoded(q, max(1, max(map(len, own), default=1)), own)]
    kg = index.search(q.vectors.numpy(), n)
    unit = q.vectors.numpy() / np.linalg.norm(q.vectors.numpy(), axis=1, keepdims=True).clip(1e-12)
    kg_within = [_ranked([chunks[j] for j in r], np.asarray(index.vectors)[r] @ v) for r, v in zip(own, unit)]
    lexical = None
    if any(name.endswith("hybrid") for name in rows):
        bm25 = search.lexical
        if bm25 is None or not bm25.chunks:  # none, or loaded for its scores only
            bm25 = BM25Index()
            bm25.index(chunks)
        lexical = bm25.search(texts, n)
    out = []
    for name in rows:
        runs, within = (kg, kg_within) if name.startswith("cosine") else (graph, graph_within)
        row = RankedRows(runs, within, gold, lexical if name.endswith("hybrid") else None,
                         settings.fusion)
        row_timings = dict(timings or {}, score_s=0.0 if name.startswith("cosine") else t_graph)
        rerank = _section_reranker(settings.depth, diverse) if name == DIVERSE_ROW else None
        r = score_scorer(row_name(prefix, name), bench, chunks, row, settings, row_timings, rerank)
        r.metrics.update({f"learned/{k}": v for k, v in search.scorer.learned_values().items()})
        if name == PRODUCT:
            r.metrics["search/candidates_per_question"] = search.candidates_per_question
            # what one question costs the product (gralc search): not the batch above
            r.timings["batch_ms_per_query"] = r.timings["ms_per_query"]
            r.timings["ms_per_query"] = single_question_ms(search, texts)
        out.append(r)
    return out


def single_question_ms(search, texts: list[str], k: int = 10) -> float:
    """Median milliseconds of one question searched alone, as ``gralc search -k 10`` does
    (encoding, candidates, decoding), over the first :data:`TIMED_QUESTIONS` questions after
    one warm-up search.

    Example: ``single_question_ms(search, [q.text for q in bench.questions])`` -> the median
    milliseconds of one question searched alone (e.g. ``38.2``).
    """
    import statistics

    sample = texts[:TIMED_QUESTIONS]
    if not sample:
        return 0.0
    search.search_batch(sample[:1], k)  # warm-up: first-call allocations, lazy tables
    times = []
    for text in sample:
        t0 = time.perf_counter()
        search.search_batch([text], k)
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def own_pipeline(scorer: TrainedScorer, pipeline: Pipeline, prepared: list[PreparedDocument],
                 model_path: str | Path = "") -> tuple[Pipeline, list[PreparedDocument]]:
    """The model's own saved pipeline settings (encoder, LoRA-adapted or not, knowledge base,
    boundary window) with ``pipeline``'s runtime settings; where they differ in any input
    setting the documents are prepared again with them and a warning names the differences.

    Example: ``own_pipeline(scorer, pipeline, prepared)`` -> ``(pipeline, prepared)`` unchanged when
    the model was saved with the same input settings (else both rebuilt, with a warning).
    """
    own = with_runtime(scorer.pipeline_config, pipeline.config)
    differ = [c for c in config_conflicts(own, pipeline.config) if c.startswith(MODEL_INPUT_KEYS)]
    if not differ:
        return pipeline, prepared
    logger.warning("%s runs with its own saved pipeline settings, not the evaluation's: %s",
                   model_path or "the model", "; ".join(differ))
    pipeline = Pipeline(own)
    return pipeline, pipeline.prepare([p.doc for p in prepared], progress=False)


def _ranked(chunks, scores) -> list:
    return [(chunks[j], float(scores[j])) for j in rank_order(chunks, scores)]


def _pairs(hits) -> list:
    return [(h.chunk, h.score) for h in hits]
