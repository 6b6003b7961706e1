"""Parse plain-text / Markdown articles (CORD-19 dumps, web pages) into a :class:`Document`.

Every block is copied VERBATIM into ``Document.text`` (inner newlines kept); only block
separators, the ``Abstract:``/``Text:`` labels and dropped metadata lines differ from the raw
text, and :class:`OffsetMap` maps raw offsets (e.g. SQuAD answer spans) to ``Document.text``.

Layout, in short: the first non-empty line is the title; front-matter metadata lines (URL,
``SHA:``, ``Authors:``, ``DOI:`` ...) are dropped (the DOI and a PMC id kept); an
``Abstract:`` block opens the section ``abstract``; Markdown ``#`` lines, numbered lines and
short title-case lines become headings; paragraphs are blank-line separated blocks; text
before the first heading is the untitled section ``s0``; unpaired UTF-16 surrogates become
U+FFFD (raw offsets hold). The layout rules in full: docs/data.md."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from gralc.documents.errors import DocumentParseError
from gralc.documents.imrad import EXACT_TITLES, classify_section, normalize_title
from gralc.documents.model import (
    MAX_TITLE_CHARS,
    Document,
    Paragraph,
    Section,
    Sentence,
    TextBuilder,
    bounded_title,
)
from gralc.documents.sentences import split_sentences
from gralc.documents.textio import decode_utf8, replace_surrogates, surrogate_warning

FORMATS = ("auto", "plain", "cord19", "markdown")
_MD_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_MD_ANY = re.compile(r"(?m)^ {0,3}#{1,6}[ \t]+\S")
_FENCE = re.compile(r" {0,3}(```|~~~)")
_LABEL = re.compile(r"(abstract|text)[ \t]*:[ \t]*", re.IGNORECASE)
_MONTH = r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_META = re.compile(
    r"(?:https?://|www\.)\S+$|(?:sha|authors?|date|doi|licen[cs]e|journal|source|pmid|pmcid"
    rf"|keywords)\s*:|(?:\d{{4}}(?:-\d{{1,2}}){{0,2}}|{_MONTH} \d{{1,2}},? \d{{4}}"
    rf"|\d{{1,2}} {_MONTH},? \d{{4}})$", re.IGNORECASE)  # fmt: skip
_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"<>]+[^\s\"<>.,;)]")
_PMC = re.compile(r"/pmc/articles/(PMC\d+)", re.IGNORECASE)
_NUMBERED = re.compile(rf"(\d{{1,2}}(?:\.\d{{1,2}})*)\.?\s+(?!{_MONTH}\s)(?=[A-Z])")
_BACK = re.compile(
    r"(acknowledge?ments?|references|bibliography|abstract|funding|abbreviations|appendix"
    r"|(competing|conflicts? of) interests?|author contributions?|data availability( statement)?"
    r"|supplementary (material|materials|information|data)|ethics statement)$")  # fmt: skip
_NOT_HEADING = re.compile(r"https?:|www\.|\bpage \d|^(?:table|fig(?:ure)?\.?) ?[\dA-Z]", re.I)
_SMALL = frozenset("a an and as at by for from in into of on or per the to via vs with".split())


@dataclass
class OffsetMap:
    """Raw-text offsets -> ``Document.text`` offsets.

    ``segments``: ``(raw_start, doc_start, length)`` of every raw span copied verbatim, in
    raw order (doc order too). Offsets are half-open; a segment's end offset maps.

    >>> m = OffsetMap([(0, 0, 5), (7, 5, 4)])
    >>> m.to_doc(8), m.span(7, 11)
    (6, (5, 9))
    """

    segments: list[tuple[int, int, int]] = field(default_factory=list)

    def _find(self, off: int, shift: int) -> int | None:
        # shift 1: the segment starting at or before off; 0: the one starting before off
        i = bisect.bisect_left(self.segments, (off + shift,)) - 1
        if i >= 0:
            raw_start, doc_start, length = self.segments[i]
            if off <= raw_start + length:
                return doc_start + off - raw_start
        return None

    def to_doc(self, raw_offset: int) -> int | None:
        """``Document.text`` offset of a raw offset, or None when it is not in copied text."""
        return self._find(raw_offset, 1)

    def span(self, raw_start: int, raw_end: int) -> tuple[int, int] | None:
        """``(start, end)`` in ``Document.text`` of raw ``[raw_start, raw_end)``, or None
        when an end falls outside copied text (metadata, labels, separators)."""
        start = self._find(raw_start, 1)
        end = self._find(raw_end, 0) if raw_end > raw_start else start
        if end is None:
            end = self._find(raw_end, 1)
        return None if start is None or end is None else (start, end)


def _blocks(raw: str) -> list[list[tuple[int, int]]]:
    """Runs of non-blank lines; each line as its whitespace-trimmed ``(start, end)``."""
    blocks: list[list[tuple[int, int]]] = []
    pos, prev_blank = 0, True
    for line in raw.split("\n"):
        s, e = pos + len(line) - len(line.lstrip()), pos + len(line.rstrip())
        if s < e and prev_blank:
            blocks.append([(s, e)])
        elif s < e:
            blocks[-1].append((s, e))
        prev_blank, pos = s >= e, pos + len(line) + 1
    return blocks


def _is_meta(line: str) -> bool:
    if _META.match(line):
        return True
    parts = line.split(";")
    if len(parts) > 1 and all(1 <= len(p.split()) <= 6 for p in parts):
        return True  # an author list: "Bouvier, Monique; Chen, Wei-Ju; ..."
    return bool(_DOI.search(line)) and len(line.split()) <= 25  # "JAMA. 2020;323. doi:10..."


def _heading(line: str, alone: bool) -> tuple[int, bool] | None:
    """``(level, sure)`` when ``line`` looks like a heading; ``sure`` is False for guesses."""
    words = line.split()
    if len(words) > (12 if alone else 8) or len(line) > 120 or _NOT_HEADING.search(line):
        return None
    if line[-1] in ",;:!?" or line[-1] == "." and not re.fullmatch(r"(?:[A-Z]\.){2,}", words[-1]):
        return None
    m = _NUMBERED.match(line)
    if m and sum(c.isalpha() for c in line) >= 3 and (alone or "," not in line):
        return m.group(1).count(".") + 1, True
    if normalize_title(line) in EXACT_TITLES or _BACK.match(normalize_title(line)):
        return 1, True
    heads = [w.lstrip("([\"'\u201c\u2018") for w in words]
    lower = any(w[:1].isalpha() and not w[0].isupper() and w.lower() not in _SMALL for w in heads)
    return None if lower or not line[0].isupper() or "," in line else (1, False)


def _runs(lines: list[tuple[int, int]], keep: list[bool]) -> list[tuple[int, int]]:
    """Spans of consecutive kept lines."""
    runs: list[tuple[int, int]] = []
    for i, (s, e) in enumerate(lines):
        if keep[i]:
            runs.append((runs.pop()[0], e) if runs and i and keep[i - 1] else (s, e))
    return runs


class _Parse:
    """Splits the raw text into title, front matter, abstract and body units (raw offsets)."""

    def __init__(self, raw: str, markdown: bool, given: tuple[int, int] | None | bool = False) -> None:
        self.raw, self.markdown = raw, markdown
        self.blocks = _blocks(raw)
        #: False, or the title given apart from the text: its span (the first block), or None
        self.given = given
        if given:
            self.blocks = self.blocks[1:]
        self.meta: dict[str, str] = {}
        self.warnings: list[str] = []
        self.labels: dict[str, tuple[int, int]] = {}  # label -> (block index, text start)
        for i, lines in enumerate(self.blocks[:12]):
            m = _LABEL.match(raw, lines[0][0])
            if m and m.group(1).lower() not in self.labels:
                self.labels[m.group(1).lower()] = (i, m.end())
        if self.labels.get("text", (99,))[0] < self.labels.get("abstract", (-1,))[0]:
            del self.labels["abstract"]  # an "Abstract:" after the body start is body text

    def unlabel(self, bi: int, key: str) -> list[tuple[int, int]]:
        """Lines of block ``bi`` without its label."""
        lines, start = self.blocks[bi], self.labels[key][1]
        return ([(start, lines[0][1])] if start < lines[0][1] else []) + lines[1:]

    def front(self, lines: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Drop metadata lines (keeping the DOI / PMC id); the runs of the other lines."""
        keep = [not _is_meta(self.raw[s:e]) for s, e in lines]
        for (s, e), k in zip(lines, keep, strict=True):
            doi, pmc = _DOI.search(self.raw, s, e), _PMC.search(self.raw, s, e)
            if not k and doi and "doi" not in self.meta:
                self.meta["doi"] = doi.group(0)
            if not k and pmc and "pmcid" not in self.meta:
                self.meta["pmcid"] = pmc.group(1).upper()
        return _runs(lines, keep)

    def split(self) -> tuple[tuple[int, int] | None, list, list, list, int]:
        """``(title, front runs, lead runs, abstract spans, first body block)``."""
        blocks, labels, title = self.blocks, self.labels, None
        if self.given is not False:
            title = self.given
        elif not _LABEL.match(self.raw, (fs := blocks[0][0][0])):
            fe = blocks[0][0][1]
            md = _MD_HEADING.match(self.raw[fs:fe]) if self.markdown else None
            title = (fs + md.start(2), fs + md.end(2)) if md and md.group(2) else (fs, fe)
            if title[1] - title[0] > MAX_TITLE_CHARS:  # a paragraph on the title's line
                if not md:  # (a '#' line: units() says it)
                    self.warnings.append(f"no title: the first line has {fe - fs} characters "
                                         f"(a title is at most {MAX_TITLE_CHARS}); read as text")
                title = None
            else:
                blocks[0] = blocks[0][1:]
        else:
            self.warnings.append("no title line: the text starts with a label")
        front, lead, body = [], [], 0
        if labels:
            body = min(i for i, _ in labels.values())
            front = [r for lines in blocks[:body] for r in self.front(lines)]
        while not labels and body < len(blocks):
            runs = self.front(blocks[body])
            if runs == _runs(blocks[body], [True] * len(blocks[body])) and runs:
                break  # a plain block: the body starts here
            body += 1
            if runs:  # a block mixing metadata and text: its text, never headings
                lead = runs
                break
        abstract = []
        if "abstract" in labels:
            ai = labels["abstract"][0]
            first = self.unlabel(ai, "abstract")
            body = labels["text"][0] if "text" in labels else min(ai + 1 + (not first), len(blocks))
            spans = [first] if first else []
            abstract = [(ls[0][0], ls[-1][1]) for ls in spans + blocks[ai + 1 : body]]
            if any(self.raw[s:e].lower() == "nan" for s, e in abstract):
                abstract = [(s, e) for s, e in abstract if self.raw[s:e].lower() != "nan"]
                self.warnings.append("abstract is 'nan' (CORD-19 placeholder): dropped")
        if front and not abstract:
            front, lead = [], front
        elif front:
            self.warnings.append(f"{len(front)} front-matter block(s) kept as text (not metadata)")
        return title, front, lead, abstract, body

    def units(self, lead: list, body: int) -> list[tuple[bool, int, int, int, bool]]:
        """Body ``(is_heading, start, end, level, sure)`` in order (paragraphs: level 0)."""
        raw, units = self.raw, [(False, s, e, 0, True) for s, e in lead]
        fenced = False
        for bi in range(body, len(self.blocks)):
            is_text = "text" in self.labels and bi == self.labels["text"][0]
            lines = self.unlabel(bi, "text") if is_text else self.blocks[bi]
            if self.markdown:
                run: list[tuple[int, int]] = []
                for s, e in lines + [(-1, -1)]:
                    md = _MD_HEADING.match(raw[s:e]) if s >= 0 and not fenced else None
                    if md and len(md.group(2)) > MAX_TITLE_CHARS:  # text after a '#', not a heading
                        md = None
                        self.warnings.append(f"a '#' line of {e - s} characters read as text (a "
                                             f"heading is at most {MAX_TITLE_CHARS})")
                    fenced ^= s >= 0 and bool(_FENCE.match(raw[s:e]))
                    if (s < 0 or md) and run:
                        units.append((False, run[0][0], run[-1][1], 0, True))
                        run = []
                    if md and md.group(2):
                        units.append((True, s + md.start(2), s + md.end(2), len(md.group(1)), True))
                    elif s >= 0 and not md:
                        run.append((s, e))
                continue
            head = _heading(raw[slice(*lines[0])], alone=len(lines) == 1) if lines else None
            if head:
                units.append((True, *lines[0], *head))
                lines = lines[1:]
            if lines:
                units.append((False, lines[0][0], lines[-1][1], 0, True))
        guessed = Counter(raw[u[1] : u[2]] for u in units if u[0] and not u[4])
        for i, (is_head, s, e, _level, sure) in enumerate(units):
            if is_head and not sure and (i + 1 == len(units) or units[i + 1][0]
                                         or guessed[raw[s:e]] > 1):  # fmt: skip
                units[i] = (False, s, e, 0, True)  # followed by text, not a running header
        return units


