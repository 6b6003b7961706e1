"""A hand-made toy corpus for the corpus-graph and community-report tests: two documents
whose sentences mention known concepts, and chunk spans over them."""

from __future__ import annotations

from dataclasses import dataclass

from gralc.documents.model import Document, Paragraph, Sentence
from gralc.knowledge.mention import EntityMention
from gralc.knowledge.vocabulary import Concept, Vocabulary

VOCAB = Vocabulary({c.id: c for c in [
    Concept("D1", "Tamoxifen", [], ["D02.455"]),
    Concept("D2", "Breast Neoplasms", [], ["C04.588"]),
    Concept("D3", "Neoplasms", [], ["C04"]),
    Concept("D4", "Fatigue", [], ["C23.888"]),
    Concept("D5", "Influenza", [], ["C01.925"]),
]})


@dataclass
class Span:
    doc_id: str
    chunk_id: str
    char_start: int
    char_end: int


def doc_with(doc_id: str, sentences: list[list[tuple[str, str]]]):
    """A document of one paragraph whose sentences mention ``(surface, concept id)`` pairs."""
    text, sents, mentions = "", [], []
    for words in sentences:
        start = len(text)
        for surface, cid in words:
            mentions.append(EntityMention(len(text), len(text) + len(surface), cid, surface, VOCAB[cid].name))
            text += surface + " "
        text = text.rstrip() + ". "
        sents.append(Sentence(start, len(text) - 1, "p1"))
    para = Paragraph("p1", 0, len(text), None)
    para.sentences = sents
    return Document(id=doc_id, text=text, paragraphs=[para]), mentions


A = doc_with("a", [[("Tamoxifen", "D1"), ("breast cancer", "D2")], [("fatigue", "D4")]])
B = doc_with("b", [[("influenza", "D5"), ("fatigue", "D4")]])


def spans(doc, n_chunks: int) -> list[Span]:
    cut = [round(i * len(doc.text) / n_chunks) for i in range(n_chunks + 1)]
    return [Span(doc.id, f"{doc.id}:{i}", cut[i], cut[i + 1]) for i in range(n_chunks)]
