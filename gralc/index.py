"""``python -m gralc.index CORPUS --out INDEX_DIR [--model EXPORT_DIR | --strategy NAME]``.

Indexes a JATS file, a directory of JATS files, or a PubMedQA JSON file.
"""

from __future__ import annotations

import argparse
import logging
import sys

from gralc.inference import Retriever
from gralc.retrieval.index import IndexConfig


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build a GraLC search index.")
    parser.add_argument("corpus", help="JATS file, directory of JATS files, or ori_pqal.json")
    parser.add_argument("--out", required=True, help="index directory to write")
    parser.add_argument("--model", help="trained GraLC export dir or checkpoint")
    parser.add_argument("--strategy", default="structure_aware", help="baseline strategy when no --model")
    parser.add_argument("--index", default="flat", choices=["flat", "hnsw", "ivf"])
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        retriever = Retriever.build(args.corpus, args.strategy, args.model,
                                    index_config=IndexConfig(kind=args.index))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = retriever.save(args.out)
    print(f"indexed {len(retriever.index)} chunks ({retriever.spec.strategy}) into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