class _Builder:
    """Emits blocks through one TextBuilder, recording the OffsetMap and the section tree."""

    def __init__(self, raw: str) -> None:
        self.raw, self.tb, self.omap = raw, TextBuilder(), OffsetMap()
        self.sections: list[Section] = []
        self.paragraphs: list[Paragraph] = []
        self.open: list[tuple[Section, int, str]] = []  # (section, level (0: implicit), number)
        #: numbered sections under each parent id (None: top level); counted, not scanned
        #: from the siblings, so 50 000 headings stay linear
        self.numbered: dict[str | None, int] = {}
        self.has_abstract = False  # a top-level section "abstract" exists

    def block(self, s: int, e: int) -> tuple[int, int]:
        ds, de = self.tb.add(self.raw[s:e])
        self.omap.segments.append((s, ds, e - s))
        for sec, *_ in self.open:
            sec.start = ds if sec.start < 0 else sec.start
            sec.end = de
        return ds, de

    def section(self, title: tuple[int, int] | None, level: int, sid: str | None = None,
                imrad: str | None = None) -> None:  # fmt: skip
        name = self.raw[title[0] : title[1]] if title else ""
        num = m.group(1) if (m := _NUMBERED.match(name)) else ""
        while self.open and (self.open[-1][1] >= level or self.open[-1][1] == 0
                             or num and self.open[-1][2] and  # "8.2" is no child of "7"
                             not num.startswith(self.open[-1][2] + ".")):  # fmt: skip
            self.open.pop()
        parent = self.open[-1][0] if self.open else None
        siblings = parent.subsections if parent else self.sections
        if imrad is None:
            imrad = classify_section(name, None, parent.imrad_type if parent else None)
            if parent is None and normalize_title(name) == "abstract":
                imrad = "abstract"
                sid = None if self.has_abstract else "abstract"
        key = parent.id if parent else None
        n = 1 + self.numbered.get(key, 0)
        sid = sid or (f"{parent.id}.{n}" if parent else f"s{n}")
        sec = Section(sid, name, parent.level + 1 if parent else 1, imrad, -1, -1, -1, -1,
                      parent.id if parent else None)  # fmt: skip
        siblings.append(sec)
        if sid not in ("abstract", "s0", "front"):
            self.numbered[key] = n
        elif sid == "abstract" and parent is None:
            self.has_abstract = True  # a second top-level "Abstract" gets a number
        self.open.append((sec, level, num))
        if title:
            sec.title_start, sec.title_end = self.block(*title)

    def paragraph(self, s: int, e: int) -> None:
        ds, de = self.block(s, e)
        pid, sec = f"p{len(self.paragraphs) + 1:04d}", self.open[-1][0]
        kind = "abstract" if self.open[0][0].imrad_type == "abstract" else "paragraph"
        sents = [Sentence(ds + a, ds + b, pid) for a, b in split_sentences(self.raw[s:e])]
        self.paragraphs.append(Paragraph(pid, ds, de, sec.id, kind, sentences=sents))
        sec.paragraph_ids.append(pid)


