"""Build time and single-query latency of ChunkIndex (flat / hnsw / ivf), k=10.

Synthetic 384-d chunk vectors (all-MiniLM-L6-v2 width) drawn from a Gaussian mixture, since
real embeddings cluster (structureless random vectors are IVF's worst case). Prints a
markdown table with p50/p95 latency in ms (one query per call, the ChunkIndex.search path
including tie-break and Chunk lookup) and recall@10 against the exact flat index.

    .venv/bin/python -m bench.retrieval_latency [--sizes 10000 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import faiss
import numpy as np

from gralc.chunking.chunk import Chunk
from gralc.retrieval.indexes.dense import ChunkIndex, IndexConfig


def mixture(n: int, d: int, rng: np.random.Generator, centers: np.ndarray) -> np.ndarray:
    labels = rng.integers(0, len(centers), n)
    return (centers[labels] + 0.6 * rng.standard_normal((n, d))).astype(np.float32)


def blas_info() -> str:
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        numpy_blas = f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # numpy < 1.26 has no mode="dicts"
        numpy_blas = "unknown"
    return (
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'default')}; numpy BLAS: "
        f"{numpy_blas}; faiss {faiss.__version__} ({faiss.get_compile_options().strip()}), "
        f"omp threads {faiss.omp_get_max_threads()}; {platform.processor() or platform.machine()}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="FAISS OpenMP threads (1: single-query serving; more threads only "
                         "add barrier overhead to one query, badly so on a busy machine)")
    args = ap.parse_args()
    faiss.omp_set_num_threads(args.threads)

    rows = []
    for n in args.sizes:
        rng = np.random.default_rng(args.seed)
        centers = rng.standard_normal((max(10, n // 100), args.dim)).astype(np.float32)
        x = mixture(n, args.dim, rng, centers)
        queries = mixture(args.queries, args.dim, rng, centers)
        chunks = [
            Chunk(doc_id=f"d{i // 8}", chunk_id=f"c{i}", text="", char_start=0, char_end=0,
                  embedding=v)
            for i, v in enumerate(x)
        ]
        exact: list[set[str]] = []
        for kind in ("flat", "hnsw", "ivf"):
            t0 = time.perf_counter()
            ix = ChunkIndex(args.dim, IndexConfig(kind=kind))
            ix.add(chunks)
            build = time.perf_counter() - t0
            lat, found = [], []
            for q in queries:
                t = time.perf_counter()
                res = ix.search(q[None], args.k)[0]
                lat.append((time.perf_counter() - t) * 1e3)
                found.append({c.chunk_id for c, _ in res})
            if kind == "flat":
                exact = found
            recall = np.mean([len(a & b) / args.k for a, b in zip(found, exact)])
            extra = {"flat": "", "hnsw": f"M={ix.config.hnsw_m} ef={ix.config.ef_search}",
                     "ivf": f"nlist={ix.nlist} nprobe={ix.config.nprobe}"}[kind]
            rows.append((n, kind, extra, build, *np.percentile(lat, [50, 95]), recall))
            print(f"done n={n} {kind}", flush=True)

    print(f"\n{blas_info()}\n")
    print(f"| chunks | index | params | build (s) | p50 (ms) | p95 (ms) | recall@{args.k} vs flat |")
    print("|---:|---|---|---:|---:|---:|---:|")
    for n, kind, extra, build, p50, p95, recall in rows:
        print(f"| {n:,} | {kind} | {extra} | {build:.2f} | {p50:.3f} | {p95:.3f} | {recall:.3f} |")


if __name__ == "__main__":
    main()
