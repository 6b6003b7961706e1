"""The command line the question generators share (:mod:`gralc.data.crosssection_questions`,
:mod:`gralc.data.cloze_questions`): a corpus folder, ``--out``, ``--seed``, ``--per-article``
and an optional ``--vocabulary`` whose concepts the generator links; the folder is checked
before the vocabulary or any article is loaded."""

from __future__ import annotations

import argparse
from pathlib import Path


def generator_parser(prog: str, description: str, out_help: str, per_article: int) -> argparse.ArgumentParser:
    """The shared arguments; a generator adds its own to the returned parser.

    >>> ap = generator_parser("gralc questions", "Generate questions.", "output JSONL", 5)
    >>> ap.parse_args(["articles/", "--out", "q.jsonl"]).per_article
    5
    """
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("corpus_dir", help="folder of articles (JATS .nxml/.xml, .txt, .md)")
    ap.add_argument("--out", required=True, help=out_help)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-article", type=int, default=per_article)
    ap.add_argument("--vocabulary", help="MeSH descYYYY.xml / thesaurus .tsv / MRCONSO.RRF: "
                    "concepts linked in the articles (heuristics without it)")
    return ap


def generator_inputs(ap: argparse.ArgumentParser, args: argparse.Namespace):
    """``(load_corpus result, linker or None)`` for parsed ``args``; a missing folder, an
    unreadable vocabulary or a folder without parseable articles ends the command with one
    message naming it (the folder is checked first, the vocabulary before any article).

    Example: ``generator_inputs(ap, ap.parse_args(["gralc/data/demo/articles", "--out", "q.jsonl"]))``
    -> ``(load_corpus result of the 10 demo articles, None)`` (a linker with ``--vocabulary``).
    """
    from gralc.documents.corpus import load_corpus

    if not Path(args.corpus_dir).is_dir():
        ap.error(f"corpus directory {args.corpus_dir} does not exist")
    linker = None
    if args.vocabulary:
        from gralc.knowledge.linker import EntityLinker
        from gralc.knowledge.vocabulary import load_vocabulary

        try:
            linker = EntityLinker(load_vocabulary(args.vocabulary))
        except (OSError, ValueError) as exc:
            ap.error(f"--vocabulary {args.vocabulary}: {exc}")
    loaded = load_corpus(args.corpus_dir)
    if not loaded.documents:
        ap.error(f"no parseable articles under {args.corpus_dir}")
    return loaded, linker
