"""What a search costs, measured the same way everywhere: an index's bytes file by file
(:func:`index_bytes`; issue 59: <= 16 KB a chunk all in) and the floor a search's latency is
measured against (:func:`encoder_floor`, the question encoder's pass alone).

    python -m gralc.experiments.search_cost BEFORE AFTER --names "chunk_table/1" "chunk_table/2"

writes ``docs/results/index_bytes.json`` (each index: chunks, the git hash of the GraLC that
wrote it, bytes per file) and its generated table ``index_bytes.md``. Fixed costs (a codec, a
vocabulary) are shared by every chunk, so a small index overstates them per chunk;
``bench.scale_search`` measures the total at scale and reports latencies against the floor.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from gralc.experiments.tables import RESULTS
from gralc.safe_load import read_json_untrusted


def memory_mb(pid: int | str = "self", field: str = "VmRSS") -> float | None:
    """Resident memory of process ``pid`` in MB from /proc: ``VmRSS`` now, ``VmHWM`` its peak
    (getrusage's ru_maxrss survives exec, so a child of a big parent would report the
    parent's); this process's peak from getrusage where /proc is missing; None when the
    process is gone.

    >>> memory_mb() > 0
    True
    """
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        if pid == "self":
            import resource

            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return None
    return None


def disk_bytes(folder: Path) -> dict[str, int]:
    """Bytes on disk per part of an index folder (top-level files and folders).

    Example: ``disk_bytes(Path("index"))`` -> ``{"chunks.jsonl": 1955912, "trained": ...}``.
    """
    out: dict[str, int] = {}
    for p in sorted(folder.iterdir()):
        files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
        out[p.name] = sum(f.stat().st_size for f in files)
    return out


def index_bytes(folder: Path) -> dict:
    """Bytes per file of index ``folder`` (relative paths), its chunk count and provenance.

    Example: ``index_bytes(Path("index"))["bytes_per_chunk"]`` -> e.g. ``24857.6``.
    """
    folder = Path(folder)
    config = read_json_untrusted(folder / "config.json")
    with open(folder / "chunks.jsonl", "rb") as f:
        n_chunks = sum(1 for _ in f)
    files = {p.relative_to(folder).as_posix(): p.stat().st_size
             for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}
    return {"folder": str(folder), "n_chunks": n_chunks, "git_hash": config.get("git_hash"),
            "gralc_version": config.get("gralc_version"), "files": files,
            "bytes_per_chunk": sum(files.values()) / max(1, n_chunks)}


def encoder_floor(encoder, questions: list[str], batch: int, single: int) -> dict[str, float]:
    """The floor a search is measured against, in the same process: the question encoder's
    pass alone (the vector and word-pieces of ``encode_questions``, nothing else), ms for
    one question (p50 of ``single``) and per question in batches of ``batch`` (p50).

    Example: ``encoder_floor(pipeline.encoder, questions, 64, 100)`` -> ``{"single_p50": 9.1,
    "batched_p50": 3.2}`` (ms; CPUs differ several-fold).
    """
    one, per_q = [], []
    encoder.encode_questions(questions[:2])  # warm-up
    for q in questions[:single]:
        t = time.perf_counter()
        encoder.encode_questions([q])
        one.append(1000 * (time.perf_counter() - t))
    for start in range(0, len(questions) - batch + 1, batch):
        t = time.perf_counter()
        encoder.encode_questions(questions[start : start + batch])
        per_q.append(1000 * (time.perf_counter() - t) / batch)
    return {"single_p50": float(np.percentile(one, 50)),
            "batched_p50": float(np.percentile(per_q, 50)) if per_q else float("nan")}



def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Bytes per chunk, file by file, of index folders.")
    ap.add_argument("indexes", nargs="+", type=Path, help="index folders (gralc index --out ...)")
    ap.add_argument("--names", nargs="+", help="a label per index (default: the folder names)")
    ap.add_argument("--tables", type=Path, default=RESULTS,
                    help="folder of index_bytes.{json,md} (default: docs/results)")
    args = ap.parse_args(argv)
    names = args.names or [p.name for p in args.indexes]
    if len(names) != len(args.indexes):
        ap.error(f"--names: {len(names)} labels for {len(args.indexes)} indexes")
    from gralc.experiments.tables import write_table
    from gralc.runinfo import run_metadata

    results = run_metadata({"indexes": {n: index_bytes(p) for n, p in zip(names, args.indexes)}})
    print(write_table("index_bytes", results, args.tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
