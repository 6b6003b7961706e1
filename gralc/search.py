"""``gralc search INDEX "question" [-k 10] [--format text|json|trec] [key=value ...]``.

Ranked chunks with their document, character span, section path, IMRaD types, score and the
score's parts. ``--queries FILE``: many questions (JSON lines with ``_id``/``id``/``qid`` and
``text``/``question``/``query``, a TSV ``id<TAB>question`` file, plain text one question a
line, or a BEIR folder), searched in batches; one JSON line out per question in order
(``{"id", "question", "hits": [...]}``), or a TREC run (``--format trec``). ``search.KEY=value``:
a trained model's two-stage search settings for this run (``search.exhaustive=true`` scores
every chunk; ``search.dense=200``, ...). ``--model PATH``: the trained model that built the
index, when it is no longer where the index expects it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gralc.cli import CommandParser, Settings, command_main, route_settings

BATCH = 64  # questions encoded and scored together
FORMATS = ("text", "json", "trec")
RENAMED = {"--search": "search.KEY=value (e.g. search.exact=64)", "--json": "--format json"}


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc search`` takes (for ``--help``)."""
    from gralc.retrieval.trained.candidates import CandidateConfig

    return [Settings("two-stage search of a trained model's index (this run only)",
                     CandidateConfig, "search.")]


def parser() -> CommandParser:
    """The command line of ``gralc search``."""
    p = CommandParser("gralc search", description=__doc__.split("\n\n", 1)[1].split("\n\n")[0],
                      settings=settings, renamed=RENAMED)
    p.add_argument("index", help="a folder written by `gralc index`")
    p.add_argument("question", nargs="?", help="one question (or --queries FILE)")
    p.add_argument("-k", type=int, default=10, help="hits per question (default 10)")
    p.add_argument("--queries", metavar="FILE",
                   help="search every question of a file (.jsonl, .tsv, .txt) or a BEIR folder")
    p.add_argument("--queries-format", choices=("jsonl", "tsv", "text", "beir"), default=None,
                   help="the --queries file's format (default: from its extension and content)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="text (one question's default), json (one object per hit; with "
                        "--queries one line per question, the default), trec (a TREC run)")
    p.add_argument("--run-name", default="gralc", help="the run tag of --format trec")
    p.add_argument("--level", choices=("chunk", "doc"), default="chunk",
                   help="--format trec ranks chunks (docno = chunk id) or documents (a "
                        "document's best chunk; docno = document id)")
    p.add_argument("--model", help="the trained model that built the index, if it moved "
                                   "(an export, checkpoint or run folder; checked by its SHA-256)")
    return p


def hit_record(rank: int, hit) -> dict:
    """One hit as JSON: where it is (document, chunk, character span, section path, IMRaD
    types), its score and the score's parts, and its text."""
    c = hit.chunk
    return {"rank": rank, "doc_id": c.doc_id, "chunk_id": c.chunk_id, "char_start": c.char_start,
            "char_end": c.char_end, "section_path": c.section_path, "imrad_types": c.imrad_types,
            "score": hit.score, "components": hit.components, "text": c.text}



def load_index(directory: str, search: list[str], model: str | None = None):
    """:meth:`Retriever.load`; an encoder the index records that cannot run here (its
    ``encoder.model`` folder moved or corrupt, its ``encoder.device`` absent) is named with
    the index's ``retriever.json``, where that setting comes from."""
    from gralc.inference import Retriever

    try:
        return Retriever.load(directory, search=search, model=model)
    except (FileNotFoundError, ValueError) as exc:
        if not str(exc).startswith("encoder."):
            raise
        spec = Path(directory) / "retriever.json"
        hint = ("restore that folder, or rebuild the index with `gralc index ... "
                "encoder.model=FOLDER`" if str(exc).startswith("encoder.model")
                else "rebuild the index with `gralc index ... encoder.device=auto`")
        raise type(exc)(f"{exc} [the index {directory} records this encoder setting in {spec}: "
                        f"{hint}]") from exc


def _main(argv: list[str]) -> int:
    p = parser()
    args = p.start(argv)
    keys = route_settings(args.settings, ("search",))
    if keys[""]:
        p.error(f"unknown setting(s) {' '.join(keys[''])}: gralc search takes search.KEY=value "
                "(a question that looks like key=value goes after --)")
    if (args.question is None) == (args.queries is None):
        p.error("give one question or --queries FILE")
    if args.k < 1:
        p.error(f"-k must be >= 1, got {args.k}")
    from gralc.data.question_io import read_queries
    from gralc.documents.question import clean_question_text
    from gralc.terminal import for_terminal

    # a user's mistake propagates to gralc.cli.run: one message and exit 2 (--debug: traceback)
    if args.queries:
        queries = read_queries(args.queries, args.queries_format)
    else:
        queries = [("1", clean_question_text(args.question, "the question argument"))]
    if not any(t.strip() for _, t in queries):
        raise ValueError("the question is blank: give words to search with")
    fmt = args.format or ("json" if args.queries else "text")
    if fmt == "trec":  # what the run file will hold, checked before the index loads
        from gralc.retrieval.trec import check_token

        check_token(args.run_name, "--run-name")
        for qid, _ in queries:
            check_token(qid, "question id")
    retriever = load_index(args.index, keys["search"], args.model)
    if fmt == "trec":
        from gralc.retrieval.trec import doc_hits, write_trec_run

        depth = args.k if args.level == "chunk" else max(10 * args.k, 100)  # k documents
        for start in range(0, len(queries), BATCH):
            part = queries[start : start + BATCH]
            found = retriever.search_batch([t for _, t in part], depth)
            if args.level == "doc":
                found = [doc_hits(h)[: args.k] for h in found]
            write_trec_run([(qid, h) for (qid, _), h in zip(part, found)], sys.stdout,
                           args.run_name, args.level)
        return 0
    if args.queries:
        for start in range(0, len(queries), BATCH):
            part = queries[start : start + BATCH]
            for (qid, text), hits in zip(part, retriever.search_batch([t for _, t in part], args.k)):
                if fmt == "json":
                    print(json.dumps({"id": qid, "question": text,
                                      "hits": [hit_record(r, h) for r, h in enumerate(hits, 1)]}))
                else:
                    print(for_terminal(f"[{qid}] {text}"))
                    print_text(hits)
        return 0
    hits = retriever.search(queries[0][1], args.k)
    if fmt == "json":
        for rank, hit in enumerate(hits, 1):
            print(json.dumps(hit_record(rank, hit)))
    else:
        print_text(hits)
    return 0


main = command_main(_main)


def print_text(hits) -> None:
    """Hits for a person: rank, score and its parts, document, section path, the text's start."""
    from gralc.terminal import for_terminal

    for rank, hit in enumerate(hits, 1):
        c = hit.chunk
        parts = " ".join(f"{k}={v:.3f}" for k, v in hit.components.items())
        print(for_terminal(f"{rank:>2}. {hit.score:.4f} [{parts}] {c.doc_id} | "
                           f"{' > '.join(c.section_path) or '-'} | chars {c.char_start}-{c.char_end}"))
        text = c.text[:200].replace("\n", " ").replace("\t", " ")
        print(f"    {for_terminal(text)}{'...' if len(c.text) > 200 else ''}")


if __name__ == "__main__":
    sys.exit(main())
