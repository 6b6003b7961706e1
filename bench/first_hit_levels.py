"""Where does a multi-level row's evidence MRR come from? The level of the first chunk that
holds each question's evidence.

A row whose chunks include whole sections and documents could win evidence MRR by size (a
document chunk holds every answer of its document). This prints, per level, how many
questions have their first evidence-holding chunk there and how much of the row's ev MRR
that contributes (one pass of ``eval.py``'s scoring over all questions, no folds).

    python -m bench.first_hit_levels                       # multilevel_hybrid on COVID-QA dev
    python -m bench.first_hit_levels --method multilevel
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

from bench.real_data import real_pipeline_config
from gralc.data.benchmarks import squad_benchmark
from gralc.evaluation.evidence import PieceCounter
from gralc.evaluation.methods import DEFAULT_METHODS, RunSettings, evaluate_method, make_chunker
from gralc.pipeline import Pipeline

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared/data/covidqa/covidqa_dev.json"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="SQuAD-format JSON (whole articles)")
    ap.add_argument("--method", default="multilevel_hybrid", help="an eval.py row")
    ap.add_argument("--cache-dir", default="data/cache")
    args = ap.parse_args(argv)
    specs = {m.name: m for m in DEFAULT_METHODS}
    if args.method not in specs:
        raise SystemExit(f"--method {args.method!r} is not an eval.py row; known: {sorted(specs)}")
    bench = squad_benchmark(args.data)
    pipe = Pipeline(real_pipeline_config([f"encoder.cache_dir={args.cache_dir}/encodings",
                                          "encoder.device=cpu"], what="bench.first_hit_levels"))
    prepared = pipe.prepare(bench.documents, progress=False)
    spec = specs[args.method]
    chunker = make_chunker(pipe, spec)
    chunks = [c for p in prepared for c in chunker.chunk(p)]
    level = {c.chunk_id: c.level or "chunk" for c in chunks}
    settings = RunSettings((1, 5, 10, 20), pieces=PieceCounter(pipe.encoder.tokenizer))
    result = evaluate_method(spec, bench, prepared, pipe, settings, chunks=chunks)
    count, share = collections.Counter(), collections.Counter()
    rows = [r for r in result.per_query if "ev_mrr" in r]
    for r in rows:
        if r["ev_mrr"] == 0:
            count["(none in the top 20)"] += 1
            continue
        first = level[r["top"][round(1 / r["ev_mrr"]) - 1]]
        count[first] += 1
        share[first] += r["ev_mrr"] / len(rows)
    print(f"# {args.method} on {Path(args.data).name}: {len(rows)} questions with evidence, "
          f"ev MRR {result.metrics['ev_mrr']:.4f}\n")
    print("| level of the first evidence-holding chunk | questions | share of ev MRR |")
    print("|---|---|---|")
    for name, n in count.most_common():
        print(f"| {name} | {n} | {share[name]:.4f} |")


if __name__ == "__main__":
    main()
