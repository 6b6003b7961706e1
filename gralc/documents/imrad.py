"""Map section headers to canonical IMRaD types, and the paper's IMRaD document filter.

Typing rules (used by the parsers):

1. A JATS ``sec-type`` attribute wins when one of its ``|``-separated tokens is known
   (``intro``, ``methods``, ``materials``, ``results``, ``discussion``, ``conclusions`` ...).
   ``materials|methods`` -> ``methods``; ``results|discussion`` -> ``results``.
2. Otherwise the normalised title (numbering such as ``2.3`` / ``II.`` / ``A)`` stripped, case
   and punctuation ignored, ``&`` read as ``and``) is looked up in :data:`EXACT_TITLES`.
3. For top-level sections only, the first IMRaD keyword in the title decides
   (``Results and discussion`` -> ``results``, ``Discussion and conclusions`` ->
   ``discussion``, ``Statistical methods`` -> ``methods``); titles about supplementary
   material, contributions, funding ... stay ``other``.
4. A subsection whose title is not an exact canonical header inherits its parent's type; for
   IMRaD purposes only the top-level type matters (:meth:`Document.top_level_type`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gralc.documents.model import Document

#: JATS sec-type tokens -> canonical type.
SEC_TYPES = {
    "intro": "introduction", "introduction": "introduction", "background": "introduction",
    "materials": "methods", "methods": "methods", "method": "methods", "subjects": "methods",
    "results": "results", "discussion": "discussion", "conclusions": "conclusion",
    "conclusion": "conclusion", "supplementary-material": "other", "display-objects": "other",
    "cases": "other",
}  # fmt: skip

#: Normalised whole titles -> canonical type (valid at any depth).
EXACT_TITLES = {
    **dict.fromkeys(
        ["introduction", "background", "intro", "introduction and background",
         "background and introduction", "overview"], "introduction"),
    **dict.fromkeys(
        ["methods", "method", "materials and methods", "material and methods",
         "methods and materials", "materials and method", "materials", "methodology",
         "experimental procedures", "experimental procedure", "experimental",
         "experimental section", "experimental methods", "patients and methods",
         "subjects and methods", "participants and methods", "study design",
         "design and methods", "methods and design", "study design and methods",
         "materials methods", "methods and procedures", "online methods"], "methods"),
    **dict.fromkeys(
        ["results", "result", "findings", "results and discussion", "result and discussion",
         "results discussion", "results and discussions"], "results"),
    **dict.fromkeys(["discussion", "discussions", "general discussion", "comment"], "discussion"),
    **dict.fromkeys(
        ["conclusion", "conclusions", "concluding remarks", "summary", "summary and conclusions",
         "conclusions and perspectives", "conclusion and perspectives", "perspectives",
         "final remarks", "concluding comments"], "conclusion"),
}  # fmt: skip

_KEYWORDS = re.compile(
    r"\b(introduction|background|methods?|methodology|materials|experimental procedures?"
    r"|patients and|study design|results?|findings|discussion|conclusions?|concluding)\b"
)
_KEYWORD_TYPES = {
    "introduction": "introduction", "background": "introduction", "method": "methods",
    "methods": "methods", "methodology": "methods", "materials": "methods",
    "experimental procedure": "methods", "experimental procedures": "methods",
    "patients and": "methods", "study design": "methods", "result": "results",
    "results": "results", "findings": "results", "discussion": "discussion",
    "conclusion": "conclusion", "conclusions": "conclusion", "concluding": "conclusion",
}  # fmt: skip
_NOT_IMRAD = re.compile(
    r"^(supplementa|supporting|additional|electronic supplementary|appendix|author|competing"
    r"|conflict|funding|acknowledg|abbreviation|pre publication|disclosure|declaration)"
)
_NUMBERING = re.compile(r"^\s*(?:(?:\d+|[ivxlc]+|[a-z])[.):]|\d+(?:\.\d+)*\.?)\s+", re.IGNORECASE)


def normalize_title(title: str) -> str:
    """``"2.3. Materials & Methods:"`` -> ``"materials and methods"``.

    >>> normalize_title("2.3. Materials & Methods:")
    'materials and methods'
    """
    t = _NUMBERING.sub("", title.strip())
    t = t.lower().replace("&", " and ")
    t = re.sub(r"[^\w\s]|_", " ", t)
    return " ".join(t.split())


def type_from_sec_type(sec_type: str | None) -> str | None:
    """Canonical type of a JATS ``sec-type`` attribute, or None if it is absent/unknown.

    >>> type_from_sec_type("materials|methods"), type_from_sec_type(None)
    ('methods', None)
    """
    for token in (sec_type or "").lower().replace(",", "|").split("|"):
        if token.strip() in SEC_TYPES:
            return SEC_TYPES[token.strip()]
    return None


def classify_title(title: str, top_level: bool = True) -> str | None:
    """Canonical type of a section title, or None when the title is not recognised.

    >>> classify_title("Materials and Methods"), classify_title("Acknowledgements")
    ('methods', None)
    """
    norm = normalize_title(title)
    if norm in EXACT_TITLES:
        return EXACT_TITLES[norm]
    if not top_level or not norm or _NOT_IMRAD.match(norm):
        return None
    m = _KEYWORDS.search(norm)
    return _KEYWORD_TYPES[m.group(1)] if m else None


def classify_section(
    title: str, sec_type: str | None = None, parent_type: str | None = None
) -> str:
    """Canonical type of a section (rules in the module docstring).

    ``parent_type`` is None for a top-level section, else the parent's canonical type.

    >>> classify_section("Statistical analysis", parent_type="methods")
    'methods'
    """
    top = parent_type is None
    found = type_from_sec_type(sec_type) or classify_title(title, top_level=top)
    if found is not None:
        return found
    return "other" if top else parent_type  # type: ignore[return-value]


def mentions_discussion(title: str) -> bool:
    """Whether a header such as ``Results and discussion`` also covers the discussion.

    >>> mentions_discussion("Results and discussion"), mentions_discussion("Results")
    (True, False)
    """
    return "discussion" in normalize_title(title).split()


@dataclass
class ImradReport:
    """Verdict of the IMRaD filter: ``ok``, missing types, body words and a reason.

    >>> ImradReport(ok=False, missing=["results"], words=120, reason="missing results").ok
    False
    """

    ok: bool
    missing: list[str] = field(default_factory=list)
    words: int = 0
    min_words: int = 1000
    reason: str = ""


def imrad_report(doc: Document, min_words: int = 1000) -> ImradReport:
    """Check the paper's filter: standard IMRaD headers and ``>= min_words`` body words.

    Required top-level types: introduction (or background), methods, results, and
    discussion (or conclusion, or a ``Results and discussion`` header).

    >>> from gralc.documents.plaintext import document_from_text
    >>> imrad_report(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1")).missing
    ['introduction', 'results', 'discussion']
    """
    types = {s.imrad_type for s in doc.sections}
    has_discussion = (
        "discussion" in types
        or "conclusion" in types
        or any(s.imrad_type == "results" and mentions_discussion(s.title) for s in doc.sections)
    )
    missing = [t for t in ("introduction", "methods", "results") if t not in types]
    if not has_discussion:
        missing.append("discussion")
    words = doc.body_word_count()
    problems = []
    if missing:
        problems.append("no top-level " + "/".join(missing) + " section")
    if words < min_words:
        problems.append(f"only {words} body words (< {min_words})")
    reason = "; ".join(problems) if problems else f"IMRaD with {words} body words"
    return ImradReport(not problems, missing, words, min_words, reason)


def is_imrad(doc: Document, min_words: int = 1000) -> bool:
    """The paper's IMRaD filter (see :func:`imrad_report` for the reason when False).

    >>> from gralc.documents.plaintext import document_from_text
    >>> is_imrad(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1"))
    False
    """
    return imrad_report(doc, min_words).ok
