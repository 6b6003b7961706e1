"""The question record shared by every QA source (PubMedQA, demo corpus, cross-section set)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gralc.documents.textio import replace_surrogates, surrogate_warning

log = logging.getLogger(__name__)


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

    ``relevance``: EVERY relevant document with its graded relevance (an int > 0, as in TREC
    and BEIR qrels), for benchmarks that judge several documents per question (BEIR); it
    must hold ``gold_doc_id``, the most relevant one (the document the evidence-level
    metrics and the structure metrics look at). Empty (every other benchmark): the single
    relevant document is ``gold_doc_id``, with relevance 1. :meth:`relevant_docs` gives the
    mapping either way; the document-level metrics (MRR, recall@k, graded nDCG@k) count all
    of them.

    >>> Question("q1", "Which drug?", "d2", relevance={"d2": 2, "d7": 1}).relevant_docs()
    {'d2': 2, 'd7': 1}
    >>> Question("q2", "Which dose?", "d3").relevant_docs()
    {'d3': 1}
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
    relevance: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.relevance:
            problem = relevance_problem(self.relevance, self.gold_doc_id)
            if problem:
                raise ValueError(f"question {self.id!r}: {problem}")

    def relevant_docs(self) -> dict[str, int]:
        """Every relevant document id -> graded relevance (> 0): ``relevance``, or
        ``{gold_doc_id: 1}`` when that is empty.

        >>> Question("q1", "Which drug?", "d2", relevance={"d2": 2}).relevant_docs()
        {'d2': 2}
        """
        return dict(self.relevance) if self.relevance else {self.gold_doc_id: 1}


def relevance_problem(relevance: object, gold_doc_id: str) -> str:
    """What is wrong with a ``relevance`` mapping (``""``: nothing): it must map document ids
    (strings) to ints > 0 and hold ``gold_doc_id``.

    >>> relevance_problem({"d2": 1}, "d2"), relevance_problem({"d2": 0}, "d2")[:24]
    ('', "'relevance' of 'd2' must")
    """
    if not isinstance(relevance, dict):
        return f"'relevance' must be a mapping of document id -> int > 0, got {relevance!r}"
    for doc_id, grade in relevance.items():
        if not isinstance(doc_id, str) or not doc_id:
            return f"'relevance' keys must be document ids (non-empty strings), got {doc_id!r}"
        if not isinstance(grade, int) or isinstance(grade, bool) or grade <= 0:
            return (f"'relevance' of {doc_id!r} must be an int > 0 (list only relevant documents), "
                    f"got {grade!r}")
    if gold_doc_id not in relevance:
        return (f"'relevance' {sorted(relevance)[:5]} does not hold gold_doc_id {gold_doc_id!r}; "
                "gold_doc_id must be one of the relevant documents (the most relevant)")
    return ""


def clean_question_text(text: object, where: str) -> str:
    """A question as text every tokenizer takes, or a ValueError naming ``where``.

    Not a string: the error. Unpaired UTF-16 surrogates (a JSON ``\\udcff`` escape; a command
    line argument with bytes that are not UTF-8, which Python hands over as ``'\\udcff'``):
    replaced by U+FFFD with one warning naming ``where`` - left in, they end the search in the
    tokenizer's bare ``TypeError``. ``where`` is e.g. ``questions.jsonl:12`` or ``the question
    argument``.

    >>> clean_question_text("What limits adherence?", "questions.jsonl:1")
    'What limits adherence?'
    """
    if not isinstance(text, str):
        raise ValueError(f"{where}: a question must be a string, got {type(text).__name__} "
                         f"{str(text)[:60]!r}")  # fmt: skip
    cleaned, bad = replace_surrogates(text)
    if bad:
        log.warning("%s (is the terminal or the file not UTF-8?)",
                    surrogate_warning(where, bad, strings=False))
    return cleaned
