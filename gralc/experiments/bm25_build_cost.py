"""What building an index's BM25 costs, in memory (bm25s over every text at once) against in
blocks (:func:`~gralc.retrieval.indexes.bm25_blocks.write_bm25_blocks`; issue 59's bounded build).

    python -m gralc.experiments.bm25_build_cost INDEX --out DIR [--block 20000] [--publish bm25_build_cost]

Each build runs in its own process over the index's chunk records (``chunks.jsonl``: the
in-memory build parses them into a list, as a merge held them; the block build reads them
one at a time) for the two chunk BM25 fields of a trained index (terms, term pairs) and
reports seconds and peak RSS over the process's own baseline (imports loaded), then checks
the two builds score the same 32 questions (chunk opening words) equally.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gralc.experiments.published import finish_result, print_report, report_arguments
from gralc.experiments.search_cost import memory_mb

FIELDS = {"terms": {}, "pairs": {"ngram": 2}}


def _child(mode: str, field: str, index: Path, out: Path, block: int) -> dict:
    """One build in this process: seconds and peak RSS above the baseline."""
    from gralc.artefacts import write_artefact
    from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index
    from gralc.retrieval.indexes.bm25_blocks import write_bm25_blocks
    from gralc.retrieval.indexes.folder import ChunkRecords

    base = memory_mb()
    config = BM25Config(**FIELDS[field])
    t0 = time.perf_counter()
    with write_artefact(out, "bm25_index") as tmp:
        if mode == "in_memory":
            bm25 = BM25Index(config)
            bm25.index(list(ChunkRecords(index / "chunks.jsonl")))
            bm25.write_to(tmp, records=False)
        else:
            write_bm25_blocks(tmp, iter(ChunkRecords(index / "chunks.jsonl")), config, block=block)
    return {"seconds": time.perf_counter() - t0, "peak_mb": memory_mb(field="VmHWM") - base, "base_mb": base}


def run(index: Path, block: int) -> dict:
    from gralc.retrieval.indexes.bm25 import BM25Index
    from gralc.retrieval.indexes.folder import ChunkRecords
    from gralc.runinfo import run_metadata

    records = ChunkRecords(index / "chunks.jsonl")
    step = max(1, len(records) // 32)
    questions = [" ".join(records[i].text.split()[:12]) for i in range(0, len(records), step)][:32]
    rows = []
    with tempfile.TemporaryDirectory(prefix="gralc-bm25-cost-") as tmp:
        for field in FIELDS:
            built = {}
            for mode in ("in_memory", "blocks"):  # one process each, one after the other
                out = Path(tmp) / f"{field}_{mode}"
                r = subprocess.run([sys.executable, "-m", "gralc.experiments.bm25_build_cost", "--child", mode,
                                    field, str(index), str(out), "--block", str(block)],
                                   capture_output=True, text=True, check=True)
                rows.append({"field": field, "build": mode, **json.loads(r.stdout.strip().splitlines()[-1])})
                built[mode] = BM25Index.load(out, records=False)
            diff = max(float(np.abs(built["in_memory"].scores(q) - built["blocks"].scores(q)).max())
                       for q in questions)
            for row in rows[-2:]:
                row["largest_score_difference"] = diff
    return run_metadata({"index": str(index), "chunks": len(records), "block": block, "rows": rows})


def report(r: dict) -> str:
    """The generated table of a run."""
    lines = [f"BM25 built in memory vs in blocks of {r['block']:,} chunks over {r['chunks']:,} chunk records "
             f"(`python -m gralc.experiments.bm25_build_cost`, git {r.get('git_hash')}, one process a build).\n",
             "| field | build | seconds | peak RSS above baseline (MB) | largest score difference |",
             "|---|---|---|---|---|"]
    for row in r["rows"]:
        lines.append(f"| {row['field']} | {row['build']} | {row['seconds']:.1f} | {row['peak_mb']:.0f} | "
                     f"{row['largest_score_difference']:.1e} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", nargs="?", type=Path, help="an index folder (its chunks.jsonl is read)")
    ap.add_argument("--out", help="folder for bm25_build_cost.json")
    ap.add_argument("--block", type=int, default=20_000, help="chunks a block")
    ap.add_argument("--child", nargs=4, metavar=("MODE", "FIELD", "INDEX", "OUT"), help=argparse.SUPPRESS)
    report_arguments(ap, "bm25_build_cost.json")
    args = ap.parse_args(argv)
    if args.child:
        mode, field, index, out = args.child
        print(json.dumps(_child(mode, field, Path(index), Path(out), args.block)))
        return 0
    if args.report:
        return print_report(args.report, args.publish, report)
    if args.index is None or not (args.index / "chunks.jsonl").is_file():
        ap.error(f"{args.index}: give an index folder holding chunks.jsonl")
    return finish_result(run(args.index, args.block), args.out, "bm25_build_cost.json", args.publish, report)


if __name__ == "__main__":
    raise SystemExit(main())
