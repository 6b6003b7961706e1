"""Peak memory and time to index one very long article (``gralc.index``), per strategy.

Builds a plain-text article of ``--mb`` megabytes from the COVID-QA contexts (or ``--source``),
then runs ``python -m gralc.index ARTICLE --strategy S`` on it in a fresh child process per
(strategy, size) and reports the child's peak resident memory (``ru_maxrss`` from
``os.wait4``, that child's alone) and wall time, with the token-vector size for scale
(n word-pieces x 384 x 4 bytes).

    python -m bench.long_document --mb 5                        # late, ~6 min on 2 cores
    python -m bench.long_document --mb 0.02 1 --strategy all --write  # every strategy
    git archive 9ee58f7 gralc | tar -x -C /tmp/old              # the code of another commit
    python -m bench.long_document --mb 1 --strategy structure_aware --write \\
        --code /tmp/old --code-note "git archive of 9ee58f7" --label before

``--write`` merges the runs into ``docs/results/memory_per_strategy.json`` (one row per
label, strategy and size; a rerun replaces its row) and regenerates the ``.md`` table next
to it; a 0.02 MB article's peak (the process, the model, the encoder's batch) is the
baseline the table's (+x) column subtracts. A child whose resident memory passes
``--max-gib`` is killed (recorded as such), so a run that would exhaust a shared machine's
memory stops first.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = ROOT.parent / "shared/data/covidqa/covidqa_dev.json"
RESULTS = ROOT / "docs/results/memory_per_strategy.json"
GIB = 2**30


def article(mb: float, source: Path) -> str:
    data = json.loads(source.read_text(encoding="utf-8"))
    body = "\n\n".join(p["context"] for a in data["data"] for p in a["paragraphs"])
    text = "A very long article\n\n"
    while len(text) < mb * 1e6:
        text += body + "\n\n"
    return text[: int(mb * 1e6)]


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def run_index(path: Path, out: Path, strategy: str, code: Path, max_gib: float) -> dict:
    """``python -m gralc.index`` on ``path`` from the source tree ``code``: return code, peak
    RSS (GiB), wall time, word-pieces and chunks."""
    cmd = [sys.executable, "-m", "gralc.index", str(path), "--out", str(out), "--strategy", strategy]
    env = dict(os.environ, PYTHONPATH=str(code), TQDM_DISABLE="1")
    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
        t0 = time.perf_counter()
        child = subprocess.Popen(cmd, cwd=code, env=env, stdout=so, stderr=se, text=True)
        killed = threading.Event()

        def watch() -> None:  # stop a child that would take a shared machine's memory
            while child.poll() is None:
                if _rss_bytes(child.pid) > max_gib * GIB:
                    killed.set()
                    child.send_signal(signal.SIGKILL)
                    return
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        watcher.join()
        so.seek(0)
        se.seek(0)
        stdout, stderr = so.read(), se.read()
    n = next((int(w.split("=")[1]) for line in stderr.splitlines() if "encoded document" in line
              for w in line.split() if w.startswith("n_tokens=")), None)
    chunks = int(stdout.split()[1]) if stdout.startswith("indexed ") else None
    if child.returncode != 0 and not killed.is_set():
        print(stderr[-2000:], file=sys.stderr)
    return {
        "returncode": child.returncode,
        "killed_above_gib": max_gib if killed.is_set() else None,
        "peak_rss_gib": round(usage.ru_maxrss * 1024 / GIB, 3),
        "wall_s": round(wall, 1),
        "word_pieces": n,
        "token_vectors_gib": round(n * 384 * 4 / GIB, 3) if n else None,
        "chunks": chunks,
        "command": shlex.join(["python", *cmd[1:3], "ARTICLE", *cmd[4:5], "OUT", *cmd[6:]]),
    }


def _key(row: dict) -> tuple:
    return row["label"], row["strategy"], row["mb"]


def write_results(rows: list[dict], meta: dict, path: Path = RESULTS) -> None:
    """Merge ``rows`` into ``path`` (a rerun replaces its label/strategy/size row) and
    regenerate the Markdown table next to it."""
    from gralc.experiments.tables import render
    from gralc.runinfo import write_json_atomic

    saved = json.loads(path.read_text()) if path.exists() else {"runs": [], "invocations": []}
    fresh = {_key(r) for r in rows}
    saved["runs"] = [r for r in saved["runs"] if _key(r) not in fresh] + rows
    saved["runs"].sort(key=lambda r: (r["mb"], r["strategy"], r["label"] != "before", r["label"]))
    saved["invocations"] = [m for m in saved.get("invocations", []) if m["id"] != meta["id"]]
    saved["invocations"].append(meta)
    used = {r.get("invocation") for r in saved["runs"]}
    saved["invocations"] = [m for m in saved["invocations"] if m["id"] in used]
    write_json_atomic(path, saved)
    path.with_suffix(".md").write_text(render("memory_per_strategy", saved))


def main(argv: list[str] | None = None) -> int:
    from gralc.chunking import registered
    from gralc.runinfo import run_metadata

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, nargs="+", default=[5.0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="SQuAD JSON to draw text from")
    ap.add_argument("--strategy", nargs="+", default=["late"],
                    help="strategies to index with, or 'all' (every registered one)")
    ap.add_argument("--code", type=Path, default=ROOT,
                    help="source tree whose gralc.index to run (default: this one)")
    ap.add_argument("--code-note", default="",
                    help="what --code holds, for the record (e.g. 'git archive of 9ee58f7')")
    ap.add_argument("--label", default="after", help="name of this code's column (e.g. before)")
    ap.add_argument("--max-gib", type=float, default=16.0,
                    help="kill a child whose resident memory passes this")
    ap.add_argument("--write", action="store_true",
                    help=f"merge the runs into {RESULTS.relative_to(ROOT)} and its .md")
    args = ap.parse_args(argv)
    strategies = sorted(registered()) if args.strategy == ["all"] else args.strategy
    unknown = sorted(set(strategies) - set(registered()))
    if unknown:
        ap.error(f"unknown strategy {unknown}; available: {', '.join(sorted(registered()))}")
    code = args.code.resolve()
    meta = run_metadata({"label": args.label, "command": shlex.join(
        ["python", "-m", "bench.long_document", *(sys.argv[1:] if argv is None else argv)])})
    meta["code"] = (f"this tree (git {meta['git_hash']})" if code == ROOT
                    else f"the source tree {code}") + (f", {args.code_note}" if args.code_note else "")
    meta["id"] = f"{meta['created']} pid {os.getpid()}"
    rows = []
    print("| article | strategy | word-pieces | token vectors (fp32) | peak RSS | wall | chunks |")
    print("|---|---|---|---|---|---|---|")
    for mb in args.mb:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "long.txt"
            path.write_text(article(mb, args.source), encoding="utf-8")
            for strategy in strategies:
                r = run_index(path, Path(tmp) / f"index-{strategy}", strategy, code, args.max_gib)
                rows.append({"label": args.label, "strategy": strategy, "mb": mb, **r,
                             "invocation": meta["id"]})
                vec = f"{r['token_vectors_gib']:.2f} GiB" if r["token_vectors_gib"] else "?"
                peak = (f"> {args.max_gib:g} GiB (killed)" if r["killed_above_gib"]
                        else f"{r['peak_rss_gib']:.2f} GiB")
                if r["returncode"] != 0 and not r["killed_above_gib"]:
                    peak += f" (exit {r['returncode']})"
                print(f"| {mb:g} MB | {strategy} | {r['word_pieces'] or '?'} | {vec} | {peak} | "
                      f"{r['wall_s']:.0f} s | {r['chunks'] if r['chunks'] is not None else '?'} |",
                      flush=True)
                if args.write:  # after every run: a long sweep keeps what it measured
                    write_results([rows[-1]], meta)
    return 0 if all(r["returncode"] == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
