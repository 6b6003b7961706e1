"""A trained model's search at corpus scale (issue 43): build time, bytes, load memory,
question latency single and batched, and the candidate stage's recall of the exhaustive top 20.

    python -m bench.scale_search --model EXPORT --sizes 10000 100000 1000000 --out results/scale_search
    python -m bench.scale_search --base INDEX ...      # grown from an index at hand instead

1. ``real``: the export indexes every real article at hand (``../shared/data``: COVID-QA dev's
   49 articles, PubMedQA's 1,000 abstracts, 108 PMC articles) with ``gralc.index --model
   --index hnsw`` (the index a large corpus uses), timed (encoding included).
2. each ``--sizes N``: a synthetic index of C = round(N / real chunks) copies of the real one
   (so N is met to within one copy; copy 0 is the real index), grown from its files, no
   encoding (:mod:`gralc.experiments.synthetic_corpus`: vectors moved, words dropped, code bytes
   redrawn, so each real chunk has C - 1 near-duplicates competing with it, a hard case for the
   candidate stage), each copy an index folder joined streamed as ``gralc shard merge`` joins
   shards; timed, peak RSS read, in a process of its own (``--grow C``: one that runs out of
   memory fails alone).
3. each index measured in a fresh process (``--measure DIR``): load seconds and peak RSS,
   bytes per chunk and per token on disk, question latency p50 / p95 one question at a time and
   per question in batches of 64 (COVID-QA dev questions), each over the encoder pass alone
   (the floor, same process), stage one's candidates per question, and the two-stage top 20's
   recall of the exhaustive top 20 (``--recall-questions`` questions, every chunk scored; as
   many as :data:`RECALL_SECONDS` allow, at least two: the exhaustive pass is linear in N).

Writes ``results.json`` (each index's numbers as they arrive), its copy and generated table
``docs/results/scale_search.{json,md}`` (:mod:`gralc.experiments.tables`) and the plot
``docs/img/scale_search.png``; ``--report`` only rewrites them from ``results.json``. A size that
does not fit this machine fails alone; the exponent of latency in corpus size is fitted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from gralc.experiments.real_data import SHARED_DATA
from gralc.experiments.search_cost import disk_bytes, memory_mb

REPO = Path(__file__).resolve().parents[1]
DATA = SHARED_DATA  # ../shared/data beside the repository, or $GRALC_SHARED_DATA
SOURCES = ("covidqa/covidqa_dev.json", "pubmedqa/ori_pqal.json", "pmc")
QUESTIONS = "covidqa/covidqa_dev.json"
#: seconds of exhaustive passes a size gets for the recall questions (at least two questions)
RECALL_SECONDS = 900
#: candidate settings measured against the exhaustive top 20 at every size (batched, k = 20)
SWEEP = [{"dense": d, "lexical": d, "exact": e} for d in (25, 50, 100, 200) for e in (32, 64)] + [
    {"dense": 100, "lexical": 100, "exact": 0}]
logger = logging.getLogger("bench.scale_search")


# ----- 1. the real index --------------------------------------------------------------------
def build_real(model: str, out: Path, data: Path) -> dict:
    """Index every real article with ``model`` (HNSW) into ``out``; its numbers."""
    from gralc.inference import Retriever
    from gralc.retrieval.indexes.dense import IndexConfig

    files = []
    for s in SOURCES:
        p = data / s
        files.extend(sorted(p.rglob("*.nxml")) if p.is_dir() else [p])
    t0 = time.perf_counter()
    r = Retriever.build(data, model=model, files=files, index_config=IndexConfig(kind="hnsw"))
    built = time.perf_counter() - t0
    r.save(out, force=True)
    table = r.scorer.table
    return {"files": len(files), "documents": len({c.doc_id for c in r.index.chunks}),
            "n_chunks": len(r.index), "n_units": len(table.units.vectors) if table.units else 0,
            "n_tokens": table.tokens.n_tokens, "build_s": built, "build_rss_mb": memory_mb(field="VmHWM")}


# ----- 2. synthetic copies ------------------------------------------------------------------
def grow(real_dir: Path, copies: int, out: Path, seed: int = 0) -> dict:
    """``copies`` copies of the real index (copy 0: itself): :func:`gralc.experiments.synthetic_corpus.grow_index`."""
    from gralc.experiments.synthetic_corpus import grow_index

    return grow_index(real_dir, copies, out, seed=seed)


# ----- 3. measuring -------------------------------------------------------------------------
def measure(index_dir: Path, questions: list[str], recall_questions: int, batch: int = 64,
            single: int = 100) -> dict:
    """Load ``index_dir`` in this (fresh) process and time it (see the module docstring)."""
    from gralc.experiments.search_cost import encoder_floor
    from gralc.inference import Retriever
    from gralc.retrieval.trained.candidates import CandidateConfig
    from gralc.retrieval.trained.search import TrainedSearch

    t0 = time.perf_counter()
    r = Retriever.load(index_dir)
    load_s = time.perf_counter() - t0
    rss_load = memory_mb(field="VmHWM")
    search = r.trained_search()
    search.search_batch(questions[:2], 20)  # warm-up (lazy imports, first page faults)
    for key in list(search.timings):
        search.timings[key] = 0.0
    lat = []
    for q in questions[:single]:
        t = time.perf_counter()
        search.search(q, 10)
        lat.append(1000 * (time.perf_counter() - t))
    stages = {k: 1000 * v / max(1.0, search.timings["questions"]) for k, v in search.timings.items()
              if k.endswith("_s")}
    per_q = []
    for start in range(0, len(questions) - batch + 1, batch):
        t = time.perf_counter()
        search.search_batch(questions[start : start + batch], 10)
        per_q.append(1000 * (time.perf_counter() - t) / batch)
    floor = encoder_floor(search.pipeline.encoder, questions, batch, single)  # the bar's unit
    exhaustive = TrainedSearch(search.scorer, search.pipeline, search.index, search.lexical, search.phrase,
                               CandidateConfig(exhaustive=True))
    recall, exhaustive_ms, refs = [], [], []
    budget = time.perf_counter() + RECALL_SECONDS  # the exhaustive pass is linear in the corpus
    for q in questions[:recall_questions]:
        if len(recall) >= 2 and time.perf_counter() > budget:
            break
        got = {h.chunk.chunk_id for h in search.search(q, 20)}
        t = time.perf_counter()
        ref = {h.chunk.chunk_id for h in exhaustive.search(q, 20)}
        exhaustive_ms.append(1000 * (time.perf_counter() - t))
        recall.append(len(got & ref) / len(ref))
        refs.append(ref)
    sweep = []
    for config in SWEEP if recall else ():  # the candidate settings, by measurement
        s = TrainedSearch(search.scorer, search.pipeline, search.index, search.lexical, search.phrase,
                          replace(r.search_config, **config))
        t = time.perf_counter()
        hits = s.search_batch(questions[: len(refs)], 20)
        ms = 1000 * (time.perf_counter() - t) / len(refs)
        rec = [len({h.chunk.chunk_id for h in h20} & ref) / len(ref) for h20, ref in zip(hits, refs)]
        sweep.append({**config, "recall_at_20": statistics.fmean(rec), "ms_per_question": ms,
                      "candidates_per_question": s.candidates_per_question})
    table = r.scorer.table
    disk = disk_bytes(index_dir)
    n, t = len(r.index), table.tokens.n_tokens
    return {
        "n_chunks": n, "n_tokens": t, "load_s": load_s, "rss_after_load_mb": rss_load,
        "rss_peak_mb": memory_mb(field="VmHWM"), "disk_bytes": disk, "disk_bytes_per_chunk": sum(disk.values()) / n,
        "token_bytes_per_token": table.tokens.codec.code_size,
        "token_disk_bytes_per_token": disk.get("trained", 0) and
        sum(f.stat().st_size for f in (index_dir / "trained" / "tokens").rglob("*") if f.is_file()) / t,
        "single_ms": {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95)),
                      "n": len(lat)},
        "single_stages_ms": stages,
        "batched_ms_per_question": {"p50": float(np.percentile(per_q, 50)) if per_q else None,
                                    "p95": float(np.percentile(per_q, 95)) if per_q else None,
                                    "batches": len(per_q), "batch": batch},
        "encoder_floor_ms": floor,
        "ratio_to_floor": {
            "single": float(np.percentile(lat, 50)) / floor["single_p50"],
            "batched": float(np.percentile(per_q, 50)) / floor["batched_p50"] if per_q else None},
        "candidates_per_question": search.candidates_per_question,
        "recall_at_20_of_exhaustive": statistics.fmean(recall) if recall else None,
        "recall_questions": len(recall),
        "exhaustive_ms": statistics.fmean(exhaustive_ms) if exhaustive_ms else None,
        "sweep": sweep,
        "search": vars(r.search_config), "threads": os.cpu_count(),
    }


def questions_of(data: Path, n: int, seed: int = 0) -> list[str]:
    from gralc.data.benchmarks import squad_benchmark

    qs = [q.text for q in squad_benchmark(data / QUESTIONS).questions]
    return [qs[i] for i in np.random.default_rng(seed).permutation(len(qs))[:n]]


# ----- report -------------------------------------------------------------------------------
def report(results: dict, plot: Path | None, tables: Path | None) -> str:
    """The table (:func:`gralc.experiments.tables.scale_search_md`; with ``tables``: written
    there with its JSON as ``scale_search.{json,md}``) and the latency plot."""
    from gralc.experiments.tables import render, scale_rows, write_table

    text = write_table("scale_search", results, tables) if tables else render("scale_search", results)
    rows = scale_rows(results)
    if plot is not None and len(rows) > 1:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        n = [v["measure"]["n_chunks"] for v in rows]
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.loglog(n, [v["measure"]["single_ms"]["p50"] for v in rows], "o-", label="two-stage, one question (p50)")
        ax.loglog(n, [v["measure"]["batched_ms_per_question"]["p50"] for v in rows], "s-",
                  label="two-stage, batches of 64 (per question)")
        ex = [(x, v["measure"]["exhaustive_ms"]) for x, v in zip(n, rows) if v["measure"]["exhaustive_ms"]]
        if ex:
            ax.loglog(*zip(*ex), "^--", label="exhaustive score (every chunk)")
        ax.set_xlabel("chunks in the index")
        ax.set_ylabel("ms per question")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title("Trained GraLC search on 2 CPU cores")
        fig.tight_layout()
        plot.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(plot, dpi=120)
    return text


def in_process(args, *extra: str) -> dict:
    """Run this bench with ``extra`` arguments in a fresh process; its last stdout line (JSON)."""
    cmd = [sys.executable, "-m", "bench.scale_search", "--data", str(args.data), "--out", str(args.out),
           "--questions", str(args.questions), "--recall-questions", str(args.recall_questions), *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(extra)} failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a trained export (with late interaction)")
    ap.add_argument("--base", type=Path, help="grow from this trained index instead of building the "
                    "real one (--model not needed; its chunk count sets the copies)")
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--questions", type=int, default=256, help="COVID-QA dev questions timed")
    ap.add_argument("--recall-questions", type=int, default=30)
    ap.add_argument("--out", type=Path, default=REPO / "results" / "scale_search")
    ap.add_argument("--plot", type=Path, default=REPO / "docs" / "img" / "scale_search.png")
    ap.add_argument("--tables", type=Path, default=REPO / "docs" / "results",
                    help="folder for scale_search.json and its generated table")
    ap.add_argument("--measure", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--grow", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--report", action="store_true", help="only print the table and plot from results.json")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.measure:
        qs = questions_of(args.data, args.questions)
        print(json.dumps(measure(args.measure, qs, args.recall_questions)))
        return 0
    if args.grow:
        print(json.dumps(grow(args.out / "real", args.grow, args.out / f"copies_{args.grow}")))
        return 0
    path = args.out / "results.json"
    results = json.loads(path.read_text()) if path.is_file() else {"indexes": {}}
    if args.report:
        print(report(results, args.plot, args.tables))
        return 0
    if not args.model and not args.base:
        ap.error("--model (or --base INDEX) is required (or --report)")
    from gralc.runinfo import run_metadata, write_json_atomic

    results.update(run_metadata({"args": {k: str(v) for k, v in vars(args).items()}}))
    real = args.out / "real"
    if args.base and not real.exists():
        args.out.mkdir(parents=True, exist_ok=True)
        real.symlink_to(args.base.resolve(), target_is_directory=True)  # the grown copies read it there
    if "real" not in results["indexes"] and args.base:
        from gralc.inference import Retriever

        results["indexes"]["real"] = {"n_chunks": len(Retriever.load(real).index), "build_s": None,
                                      "base": str(args.base)}
    if "real" not in results["indexes"]:
        results["indexes"]["real"] = build_real(args.model, real, args.data)
        write_json_atomic(path, results)
    n_real = results["indexes"]["real"]["n_chunks"]
    for c in sorted({max(1, round(size / n_real)) for size in args.sizes}):
        name = f"copies_{c}"
        entry = results["indexes"].setdefault(name, {})
        if "measure" in entry:
            continue
        folder = real if c == 1 else args.out / name
        try:
            if c == 1:
                entry.update({k: results["indexes"]["real"][k] for k in ("build_s", "n_chunks")})
            elif "build_s" not in entry:
                entry.update(in_process(args, "--grow", str(c)))
                write_json_atomic(path, results)
            entry["measure"] = in_process(args, "--measure", str(folder))
        except RuntimeError as exc:
            entry["failed"] = str(exc)[-1500:]
            print(f"{name}: {entry['failed']}", file=sys.stderr)
        write_json_atomic(path, results)
        if c != 1 and folder.exists() and "measure" in entry:  # a failed one is kept to rerun
            import shutil

            shutil.rmtree(folder)  # tens of GB at the largest sizes; results.json keeps the numbers
    print(report(results, args.plot, args.tables))
    write_json_atomic(path, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
