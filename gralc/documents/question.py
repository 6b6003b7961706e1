"""The question record shared by every QA source (PubMedQA, demo corpus, cross-section set)."""

from __future__ import annotations

import logging
import unicodedata
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


#: the longest question GraLC reads, in characters: an encoder reads a question's first
#: 256-512 word-pieces (a few thousand characters at most), so a longer input is cut here,
#: before any tokenizer, counter or output sees it (one 85 MB question took 10 GiB before)
MAX_QUESTION_CHARS = 8192
_LINE_BREAKS = "\t\n\r\x0b\x0c\x85\u2028\u2029"


def clean_question_text(text: object, where: str) -> str:
    """A question as text every tokenizer takes, or a ValueError naming ``where``: the one
    gate every question passes (question files, BEIR queries, benchmarks, the command line,
    ``Retriever.search``).

    Not a string: the error. Longer than :data:`MAX_QUESTION_CHARS`: cut there, with a
    warning. Unpaired UTF-16 surrogates (a JSON ``\\udcff`` escape; a command line argument
    with bytes that are not UTF-8): replaced by U+FFFD with one warning naming ``where``.
    Control and format characters (zero-width spaces and joiners, U+FEFF, soft hyphens, bidi
    overrides; the encoders' tokenizers drop them too): removed; line breaks and tabs stay
    (whitespace to every tokenizer). What is left must hold a letter or a digit: a blank question, or one made only of
    invisible characters or punctuation, is the error. ``where`` is e.g.
    ``questions.jsonl:12`` or ``the question argument``.

    >>> clean_question_text("What limits\\u200b adherence?", "questions.jsonl:1")
    'What limits adherence?'
    >>> clean_question_text("\\u200b\\ufeff", "questions.jsonl:2")
    Traceback (most recent call last):
    ValueError: questions.jsonl:2: the question has no letters or digits (only invisible or control characters); every question needs words to search with
    """
    if not isinstance(text, str):
        raise ValueError(f"{where}: a question must be a string, got {type(text).__name__} "
                         f"{str(text)[:60]!r}")  # fmt: skip
    if len(text) > MAX_QUESTION_CHARS:
        log.warning("%s: the question has %d characters; only its first %d are read (an encoder "
                    "reads a question's first few hundred word-pieces)", where, len(text), MAX_QUESTION_CHARS)
        text = text[:MAX_QUESTION_CHARS]
    cleaned, bad = replace_surrogates(text)
    if bad:
        log.warning("%s (is the terminal or the file not UTF-8?)",
                    surrogate_warning(where, bad, strings=False))
    if not (cleaned.isascii() and cleaned.isprintable()):
        cleaned = "".join(ch for ch in cleaned
                          if ch in _LINE_BREAKS or unicodedata.category(ch) not in ("Cc", "Cf"))
    if not any(unicodedata.category(ch)[0] in "LN" for ch in cleaned):
        what = "it is blank" if not text.strip() else (
            "only invisible or control characters" if not cleaned.strip() else "no words")
        raise ValueError(f"{where}: the question has no letters or digits ({what}); every "
                         "question needs words to search with")
    return cleaned
