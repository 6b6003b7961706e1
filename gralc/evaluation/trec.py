"""Evidence-level qrels: the chunks that hold each question's evidence, as TREC judgements.

:func:`evidence_qrels` judges a chunk relevant to a question when it hits one of the
question's evidence spans by the SAME hit rule as the evidence metrics
(:func:`gralc.evaluation.evidence.hit_spans`). A ``level="chunk"`` TREC run
(:func:`gralc.retrieval.trec.write_trec_run`) scored against them by trec_eval, pytrec_eval or
ranx gives our ``ev_mrr`` always, and our ``ev_recall@k`` for the questions whose chunks and
spans pair one to one (:func:`one_to_one`). An evidence span no chunk holds is judged as a
placeholder docno ``<qid>#evidence<j>-in-no-chunk`` that no run retrieves; questions without
evidence get no qrels. Document-level qrels are :func:`gralc.retrieval.trec.document_qrels`.
Where the TREC numbers and ours differ: docs/evaluation.md."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from gralc.documents.model import Document
from gralc.documents.question import Question
from gralc.evaluation.evidence import hit_spans, resolve_evidence
from gralc.retrieval.trec import Qrels

logger = logging.getLogger(__name__)


def _holding(questions: Iterable[Question], chunks: Sequence[Any], documents: Iterable[Document],
             min_coverage: float):
    """Per question with evidence: ``(question, spans, {chunk_id: hit span indices})``."""
    docs = {d.id: d for d in documents}
    by_doc: dict[str, list[Any]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    for q in questions:
        if q.gold_doc_id not in docs:
            raise ValueError(f"question {q.id!r}: gold document {q.gold_doc_id!r} is not among the documents")
        spans = resolve_evidence(q, docs[q.gold_doc_id])
        if not spans:
            continue
        held = {}
        for c in by_doc[q.gold_doc_id]:
            hit = hit_spans(c, q.gold_doc_id, spans, min_coverage)
            if hit:
                if c.chunk_id in held:
                    raise ValueError(f"chunk id {c.chunk_id!r} twice among the chunks; ids must be unique")
                held[c.chunk_id] = hit
        yield q, spans, held


def evidence_qrels(
    questions: Iterable[Question],
    chunks: Sequence[Any],
    documents: Iterable[Document],
    min_coverage: float = 0.5,
) -> Qrels:
    """``{question id: {chunk id: 1}}`` of the chunks holding each question's evidence (module
    docstring), with a placeholder for each evidence span no chunk holds. ``chunks``: every
    chunk of the index the run searched (the same chunking); ``documents``: the benchmark's;
    ``min_coverage``: the evidence rule's (``eval.py evidence.min_coverage``).

    >>> from gralc.chunking.chunk import Chunk
    >>> from gralc.documents.model import Document
    >>> doc = Document("d1", "x" * 300)
    >>> q = Question("q1", "Which dose?", "d1", evidence_spans=[[10, 50], [280, 290]])
    >>> chunks = [Chunk("d1", "d1::0", "", 0, 100), Chunk("d1", "d1::1", "", 100, 284)]
    >>> evidence_qrels([q], chunks, [doc])
    {'q1': {'d1::0': 1, 'q1#evidence1-in-no-chunk': 1}}
    """
    out: Qrels = {}
    for q, spans, held in _holding(questions, chunks, documents, min_coverage):
        judged = dict.fromkeys(held, 1)
        covered = set().union(*held.values())
        for j in range(len(spans)):
            if j not in covered:
                judged[f"{q.id}#evidence{j}-in-no-chunk"] = 1
        out[q.id] = judged
    return out


def one_to_one(
    questions: Iterable[Question],
    chunks: Sequence[Any],
    documents: Iterable[Document],
    min_coverage: float = 0.5,
) -> dict[str, bool]:
    """Per question with evidence: whether its holding chunks and its held evidence spans pair
    one to one, so that TREC ``recall@k`` against :func:`evidence_qrels` equals our
    ``ev_recall@k`` whatever the run (module docstring).

    Example: ``one_to_one(bench.questions, chunks, bench.documents)`` -> ``{'q1': True, ...}``: whether
    TREC recall@k against the evidence qrels equals ``ev_recall@k`` for each question.
    """
    out = {}
    for q, _spans, held in _holding(questions, chunks, documents, min_coverage):
        per_span: dict[int, int] = defaultdict(int)
        for hit in held.values():
            for j in hit:
                per_span[j] += 1
        out[q.id] = all(len(hit) == 1 for hit in held.values()) and all(n == 1 for n in per_span.values())
    return out


__all__ = ["evidence_qrels", "one_to_one"]
