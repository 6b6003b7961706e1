"""The question record shared by every QA source (PubMedQA, demo corpus, cross-section set)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Question:
    """A retrieval question with its gold evidence.

    ``gold_doc_id`` is the :class:`~gralc.documents.model.Document` id holding the answer.
    ``gold_section_types`` (IMRaD types) and ``gold_paragraph_ids`` narrow the evidence when
    known (empty for PubMedQA, where the whole abstract is relevant). ``evidence_spans``:
    ``[[start, end], ...]`` character spans of the evidence in the gold document's text (the
    answer spans of SQuAD-format benchmarks); when empty, evidence-level metrics use the
    gold paragraphs (see :mod:`gralc.evaluation.evidence`). ``decision`` is
    ``yes``/``no``/``maybe`` for PubMedQA (empty when unlabelled); ``split`` is ``train`` |
    ``dev`` | ``test`` (or a source-specific split name). ``kind`` is ``single`` |
    ``cross_section`` | a generator template name (empty when unknown).
    """

    id: str
    text: str
    gold_doc_id: str
    long_answer: str = ""
    decision: str = ""
    gold_section_types: list[str] = field(default_factory=list)
    gold_paragraph_ids: list[str] = field(default_factory=list)
    evidence_spans: list[list[int]] = field(default_factory=list)
    split: str = ""
    kind: str = ""
