"""Benchmark the JATS parser on a directory of PMC articles.

Usage: python -m bench.parse [DIR]   (default: ../shared/data/pmc beside the repository, or $GRALC_SHARED_DATA/pmc)
Prints a markdown table: articles, skipped, IMRaD count, totals, time and throughput.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from gralc.documents.corpus import corpus_files, load_corpus
from gralc.documents.imrad import is_imrad
from gralc.experiments.real_data import SHARED_DATA

DEFAULT_DIR = SHARED_DATA / "pmc"  # ../shared/data beside the repository, or $GRALC_SHARED_DATA


def main(argv: list[str]) -> int:
    directory = Path(argv[0]) if argv else DEFAULT_DIR
    if not directory.is_dir():
        print(
            f"error: {directory} is not a directory; pass the folder of .nxml files",
            file=sys.stderr,
        )
        return 1
    megabytes = sum(p.stat().st_size for p in corpus_files(directory)) / 1e6
    start = time.perf_counter()
    result = load_corpus(directory)
    seconds = time.perf_counter() - start
    docs = result.documents
    rows = {
        "articles parsed": len(docs),
        "skipped": len(result.skipped),
        "IMRaD (>= 1,000 words)": sum(is_imrad(d) for d in docs),
        "paragraphs": sum(len(d.paragraphs) for d in docs),
        "sentences": sum(len(d.sentences) for d in docs),
        "words": sum(len(d.text.split()) for d in docs),
        "citations": sum(len(d.citations) for d in docs),
        "input MB": f"{megabytes:.1f}",
        "seconds (parse, 1 process)": f"{seconds:.2f}",
        "articles/s": f"{len(docs) / seconds:.1f}",
        "MB/s": f"{megabytes / seconds:.2f}",
    }
    print(f"JATS parse benchmark on `{directory}`\n")
    print("| metric | value |\n|---|---|")
    for name, value in rows.items():
        print(f"| {name} | {value} |")
    print(f"\nOPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'default')} "
          "(no BLAS in this benchmark: lxml + Python)")  # fmt: skip
    for path, reason in result.skipped:
        print(f"skipped {path}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
