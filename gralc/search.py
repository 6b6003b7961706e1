"""``python -m gralc.search INDEX_DIR "question" [-k 10] [--json]``: ranked chunks with
document, section path, score and its components.

``--queries FILE.jsonl``: many questions (one JSON object a line with a ``question`` or
``text`` field and optionally an ``id``), searched as one batch; one JSON line out per
question, in order: ``{"id", "question", "hits": [...]}``. ``--search key=value``: a trained
model's two-stage search settings for this run (``exhaustive=true`` scores every chunk;
``dense=200``, ...; see ``gralc.retrieval.candidates``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gralc.cli import add_debug_flag, add_verbose_flag, configure_output, run
from gralc.documents.question import clean_question_text
from gralc.documents.textio import load_json
from gralc.inference import Retriever

BATCH = 64  # questions encoded and scored together


def read_queries(path: str) -> list[tuple[str, str]]:
    """``(id, question)`` of every line of a JSONL file; a bad line is a ValueError naming it."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"--queries {p}: no such file")
    out = []
    with open(p, encoding="utf-8", errors="strict") as f:
        try:
            lines = list(f)
        except UnicodeDecodeError as exc:
            raise ValueError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        obj = load_json(line, p, n)
        text = obj.get("question", obj.get("text")) if isinstance(obj, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{p}:{n}: needs a non-empty \"question\" (or \"text\") string field")
        out.append((str(obj.get("id", n)), clean_question_text(text, f"{p}:{n}")))
    if not out:
        raise ValueError(f"{p}: no questions")
    return out


def hit_record(rank: int, hit) -> dict:
    c = hit.chunk
    return {"rank": rank, "doc_id": c.doc_id, "chunk_id": c.chunk_id, "section_path": c.section_path,
            "score": hit.score, "components": hit.components, "text": c.text}


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: None reads ``sys.argv``) inside the error boundary of
    :mod:`gralc.cli`: 0, or 2 after one message for a user's mistake (``--debug`` /
    ``GRALC_DEBUG=1``: its traceback)."""
    return run(_main, argv)


def load_index(directory: str, search: list[str]) -> Retriever:
    """:meth:`Retriever.load`; an encoder the index records that cannot run here (its
    ``encoder.model`` folder moved or corrupt, its ``encoder.device`` absent) is named with
    the index's ``retriever.json``, where that setting comes from."""
    try:
        return Retriever.load(directory, search=search)
    except (FileNotFoundError, ValueError) as exc:
        if not str(exc).startswith("encoder."):
            raise
        spec = Path(directory) / "retriever.json"
        hint = ("restore that folder, or rebuild the index with `python -m gralc.index ... "
                "encoder.model=FOLDER`" if str(exc).startswith("encoder.model")
                else "rebuild the index with `python -m gralc.index ... encoder.device=auto`")
        raise type(exc)(f"{exc} [the index {directory} records this encoder setting in {spec}: "
                        f"{hint}]") from exc


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Search a GraLC index.")
    parser.add_argument("index", help="directory written by `python -m gralc.index`")
    parser.add_argument("question", nargs="?", help="one question (or --queries FILE)")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="one JSON object per hit")
    parser.add_argument("--queries", metavar="FILE.jsonl",
                        help="search every question of a JSONL file; one JSON line out per question")
    parser.add_argument("--search", nargs="+", default=[], metavar="key=value",
                        help="a trained model's search settings, e.g. exhaustive=true dense=200")
    add_debug_flag(parser)
    add_verbose_flag(parser)
    args = parser.parse_args(argv)
    configure_output(args.verbose)
    if (args.question is None) == (args.queries is None):
        parser.error("give one question or --queries FILE.jsonl")
    if args.k < 1:
        parser.error(f"-k must be >= 1, got {args.k}")
    # a user's mistake propagates to gralc.cli.run: one message and exit 2 (--debug: traceback)
    question = None if args.question is None else clean_question_text(args.question, "the question argument")
    queries = read_queries(args.queries) if args.queries else [("1", question)]
    retriever = load_index(args.index, args.search)
    if args.queries:
        for start in range(0, len(queries), BATCH):
            part = queries[start : start + BATCH]
            for (qid, text), hits in zip(part, retriever.search_batch([t for _, t in part], args.k)):
                print(json.dumps({"id": qid, "question": text,
                                  "hits": [hit_record(r, h) for r, h in enumerate(hits, 1)]}))
        return 0
    hits = retriever.search(question, args.k)
    for rank, hit in enumerate(hits, 1):
        c = hit.chunk
        if args.json:
            print(json.dumps(hit_record(rank, hit)))
            continue
        parts = " ".join(f"{k}={v:.3f}" for k, v in hit.components.items())
        print(f"{rank:>2}. {hit.score:.4f} [{parts}] {c.doc_id} | {' > '.join(c.section_path) or '-'}")
        print(f"    {c.text[:200].replace(chr(10), ' ')}{'...' if len(c.text) > 200 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
