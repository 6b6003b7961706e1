"""Question -> positive-chunk supervision, pluggable per benchmark.

A :class:`TrainingExample` names the gold document and a :class:`Positives` selector,
resolved at EVERY step against the document's current hard spans (they move as alpha / gamma
/ tau learn): ``char_ranges`` (chunks overlapping any gold character range: paragraphs or
sections of the required IMRaD types, for PMC template questions and the demo corpus),
``answer_vec`` (the chunk whose frozen mean token vector is closest, by cosine, to the encoded
long answer: PubMedQA) or neither (every chunk of the gold document).
``pairs.positives=document`` (:class:`gralc.training.config.PairsConfig`) replaces every
selector by the last after loading (the features cache keeps the benchmark's own definition).

Splits: PubMedQA uses the official split (train to train, dev to validate; the 500 test PMIDs
are NEVER trained on, asserted); other sources split by gold DOCUMENT, so validation
questions ask about articles not trained on."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import torch
import torch.nn.functional as F

from gralc.documents.question import Question

if TYPE_CHECKING:
    from gralc.model.doc_features import DocFeatures
    from gralc.model.query_features import QueryEncoder


@dataclass
class Positives:
    """Which chunks of the gold document answer the question (see module docstring).

    >>> Positives(char_ranges=[(120, 480)]).answer_vec is None
    True
    """

    char_ranges: list[tuple[int, int]] = field(default_factory=list)
    answer_vec: torch.Tensor | None = None

    def resolve(self, f: DocFeatures, spans: list[tuple[int, int]]) -> list[int]:
        """Indices of the positive chunks among ``spans`` (never empty for a non-empty doc)."""
        if not spans:
            return []
        if self.char_ranges:
            chars = [f.char_span(s, e) for s, e in spans]
            hits = [
                k
                for k, (cs, ce) in enumerate(chars)
                if any(cs < re_ and rs < ce for rs, re_ in self.char_ranges)
            ]
            if hits:
                return hits
        if self.answer_vec is not None:
            means = torch.stack([f.H[s:e].mean(0) for s, e in spans])
            sims = F.normalize(means, dim=-1) @ F.normalize(self.answer_vec.to(means), dim=0)
            return [int(sims.argmax())]
        return list(range(len(spans)))


@dataclass
class TrainingExample:
    """One question: ``q_vec`` (d,) frozen query embedding; ``q_concepts`` its linked concept
    ids with embeddings ``q_u`` (Cq, d_k) and query graph ``q_edge_index`` (2, Eq); ``text``
    the question itself (re-encoded at every step when the encoder has LoRA adapters).

    Example: ``section_pairs(questions, docs, encoder)[0].positives.char_ranges`` -> the
    evidence spans of the first question in its gold document.
    """

    question_id: str
    q_vec: torch.Tensor
    q_concepts: list[str]
    q_u: torch.Tensor
    q_edge_index: torch.Tensor
    doc_id: str
    positives: Positives
    text: str = ""


def make_examples(
    enc: QueryEncoder, questions: list[Question], positives: list[Positives]
) -> list[TrainingExample]:
    """One :class:`TrainingExample` per question: its frozen vector and linked concepts."""
    q_vecs = enc.encode([q.text for q in questions])
    out = []
    for q, vec, pos in zip(questions, q_vecs, positives, strict=True):
        ids, u, ei = enc.concepts(q.text)
        out.append(TrainingExample(q.id, vec, ids, u, ei, q.gold_doc_id, pos, q.text))
    return out


class PairSource(Protocol):
    """``(questions, documents by id, query encoder) -> examples`` for one benchmark kind.

    Example: ``PAIR_SOURCES["pubmedqa"]`` is :func:`answer_evidence_pairs`; any
    ``(questions, docs, encoder) -> list[TrainingExample]`` callable serves.
    """

    def __call__(
        self, questions: list[Question], docs: dict[str, DocFeatures], enc: QueryEncoder
    ) -> list[TrainingExample]: ...


def answer_evidence_pairs(
    questions: list[Question], docs: dict[str, DocFeatures], enc: QueryEncoder
) -> list[TrainingExample]:
    """PubMedQA: the gold abstract's chunk closest to the LONG_ANSWER (all chunks without one).

    Example: ``answer_evidence_pairs(questions, docs, encoder)[0].positives.answer_vec`` -> the
    long answer's vector (the chunk closest to it is the positive).
    """
    answers = enc.encode([q.long_answer for q in questions if q.long_answer])
    it = iter(answers)
    positives = [Positives(answer_vec=next(it) if q.long_answer else None) for q in questions]
    return make_examples(enc, questions, positives)


def section_pairs(
    questions: list[Question], docs: dict[str, DocFeatures], enc: QueryEncoder
) -> list[TrainingExample]:
    """PMC / demo / SQuAD: chunks overlapping the evidence spans, else the gold paragraphs, else
    the top-level sections of the gold IMRaD types; the long answer when none is given.

    Example: ``section_pairs(bench.questions, docs, encoder)`` -> one
    :class:`TrainingExample` per question whose evidence, paragraphs or sections resolve.
    """
    positives = []
    answers = enc.encode([q.long_answer for q in questions])
    for q, ans in zip(questions, answers):
        doc = docs[q.gold_doc_id].doc
        if q.evidence_spans:  # answer spans (SQuAD-format benchmarks)
            ranges = [(s, e) for s, e in q.evidence_spans]
        elif q.gold_paragraph_ids:
            ranges = [(p.start, p.end) for p in doc.paragraphs if p.id in set(q.gold_paragraph_ids)]
        else:
            types = set(q.gold_section_types)
            ranges = [(s.start, s.end) for s in doc.sections if s.imrad_type in types]
        positives.append(Positives(char_ranges=ranges, answer_vec=ans if q.long_answer else None))
    return make_examples(enc, questions, positives)


PAIR_SOURCES: dict[str, PairSource] = {
    "pubmedqa": answer_evidence_pairs,
    "demo": section_pairs,
    "pmc": section_pairs,
    "squad": section_pairs,
}


def split_questions(
    questions: list[Question], source: str, dev_fraction: float = 0.2, seed: int = 0
) -> tuple[list[Question], list[Question]]:
    """``(train, dev)``. PubMedQA: the official ``Question.split``; others: by gold document
    (``dev_fraction`` of the documents, at least one; 0: no dev split, every question trains).

    >>> from gralc.documents.question import Question
    >>> qs = [Question(f"q{i}", "Q?", f"d{i}") for i in range(5)]
    >>> [len(part) for part in split_questions(qs, "demo", dev_fraction=0.2)]
    [4, 1]
    """
    if source == "pubmedqa":
        train = [q for q in questions if q.split == "train"]
        dev = [q for q in questions if q.split == "dev"]
        if not train or not dev:
            raise ValueError(
                "PubMedQA training needs the official train/dev split (Question.split); load "
                "ori_pqal.json with test_ground_truth.json beside it and data.split=all"
            )
    else:
        doc_ids = sorted({q.gold_doc_id for q in questions})
        random.Random(seed).shuffle(doc_ids)
        n_dev = max(1, round(dev_fraction * len(doc_ids))) if len(doc_ids) > 1 and dev_fraction > 0 else 0
        dev_docs = set(doc_ids[:n_dev])
        train = [q for q in questions if q.gold_doc_id not in dev_docs and q.split != "test"]
        dev = [q for q in questions if q.gold_doc_id in dev_docs and q.split != "test"]
    assert not any(q.split == "test" for q in train + dev), "a test question reached training"
    return train, dev
