"""``gralc inspect FILE [FILE ...]`` (= ``python -m gralc.documents inspect``): what the parser sees.

``.nxml``/``.xml`` files go through the JATS parser, ``.txt``/``.md`` through the plain-text one.
A file that cannot be parsed gets one ``error:`` line on stderr naming it and the fix; the
other files are still inspected, and the exit code is then 2 (a user's input error, as at
every GraLC command line), else 0. ``--debug`` (or ``GRALC_DEBUG=1``) stops at the first bad
file with its traceback instead.
"""

from __future__ import annotations

import os
import sys

from gralc.documents.corpus import parse_document
from gralc.documents.errors import DocumentParseError
from gralc.documents.imrad import imrad_report
from gralc.documents.model import Document, Section
from gralc.terminal import for_terminal


def _tree_lines(doc: Document, sec: Section, depth: int = 0) -> list[str]:
    words = sum(len(doc.text[p.start : p.end].split()) for p in doc.paragraphs
                if p.section_id == sec.id)  # fmt: skip
    title = sec.title or "(untitled)"
    lines = [f"{'  ' * depth}- [{sec.imrad_type}] {title}  ({sec.id}: "
             f"{len(sec.paragraph_ids)} paragraphs, {words} words)"]  # fmt: skip
    for sub in sec.subsections:
        lines.extend(_tree_lines(doc, sub, depth + 1))
    return lines


def _graph_stats(doc: Document) -> dict[str, int] | None:
    """Structure-graph statistics when gralc.documents.structure_graph is available."""
    try:
        from gralc.documents.structure_graph import graph_stats
    except ImportError:
        return None
    return graph_stats(doc)


def inspect(doc: Document) -> str:
    """A human-readable report: section tree, element counts, IMRaD verdict, graph stats.

    Example: ``print(inspect(parse_document("gralc/data/demo/articles/PMC9000001.nxml")))`` prints the
    article's section tree, element counts, IMRaD verdict and structure-graph statistics.
    """
    report = imrad_report(doc)
    out = [f"{doc.id}  ({doc.article_type or 'article'}; source {doc.source})",
           f"title: {doc.title}", "sections:"]  # fmt: skip
    for sec in doc.sections:
        out.extend("  " + line for line in _tree_lines(doc, sec))
    counts = {
        "characters": len(doc.text), "sections": sum(1 for _ in doc.iter_sections()),
        "paragraphs": len(doc.paragraphs), "sentences": len(doc.sentences),
        "words": len(doc.text.split()), "body words": doc.body_word_count(),
        "citations": len(doc.citations), "crossrefs": len(doc.crossrefs),
        "lists": len(doc.lists), "captions": len(doc.captions),
        "references": len(doc.references),
    }  # fmt: skip
    out.append("counts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    out.append(f"IMRaD: {'yes' if report.ok else 'no'} ({report.reason})")
    for w in doc.warnings:
        out.append(f"warning: {w}")
    stats = _graph_stats(doc)
    if stats:
        out.append("graph: " + ", ".join(f"{k} {v}" for k, v in stats.items()))
    return "\n".join(out)


def inspect_main(argv: list[str] | None = None) -> int:
    """``gralc inspect FILE ...`` inside the error boundary of :mod:`gralc.cli`.

    Example: ``inspect_main(["gralc/data/demo/articles/PMC9000001.nxml"])`` -> ``0`` (the report
    printed; 1 when a file cannot be parsed).
    """
    from gralc.cli import run

    return run(_inspect, argv)


def _inspect(argv: list[str], prog: str = "gralc inspect") -> int:
    from gralc.cli import CommandParser

    parser = CommandParser(prog, description="Parse article files and print their section tree, "
                           "counts, IMRaD verdict and structure graph.", takes_settings=False)
    parser.add_argument("files", nargs="+", help="JATS / PMC .nxml files, or .txt / .md articles")
    args = parser.parse(argv)
    # gralc.cli.run takes --debug off the arguments before main sees them: look at the
    # process's own command line too
    debug = args.debug or os.environ.get("GRALC_DEBUG") == "1" or "--debug" in sys.argv[1:]
    status = 0
    for i, path in enumerate(args.files):
        if i:
            print()
        try:
            report = inspect(parse_document(path))
        except DocumentParseError as exc:
            if debug:
                raise
            print(f"error: {exc}", file=sys.stderr)
            status = 2
            continue
        # corpus text (titles) and file names shown, never acted on by the terminal: controls
        # and unpaired surrogates (a file name that is not UTF-8) as their escapes
        print(for_terminal(report))
    return status


def main(argv: list[str] | None = None) -> int:
    """``python -m gralc.documents inspect FILE ...`` (the package's own command line).

    Example: ``main(["inspect", "gralc/data/demo/articles/PMC9000001.nxml"])`` -> ``0``.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print("usage: python -m gralc.documents inspect FILE [FILE ...]   (also: gralc inspect)")
        return 0 if args else 2
    if args[0] != "inspect":
        print(f"python -m gralc.documents: unknown command {args[0]!r}; use inspect",
              file=sys.stderr)
        return 2
    return _inspect(args[1:], "python -m gralc.documents inspect")


if __name__ == "__main__":
    from gralc.cli import run

    sys.exit(run(main))
