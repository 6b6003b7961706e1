"""Choose the section-diverse re-ranker's settings on one half of the PMC questions.

    python -m gralc.experiments.rerank_grid [--strategies multilevel fixed] [--out results/rerank_grid.md]

The questions of ``--questions`` are split by a hash of their gold document id into a ``dev``
and a ``test`` half. Each strategy is chunked, indexed and searched ONCE (100 candidates per
question); every re-ranker setting (none, ``mmr``, ``quota``, ``complete`` with 4 / 6 / 8 / 10
completion slots for the 1 / 2 / 3 best documents) re-orders the same candidates, scored as
``eval.py`` scores (top 20 kept). The ``complete`` setting with the best dev cross-section
recall@20 is named after each strategy; ``gralc.evaluation.methods.DIVERSE`` holds the one
chosen on multilevel chunks. Knowledge: the full MeSH 2024 graph of ``--shared-data``. In
full: docs/experiments.md."""

from __future__ import annotations

import argparse
import hashlib
import logging
import sys
import time
from dataclasses import replace
from pathlib import Path

from gralc.atomic import write_text_atomic
from gralc.data.benchmarks import DataConfig, load_benchmarks
from gralc.evaluation.methods import MethodSpec, RunSettings, Searcher, make_chunker, score_runs
from gralc.experiments.real_data import SHARED_DATA, real_pipeline_config
from gralc.pipeline import Pipeline
from gralc.retrieval.hits import as_hits
from gralc.retrieval.indexes.dense import IndexConfig
from gralc.retrieval.rerank.diversity import section_diverse_rerank
from gralc.runinfo import blas_kernel

DATA = SHARED_DATA
K, DEPTH = 20, 100
SETTINGS: dict[str, dict | None] = {
    "none": None,
    "mmr(0.7)": {"method": "mmr", "lambda_": 0.7},
    "quota": {"method": "quota", "per_section_quota": 1, "top_docs": None},
    **{
        f"complete(slots={s},docs={d})": {
            "method": "complete", "per_section_quota": 1, "top_docs": d, "complete_slots": s
        }
        for s in (4, 6, 8, 10)
        for d in (1, 2, 3)
    },
}


def half(doc_id: str) -> str:
    """``dev`` or ``test``: a stable split of the documents (sha1 of the id, parity)."""
    return "dev" if int(hashlib.sha1(doc_id.encode()).hexdigest(), 16) % 2 == 0 else "test"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gralc.experiments.rerank_grid", description=__doc__.split("\n")[0])
    ap.add_argument("--pmc", type=Path, default=DATA / "pmc")
    ap.add_argument("--questions", type=Path, default=Path("results/pmc_questions.jsonl"))
    ap.add_argument("--shared-data", type=Path, default=DATA,
                    help="folder holding mesh/ and relations/ (the full MeSH 2024 graph)")
    ap.add_argument("--strategies", nargs="+", default=["multilevel", "fixed"])
    ap.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = ap.parse_args(argv)
    for path in (args.pmc, args.questions):
        if not path.exists():
            hint = ("generate it: python -m gralc.data.crosssection_questions ../shared/data/pmc "
                    "--out results/pmc_questions.jsonl --vocabulary "
                    "../shared/data/mesh/mesh2024_thesaurus_terms.tsv")
            print(f"error: {path} not found ({hint})", file=sys.stderr)
            return 2
    logging.basicConfig(level=logging.WARNING)
    pipeline = Pipeline(real_pipeline_config(["encoder.cache_dir=data/cache"],
                                             what="gralc.experiments.rerank_grid", shared=args.shared_data))
    data = DataConfig(name="pmc", path=str(args.pmc), conditions=["full"],
                      questions=str(args.questions))
    bench = load_benchmarks(data, linker=pipeline.linker)[0]
    prepared = pipeline.prepare(bench.documents, progress=False)
    splits = {"all": bench.questions}
    for name in ("dev", "test"):
        splits[name] = [q for q in bench.questions if half(q.gold_doc_id) == name]
    lines = [
        f"# Section-diverse re-ranker settings on PMC full text: {len(bench.documents)} articles, "
        f"{len(bench.questions)} questions (dev {len(splits['dev'])}, test {len(splits['test'])})",
        "",
        "| strategy | setting | split | MRR | R@5 | CS R@5 | CS R@10 | CS R@20 | SecCov pairs@20 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    print("\n".join(lines), flush=True)
    for strategy in args.strategies:
        spec = MethodSpec(strategy, strategy)
        chunker = make_chunker(pipeline, spec)
        t0 = time.perf_counter()
        chunks = [c for p in prepared for c in chunker.chunk(p)]
        searcher = Searcher("dense", chunks, pipeline, [q.text for q in bench.questions],
                            RunSettings(index=IndexConfig()))
        runs = dict(zip((q.id for q in bench.questions), searcher.search(DEPTH)))
        best = None
        for label, options in SETTINGS.items():
            ranked = {
                qid: (run[:K] if options is None else
                      [(h.chunk, h.score) for h in as_hits(section_diverse_rerank(run, K, **options))])
                for qid, run in runs.items()
            }  # fmt: skip
            for split, questions in splits.items():
                sub = replace(bench, questions=questions)
                m = score_runs(label, sub, chunks, [ranked[q.id] for q in questions],
                               RunSettings((1, 5, 10, 20)), {}).metrics  # fmt: skip
                row = (f"| {strategy} | {label} | {split} | {m['mrr']:.4f} | {m['recall@5']:.4f} | "
                       f"{m['cross_section_recall@5']:.4f} | {m['cross_section_recall@10']:.4f} | "
                       f"{m['cross_section_recall@20']:.4f} | {m['seccov_pairs@20']:.2f} |")  # fmt: skip
                lines.append(row)
                print(row, flush=True)
                if split == "dev" and label.startswith("complete"):
                    if best is None or m["cross_section_recall@20"] > best[0] + 1e-12:
                        best = (m["cross_section_recall@20"], label)
        note = (f"<!-- {strategy}: {len(chunks)} chunks, {time.perf_counter() - t0:.0f} s; best "
                f"dev CS R@20 among complete settings: {best[1]} ({best[0]:.4f}) -->")  # fmt: skip
        lines.append(note)
        print(note, flush=True)
    lines.append(f"\nBLAS: OPENBLAS_CORETYPE={blas_kernel()}")
    print(lines[-1])
    if args.out:
        write_text_atomic(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