def parse_plain_text(
    raw: str, doc_id: str, source: str = "", fmt: str = "auto", title: str | None = None
) -> tuple[Document, OffsetMap]:
    """Parse ``raw`` (rules in the module docstring) -> ``(Document, OffsetMap)``.

    ``fmt``: ``auto`` (``markdown`` when there are ``#`` heading lines, else ``plain``) |
    ``plain`` | ``cord19`` (same rules as ``plain``) | ``markdown``. ``title``: the title
    given apart from the text (a BEIR corpus entry's ``title``): no line of ``raw`` is then
    taken as the title; a non-blank ``title`` (line breaks made spaces, ends trimmed) is the
    document's title and the first block of its text, and the OffsetMap still maps offsets of
    ``raw``. Raises :class:`DocumentParseError` when ``raw`` and ``title`` are blank.

    >>> doc, _ = parse_plain_text("Metformin lowers HbA1c.", "d1", title="Metformin")
    >>> doc.title, doc.text
    ('Metformin', 'Metformin\\n\\nMetformin lowers HbA1c.')
    """
    if fmt not in FORMATS:
        raise ValueError(f"fmt must be one of {FORMATS}, got {fmt!r}")
    shift, notes = 0, []
    if title is not None:
        title = re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", title).strip()
        title = bounded_title(title, "the title", notes)
        shift = len(title) + 2 if title else 0
        raw = f"{title}\n\n{raw}" if title else raw
    if not raw.strip():
        name = source or doc_id
        raise DocumentParseError(f"{name}: no text (empty or whitespace only)", path=name)
    raw, bad = replace_surrogates(raw)
    given = False if title is None else (0, len(title)) if title else None
    p = _Parse(raw, fmt == "markdown" or fmt == "auto" and bool(_MD_ANY.search(raw)), given)
    p.warnings += notes
    title, front, lead, abstract, body = p.split()
    units = p.units(lead, body)
    b = _Builder(raw)
    title_start, title_end = b.block(*title) if title else (0, 0)
    for sid, imrad, spans in (("front", "other", front), ("abstract", "abstract", abstract)):
        if spans:
            b.section(None, 0, sid, imrad)
            for s, e in spans:
                b.paragraph(s, e)
    heads = [raw[s:e] for is_head, s, e, _, _ in units if is_head]
    if units and not units[0][0]:
        intro = bool(heads) and all(classify_section(h) != "introduction" for h in heads)
        b.section(None, 0, "s0", "introduction" if intro else "other")
    for is_head, s, e, level, _ in units:
        b.section((s, e), level) if is_head else b.paragraph(s, e)
    for sec in (x for top in b.sections for x in top.walk()):
        if not sec.title:
            sec.title_start = sec.title_end = sec.start
    if not any(para.kind != "abstract" for para in b.paragraphs):
        p.warnings.append("no body paragraphs")
    if bad:
        p.warnings.append(surrogate_warning("text", bad, strings=False))
    doc = Document(id=doc_id, text=b.tb.text, title=raw[title[0] : title[1]] if title else "",
                   title_start=title_start, title_end=title_end, pmcid=p.meta.get("pmcid"),
                   doi=p.meta.get("doi"), sections=b.sections, paragraphs=b.paragraphs,
                   source=source, warnings=p.warnings)  # fmt: skip
    if shift:  # offsets of the raw text after the given title
        b.omap.segments = [(rs - shift, ds, n) for rs, ds, n in b.omap.segments if rs >= shift]
    return doc, b.omap


