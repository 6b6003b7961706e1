"""The document model shared by every stage.

A :class:`Document` holds ONE canonical text (``Document.text``). Every structural element
(section titles, paragraphs, sentences, list items, captions, citations, cross-references)
stores half-open character offsets ``[start, end)`` into that text, so that
``doc.text[el.start:el.end]`` is exactly the element's text. Later stages (tokeniser offsets,
entity spans, chunk spans) use the same coordinates, which is what lets them map tokens to
sections exactly.

Canonical text layout (built by the parsers with :class:`TextBuilder`)::

    title \\n\\n abstract-section-title? \\n\\n abstract paragraphs ... \\n\\n
    section title \\n\\n paragraph \\n\\n ... subsection title \\n\\n paragraph ...

Blocks are separated by a blank line; section titles are blocks of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

#: Canonical IMRaD section types. ``abstract`` is the type of an article's abstract section;
#: PubMedQA context labels map to IMRaD types (unlabelled or unknown labels -> ``other``).
IMRAD_TYPES = ("introduction", "methods", "results", "discussion", "conclusion", "other")
SECTION_TYPES = IMRAD_TYPES + ("abstract",)


@dataclass
class Sentence:
    """A sentence: ``[start, end)`` in ``Document.text``; ``paragraph_id`` owns it.

    >>> Sentence(start=20, end=36, paragraph_id="p0001").end
    36
    """

    start: int
    end: int
    paragraph_id: str


@dataclass
class Paragraph:
    """A block of body text.

    ``kind``: ``paragraph`` | ``list_item`` | ``caption`` | ``boxed`` | ``formula`` |
    ``abstract``. ``section_id`` is the innermost section that contains it (``None`` only
    for text outside any section). ``list_id`` is set for list items.

    >>> Paragraph(id="p0001", start=20, end=36, section_id="s1").kind
    'paragraph'
    """

    id: str
    start: int
    end: int
    section_id: str | None
    kind: str = "paragraph"
    list_id: str | None = None
    sentences: list[Sentence] = field(default_factory=list)


@dataclass
class Section:
    """A node of the section tree.

    ``level`` is 1 for top-level sections, 2 for their subsections, ... ``imrad_type`` is the
    canonical type (one of :data:`SECTION_TYPES`); subsections inherit the type of their
    top-level ancestor unless their own title is more specific. ``title_start``/``title_end``
    locate the title in the text (equal when untitled). ``start``/``end`` cover the title and
    all content, subsections included.

    >>> from gralc.documents.plaintext import document_from_text
    >>> methods = document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.\\n\\n### Dosing\\n\\nDaily.", "d1").sections[0]
    >>> methods.level, methods.imrad_type, [s.title for s in methods.walk()]
    (1, 'methods', ['Methods', 'Dosing'])
    """

    id: str
    title: str
    level: int
    imrad_type: str
    start: int
    end: int
    title_start: int
    title_end: int
    parent_id: str | None = None
    paragraph_ids: list[str] = field(default_factory=list)  # direct paragraphs only
    subsections: list[Section] = field(default_factory=list)

    def walk(self) -> Iterator[Section]:
        """This section and all its descendants, depth first, in document order."""
        yield self
        for sub in self.subsections:
            yield from sub.walk()


@dataclass
class Citation:
    """An in-text bibliographic citation (``<xref ref-type="bibr">``) -> reference id.

    >>> Citation(start=40, end=43, ref_id="B2", paragraph_id="p0001").ref_id
    'B2'
    """

    start: int
    end: int
    ref_id: str
    paragraph_id: str | None


@dataclass
class CrossRef:
    """An in-text cross-reference. ``ref_type``: ``fig`` | ``table`` | ``sec`` | ``supplementary``
    | ``disp-formula`` | other JATS ref-type; ``target_id`` is the referenced element's id.

    >>> CrossRef(start=10, end=18, ref_type="table", target_id="T1", paragraph_id="p0003").ref_type
    'table'
    """

    start: int
    end: int
    ref_type: str
    target_id: str
    paragraph_id: str | None


@dataclass
class ListBlock:
    """A list (``<list>``); its items are paragraphs of kind ``list_item``.

    >>> ListBlock(id="L1", start=0, end=30, section_id="s2", item_ids=["p0004", "p0005"]).item_ids
    ['p0004', 'p0005']
    """

    id: str
    start: int
    end: int
    section_id: str | None
    item_ids: list[str] = field(default_factory=list)
    list_type: str = ""


@dataclass
class Caption:
    """A figure, table or supplementary-material caption; ``kind`` is ``fig`` | ``table`` |
    ``supplementary``; ``paragraph_id`` is the
    caption paragraph (kind ``caption``) holding its text.

    >>> Caption(id="F1", kind="fig", label="Figure 1", paragraph_id="p0007").kind
    'fig'
    """

    id: str
    kind: str
    label: str
    paragraph_id: str


@dataclass
class Reference:
    """An entry of the reference list (``<ref>``), not body text.

    >>> Reference(id="B2", text="Smith J. Metformin. 2020.", pmid="123").pmid
    '123'
    """

    id: str
    text: str
    pmid: str | None = None
    doi: str | None = None


@dataclass
class Document:
    """A parsed article (or PubMedQA abstract) with one canonical text and offsets.

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# Titration\\n\\n## Methods\\n\\nIt took 8 weeks.\\n\\n### Dosing\\n\\nTwice daily.", "n1")
    >>> doc.id, doc.title, doc.text[doc.paragraphs[0].start : doc.paragraphs[0].end]
    ('n1', 'Titration', 'It took 8 weeks.')
    """

    id: str
    text: str
    title: str = ""
    title_start: int = 0
    title_end: int = 0
    pmid: str | None = None
    pmcid: str | None = None
    doi: str | None = None
    sections: list[Section] = field(default_factory=list)  # top-level, document order
    paragraphs: list[Paragraph] = field(default_factory=list)
    citations: list[Citation] = field(default_factory=list)
    crossrefs: list[CrossRef] = field(default_factory=list)
    lists: list[ListBlock] = field(default_factory=list)
    captions: list[Caption] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    article_type: str = ""
    source: str = ""
    warnings: list[str] = field(default_factory=list)

    # ----- navigation -------------------------------------------------------------------
    def iter_sections(self) -> Iterator[Section]:
        """Every section of the tree, depth first, in document order.

        Example: ``[s.id for s in doc.iter_sections()]`` -> ``['s1', 's1.1']`` (the
        class example's Methods and its Dosing subsection)."""
        for sec in self.sections:
            yield from sec.walk()

    def section(self, section_id: str) -> Section:
        """The section with this id (KeyError if none).

        Example: ``doc.section("s1.1").title`` -> ``'Dosing'`` (the class example)."""
        for sec in self.iter_sections():
            if sec.id == section_id:
                return sec
        raise KeyError(section_id)

    def section_path(self, section_id: str | None) -> list[Section]:
        """Sections from the top-level ancestor down to ``section_id`` (empty for None).

        Example: ``[s.title for s in doc.section_path("s1.1")]`` -> ``['Methods', 'Dosing']``."""
        if section_id is None:
            return []
        by_id = {s.id: s for s in self.iter_sections()}
        path: list[Section] = []
        cur: str | None = section_id
        while cur is not None:
            sec = by_id[cur]
            path.append(sec)
            cur = sec.parent_id
        return path[::-1]

    def top_level_type(self, section_id: str | None) -> str:
        """IMRaD type of the top-level ancestor of ``section_id`` (``other`` when None).

        This is the label a paragraph gets for IMRaD purposes: paragraphs under
        "Statistical analysis" inside "Methods" are ``methods``.

        Example: ``doc.top_level_type("s1.1")`` -> ``'methods'`` (Dosing inside Methods).
        """
        path = self.section_path(section_id)
        return path[0].imrad_type if path else "other"

    @property
    def sentences(self) -> list[Sentence]:
        """All sentences in document order.

        Example: ``doc.sentences[0]`` -> ``Sentence(start=20, end=36, paragraph_id='p0001')``."""
        return [s for p in self.paragraphs for s in p.sentences]

    def paragraph(self, paragraph_id: str) -> Paragraph:
        """The paragraph with this id (KeyError if none).

        Example: ``doc.paragraph("p0002").section_id`` -> ``'s1.1'`` (the class example)."""
        for p in self.paragraphs:
            if p.id == paragraph_id:
                return p
        raise KeyError(paragraph_id)

    def body_word_count(self) -> int:
        """Words in the body paragraphs (abstract excluded).

        Example: ``doc.body_word_count()`` -> ``6`` (the class example: 4 + 2 words)."""
        return sum(
            len(self.text[p.start : p.end].split()) for p in self.paragraphs if p.kind != "abstract"
        )


#: the longest title (a document's or a section's) kept, in characters: every chunk carries its
#: section titles (``section_path``), so an unbounded "title" would be copied into each of the
#: section's chunks; real titles are a line (PubMed's longest are ~600 characters)
MAX_TITLE_CHARS = 2000


def bounded_title(title: str, what: str, warnings: list[str]) -> str:
    """``title`` cut to :data:`MAX_TITLE_CHARS` (at the last space before the bound, when there
    is one), with a warning naming ``what`` appended to ``warnings`` when it was cut.

    >>> notes = []; short = bounded_title("Dose " * 500, "section title", notes); len(short)
    1999
    >>> notes[0][:57]
    'section title of 2500 characters cut to its first 1999 (a'
    """
    if len(title) <= MAX_TITLE_CHARS:
        return title
    cut = title[: MAX_TITLE_CHARS + 1]
    space = cut.rfind(" ")
    cut = (cut[:space] if space > MAX_TITLE_CHARS // 2 else cut[:MAX_TITLE_CHARS]).rstrip()
    warnings.append(f"{what} of {len(title)} characters cut to its first {len(cut)} (a title is "
                    f"at most {MAX_TITLE_CHARS} characters; is body text marked up as a title?)")
    return cut


class TextBuilder:
    """Accumulates the canonical text block by block and returns each block's offsets.

    >>> b = TextBuilder(); b.add("Title")
    (0, 5)
    >>> b.add("Para one.")
    (7, 16)
    >>> b.text
    'Title\\n\\nPara one.'
    """

    SEPARATOR = "\n\n"

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0

    def add(self, block: str) -> tuple[int, int]:
        """Append a block (separated from the previous one) and return ``(start, end)``."""
        if self._parts:
            self._parts.append(self.SEPARATOR)
            self._length += len(self.SEPARATOR)
        start = self._length
        self._parts.append(block)
        self._length += len(block)
        return start, self._length

    @property
    def length(self) -> int:
        """Characters in the text so far (separators included)."""
        return self._length

    @property
    def text(self) -> str:
        """The text so far: the blocks joined by :attr:`SEPARATOR`."""
        return "".join(self._parts)
