"""The paper's document-length conditions (Sect. 3.3 of the GraLC-RAG paper).

* ``abstract``     -- title + abstract (~200 words, no internal structure);
* ``introduction`` -- title + the introduction section(s) only: "background context and
  citations, but no methods or results" (so the abstract, which summarises the results,
  is left out);
* ``partial``      -- title + introduction + methods sections, in document order;
* ``full``         -- the complete article (abstract and every body section).

Sections are selected by their top-level IMRaD type. A derived document is a real
:class:`Document`: its own canonical text (rebuilt with :class:`TextBuilder`), every offset
shifted consistently, the same element ids and section types, and id ``"<id>#<condition>"``.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from gralc.documents.errors import ConditionUnavailableError
from gralc.documents.model import Document, Section, TextBuilder

CONDITIONS = ("abstract", "introduction", "partial", "full")
_TYPES = {
    "abstract": {"abstract"},
    "introduction": {"introduction"},
    "partial": {"introduction", "methods"},
}


def _selected(doc: Document, condition: str) -> list[Section]:
    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; expected one of {CONDITIONS}")
    if condition == "full":
        return list(doc.sections)
    return [s for s in doc.sections if s.imrad_type in _TYPES[condition]]


def available_conditions(doc: Document) -> list[str]:
    """The conditions :func:`derive_condition` can build for ``doc``.

    >>> from gralc.documents.plaintext import document_from_text
    >>> available_conditions(document_from_text("# T\\n\\n## Abstract\\n\\nShort.\\n\\n## Methods\\n\\nLong.", "d1"))
    ['abstract', 'partial', 'full']
    """
    return [c for c in CONDITIONS if _selected(doc, c)]


def derive_condition(doc: Document, condition: str) -> Document:
    """A new Document holding only the text of ``condition`` (see module docstring).

    Raises :class:`ConditionUnavailableError` when the article has no section for it
    (e.g. ``introduction`` for an article without an introduction).

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\n## Abstract\\n\\nShort.\\n\\n## Methods\\n\\nLong.", "d1")
    >>> derive_condition(doc, "abstract").text
    'T\\n\\nAbstract\\n\\nShort.'
    """
    keep = _selected(doc, condition)
    if not keep:
        raise ConditionUnavailableError(
            f"{doc.id}: cannot build the {condition!r} condition: no top-level section of type "
            f"{sorted(_TYPES[condition])}; available: {available_conditions(doc)}"
        )
    tb = TextBuilder()
    title_start, title_end = tb.add(doc.title) if doc.title else (0, 0)
    spans: list[tuple[int, int, int]] = []  # (old start, old end, shift)
    for sec in keep:
        new_start, _ = tb.add(doc.text[sec.start : sec.end])
        spans.append((sec.start, sec.end, new_start - sec.start))

    def shift(start: int, end: int) -> int | None:
        """Offset delta for an element lying in a kept section, else None."""
        for a, b, delta in spans:
            if a <= start and end <= b:
                return delta
        return None

    sections = [_moved_section(s, shift(s.start, s.end)) for s in keep]  # type: ignore[arg-type]
    paragraphs = []
    for p in doc.paragraphs:
        d = shift(p.start, p.end)
        if d is not None:
            sents = [replace(s, start=s.start + d, end=s.end + d) for s in p.sentences]
            paragraphs.append(replace(p, start=p.start + d, end=p.end + d, sentences=sents))
    kept_ids = {p.id for p in paragraphs}

    def moved(items):
        out = []
        for x in items:
            d = shift(x.start, x.end)
            if d is not None:
                out.append(replace(x, start=x.start + d, end=x.end + d))
        return out

    lists = [replace(x, item_ids=list(x.item_ids)) for x in moved(doc.lists)]
    return replace(
        doc, id=f"{doc.id}#{condition}", text=tb.text, title_start=title_start,
        title_end=title_end, sections=sections, paragraphs=paragraphs,
        citations=moved(doc.citations), crossrefs=moved(doc.crossrefs), lists=lists,
        captions=[copy.copy(c) for c in doc.captions if c.paragraph_id in kept_ids],
        references=list(doc.references), warnings=list(doc.warnings),
    )  # fmt: skip


def _moved_section(sec: Section, delta: int) -> Section:
    """Deep copy of a section subtree with every offset shifted by ``delta``."""
    return replace(
        sec, start=sec.start + delta, end=sec.end + delta, title_start=sec.title_start + delta,
        title_end=sec.title_end + delta, paragraph_ids=list(sec.paragraph_ids),
        subsections=[_moved_section(s, delta) for s in sec.subsections],
    )  # fmt: skip
