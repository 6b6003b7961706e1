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


def clean_question_text(text: object, where: str) -> str:
    """A question as text every tokenizer takes, or a ValueError naming ``where``.

    Not a string: the error. Unpaired UTF-16 surrogates (a JSON ``\\udcff`` escape; a command
    line argument with bytes that are not UTF-8, which Python hands over as ``'\\udcff'``):
    replaced by U+FFFD with one warning naming ``where`` - left in, they end the search in the
    tokenizer's bare ``TypeError``. ``where`` is e.g. ``questions.jsonl:12`` or ``the question
    argument``.
    """
    if not isinstance(text, str):
        raise ValueError(f"{where}: a question must be a string, got {type(text).__name__} "
                         f"{str(text)[:60]!r}")  # fmt: skip
    cleaned, bad = replace_surrogates(text)
    if bad:
        log.warning("%s (is the terminal or the file not UTF-8?)",
                    surrogate_warning(where, bad, strings=False))
    return cleaned
