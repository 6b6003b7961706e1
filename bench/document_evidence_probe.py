"""Does document-level evidence help the trained model rank chunks? A probe on COVID-QA dev.

Retrieval on COVID-QA searches all 49 articles; a chunk from the wrong article that matches a
question well ranks above the evidence. Hierarchical scoring (DHR: Liu et al., 2021, "Dense
Hierarchical Retrieval") mixes in a score of the chunk's document:
``score' = (1 - g) * score(chunk) + g * score(document)``, the document scored by the same
trained model's parts: ``(1 - w_lex) * cos(q, mean of the document's chunk vectors, weighted
by their tokens) + w_lex * BM25(q, document text) / max over documents`` (w_lex learned).

For each fold model of an earlier ``bench.covidqa_cv`` run (its selected checkpoint, the
fold's sentence evidence), g is chosen on the fold's dev split (inside its training folds)
and the ``gralc_graph`` row is scored on the held-out fold for every g:

    python -m bench.document_evidence_probe --run results/cv_fix/lora_lexical_small \\
        --sentence-evidence 0.3 0.5 0.5 0 0.5 --weights 0 0.1 0.2 0.3 0.5
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from bench.covidqa_cv import DEFAULT_DATA, METRICS, covidqa_setup, dev_side, summary
from bench.real_data import require_real_graph
from gralc.chunking.chunk import Chunk
from gralc.data.folds import cv_side
from gralc.evaluation.trained_rows import TrainedScores, trained_rows, trained_scores
from gralc.model.hybrid_scorer import normalise_lexical
from gralc.retrieval.bm25 import BM25Index
from gralc.retrieval.trained_scorer import TrainedScorer
from gralc.runinfo import run_metadata, seed_everything, write_json_atomic
from gralc.training.run import run_selected_checkpoint

logger = logging.getLogger("bench.document_evidence_probe")


def documents_of(scores: TrainedScores, bench) -> tuple[torch.Tensor, torch.Tensor, BM25Index]:
    """(D, d) document vectors (token-weighted means of their chunk vectors), (K,) the
    document row of each chunk, and BM25 over the documents' texts (rows in the same order)."""
    doc_ids = sorted({c.doc_id for c in scores.chunks})
    row = {d: i for i, d in enumerate(doc_ids)}
    of_chunk = torch.tensor([row[c.doc_id] for c in scores.chunks])
    vecs = torch.from_numpy(np.stack([c.embedding for c in scores.chunks])).float()
    length = torch.tensor([max(c.token_end - c.token_start, 1) for c in scores.chunks],
                          dtype=torch.float32)
    doc_vecs = torch.zeros(len(doc_ids), vecs.shape[1]).index_add_(0, of_chunk, vecs * length[:, None])
    texts = {d.id: d.text for d in bench.documents}
    bm25 = BM25Index()
    bm25.index([Chunk(d, f"{d}#doc", texts[d], 0, len(texts[d])) for d in doc_ids])
    return doc_vecs, of_chunk, bm25


