"""Evidence quality as the corpus grows (issue 59): one fold's held-out COVID-QA questions, their
articles among ~10k / 100k / 1M chunks of other articles, searched by the trained two-stage
search, the exhaustive score (as many questions as a time budget allows) and BM25 over the
same corpus; evidence metrics per question, differences paired by article.

    python -m gralc.experiments.scale_quality --gold GOLD --distractors DIST \
        --data covidqa_dev.json --fold 0 --sizes 10000 100000 1000000 --out DIR

GOLD: the benchmark's articles indexed with the fold's export, DIST: other real articles (PMC,
PubMedQA), both with one codec (``gralc shard codec``, then ``gralc index --codec``). A size is
GOLD, DIST and synthetic copies of DIST (:mod:`gralc.experiments.synthetic_corpus`; the gold
articles are never copied). Chunk statistics count the retrieved chunks. Writes
``DIR/scale_quality.json``; docs/scaling.md has the recipe.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from gralc.experiments.published import finish_result, print_report, report_arguments

METRICS = ("ev_recall@512wp", "ev_mrr")
#: seconds of exhaustive searches a size gets (at least two questions): linear in the corpus
EXHAUSTIVE_SECONDS = 900.0


def corpus(gold: Path, dist: Path, size: int, out: Path) -> tuple[Path, dict]:
    """The index of GOLD among DIST and its copies, about ``size`` chunks (built once)."""
    from gralc.experiments.synthetic_corpus import grow_index
    from gralc.retrieval.indexes.folder import read_json
    from gralc.runinfo import write_json_atomic

    n_gold, n_dist = (int(read_json(d / "config.json")["n_vectors"]) for d in (gold, dist))
    copies = max(1, round((size - n_gold) / n_dist))
    folder = out / f"corpus_{copies}"
    info = folder.with_suffix(".json")
    if not info.is_file():
        write_json_atomic(info, grow_index(dist, copies, folder, keep=[gold]))
    return folder, read_json(info)


def _bm25_runs(r, texts: list[str], depth: int) -> list[list]:
    """BM25 over the whole corpus (the index's own lexical BM25), best ``depth`` per question."""
    if r.lexical is None:
        raise ValueError("the index holds no BM25 over its chunks (a model without the lexical term)")
    runs = []
    for text in texts:
        s = r.lexical.scores(text)
        top = np.argpartition(-s, min(depth, len(s) - 1))[:depth]
        top = top[np.argsort(-s[top], kind="stable")]
        runs.append([(r.index.chunks[int(j)], float(s[j])) for j in top if s[j] > 0])
    return runs


def measure(folder: Path, bench, seconds: float = EXHAUSTIVE_SECONDS) -> dict:
    """Per-question evidence metrics of the three searches over the index at ``folder``."""
    from gralc.data.benchmarks import Benchmark
    from gralc.evaluation.evidence import budget_counter
    from gralc.evaluation.methods import RunSettings, score_runs
    from gralc.inference import Retriever
    from gralc.retrieval.trained.search import TrainedSearch

    r = Retriever.load(folder)
    search = r.trained_search()
    settings = RunSettings((1, 5, 10, 20), pieces=budget_counter(r.pipeline.encoder))
    texts, depth = [q.text for q in bench.questions], settings.depth
    t0 = time.perf_counter()
    runs = {"two_stage": [[(h.chunk, h.score) for h in hs] for hs in search.search_batch(texts, depth)]}
    ms = {"two_stage": 1000 * (time.perf_counter() - t0) / len(texts)}
    exhaustive = TrainedSearch(search.scorer, search.pipeline, r.index, r.lexical, r.phrase,
                               replace(search.config, exhaustive=True), r.concepts)
    runs["exhaustive"], deadline = [], time.perf_counter() + seconds
    for text in texts:
        if len(runs["exhaustive"]) >= 2 and time.perf_counter() > deadline:
            break
        runs["exhaustive"].append([(h.chunk, h.score) for h in exhaustive.search(text, depth)])
    t0 = time.perf_counter()
    runs["bm25"] = _bm25_runs(r, texts, depth)
    ms["bm25"] = 1000 * (time.perf_counter() - t0) / len(texts)
    out = {"n_chunks": len(r.index), "ms_per_question": ms, "rows": {}}
    for name, run in runs.items():
        sub = Benchmark(bench.name, bench.documents, bench.questions[: len(run)], dict(bench.stats))
        seen = list({c.chunk_id: c for rr in run for c, _ in rr}.values())
        res = score_runs(name, sub, seen, run, settings, {})
        out["rows"][name] = {"metrics": {m: res.metrics.get(m) for m in (*METRICS, "n_evidence_questions")},
                             "per_question": [{"question_id": d["question_id"], "gold_doc_id": d["gold_doc_id"],
                                               **{m: d.get(m) for m in METRICS}} for d in res.per_query]}
    return out


def gains(rows: dict, a: str, b: str) -> dict:
    """A minus B per metric over the questions both scored, bootstrap over articles."""
    from gralc.evaluation.significance import FoldPairs, paired_gain

    qa = {q["question_id"]: q for q in rows[a]["per_question"] if q[METRICS[0]] is not None}
    qb = {q["question_id"]: q for q in rows[b]["per_question"] if q[METRICS[0]] is not None}
    both = [i for i in qa if i in qb]
    return {m: paired_gain([FoldPairs([qa[i][m] for i in both], [qb[i][m] for i in both],
                                      [qa[i]["gold_doc_id"] for i in both])]).as_dict() | {"questions": len(both)}
            for m in METRICS}


def run(gold: Path, dist: Path, bench, sizes: list[int], out: Path, seconds: float = EXHAUSTIVE_SECONDS) -> dict:
    """Every size built (once) and measured; the result (module docstring)."""
    from gralc.runinfo import run_metadata

    result = {"gold": str(gold), "distractors": str(dist), "benchmark": bench.name,
              "questions": len(bench.questions), "sizes": {}}
    for size in sizes:
        folder, info = corpus(gold, dist, size, out)
        got = measure(folder, bench, seconds)
        got.update(build=info, two_stage_minus_exhaustive=gains(got["rows"], "two_stage", "exhaustive"),
                   trained_minus_bm25=gains(got["rows"], "two_stage", "bm25"))
        result["sizes"][str(size)] = got
    return run_metadata(result)


def report(r: dict) -> str:
    """The generated table of a run."""
    lines = [f"{r['benchmark']}: {r['questions']} held-out questions, their articles among distractors "
             f"(`python -m gralc.experiments.scale_quality`, git {r.get('git_hash')}).\n",
             "| corpus chunks | search | ev R@512wp | ev MRR | questions | ms a question |", "|---|---|---|---|---|---|"]
    for s in r["sizes"].values():
        for name, row in s["rows"].items():
            m = row["metrics"]
            lines.append(f"| {s['n_chunks']:,} | {name} | {m['ev_recall@512wp']:.3f} | {m['ev_mrr']:.3f} | "
                         f"{int(m['n_evidence_questions'])} | {s['ms_per_question'].get(name, float('nan')):.0f} |")
    lines += ["", "| corpus chunks | comparison | metric | difference [95% interval] | questions |", "|---|---|---|---|---|"]
    for s in r["sizes"].values():
        for cmp in ("two_stage_minus_exhaustive", "trained_minus_bm25"):
            for m, g in s[cmp].items():
                lines.append(f"| {s['n_chunks']:,} | {cmp.replace('_', ' ')} | {m} | {g['gain']:+.4f} "
                             f"[{g['low']:+.4f}, {g['high']:+.4f}] | {g['questions']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", type=Path, help="the benchmark's articles indexed with one fold's export")
    ap.add_argument("--distractors", type=Path, help="other articles indexed with the same export")
    ap.add_argument("--data", type=Path, help="the SQuAD-format benchmark (COVID-QA dev)")
    ap.add_argument("--fold", type=int, default=0, help="the fold whose held-out questions are asked")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0, help="the folds' seed (as crossval's)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--exhaustive-seconds", type=float, default=EXHAUSTIVE_SECONDS)
    ap.add_argument("--out", type=Path, help="folder for the corpora and scale_quality.json")
    report_arguments(ap, "scale_quality.json")
    args = ap.parse_args(argv)
    if args.report:
        return print_report(args.report, args.publish, report)
    missing = [f"--{k}" for k in ("gold", "distractors", "data", "out") if getattr(args, k) is None]
    if missing:
        ap.error(f"{', '.join(missing)} required")
    from gralc.data.benchmarks import squad_benchmark
    from gralc.data.folds import cv_side

    bench = cv_side(squad_benchmark(args.data), args.folds, args.fold, args.seed, "test")
    saved = run(args.gold, args.distractors, bench, args.sizes, args.out, args.exhaustive_seconds)
    return finish_result(saved, args.out, "scale_quality.json", args.publish, report)


if __name__ == "__main__":
    raise SystemExit(main())
