"""How much of a corpus a vocabulary links: the measure of whether a knowledge graph can help.

Pure functions of a linker (anything with ``link(text) -> list[EntityMention]``, e.g.
:class:`~gralc.knowledge.linker.EntityLinker` or ``Pipeline.linker``), a tokenizer (a fast
Hugging Face tokenizer, e.g. ``Pipeline.encoder.tokenizer``, for word-piece counts) and texts:

* the share of questions with at least one linked concept;
* the share of chunks with at least one (chunks: :func:`fixed_chunk_texts`, windows of a fixed
  number of word-pieces, so the measure does not depend on a model's boundaries);
* mentions per 1,000 word-pieces of the articles;
* the concepts found in the most articles (id, name, share of the articles).

:func:`linking_coverage` returns all of them as one JSON-ready dict.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from gralc.knowledge.mention import EntityMention
from gralc.model.query_features import link_questions


class Linker(Protocol):
    """What coverage needs of a linker (:class:`~gralc.knowledge.linker.EntityLinker` is one).

    Example: ``linking_coverage(EntityLinker(vocabulary), tokenizer, questions, articles)``:
    any object with ``link(text) -> list[EntityMention]`` serves.
    """

    def link(self, text: str) -> list[EntityMention]:
        """Concept mentions in ``text``, sorted by start."""
        ...


def word_pieces(tokenizer, text: str) -> int:
    """Word-pieces of ``text`` (no special tokens, no truncation).

    Example: ``word_pieces(encoder.tokenizer, "Metformin helps")`` -> ``4`` (MiniLM: ``met``,
    ``##form``, ``##in``, ``helps``).
    """
    from gralc.chunking.sentence_spans import tokenize_offsets

    return len(tokenize_offsets(tokenizer, text))


def fixed_chunk_texts(tokenizer, text: str, size: int = 256, overlap: int = 0) -> list[str]:
    """``text`` cut into windows of ``size`` word-pieces (stride ``size - overlap``), as the
    fixed-size chunker (:mod:`gralc.chunking.fixed`) cuts them, without embedding them: each
    chunk's text from its first word-piece's start to its last one's end.

    Example: ``fixed_chunk_texts(encoder.tokenizer, article_text, size=256)`` -> the texts of the
    256-word-piece windows the fixed-size chunker cuts.
    """
    from gralc.chunking.sentence_spans import token_windows, tokenize_offsets

    offsets = tokenize_offsets(tokenizer, text)
    return [text[int(offsets[s, 0]):int(offsets[e - 1, 1])]
            for s, e in token_windows(0, len(offsets), size, overlap)]


def share_linked(mentions: Sequence[Sequence[EntityMention]]) -> float:
    """The share of texts with at least one mention (0.0 for no texts).

    >>> from gralc.knowledge.mention import EntityMention
    >>> share_linked([[EntityMention(0, 9, "D008687", "Metformin", "Metformin")], []])
    0.5
    """
    return sum(bool(m) for m in mentions) / len(mentions) if mentions else 0.0


def mentions_per_1000_pieces(mentions: Sequence[Sequence[EntityMention]], pieces: int) -> float:
    """Mentions per 1,000 word-pieces (0.0 for no word-pieces).

    >>> from gralc.knowledge.mention import EntityMention
    >>> mentions_per_1000_pieces([[EntityMention(0, 9, "D008687", "Metformin", "Metformin")]], 500)
    2.0
    """
    return 1000.0 * sum(len(m) for m in mentions) / pieces if pieces else 0.0


def top_concepts(mentions: Sequence[Sequence[EntityMention]], top: int = 20) -> list[dict[str, Any]]:
    """The ``top`` concepts by the number of texts (articles) mentioning them: id, name,
    number and share of the texts, mentions in all; ties by id.

    >>> from gralc.knowledge.mention import EntityMention
    >>> m = EntityMention(0, 9, "D008687", "Metformin", "Metformin")
    >>> top_concepts([[m, m], [m], []], top=1)
    [{'id': 'D008687', 'name': 'Metformin', 'articles': 2, 'article_share': 0.6666666666666666, 'mentions': 3}]
    """
    in_texts: Counter[str] = Counter()
    count: Counter[str] = Counter()
    names: dict[str, str] = {}
    for ms in mentions:
        in_texts.update({m.concept_id for m in ms})
        for m in ms:
            count[m.concept_id] += 1
            names.setdefault(m.concept_id, m.name)
    ranked = sorted(in_texts, key=lambda c: (-in_texts[c], c))[:top]
    n = len(mentions)
    return [{"id": c, "name": names[c], "articles": in_texts[c], "article_share": in_texts[c] / n,
             "mentions": count[c]} for c in ranked]


def linking_coverage(linker: Linker, tokenizer, questions: Sequence[str],
                     articles: Sequence[str], chunk_size: int = 256,
                     top: int = 20) -> dict[str, Any]:
    """Coverage of ``linker`` over ``questions`` and ``articles`` (their whole texts):
    shares of questions / fixed ``chunk_size``-word-piece chunks with >= 1 concept, mentions
    per 1,000 word-pieces of the articles (and of the questions), distinct concepts, and the
    ``top`` concepts by the number of articles they occur in.

    Example: ``linking_coverage(linker, tokenizer, questions, articles)["questions_with_concept"]``
    -> the share of questions with at least one concept.
    """
    q_mentions = link_questions(linker, questions)
    a_mentions = [linker.link(a) for a in articles]
    chunks = [c for a in articles for c in fixed_chunk_texts(tokenizer, a, chunk_size)]
    c_mentions = [linker.link(c) for c in chunks]
    a_pieces = sum(word_pieces(tokenizer, a) for a in articles)
    q_pieces = sum(word_pieces(tokenizer, q) for q in questions)
    return {
        "questions": len(questions),
        "articles": len(articles),
        "chunks": len(chunks),
        "chunk_size_pieces": chunk_size,
        "article_pieces": a_pieces,
        "questions_with_concept": share_linked(q_mentions),
        "chunks_with_concept": share_linked(c_mentions),
        "articles_with_concept": share_linked(a_mentions),
        "mentions_per_1000_pieces": mentions_per_1000_pieces(a_mentions, a_pieces),
        "question_mentions_per_1000_pieces": mentions_per_1000_pieces(q_mentions, q_pieces),
        "distinct_concepts_articles": len({m.concept_id for ms in a_mentions for m in ms}),
        "distinct_concepts_questions": len({m.concept_id for ms in q_mentions for m in ms}),
        "top_concepts": top_concepts(a_mentions, top),
    }
