"""Per-unit rates of this machine, measured in one run, for extrapolating GraLC (issue 6).

Usage: python -m bench.scale [--pmc DIR] [--mesh TSV] [--n-articles 20] [--faiss-n 100000]
       [--out outputs/bench_scale/results.json] [--skip-train]
(defaults read ../shared/data beside the repository, or $GRALC_SHARED_DATA). Measures, on real PMC articles:

* parse: every article under --pmc (articles/s, input MB/s); word-pieces per article over
  all of them (mean, p50, p95, max: tokenising only);
* on an evenly spaced sample of --n-articles: the full-MeSH linker (MB/s, best of 3), the
  whole-document encoder (tokens/s, fp32 and bf16 autocast, no cache), ``late`` and
  ``structure_aware`` chunking (chunks per article, chunk() seconds per article beyond
  encoding and linking);
* FAISS, one OpenMP thread, on --faiss-n Gaussian-mixture 384-d vectors
  (the mixture of ``bench/retrieval_latency.py``): build seconds, serialised bytes per vector,
  single-query p50/p95 latency and recall@10 vs flat for flat / HNSW / IVF-flat / IVF-PQ;
* training: the demo corpus (``demo_config``, fresh caches in a temp dir, max_epochs=1):
  feature setup seconds, seconds per step and per epoch;
* peak RSS after every stage, load average, BLAS kernel and torch threads.

Prints a markdown table and writes every number to --out (JSON) for docs/scaling.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import torch

from gralc.chunking.base import PreparedDocument
from gralc.documents.corpus import corpus_files
from gralc.documents.jats import parse_jats
from gralc.encoding.encoder import DocumentEncoder, EncoderConfig
from gralc.experiments.real_data import SHARED_DATA, require_files
from gralc.experiments.search_cost import memory_mb
from gralc.pipeline import KnowledgeConfig, Pipeline, PipelineConfig
from gralc.runinfo import blas_kernel, git_hash

DATA = SHARED_DATA
STRATEGIES = ("late", "structure_aware")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def mixture(n: int, d: int, rng: np.random.Generator, centers: np.ndarray) -> np.ndarray:
    """``n`` vectors around ``centers`` (one Gaussian blob each), as bench/retrieval_latency.py draws."""
    labels = rng.integers(0, len(centers), n)
    return (centers[labels] + 0.6 * rng.standard_normal((n, d))).astype(np.float32)


def timed(fn):
    """(result, wall seconds, CPU seconds of this process, all threads) of ``fn()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def stage(results: dict[str, Any], name: str, out: Path) -> None:
    """Record peak RSS after stage ``name`` and rewrite the JSON (a cut-short run keeps it)."""
    results["peak_rss_mb_after"][name] = round(memory_mb(field="VmHWM"), 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    print(f"[{time.strftime('%H:%M:%S')}] {name} done, peak RSS {memory_mb(field='VmHWM'):.0f} MB, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip


def bench_parse(pmc: Path) -> tuple[list, dict[str, Any]]:
    files = corpus_files(pmc)
    docs, skipped = [], 0
    wall, cpu = time.perf_counter(), time.process_time()
    for f in files:
        try:
            docs.append(parse_jats(f))
        except Exception:  # a bad file is skipped, as load_corpus does
            skipped += 1
    seconds, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
    mb = sum(f.stat().st_size for f in files) / 1e6
    return docs, {
        "articles": len(docs),
        "skipped": skipped,
        "seconds": seconds,
        "input_mb": mb,
        "cpu_s": cpu_s,
        "articles_per_s": len(docs) / seconds,
        "articles_per_cpu_s": len(docs) / cpu_s,
        "mb_per_s": mb / seconds,
    }


def token_stats(encoder: DocumentEncoder, docs: list) -> dict[str, Any]:
    """Word-pieces, characters and words per article (tokenising only)."""
    ids = encoder.tokenizer([d.text for d in docs], add_special_tokens=False,
                            truncation=False, verbose=False)["input_ids"]  # fmt: skip
    n = np.array([len(x) for x in ids])
    chars = np.array([len(d.text) for d in docs])
    return {
        "articles": len(docs),
        "mean": float(n.mean()),
        "p50": float(np.percentile(n, 50)),
        "p95": float(np.percentile(n, 95)),
        "max": int(n.max()),
        "chars_mean": float(chars.mean()),
        "bytes_per_token": float(chars.sum() / n.sum()),
        "words_mean": float(np.mean([len(d.text.split()) for d in docs])),
    }


def bench_encode(encoder: DocumentEncoder, texts: list[str]) -> tuple[list, dict[str, Any]]:
    encoder.encode_document(texts[0][:2000])  # warm-up
    rss0 = memory_mb(field="VmHWM")
    out, seconds, cpu_s = timed(lambda: encoder.encode_documents(texts, progress=False))
    n_tok = sum(t.n_tokens for t in out)
    return out, {
        "precision": encoder.config.precision,
        "articles": len(texts),
        "tokens": n_tok,
        "windows": sum(len(t.windows) for t in out),
        "seconds": seconds,
        "tokens_per_s": n_tok / seconds,
        "cpu_s": cpu_s,
        "tokens_per_cpu_s": n_tok / cpu_s,
        "peak_rss_growth_mb": memory_mb(field="VmHWM") - rss0,
        "token_vectors_mb": sum(t.vectors.numel() * 4 for t in out) / 1e6,
    }


def bench_chunking(
    pipeline: Pipeline, prepared: list[PreparedDocument], fp32: dict[str, Any]
) -> dict[str, Any]:
    """Chunks per article and chunk() seconds (beyond encoding and linking) per strategy."""
    out = {}
    for name in STRATEGIES:
        chunker = pipeline.chunker(name)
        chunks, own, cpu = timed(lambda: [c for p in prepared for c in chunker.chunk(p)])  # noqa: B023
        out[name] = {
            "chunks": len(chunks),
            "chunks_per_article": len(chunks) / len(prepared),
            "tokens_per_chunk": fp32["tokens"] / len(chunks),
            "seconds": own,
            "s_per_article": own / len(prepared),
            "cpu_s_per_article": cpu / len(prepared),
            "record_bytes_per_chunk": sum(
                len(json.dumps(c.to_dict(with_embedding=False), ensure_ascii=False).encode())
                for c in chunks
            )
            / len(chunks),
            "x_encode": own / fp32["seconds"],
        }
    return out


def bench_faiss(n: int, d: int, n_queries: int, k: int, seed: int) -> list[dict[str, Any]]:
    """flat / hnsw / ivf / ivfpq on a Gaussian mixture, one thread, inner product."""
    faiss.omp_set_num_threads(1)
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((max(10, n // 100), d)).astype(np.float32)
    x, q = mixture(n, d, rng, centers), mixture(n_queries, d, rng, centers)
    faiss.normalize_L2(x)
    faiss.normalize_L2(q)
    nlist = max(1, min(round(4 * math.sqrt(n)), n // 39))  # ChunkIndex's rule
    ip = faiss.METRIC_INNER_PRODUCT

    def ivfpq() -> faiss.Index:
        return faiss.IndexIVFPQ(faiss.IndexFlatIP(d), d, nlist, 48, 8, ip)

    kinds = {
        "flat": (lambda: faiss.IndexFlatIP(d), ""),
        "hnsw": (lambda: faiss.IndexHNSWFlat(d, 32, ip), "M=32 efSearch=64"),
        "ivf": (
            lambda: faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, ip),
            f"nlist={nlist} nprobe=16",
        ),
        "ivfpq": (ivfpq, f"nlist={nlist} nprobe=16 m=48 nbits=8"),
    }
    rows, exact = [], None
    for kind, (make, params) in kinds.items():

        def build_index() -> faiss.Index:
            index = make()  # noqa: B023
            if not index.is_trained:
                index.train(x)
            index.add(x)
            return index

        index, build, build_cpu = timed(build_index)
        if kind == "hnsw":
            index.hnsw.efSearch = 64
        elif kind.startswith("ivf"):
            index.nprobe = 16
        lat, found = [], []
        for row in q:
            t = time.perf_counter()
            _, ids = index.search(row[None], k)
            lat.append((time.perf_counter() - t) * 1e3)
            found.append(set(ids[0].tolist()))
        exact = exact or found
        rows.append(
            {
                "kind": kind,
                "params": params,
                "n": n,
                "build_s": build,
                "build_cpu_s": build_cpu,
                "bytes_per_vector": faiss.serialize_index(index).nbytes / n,
                "p50_ms": float(np.percentile(lat, 50)),
                "p95_ms": float(np.percentile(lat, 95)),
                "recall_at_10": float(np.mean([len(a & b) / k for a, b in zip(found, exact)])),
            }
        )
        del index
        print(f"  faiss {kind}: build {build:.1f} s", flush=True)
    return rows


def bench_train(max_epochs: int, encoder: DocumentEncoder) -> dict[str, Any]:
    """Demo-corpus training in a temp dir: setup (encode + link + features) and fit times;
    ``encoder`` only counts the demo articles' word-pieces (a step's cost scales with them)."""
    import pytorch_lightning as pl

    from gralc.data.demo import demo_articles
    from gralc.demo import demo_config
    from gralc.training.run import train

    class Clock(pl.Callback):
        def __init__(self) -> None:
            self.t0 = time.perf_counter()
            self.fit_start = self.epoch_start = self.batch_start = 0.0
            self.steps: list[float] = []
            self.epochs: list[float] = []
            self.epochs_cpu: list[float] = []
            self.epoch_cpu = 0.0

        def on_fit_start(self, trainer, module) -> None:
            self.fit_start = time.perf_counter()

        def on_train_epoch_start(self, trainer, module) -> None:
            self.epoch_start = time.perf_counter()
            self.epoch_cpu = time.process_time()

        def on_train_batch_start(self, trainer, module, batch, idx) -> None:
            self.batch_start = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, idx) -> None:
            self.steps.append(time.perf_counter() - self.batch_start)

        def on_train_epoch_end(self, trainer, module) -> None:
            self.epochs.append(time.perf_counter() - self.epoch_start)
            self.epochs_cpu.append(time.process_time() - self.epoch_cpu)

    with tempfile.TemporaryDirectory() as tmp:
        cfg = demo_config(output_dir=f"{tmp}/out", cache_dir=f"{tmp}/cache")
        cfg.trainer.max_epochs = max_epochs
        clock = Clock()
        result, total, total_cpu = timed(lambda: train(cfg, callbacks=[clock]))
    steps = clock.steps
    demo_tokens = token_stats(encoder, [parse_jats(f) for f in demo_articles()])
    return {
        "demo_articles": demo_tokens["articles"],
        "demo_tokens_per_article": demo_tokens["mean"],
        "max_epochs": max_epochs,
        "train_questions": result["n_train_questions"],
        "dev_questions": result["n_dev_questions"],
        "global_step": result["global_step"],
        "batch_size": cfg.loader.batch_size,
        "torch_threads": cfg.trainer.num_threads,
        "setup_s": clock.fit_start - clock.t0,
        "total_s": total,
        "total_cpu_s": total_cpu,
        "step_s_mean": float(np.mean(steps)),
        "step_s_mean_after_first": float(np.mean(steps[1:])) if len(steps) > 1 else None,
        "epoch_s": clock.epochs,
        "epoch_cpu_s": clock.epochs_cpu,
        "epoch_s_per_question": float(np.mean(clock.epochs)) / result["n_train_questions"],
    }


def table(r: dict[str, Any]) -> list[str]:
    """Markdown rows ``| quantity | value | unit / note |`` of the measured rates."""
    p, t, ln, e = r["parse"], r["tokens_per_article"], r["linker"], r["encode"]
    rows = [
        f"| parse (JATS -> Document) | {p['articles_per_s']:.1f} | articles/s wall "
        f"({p['articles_per_cpu_s']:.1f} per CPU-s; {p['mb_per_s']:.2f} MB/s of XML, "
        f"{p['articles']} articles) |",
        f"| word-pieces per article | {t['mean']:,.0f} / {t['p95']:,.0f} | mean / p95 over "
        f"{t['articles']} articles (max {t['max']:,}; {t['bytes_per_token']:.2f} chars each) |",
        f"| linker, full MeSH | {ln['mb_per_s']:.2f} | MB/s of Document.text, wall "
        f"({ln['mb_per_cpu_s']:.2f} per CPU-s; {ln['mentions_per_article']:.0f} "
        "mentions/article) |",
        f"| Pipeline construction | {r['pipeline_build_s']:.1f} | s (thesaurus load, automaton "
        "build, model load; once per process) |",
    ]
    rows += [
        f"| encoder {x['precision']} | {x['tokens_per_s']:,.0f} | tokens/s wall "
        f"({x['tokens_per_cpu_s']:,.0f} per CPU-second; {x['articles']} articles, "
        f"{x['tokens']:,} tokens) |"
        for x in e
    ]
    for name, c in r["chunking"].items():
        rows.append(
            f"| {name}: chunks per article | {c['chunks_per_article']:.1f} | chunks "
            f"(mean {c['tokens_per_chunk']:.0f} tokens/chunk; chunks.jsonl record "
            f"{c['record_bytes_per_chunk']:,.0f} B) |"
        )
        rows.append(
            f"| {name}: chunk() beyond encode+link | {c['s_per_article'] * 1e3:.0f} | "
            f"ms/article wall ({c['cpu_s_per_article'] * 1e3:.0f} CPU-ms; "
            f"{c['x_encode']:.2f}x of fp32 encoding) |"
        )
    rows.append(
        f"| token vectors held by prepare() | {e[0]['token_vectors_mb']:.0f} | MB for "
        f"{e[0]['articles']} articles (1,536 B/token) |"
    )
    rows += [
        f"| FAISS {f['kind']} ({f['params'] or 'exact'}) | {f['build_s']:.1f} s / "
        f"{f['bytes_per_vector']:.0f} B / {f['p50_ms']:.2f} ms / {f['recall_at_10']:.3f} | "
        f"build of {f['n']:,} (wall; {f['build_cpu_s']:.1f} CPU-s) / bytes per vector / "
        "p50 query (1 thread) / recall@10 |"
        for f in r["faiss"]
    ]
    if tr := r.get("train"):
        rows += [
            f"| demo training setup (encode+link+features) | {tr['setup_s']:.1f} | s for "
            f"{tr['demo_articles']} articles of {tr['demo_tokens_per_article']:,.0f} tokens |",
            f"| demo training step | {tr['step_s_mean']:.3f} | s/step (batch "
            f"{tr['batch_size']} questions, {tr['torch_threads']} thread) |",
            f"| demo training epoch | {np.mean(tr['epoch_s']):.2f} | s/epoch wall "
            f"({np.mean(tr['epoch_cpu_s']):.2f} CPU-s; {tr['train_questions']} questions) |",
        ]
    rows.append(f"| peak RSS (whole run) | {max(r['peak_rss_mb_after'].values()):,.0f} | MB |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n")[0])
    ap.add_argument("--pmc", type=Path, default=DATA / "pmc")
    ap.add_argument("--mesh", type=Path, default=DATA / "mesh" / "mesh2024_thesaurus_terms.tsv")
    ap.add_argument("--n-articles", type=int, default=20, help="sample for link/encode/chunk")
    ap.add_argument("--faiss-n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--train-epochs", type=int, default=1)
    ap.add_argument("--skip-train", action="store_true")
    ap.add_argument("--out", type=Path, default=Path("outputs/bench_scale/results.json"))
    args = ap.parse_args(argv)
    require_files(args.pmc, args.mesh)
    logging.basicConfig(level=logging.ERROR)
    r: dict[str, Any] = {
        "command": " ".join(["python -m bench.scale", *(argv or sys.argv[1:])]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "git_hash": git_hash(),
        "load_avg_start": os.getloadavg(),
        "cpu_count": os.cpu_count(),
        "cpu": cpu_model(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "blas": blas_kernel(),
        "faiss_version": faiss.__version__,
        "peak_rss_mb_after": {},
    }
    docs, r["parse"] = bench_parse(args.pmc)
    stage(r, "parse", args.out)

    cfg = PipelineConfig(encoder=EncoderConfig(device="cpu", cache_dir=None),
                         knowledge=KnowledgeConfig(vocabulary=str(args.mesh)))  # fmt: skip
    pipeline, r["pipeline_build_s"], _ = timed(lambda: Pipeline(cfg))
    r["tokens_per_article"] = token_stats(pipeline.encoder, docs)
    step = len(docs) / min(args.n_articles, len(docs))
    sample = [docs[int(i * step)] for i in range(min(args.n_articles, len(docs)))]
    texts = [d.text for d in sample]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    stage(r, "pipeline+tokenise", args.out)

    runs = [timed(lambda: pipeline.linker.link_documents(texts)) for _ in range(3)]
    mentions, link_s, link_cpu = min(runs, key=lambda run: run[1])  # best of 3 (wall)
    r["linker"] = {"mb": mb, "seconds": link_s, "mb_per_s": mb / link_s, "cpu_s": link_cpu,
                   "mb_per_cpu_s": mb / link_cpu,
                   "mentions_per_article": sum(map(len, mentions)) / len(texts)}  # fmt: skip
    stage(r, "linker", args.out)

    tokens, fp32 = bench_encode(pipeline.encoder, texts)
    r["encode"] = [fp32]
    stage(r, "encode fp32", args.out)
    prepared = [PreparedDocument(d, t, m) for d, t, m in zip(sample, tokens, mentions)]
    r["chunking"] = bench_chunking(pipeline, prepared, fp32)
    del prepared, tokens
    stage(r, "chunking", args.out)

    bf16 = DocumentEncoder(EncoderConfig(device="cpu", cache_dir=None, precision="bf16"))
    _, bf = bench_encode(bf16, texts)
    r["encode"].append(bf)
    del bf16
    stage(r, "encode bf16", args.out)

    r["faiss"] = bench_faiss(args.faiss_n, pipeline.encoder.dim, args.queries, 10, seed=0)
    stage(r, "faiss", args.out)
    if not args.skip_train:
        r["train"] = bench_train(args.train_epochs, pipeline.encoder)
        stage(r, "train", args.out)

    r["load_avg_end"] = os.getloadavg()
    r["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    stage(r, "end", args.out)

    print(f"\n# Scaling rates: {len(sample)} of {len(docs)} PMC articles, {r['started']}\n")
    print("| quantity | value | unit / note |\n|---|---:|---|")
    print("\n".join(table(r)))
    print(
        f"\nBLAS: OPENBLAS_CORETYPE={r['blas']}; torch {r['torch']}, threads "
        f"{r['torch_threads']} (training: {r.get('train', {}).get('torch_threads', '-')}), "
        f"cpus {r['cpu_count']} ({r['cpu']}); faiss {r['faiss_version']}, 1 OpenMP thread. "
        f"Load average {r['load_avg_start'][0]:.1f} at start, {r['load_avg_end'][0]:.1f} at "
        f"end (shared machine: rates are lower bounds). JSON: {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
