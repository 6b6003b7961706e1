"""Choose the hybrid fusion weight by cross-validation by article, and print its curve.

For each chunking strategy, BM25 and the dense index over the SAME chunks are searched once;
then every fusion setting (weighted, ``lexical_weight`` 0.0 .. 1.0, and RRF k=60) is scored at
the evidence level with the same code as ``eval.py``. Articles are split into ``--folds``
folds (seeded); in each fold the weight with the best mean of ``ev_recall@5`` and
``ev_recall@512wp`` on the other folds is chosen and scored on the held-out fold's questions.
The out-of-fold mean is the honest estimate of the tuned hybrid; the weight chosen most often
becomes the config default (``fusion.lexical_weight``).

    python -m gralc.experiments.hybrid_weight                                  # COVID-QA dev, naive chunks
    python -m gralc.experiments.hybrid_weight --strategies fixed late structure_aware --out results/hybrid
    python -m gralc.experiments.hybrid_weight --set encoder.model=multilingual-e5-small   # another encoder
"""

from __future__ import annotations

import argparse
import logging
import statistics
from collections import Counter
from dataclasses import replace
from pathlib import Path

from gralc.data.benchmarks import squad_benchmark
from gralc.data.folds import article_folds
from gralc.evaluation.evidence import budget_counter
from gralc.evaluation.methods import MethodSpec, RunSettings, Searcher, make_chunker, score_runs
from gralc.experiments.real_data import SHARED_DATA, real_pipeline_config
from gralc.pipeline import Pipeline
from gralc.retrieval.indexes.fusion import FusionConfig
from gralc.runinfo import run_metadata, seed_everything, write_json_atomic

DEFAULT_DATA = SHARED_DATA / "covidqa/covidqa_dev.json"
WEIGHTS = [round(0.1 * i, 1) for i in range(11)]
TARGET = ("ev_recall@5", "ev_recall@512wp")
SHOW = ("ev_mrr", "ev_recall@1", "ev_recall@5", "ev_recall@20", "ev_recall@512wp", "ev_recall@1024wp",
        "wa_ndcg@10")


def settings_grid() -> dict[str, FusionConfig]:
    grid = {f"w={w:.1f}": FusionConfig("weighted", lexical_weight=w) for w in WEIGHTS}
    grid["rrf"] = FusionConfig("rrf", rrf_k=60)
    return grid


def _mean_target(per_query: list[dict], questions: list, fold: dict[str, int], held_out: int) -> float:
    """Mean of the TARGET metrics over the questions NOT in fold ``held_out``."""
    ev = [r for r, q in zip(per_query, questions) if "ev_mrr" in r and fold[q.gold_doc_id] != held_out]
    return statistics.fmean(statistics.fmean(r[t] for t in TARGET) for r in ev)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="SQuAD-format JSON (whole articles)")
    ap.add_argument("--strategies", nargs="+", default=["fixed"])
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--set", nargs="*", default=[], metavar="key=value",
                    help="pipeline overrides, e.g. encoder.model=multilingual-e5-small")
    ap.add_argument("--out", default=None, help="write curve.json here (atomically)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    seed_everything(args.seed)
    bench = squad_benchmark(args.data)
    # real data: linked with the full MeSH 2024 (the rows here do not read the mentions)
    pipeline = Pipeline(real_pipeline_config([f"encoder.cache_dir={args.cache_dir}", *args.set],
                                             what="gralc.experiments.hybrid_weight"))
    prepared = pipeline.prepare(bench.documents, progress=False)
    grid = settings_grid()
    base = RunSettings((1, 5, 10, 20), pieces=budget_counter(pipeline.encoder))
    fold = article_folds([q.gold_doc_id for q in bench.questions], args.folds, args.seed)
    q_vecs = pipeline.encoder.encode_queries([q.text for q in bench.questions]).numpy()
    print(f"# Hybrid fusion on {bench.name}: {len(bench.documents)} articles, "
          f"{len(bench.questions)} questions, {args.folds} folds by article (seed {args.seed})\n")
    report: dict[str, dict] = {}
    for strategy in args.strategies:
        spec = MethodSpec(strategy, strategy, searcher="hybrid")
        chunks = [c for p in prepared for c in make_chunker(pipeline, spec).chunk(p)]
        searcher = Searcher("hybrid", chunks, pipeline, [q.text for q in bench.questions], base, q_vecs)
        rows: dict[str, list[dict]] = {}
        for name, fusion in grid.items():
            searcher.settings = replace(base, fusion=fusion)
            runs = searcher.search(base.depth)
            within = [searcher.within(i, q.gold_doc_id) for i, q in enumerate(bench.questions)]
            rows[name] = score_runs(name, bench, chunks, runs, searcher.settings, {}, within).per_query
        # the curve over all questions
        print(f"## {strategy} ({len(chunks)} chunks)\n")
        print("| setting | " + " | ".join(SHOW) + " |")
        print("|---|" + "---|" * len(SHOW))
        curve = {}
        for name, per_q in rows.items():
            ev = [r for r in per_q if "ev_mrr" in r]
            curve[name] = {m: statistics.fmean(r[m] for r in ev) for m in SHOW}
            print(f"| {name} | " + " | ".join(f"{curve[name][m]:.4f}" for m in SHOW) + " |")
        # cross-validation by article
        weighted = [n for n in grid if n != "rrf"]
        chosen, oof = [], {m: [] for m in SHOW}
        for f in range(args.folds):
            best = max(weighted, key=lambda n: (_mean_target(rows[n], bench.questions, fold, f),
                                                -abs(grid[n].lexical_weight - 0.5)))
            chosen.append(best)
            for r, q in zip(rows[best], bench.questions):
                if "ev_mrr" in r and fold[q.gold_doc_id] == f:
                    for m in SHOW:
                        oof[m].append(r[m])
        cv = {m: statistics.fmean(v) for m, v in oof.items()}
        mode = Counter(chosen).most_common(1)[0][0]
        print(f"\ncross-validated (weight chosen on the other folds by mean of {' and '.join(TARGET)}): "
              f"chosen per fold {chosen}; most chosen {mode}")
        print("| setting | " + " | ".join(SHOW) + " |\n|---|" + "---|" * len(SHOW))
        print("| CV-tuned weighted | " + " | ".join(f"{cv[m]:.4f}" for m in SHOW) + " |")
        for name in ("w=0.0", "w=1.0", "rrf", mode):
            print(f"| {name} | " + " | ".join(f"{curve[name][m]:.4f}" for m in SHOW) + " |")
        print()
        report[strategy] = {"curve": curve, "cv": cv, "chosen_per_fold": chosen, "most_chosen": mode}
    if args.out:
        write_json_atomic(Path(args.out) / "curve.json", run_metadata({"args": vars(args), "results": report}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
