"""``python -m gralc.search INDEX_DIR "question" [-k 10] [--json]``: ranked chunks with
document, section path, score and its components."""

from __future__ import annotations

import argparse
import json
import sys

from gralc.inference import Retriever


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Search a GraLC index.")
    parser.add_argument("index", help="directory written by `python -m gralc.index`")
    parser.add_argument("question")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="one JSON object per hit")
    args = parser.parse_args(argv)
    try:
        hits = Retriever.load(args.index).search(args.question, args.k)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for rank, hit in enumerate(hits, 1):
        c = hit.chunk
        if args.json:
            print(json.dumps({"rank": rank, "doc_id": c.doc_id, "chunk_id": c.chunk_id,
                              "section_path": c.section_path, "score": hit.score,
                              "components": hit.components, "text": c.text}))
            continue
        parts = " ".join(f"{k}={v:.3f}" for k, v in hit.components.items())
        print(f"{rank:>2}. {hit.score:.4f} [{parts}] {c.doc_id} | {' > '.join(c.section_path) or '-'}")
        print(f"    {c.text[:200].replace(chr(10), ' ')}{'...' if len(c.text) > 200 else ''}")
    return 0


if __name__ == "__main__":
    from gralc.cli import run

    sys.exit(run(main))
