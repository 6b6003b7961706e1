"""A load test of ``gralc serve`` (issue 59's bar: >= 50 questions/s with 16 clients, p99 <=
500 ms, 0 errors, RSS growth <= 10 %): the server started on a free loopback port in a process
of its own, ``--clients`` threads each sending one question per request (keep-alive, no
think time) for ``--seconds`` or ``--max-requests``, then the server stopped.

    python -m gralc.experiments.serve_load INDEX --queries questions.txt --clients 16 --seconds 60

Writes ``OUT/serve_load.json``: throughput, latency p50 / p95 / p99, errors by kind, the
server's RSS after warm-up, at the end and its peak over the run (sampled every second from
/proc; anonymous memory and mapped index files apart), its batches and questions (``/health``: the mean batch the dynamic batching formed),
and the run's settings, git hash and machine. ``--publish``: also ``docs/results/serve_load``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shlex
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from gralc.experiments.search_cost import memory_mb


def free_port() -> int:
    """A TCP port free on loopback now (the OS's choice).

    >>> 0 < free_port() < 65536
    True
    """
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _request(conn: http.client.HTTPConnection, method: str, path: str, body: dict | None = None):
    data = None if body is None else json.dumps(body).encode()
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, response.read()


def wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float) -> dict:
    """``/health`` of the server on ``port`` once it answers (bounded by ``timeout_s``); a
    RuntimeError when the process ended or the time ran out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gralc serve exited ({proc.returncode}): {proc.stderr.read()[-2000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            status, body = _request(conn, "GET", "/health")
            conn.close()
            if status == 200:
                return json.loads(body)
        except OSError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"gralc serve did not answer /health within {timeout_s:.0f} s")


def load_test(index: Path, questions: list[str], clients: int, seconds: float, k: int = 10,
              max_requests: int = 1_000_000, serve_args: tuple[str, ...] = (),
              start_timeout_s: float = 600.0) -> dict:
    """Run the load test (see the module docstring) and return its numbers."""
    port = free_port()
    cmd = [sys.executable, "-m", "gralc", "serve", str(index), "--port", str(port), *serve_args]
    import gralc

    here = str(Path(gralc.__file__).resolve().parents[1])  # the server runs this GraLC
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        t0 = time.perf_counter()
        health = wait_healthy(port, proc, start_timeout_s)
        start_s = time.perf_counter() - t0
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for q in questions[: min(8, len(questions))]:  # warm-up: lazy imports, first page faults
            _request(conn, "POST", "/search", {"question": q, "k": k})
        conn.close()
        rss_start = memory_mb(proc.pid)
        anon_start = memory_mb(proc.pid, "RssAnon")
        latencies: list[list[float]] = [[] for _ in range(clients)]
        errors: dict[str, int] = {}
        lock = threading.Lock()
        sent = iter(range(max_requests))
        deadline = time.monotonic() + seconds

        def client(c: int) -> None:
            own = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            i = c
            while time.monotonic() < deadline:
                with lock:
                    if next(sent, None) is None:
                        break
                t = time.perf_counter()
                try:
                    status, body = _request(own, "POST", "/search",
                                            {"question": questions[i % len(questions)], "k": k})
                    ok = status == 200 and len(json.loads(body)["hits"]) > 0
                    kind = None if ok else f"HTTP {status}"
                except (OSError, http.client.HTTPException, ValueError, KeyError) as exc:
                    kind = type(exc).__name__
                    own.close()
                    own = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                if kind is None:
                    latencies[c].append(1000 * (time.perf_counter() - t))
                else:
                    with lock:
                        errors[kind] = errors.get(kind, 0) + 1
                i += clients
            own.close()

        threads = [threading.Thread(target=client, args=(c,), daemon=True) for c in range(clients)]
        began = time.perf_counter()
        for t in threads:
            t.start()
        samples = []
        while any(t.is_alive() for t in threads):
            samples.append(memory_mb(proc.pid) or 0.0)
            for t in threads:
                t.join(timeout=1.0 / max(1, len(threads)))
        elapsed = time.perf_counter() - began
        rss_end = memory_mb(proc.pid)
        anon_end, file_end = memory_mb(proc.pid, "RssAnon"), memory_mb(proc.pid, "RssFile")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        end_health = json.loads(_request(conn, "GET", "/health")[1])
        conn.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    lat = np.array([x for per in latencies for x in per])
    done = len(lat)
    return {
        "index": str(index), "chunks": health.get("chunks"), "clients": clients, "seconds": seconds,
        "k": k, "server_start_s": start_s, "elapsed_s": elapsed, "answered": done,
        "errors": errors, "n_errors": sum(errors.values()),
        "questions_per_s": done / elapsed if elapsed else None,
        "latency_ms": {p: float(np.percentile(lat, q)) if done else None
                       for p, q in (("p50", 50), ("p95", 95), ("p99", 99))},
        "latency_mean_ms": statistics.fmean(lat) if done else None,
        "rss_mb": {"after_warmup": rss_start, "end": rss_end, "peak": max(samples, default=None),
                   # anonymous memory (a leak would grow it) and mapped index files (pages read)
                   "anon_after_warmup": anon_start, "anon_end": anon_end, "file_end": file_end},
        "rss_growth": (rss_end / rss_start - 1) if rss_start and rss_end else None,
        "batches": end_health.get("batches"), "server_questions": end_health.get("questions"),
        "mean_batch": end_health.get("questions", 0) / max(1, end_health.get("batches", 0)),
        "serve_args": list(serve_args), "server_pid": proc.pid,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Load test of gralc serve on loopback.")
    ap.add_argument("index", type=Path, help="a folder written by `gralc index`")
    ap.add_argument("--queries", type=Path, required=True,
                    help="questions (the formats of `gralc search --queries`)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--max-requests", type=int, default=1_000_000, help="stop after this many requests")
    ap.add_argument("-k", type=int, default=10)
    ap.add_argument("--out", type=Path, required=True, help="folder for serve_load.json")
    ap.add_argument("--publish", action="store_true", help="also docs/results/serve_load.{json,md}")
    ap.add_argument("--serve-args", default="", help='arguments for gralc serve, e.g. "--max-batch 32"')
    args = ap.parse_args(argv)
    if args.clients < 1 or args.seconds <= 0 or args.max_requests < 1:
        ap.error("--clients and --max-requests must be >= 1, --seconds > 0")
    from gralc.data.question_io import read_queries
    from gralc.runinfo import run_metadata, write_json_atomic

    questions = [text for _, text in read_queries(args.queries, None)]
    extra = tuple(shlex.split(args.serve_args))
    try:
        measured = load_test(args.index, questions, args.clients, args.seconds, args.k,
                             args.max_requests, extra)
    except RuntimeError as exc:  # the server did not start: its own message says why
        print(f"error: {str(exc).strip()}", file=sys.stderr)
        return 2
    result = run_metadata({"args": {k: str(v) for k, v in vars(args).items()}, **measured})
    args.out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.out / "serve_load.json", result)
    if args.publish:
        from gralc.experiments.tables import write_table

        print(write_table("serve_load", result))
    print(json.dumps({k: result[k] for k in ("questions_per_s", "latency_ms", "n_errors", "rss_growth")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
