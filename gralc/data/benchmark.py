"""A benchmark instance: a corpus of documents and the questions asked against it, with gold
evidence. Loaded by :mod:`gralc.data.benchmarks`, split by article for cross-validation by
:mod:`gralc.data.folds`."""

from __future__ import annotations

from dataclasses import dataclass, field

from gralc.documents.model import Document
from gralc.documents.question import Question


@dataclass
class Benchmark:
    """Documents and questions of one benchmark instance (one condition).

    >>> from gralc.documents.plaintext import document_from_text
    >>> from gralc.documents.question import Question
    >>> Benchmark("notes", [document_from_text("It took 8 weeks.", "d1")], [Question("q1", "How long?", "d1")]).name
    'notes'
    """

    name: str
    documents: list[Document]
    questions: list[Question]
    #: loader counts reported beside the metrics (e.g. ``n_unmapped_answers``)
    stats: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = {d.id for d in self.documents}
        missing = sorted({q.gold_doc_id for q in self.questions} - ids)
        if missing:
            raise ValueError(
                f"benchmark {self.name!r}: {len(missing)} questions name gold documents that "
                f"are not in the corpus, e.g. {missing[:3]}"
            )
