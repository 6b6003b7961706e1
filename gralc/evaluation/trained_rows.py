"""Evaluation rows of a trained model: ``gralc_kg`` (KG-infused chunks, cosine),
``gralc_graph`` (the same chunks scored by the learned hybrid beta*cos + (1-beta)*kg_prox),
and each fused with BM25 over the same chunks (``gralc_kg_hybrid``, ``gralc_graph_hybrid``,
the evaluation's ``fusion`` setting)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
import torch

from gralc.chunking.base import PreparedDocument
from gralc.config import config_conflicts
from gralc.data.benchmarks import Benchmark
from gralc.evaluation.methods import MethodResult, RunSettings, score_runs
from gralc.pipeline import MODEL_INPUT_KEYS, Pipeline, with_runtime
from gralc.retrieval.bm25 import BM25Index
from gralc.retrieval.fusion import fuse
from gralc.retrieval.ranking import rank_chunks, rank_order
from gralc.retrieval.trained_scorer import TrainedScorer

logger = logging.getLogger(__name__)


def _top(chunks, scores: torch.Tensor, k: int):
    """Top-k (chunk, score) with the metrics' fixed tie-break (score, doc id, chunk id)."""
    n = min(len(chunks), k + 50)  # slack so ties at the cut are ordered by the rule
    idx = torch.topk(scores, n).indices.tolist()
    return rank_chunks([(chunks[i], float(scores[i])) for i in idx])[:k]


def evaluate_trained(
    model_path: str | Path,
    bench: Benchmark,
    prepared: list[PreparedDocument],
    pipeline: Pipeline,
    settings: RunSettings | None = None,
    scorer: TrainedScorer | None = None,
    prefix: str = "gralc",
) -> list[MethodResult]:
    """The trained rows on one benchmark (``scorer`` reuses an already loaded model). The
    model runs with the pipeline settings saved in it (encoder, LoRA-adapted or not,
    knowledge base, boundary window): where ``pipeline`` differs in any of them the documents
    and questions are prepared again with the model's (``pipeline``'s runtime settings, e.g.
    its encoder cache, are kept) and a warning names the differences."""
    scorer = scorer or TrainedScorer.load(model_path)
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
    settings = settings or RunSettings()
    k = settings.depth
    n_cand = max(k, settings.fusion.candidates)
    by_doc: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        by_doc.setdefault(c.doc_id, []).append(i)
    bm25 = BM25Index()
    bm25.index(chunks)
    t1 = time.perf_counter()
    q_vecs = pipeline.encoder.encode_queries([q.text for q in bench.questions])
    runs: dict[str, list] = {name: [] for name in ("kg", "graph", "kg_hybrid", "graph_hybrid")}
    within: dict[str, list] = {name: [] for name in runs}
    for q, qv in zip(bench.questions, q_vecs):
        score, cos, _ = scorer.score_all(pipeline, q.text, qv, vecs)
        lex_all = bm25.scores(q.text)
        lexical = _top(chunks, torch.from_numpy(lex_all), n_cand)
        idx = by_doc.get(q.gold_doc_id, [])
        own = [chunks[i] for i in idx]
        own_lex = _ranked(own, lex_all[idx])
        for name, s in (("kg", cos), ("graph", score)):
            dense = _top(chunks, s, n_cand)
            runs[name].append(dense[:k])
            runs[f"{name}_hybrid"].append(_pairs(fuse(dense, lexical, settings.fusion, k)))
            own_dense = _ranked(own, s.numpy()[idx])
            within[name].append(own_dense)
            within[f"{name}_hybrid"].append(_pairs(fuse(own_dense, own_lex, settings.fusion)))
    t_search = time.perf_counter() - t1
    timings = {"chunk_s": t_chunk, "search_s": t_search,
               "ms_per_query": 1000 * t_search / max(1, len(bench.questions))}
    out = [score_runs(f"{prefix}_{name}", bench, chunks, runs[name], settings, timings, within[name])
           for name in runs]
    for r in out:
        r.metrics.update({f"learned/{k}": v for k, v in scorer.learned_values().items()})
    return out


def _ranked(chunks, scores) -> list:
    return [(chunks[j], float(scores[j])) for j in rank_order(chunks, scores)]


def _pairs(hits) -> list:
    return [(h.chunk, h.score) for h in hits]