def parse_text_file(path: str | Path, fmt: str = "auto") -> Document:
    """Parse a UTF-8 ``.txt``/``.md`` article (``.md`` -> Markdown); ``Document.id`` is the stem.

    Raises :class:`DocumentParseError` for an unreadable, non-UTF-8 or empty file.

    Example: ``parse_text_file("notes/titration.md").id`` -> ``'titration'`` (``#`` headings: title
    and sections, as :func:`document_from_text` reads a string).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentParseError(f"cannot read {path}: {exc.strerror}; check the path and "
                                 "permissions", path=path) from exc  # fmt: skip
    raw = decode_utf8(data, path)
    if not raw.strip():
        raise DocumentParseError(f"{path} is empty (no text): nothing to parse", path=path)
    if fmt == "auto" and path.suffix.lower() in (".md", ".markdown"):
        fmt = "markdown"
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    return parse_plain_text(raw, path.stem, source=str(path), fmt=fmt)[0]


def document_from_text(text: str, doc_id: str = "doc", title: str | None = None,
                       fmt: str = "auto") -> Document:
    """A :class:`Document` from a string, read as the plain-text reader reads a file
    (:func:`parse_plain_text`): the first line or ``#`` heading is the title, ``##`` headings
    (or known section names on their own line) start sections, blank lines separate
    paragraphs (``title``: given apart from the text instead).

    >>> doc = document_from_text("# Metformin titration\\n\\n## Methods\\n\\nIt was titrated over 8 weeks.", "n1")
    >>> doc.id, doc.title, [s.title for s in doc.sections]
    ('n1', 'Metformin titration', ['Methods'])
    """
    if not isinstance(text, str):
        raise TypeError(f"document_from_text takes a string, not {type(text).__name__}")
    return parse_plain_text(text, doc_id, source="<text>", fmt=fmt, title=title)[0]
