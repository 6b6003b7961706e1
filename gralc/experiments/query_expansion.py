"""Question expansion through MeSH synonyms, screened on the trained model's own rankings
(issue 57's targeted design for the misses whose question and evidence are worded apart):

    python -m gralc.experiments.query_expansion --rankings EA_DIR --out DIR [--publish NAME]

Each question is linked (longest match, the full MeSH 2024 thesaurus); the entry terms of its
concepts that the question does not already contain form an expansion query, whose BM25 over
the fold's chunks (scaled to the question's best chunk) is added to the model's score with a
weight w from :data:`~gralc.experiments.article_stage.WEIGHTS`, chosen per held-out fold on the
other folds. Same screen, metrics and checks as :mod:`gralc.experiments.article_stage`.
Writes ``DIR/query_expansion.json``."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path

from gralc.chunking.chunk import Chunk
from gralc.experiments.article_stage import WEIGHTS, screen


def expansion(question: str, concept_terms: Sequence[Sequence[str]]) -> str:
    """The entry terms of the question's concepts whose words the question does not all hold,
    each once, joined: the expansion query.

    >>> expansion("Is SARS-CoV-2 airborne?", [["SARS-CoV-2", "2019-nCoV", "COVID-19 virus"]])
    '2019-nCoV COVID-19 virus'
    """
    have = set(re.findall(r"\w+", question.lower()))
    out: list[str] = []
    for terms in concept_terms:
        for term in terms:
            words = set(re.findall(r"\w+", term.lower()))
            if words and not words <= have and term not in out:
                out.append(term)
    return " ".join(out)


def synonym_terms(linker, vocabulary) -> Callable:
    """``terms(test, table)`` for :func:`~gralc.experiments.article_stage.fold_metrics`: per
    question ``{"synonyms": {chunk id: BM25 of its expansion / the best chunk's}}`` (empty
    where the question links nothing new)."""
    from gralc.model.query_features import question_concepts
    from gralc.retrieval.indexes.bm25 import BM25Index

    def terms(test, table: list[Chunk]):
        index = BM25Index()
        index.index(table)
        texts = [q.text for q in test.questions]
        queries = [expansion(t, [vocabulary[c].terms() for c in ids])
                   for t, ids in zip(texts, question_concepts(linker, texts))]
        asked = [i for i, text in enumerate(queries) if text]
        scores: list[dict[str, float]] = [{} for _ in queries]
        for i, hits in zip(asked, index.search([queries[i] for i in asked], len(table))):
            top = max((s for _, s in hits), default=0.0)
            scores[i] = {c.chunk_id: s / top for c, s in hits} if top > 0 else {}
        return lambda i, run: {"synonyms": scores[i]}

    return terms


def main(argv: list[str] | None = None) -> int:
    """The command line (``--help``); writes ``--out/query_expansion.json``; 0 on success, 2
    when the rankings or the MeSH thesaurus are missing."""

    def make_terms(args):
        from gralc.experiments.real_data import KNOWLEDGE_FILES, SHARED_DATA
        from gralc.knowledge.linker import EntityLinker
        from gralc.knowledge.vocabulary import load_vocabulary

        path = Path(args.vocabulary or SHARED_DATA / KNOWLEDGE_FILES["knowledge.vocabulary"])
        if not path.is_file():
            raise FileNotFoundError(f"--vocabulary {path}: no such file (the MeSH 2024 thesaurus "
                                    "TSV, gralc mesh --year 2024)")
        vocabulary = load_vocabulary(path)
        return synonym_terms(EntityLinker(vocabulary), vocabulary)

    variants = {f"synonyms w={w}": ("synonyms", w) for w in WEIGHTS}
    return screen(argv, __doc__, variants, make_terms, "query_expansion.json",
                  ("MeSH-synonym question expansion", "synonym expansion"),
                  extra=[("--vocabulary", "the MeSH thesaurus TSV (default: the shared MeSH 2024)")])


if __name__ == "__main__":
    raise SystemExit(main())