def document_scores(scores: TrainedScores, bench, w_lex: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(Q, D) document scores of ``bench``'s questions and (K,) the document row of each chunk."""
    doc_vecs, of_chunk, bm25 = documents_of(scores, bench)
    cos = F.normalize(scores.queries.float(), dim=-1) @ F.normalize(doc_vecs, dim=-1).T
    lex = normalise_lexical(torch.from_numpy(np.stack([bm25.scores(q.text) for q in bench.questions])).float())
    return (1 - w_lex) * cos + w_lex * lex, of_chunk


def with_documents(scores: TrainedScores, doc: torch.Tensor, of_chunk: torch.Tensor,
                   g: float) -> TrainedScores:
    """``scores`` with every question's graph score mixed with its chunks' document scores."""
    graph = [(1 - g) * s + g * doc[i, of_chunk].to(s.dtype) for i, s in enumerate(scores.graph)]
    return replace(scores, graph=graph)


def graph_means(scores: TrainedScores, bench, settings, scorer) -> dict[str, float]:
    r = next(r for r in trained_rows(scores, bench, settings, scorer) if r.method.endswith("_graph"))
    rows = [q for q in r.per_query if "ev_mrr" in q]
    return {m: statistics.fmean(q[m] for q in rows) for m in METRICS}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--run", required=True, help="an earlier covidqa_cv run: DIR/fold{k}/result.json")
    ap.add_argument("--variant", default="lora_lexical_small", help="its loader settings (dev split)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sentence-evidence", type=float, nargs="+", required=True,
                    help="each fold's sentence evidence weight (as chosen on its dev split)")
    ap.add_argument("--weights", type=float, nargs="+", default=[0, 0.1, 0.2, 0.3, 0.5])
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--out", default="results/document_evidence_probe.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if len(args.sentence_evidence) != args.folds:
        ap.error(f"--sentence-evidence needs one weight per fold ({args.folds})")
    results = [Path(args.run) / f"fold{k}" / "result.json" for k in range(args.folds)]
    if missing := [str(p) for p in results if not p.is_file()]:
        ap.error(f"--run {args.run}: no fold result at {', '.join(missing)}")
    seed_everything(args.seed)
    t0 = time.perf_counter()
    bench, pipe, prepared, settings = covidqa_setup(args.data, args.cache_dir)
    rows: dict[str, list[dict]] = {}
    for k, path in enumerate(results):
        ckpt = str(run_selected_checkpoint(path.parent))
        scorer = TrainedScorer.load(ckpt)
        require_real_graph(scorer.pipeline_config, f"bench.document_evidence_probe ({ckpt})")
        scorer.model.config = replace(scorer.model.config, sentence_evidence=args.sentence_evidence[k])
        w_lex = scorer.learned_values().get("lexical_weight", 0.0)
        side = cv_side(bench, args.folds, k, args.seed, "train")
        dev = dev_side(side, side.documents, args.variant, [])
        test = cv_side(bench, args.folds, k, args.seed, "test")
        per_side = {}
        for name, b in (("dev", dev), ("test", test)):
            own = {d.id for d in b.documents}
            s = trained_scores(scorer, b, [p for p in prepared if p.doc.id in own], pipe, model_path=ckpt)
            doc, of_chunk = document_scores(s, b, w_lex)
            per_side[name] = {g: graph_means(with_documents(s, doc, of_chunk, g), b, settings, scorer)
                              for g in args.weights}
        dev_mrr = {g: m["ev_mrr"] for g, m in per_side["dev"].items()}
        chosen = max(sorted(dev_mrr), key=lambda g: dev_mrr[g])
        logger.warning("fold %d: w_lex %.3f, g chosen on dev %g (dev ev MRR %s) (%.0f s)", k, w_lex,
                       chosen, {f"{g:g}": round(v, 4) for g, v in dev_mrr.items()}, time.perf_counter() - t0)
        for g, m in per_side["test"].items():
            rows.setdefault(f"doc={g:g}", []).append(m)
        rows.setdefault("doc=cv", []).append({**per_side["test"][chosen], "chosen": chosen})
    chosen = [f.pop("chosen") for f in rows["doc=cv"]]
    print(f"# COVID-QA dev, {args.folds} folds by article, fold models of {args.run}, "
          f"sentence evidence {args.sentence_evidence}; document weight chosen on dev per fold: {chosen}\n")
    print("| row | " + " | ".join(METRICS) + " |")
    print("|---|" + "---|" * len(METRICS))
    for name, folds in rows.items():
        s = summary(folds)
        print(f"| {name} | " + " | ".join(f"{s[m][0]:.4f} ± {s[m][1]:.4f}" for m in METRICS) + " |")
    write_json_atomic(Path(args.out), run_metadata({"args": vars(args), "rows": rows, "chosen": chosen,
                                                    "seconds": time.perf_counter() - t0}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
