"""Evaluation rows of a trained model: ``gralc_kg`` (KG-infused chunks, cosine) and
``gralc_graph`` (the same chunks scored by the learned hybrid beta*cos + (1-beta)*kg_prox)."""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from gralc.chunking.base import PreparedDocument
from gralc.evaluation.benchmarks import Benchmark
from gralc.evaluation.metrics import rank_chunks
from gralc.evaluation.runner import MethodResult, score_runs
from gralc.pipeline import Pipeline
from gralc.training.inference import TrainedScorer

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
    ks: tuple[int, ...] = (1, 5, 10, 20),
    candidates: int = 100,
    scorer: TrainedScorer | None = None,
    prefix: str = "gralc",
) -> list[MethodResult]:
    """Both trained rows on one benchmark (``scorer`` reuses an already loaded model). A model
    trained with LoRA adapters re-encodes the documents and questions with its own adapted
    encoder (the rest of ``pipeline``'s config, e.g. its encoder cache, is kept)."""
    scorer = scorer or TrainedScorer.load(model_path)
    trained_enc = scorer.pipeline_config.encoder.model
    if scorer.adapted and trained_enc != pipeline.config.encoder.model:
        logger.info("model %s has LoRA adapters: encoding with %s", model_path, trained_enc)
        encoder = replace(pipeline.config.encoder, model=trained_enc)
        pipeline = Pipeline(replace(pipeline.config, encoder=encoder))
        prepared = pipeline.prepare([p.doc for p in prepared], progress=False)
    elif trained_enc != pipeline.config.encoder.model:
        logger.warning("model %s was trained with encoder %s; evaluating with %s",
                       model_path, trained_enc, pipeline.config.encoder.model)
    t0 = time.perf_counter()
    chunks = scorer.chunk(pipeline, prepared, strategy=prefix)
    t_chunk = time.perf_counter() - t0
    vecs = torch.from_numpy(np.stack([c.embedding for c in chunks]))
    k = max(ks)
    t1 = time.perf_counter()
    q_vecs = pipeline.encoder.encode_queries([q.text for q in bench.questions])
    kg_runs, graph_runs = [], []
    for q, qv in zip(bench.questions, q_vecs):
        score, cos, _ = scorer.score_all(pipeline, q.text, qv, vecs)
        kg_runs.append(_top(chunks, cos, k))
        graph_runs.append(_top(chunks, score, k))
    t_search = time.perf_counter() - t1
    timings = {"chunk_s": t_chunk, "search_s": t_search,
               "ms_per_query": 1000 * t_search / max(1, len(bench.questions))}
    out = [score_runs(f"{prefix}_kg", bench, chunks, kg_runs, ks, timings),
           score_runs(f"{prefix}_graph", bench, chunks, graph_runs, ks, timings)]
    for r in out:
        r.metrics.update({f"learned/{k}": v for k, v in scorer.learned_values().items()})
    return out
