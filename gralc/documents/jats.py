"""Parse JATS / NLM XML (PubMed Central ``.nxml``) into a :class:`Document`.

All text goes through :class:`TextBuilder`, so every offset is exact. The main ``<abstract>``
becomes the top-level section ``abstract``; body paragraphs before the first ``<sec>`` an
untitled section ``s0``; figure, table and supplementary captions ``caption`` paragraphs;
formulas their MathML token text; ``<back>`` is not body text, but each of its ``<ref>`` a
:class:`Reference`. ``Document.id`` is the PMCID, else PMID, else DOI, else the file's stem.

Untrusted input: every walk over the tree keeps its own stack instead of recursing (markup as
deep as the XML parser allows is read in full; only ``<sec>`` nesting is capped,
MAX_SECTION_DEPTH); the XML parser never touches the network, never loads a DTD and never
expands entities. The layout decisions in full: docs/data.md."""

from __future__ import annotations

import html.entities
import re
from collections.abc import Callable
from pathlib import Path

from lxml import etree

from gralc.documents.errors import DocumentParseError
from gralc.documents.imrad import classify_section
from gralc.documents.model import (
    Caption,
    Citation,
    CrossRef,
    Document,
    ListBlock,
    Paragraph,
    Reference,
    Section,
    Sentence,
    TextBuilder,
    bounded_title,
)  # fmt: skip
from gralc.documents.sentences import split_sentences

_PARSER_ARGS = dict(resolve_entities=False, no_network=True, load_dtd=False, recover=False,
                    huge_tree=True, remove_comments=True, remove_pis=True)  # fmt: skip
#: older libxml2 versions lift their entity-amplification guard under ``huge_tree``: a file
#: declaring entities is read without it (defense in depth; PMC files declare none)
_NO_HUGE_ARGS = {**_PARSER_ARGS, "huge_tree": False}
_ENTITY_DECLS = tuple("<!ENTITY".encode(enc) for enc in ("utf-8", "utf-16-le", "utf-16-be"))
_EXCESSIVE_DEPTH = re.compile(r"Excessive depth in document: (\d+)")
#: Block elements that may sit inside a <p>; they are emitted after that paragraph.
_BLOCK_IN_P = frozenset(
    """fig fig-group table-wrap table-wrap-group list def-list boxed-text
    supplementary-material disp-quote statement p sec""".split()
)
#: Elements whose text is never body text.
_SKIP = frozenset(
    """fn fn-group table graphic inline-graphic alt-text long-desc object-id
    table-wrap-foot ref-list ack glossary sec-meta label title permissions attrib alternatives
    array chem-struct-wrap target notes app-group""".split()
)
_SKIP_INLINE = _SKIP - {"label", "title"}  # inside a paragraph, labels/titles are text
#: deeper ``<sec>`` nesting is merged into the ancestor at this depth (with a warning)
MAX_SECTION_DEPTH = 64
_CAPTIONED = {"fig": "fig", "table-wrap": "table", "supplementary-material": "supplementary",
              "media": "supplementary"}  # fmt: skip
#: abstract-type values of secondary abstracts (the main abstract has none).
_SIDE_ABSTRACTS = frozenset(
    """toc teaser summary synopsis short graphical web-summary editor
    precis key-points""".split()
)
_CITATION_TAGS = ("element-citation", "mixed-citation", "citation", "nlm-citation")


def _tag(el) -> str | None:
    """Local name of an element (None for entities/comments)."""
    return el.tag.rpartition("}")[2] if isinstance(el.tag, str) else None


def _formula_text(el) -> str:
    """Token text of the formula's MathML (annotations dropped), else ``[formula]``.

    An explicit stack, not recursion: ``<mml:mrow>`` nested thousands deep is valid MathML."""
    math = next((m for m in el.iter() if _tag(m) == "math"), None)
    if math is None:
        return "[formula]"
    parts: list[str] = [math.text or ""]
    stack = [(math, iter(math))]
    while stack:
        node, children = stack[-1]
        ch = next(children, None)
        if ch is None:
            stack.pop()
            if stack:  # a closed child: its tail follows it
                parts.append(node.tail or "")
        elif _tag(ch) in ("annotation", "annotation-xml"):
            parts.append(ch.tail or "")
        else:
            parts.append(ch.text or "")
            stack.append((ch, iter(ch)))
    return " ".join("".join(parts).split()) or "[formula]"


class _Inline:
    """Builds one block's whitespace-normalised text and the local spans of its xrefs."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.pending = False  # a space is owed before the next non-space text
        self.xrefs: list[tuple[int, int, str, str]] = []  # (start, end, ref-type, rid)

    def add(self, s: str | None) -> None:
        if not s:
            return
        core = " ".join(s.split())
        if not core:
            self.pending = True
            return
        if (self.pending or s[0].isspace()) and self.length:
            self.parts.append(" ")
            self.length += 1
        self.parts.append(core)
        self.length += len(core)
        self.pending = s[-1].isspace()

    def space(self) -> None:
        self.pending = True

    def mark(self) -> int:
        """Where the next non-space character will go."""
        return self.length + (1 if self.pending and self.length else 0)

    def value(self) -> str:
        return "".join(self.parts)

    def fill(self, el, deferred: list | None = None) -> None:
        """Append ``el``'s content; block children go to ``deferred`` (skipped if None).

        Walks with an explicit stack of ``(element, its children, xref start or None)``:
        inline markup (``<bold>``, ``<italic>``, ``<xref>`` ...) nested deeper than Python's
        recursion limit must not end the parse."""
        self.add(el.text)
        stack: list = [(el, iter(el), None)]
        while stack:
            node, children, xref_start = stack[-1]
            ch = next(children, None)
            if ch is None:  # node is complete
                stack.pop()
                if xref_start is not None:
                    self.xrefs.append((min(xref_start, self.length), self.length,
                                       node.get("ref-type", ""), node.get("rid", "")))  # fmt: skip
                if stack:  # not el itself: the tail follows the closed child
                    self.add(node.tail)
                continue
            tag = _tag(ch)
            if tag is None:  # an undeclared entity kept as a node
                name = (ch.text or "").strip("&;")
                self.add(html.entities.html5.get(name + ";", ch.text))
            elif tag in _BLOCK_IN_P:
                if deferred is not None:
                    deferred.append(ch)
            elif tag == "inline-formula":
                self.add(_formula_text(ch))
            elif tag == "disp-formula":
                self.space()  # a displayed formula inside a sentence stays inline
                self.add(_formula_text(ch))
                self.space()
            elif tag == "break":
                self.space()
            elif tag == "xref" or tag not in _SKIP_INLINE:  # descend; the tail comes on close
                start = self.mark() if tag == "xref" else None
                self.add(ch.text)
                stack.append((ch, iter(ch), start))
                continue
            self.add(ch.tail)


def _text(el) -> str:
    """Whitespace-normalised inline text of ``el`` (empty for None)."""
    if el is None:
        return ""
    buf = _Inline()
    buf.fill(el)
    return buf.value()


#: one step of the builder's walk: a method and its arguments (see :meth:`_Builder.run`)
_Step = tuple[Callable[..., "list | None"], tuple]


class _Builder:
    """Walks the article and fills a Document through one TextBuilder.

    The walk keeps its own stack (:meth:`run`): a handler does its own block's work and returns
    the steps for the elements inside it instead of calling them, so no nesting of blocks
    (``<list>`` in ``<list-item>``, ``<boxed-text>``, ``<p>`` in ``<p>``, ``<sec>``) can
    exhaust Python's stack. The steps run depth first in document order, exactly as the
    recursive calls they replace would have.
    """

    def __init__(self, taken_ids: set[str]) -> None:
        self.tb = TextBuilder()
        self.open: list[Section] = []
        self.sections: list[Section] = []
        self.paragraphs: list[Paragraph] = []
        self.citations: list[Citation] = []
        self.crossrefs: list[CrossRef] = []
        self.lists: list[ListBlock] = []
        self.captions: list[Caption] = []
        self.list_by_id: dict[str, ListBlock] = {}
        self.sec_attr_ids = taken_ids
        self.used_ids: set[str] = set()
        self.warnings: list[str] = []
        #: numbered (not abstract/s0) sections under each parent id (None: top level); a
        #: count, not a scan of the siblings, so 50 000 sections stay linear
        self.numbered: dict[str | None, int] = {}

    def run(self, handler: Callable[..., list[_Step] | None], *args, **kwargs) -> None:
        """``handler(*args, **kwargs)`` and every step it schedules, depth first."""
        todo: list[_Step] = []
        steps = handler(*args, **kwargs)
        while True:
            if steps:
                todo.extend(reversed(steps))
            if not todo:
                return
            fn, step_args = todo.pop()
            steps = fn(*step_args)

    # ----- blocks ---------------------------------------------------------------------------
    def block(self, text: str) -> tuple[int, int]:
        start, end = self.tb.add(text)
        for sec in self.open:
            if sec.start < 0:
                sec.start = start
            sec.end = end
        return start, end

    def paragraph(self, buf: _Inline, kind: str, list_id: str | None = None):
        text = buf.value()
        if not text:
            return None
        start, end = self.block(text)
        pid = f"p{len(self.paragraphs) + 1:04d}"
        sec = self.open[-1] if self.open else None
        sents = [Sentence(start + a, start + b, pid) for a, b in split_sentences(text)]
        para = Paragraph(pid, start, end, sec.id if sec else None, kind, list_id, sents)
        self.paragraphs.append(para)
        if sec is not None:
            sec.paragraph_ids.append(pid)
        for a, b, ref_type, rids in buf.xrefs:
            for rid in rids.split():
                if ref_type == "bibr":
                    self.citations.append(Citation(start + a, start + b, rid, pid))
                else:
                    kind_ = "supplementary" if ref_type == "supplementary-material" else ref_type
                    self.crossrefs.append(CrossRef(start + a, start + b, kind_, rid, pid))
        return para

    def p(self, el, kind: str, list_id: str | None = None, prefix=None) -> list[_Step]:
        """One paragraph of ``el``'s inline text; the blocks inside it are the next steps."""
        buf, deferred = _Inline(), []
        if prefix is not None:
            buf.fill(prefix)
            buf.space()
        buf.fill(el, deferred)
        para = self.paragraph(buf, kind, list_id)
        if para is not None and list_id is not None:
            self.list_by_id[list_id].item_ids.append(para.id)
        inner = "paragraph" if kind == "list_item" else kind
        return [(self.element, (ch, inner)) for ch in deferred]

    def container(self, el, kind: str, flatten: bool = False) -> list[_Step]:
        return [(self.element, (ch, kind, flatten)) for ch in el
                if _tag(ch) not in (None, "title", "label", "caption")]  # fmt: skip

    def element(self, el, kind: str, flatten: bool = False) -> list[_Step] | None:
        tag = _tag(el)
        if tag == "sec" and not flatten and len(self.open) >= MAX_SECTION_DEPTH:
            return self.too_deep(el, kind)
        if tag == "sec" and not flatten:
            return self.section(el, kind)
        if tag == "sec" or tag == "boxed-text":
            kind = "boxed" if tag == "boxed-text" else kind
            parts = [el.find("title")] + el.findall("caption/*")
            return ([(self.p, (part, kind)) for part in parts if part is not None]
                    + self.container(el, kind, flatten=True))
        if tag == "p":
            return self.p(el, kind)
        if tag in ("list", "def-list"):
            return self.list_(el)
        if tag in _CAPTIONED:
            self.caption(el, _CAPTIONED[tag])
            return None
        if tag == "disp-formula":
            buf = _Inline()
            buf.add(_formula_text(el))
            buf.space()
            buf.add(_text(el.find("label")))
            self.paragraph(buf, "formula")
            return None
        if tag is None or tag in _SKIP:
            return None
        if any(_tag(c) in _BLOCK_IN_P or _tag(c) in _CAPTIONED for c in el):
            return self.container(el, kind, flatten)
        return self.p(el, kind)

    def too_deep(self, el, kind: str) -> list[_Step]:
        """A ``<sec>`` nested deeper than MAX_SECTION_DEPTH: its titles and paragraphs join
        the enclosing section (a section tree 900 levels deep helps no reader, and the
        consumers of the tree walk it recursively)."""
        if not self.warnings or "nested deeper" not in self.warnings[-1]:
            self.warnings.append(f"sections nested deeper than {MAX_SECTION_DEPTH} levels were "
                                 f"merged into their level-{MAX_SECTION_DEPTH} ancestor")
        # every <title> and <p> not inside a <p> of ``el`` (that <p> reads it): one pass with a
        # stack, where asking each node for its ancestors was O(nodes x depth)
        steps: list[_Step] = []
        stack = [(ch, False) for ch in reversed(el)]
        while stack:
            node, in_p = stack.pop()
            tag = _tag(node)
            if tag in ("title", "p") and not in_p:
                steps.append((self.p, (node, kind)))
            stack.extend((ch, in_p or tag == "p") for ch in reversed(node))
        return steps

    def list_(self, el) -> list[_Step]:
        lst = ListBlock(f"l{len(self.lists) + 1:04d}", -1, -1,
                        self.open[-1].id if self.open else None, list_type=el.get("list-type", ""))  # fmt: skip
        if _tag(el) == "def-list":
            lst.list_type = "definition"
        self.lists.append(lst)
        self.list_by_id[lst.id] = lst
        steps: list[_Step] = []
        for item in el:
            if _tag(item) == "def-item":
                steps.append((self.def_item, (item, lst)))
            elif _tag(item) == "list-item":
                label = item.find("label")
                blocks = [c for c in item if _tag(c) not in (None, "label", "title")]
                if not any(_tag(c) == "p" for c in blocks):  # bare text (+ nested blocks)
                    steps.append((self.p, (item, "list_item", lst.id)))
                    continue
                for c in blocks:
                    if _tag(c) == "p":
                        steps.append((self.p, (c, "list_item", lst.id, label)))
                        label = None
                    else:
                        steps.append((self.element, (c, "paragraph")))
        return steps + [(self.close_list, (lst, len(self.paragraphs)))]

    def def_item(self, item, lst: ListBlock) -> None:
        buf = _Inline()
        for part in item:  # <term> then <def>
            buf.space()
            buf.fill(part)
        para = self.paragraph(buf, "list_item", lst.id)
        if para is not None:
            lst.item_ids.append(para.id)

    def close_list(self, lst: ListBlock, first: int) -> None:
        """After the list's last item: its span, or no list at all when it held no text of its
        own (an item holding only a nested list: the text is that list's)."""
        if lst.item_ids and len(self.paragraphs) > first:
            lst.start, lst.end = self.paragraphs[first].start, self.paragraphs[-1].end
        else:  # by identity: the lists nested in it were empty too and are gone already
            at = next(i for i in range(len(self.lists) - 1, -1, -1) if self.lists[i] is lst)
            del self.lists[at]
            del self.list_by_id[lst.id]

    def caption(self, el, kind: str) -> None:
        buf = _Inline()
        label = el.find("label")
        if label is not None:
            buf.fill(label)
        for part in el.findall("caption"):
            for ch in part:
                buf.space()
                buf.fill(ch)
        para = self.paragraph(buf, "caption")
        if para is not None:
            cid = el.get("id") or f"c{len(self.captions) + 1:04d}"
            self.captions.append(Caption(cid, kind, _text(label), para.id))

    # ----- sections -------------------------------------------------------------------------
    def new_id(self, el_id: str | None, generated: str) -> str:
        if el_id and el_id not in self.used_ids:
            self.used_ids.add(el_id)
            return el_id
        cand, n = generated, 1
        while cand in self.used_ids or cand in self.sec_attr_ids:
            n += 1
            cand = f"{generated}_{n}"
        self.used_ids.add(cand)
        return cand

    def section(self, el, kind: str, children=None, title: str | None = None,
                imrad_type: str | None = None, sec_id: str | None = None) -> list[_Step]:  # fmt: skip
        """Open a section for ``el`` (or an implicit one over ``children``); its content and
        then its closing are the next steps."""
        parent = self.open[-1] if self.open else None
        siblings = parent.subsections if parent else self.sections
        if title is None:
            label = _text(el.find("label"))
            title = " ".join(t for t in (label, _text(el.find("title"))) if t)
        title = bounded_title(title, "a section title", self.warnings)
        if imrad_type is None:
            imrad_type = classify_section(
                title, el.get("sec-type"), parent.imrad_type if parent else None
            )
        key = parent.id if parent else None
        n = 1 + self.numbered.get(key, 0)
        gen = f"{parent.id}.{n}" if parent else f"s{n}"
        sid = self.new_id(sec_id or (el.get("id") if el is not None else None), gen)
        sec = Section(sid, title, parent.level + 1 if parent else 1, imrad_type, -1, -1, -1, -1,
                      parent.id if parent else None)  # fmt: skip
        siblings.append(sec)
        if sid not in ("abstract", "s0"):
            self.numbered[key] = n
        self.open.append(sec)
        if title:
            sec.title_start, sec.title_end = self.block(title)
        steps = [(self.element, (ch, kind)) for ch in (children if children is not None else el)
                 if _tag(ch) not in (None, "title", "label")]  # fmt: skip
        return steps + [(self.close_section, (sec, siblings, key))]

    def close_section(self, sec: Section, siblings: list[Section], key: str | None) -> None:
        """After the section's content: drop it when it got no text."""
        self.open.pop()
        if sec.start < 0:
            if siblings[-1] is sec:  # always: later siblings open only after it closes
                siblings.pop()
            else:
                del siblings[next(i for i, s in enumerate(siblings) if s is sec)]
            if sec.id not in ("abstract", "s0"):
                self.numbered[key] -= 1
        elif not sec.title:
            sec.title_start = sec.title_end = sec.start


def _read(path_or_bytes: str | Path | bytes, source: str) -> tuple[etree._Element, str]:
    """Parse the XML and return (article element, name used in messages)."""
    if isinstance(path_or_bytes, bytes):
        data, name = path_or_bytes, source or "<bytes>"
    else:
        name = str(path_or_bytes)
        try:
            data = Path(path_or_bytes).read_bytes()
        except OSError as exc:
            raise DocumentParseError(f"cannot read {name}: {exc.strerror}; check the path "
                                     "and permissions", path=name) from exc  # fmt: skip
    try:
        declares = any(decl in data for decl in _ENTITY_DECLS)
        root = etree.fromstring(data, etree.XMLParser(**(_NO_HUGE_ARGS if declares else _PARSER_ARGS)))
    except etree.XMLSyntaxError as exc:
        line = exc.lineno or (exc.position[0] if exc.position else None)
        deep = _EXCESSIVE_DEPTH.search(exc.msg or "")
        if deep:
            raise DocumentParseError(
                f"{name}: elements nested deeper than {deep.group(1)} levels (line {line}), "
                "more than the XML parser reads; no real article nests so deep: check the tool "
                "that wrote the file.", path=name, line=line) from exc  # fmt: skip
        if "amplification" in (exc.msg or "") or "entity reference loop" in (exc.msg or ""):
            raise DocumentParseError(
                f"{name}: its DTD declares entities that expand to far more text than the file "
                f"holds (line {line}; an entity expansion attack, 'billion laughs'): refused. "
                "A PMC article declares no entities: re-download it.", path=name, line=line,
            ) from exc  # fmt: skip
        raise DocumentParseError(
            f"{name}: malformed XML at line {line}: {exc.msg}. The file is not well-formed "
            "JATS XML; re-download it or fix the markup (check with `xmllint --noout FILE`).",
            path=name,
            line=line,
        ) from exc
    article = (
        root
        if _tag(root) == "article"
        else next((e for e in root.iter() if _tag(e) == "article"), None)
    )
    if article is None:
        raise DocumentParseError(
            f"{name}: root element <{_tag(root)}> is not a JATS <article> and contains none; "
            "expected a PubMed Central .nxml (JATS/NLM XML) file.", path=name, line=root.sourceline,
        )  # fmt: skip
    ns = etree.QName(article).namespace
    if ns:  # namespaced JATS (e.g. from OAI-PMH): drop the JATS namespace
        for e in article.iter():
            if isinstance(e.tag, str) and e.tag.startswith("{" + ns + "}"):
                e.tag = _tag(e)
    return article, name


def _article_ids(meta) -> dict[str, str]:
    ids: dict[str, str] = {}
    for el in meta.findall("article-id") if meta is not None else []:
        kind, value = el.get("pub-id-type", ""), (el.text or "").strip()
        if kind == "pmcid":
            kind = "pmc"
        if value and kind not in ids:
            ids[kind] = ("PMC" + value) if kind == "pmc" and value.isdigit() else value
    return ids


def _references(article) -> list[Reference]:
    refs: dict[str, Reference] = {}
    for ref in article.iter("ref"):
        rid = ref.get("id")
        if not rid or rid in refs:
            continue
        cites = [c for c in ref if _tag(c) in _CITATION_TAGS] or [ref]
        # mixed-citation carries its own punctuation/spacing; the others are bare fields
        texts = [_text(c) if _tag(c) == "mixed-citation" else " ".join(c.itertext()) for c in cites]
        text = " ".join(" ".join(texts).split())
        pub = {p.get("pub-id-type"): (p.text or "").strip() for p in ref.iter("pub-id")}
        refs[rid] = Reference(rid, text, pub.get("pmid") or None, pub.get("doi") or None)
    return list(refs.values())


def parse_jats(path_or_bytes: str | Path | bytes, source: str = "") -> Document:
    """Parse one JATS/NLM article (a path, or the raw bytes) into a :class:`Document`.

    Raises :class:`DocumentParseError` for unreadable/malformed XML, a file without an
    ``<article>``, or an article without any text. ``source`` defaults to the path.

    Example: ``parse_jats("gralc/data/demo/articles/PMC9000001.nxml").sections[0].imrad_type`` ->
    ``'abstract'``.
    """
    article, name = _read(path_or_bytes, source)
    front, body = article.find("front"), article.find("body")
    meta = front.find("article-meta") if front is not None else None
    ids = _article_ids(meta)
    warnings: list[str] = []
    b = _Builder({s.get("id") for s in article.iter("sec") if s.get("id")})
    title = _text(meta.find("title-group/article-title")) if meta is not None else ""
    title = bounded_title(title, "<article-title>", warnings)
    title_start, title_end = b.tb.add(title) if title else (0, 0)
    if not title:
        warnings.append("no <article-title>")
    abstracts = meta.findall("abstract") if meta is not None else []
    main = [a for a in abstracts if a.get("abstract-type", "").lower() not in _SIDE_ABSTRACTS]
    if main:
        b.run(b.section, main[0], "abstract", title=_text(main[0].find("title")),
              imrad_type="abstract", sec_id="abstract")  # fmt: skip
    if body is None:
        warnings.append("no <body>: abstract-only document")
    else:
        _body(b, body)
    back = article.find("back")
    for sec in back.iter("sec") if back is not None else []:
        if sec.get("sec-type") == "display-objects":  # PLoS: figures and tables at the end
            b.run(b.section, sec, "paragraph")
    for group in article.findall("floats-group"):
        b.run(b.section, None, "paragraph", children=list(group), title="", imrad_type="other",
              sec_id="floats")  # fmt: skip
    if not b.paragraphs:
        raise DocumentParseError(
            f"{name} has no text: no abstract or body paragraphs were found; is it a "
            "metadata-only PMC record? Use the full-text (OA) .nxml.", path=name)  # fmt: skip
    doc_id = ids.get("pmc") or ids.get("pmid") or ids.get("doi") or Path(name).stem
    return Document(
        id=doc_id,
        text=b.tb.text,
        title=title,
        title_start=title_start,
        title_end=title_end,
        pmid=ids.get("pmid"),
        pmcid=ids.get("pmc"),
        doi=ids.get("doi"),
        sections=b.sections,
        paragraphs=b.paragraphs,
        citations=b.citations,
        crossrefs=b.crossrefs,
        lists=b.lists,
        captions=b.captions,
        references=_references(article),
        article_type=article.get("article-type", ""),
        source=source or name,
        warnings=warnings + b.warnings,
    )


def _body(b: _Builder, body) -> None:
    """Top-level sections of ``<body>``; loose runs of blocks become implicit sections."""
    children = [ch for ch in body if _tag(ch) is not None]
    secs = [ch for ch in children if _tag(ch) == "sec"]
    explicit = {classify_section(_text(s.find("title")), s.get("sec-type")) for s in secs}
    run: list = []
    for i, ch in enumerate(children + [None]):
        if ch is not None and _tag(ch) != "sec":
            run.append(ch)
            continue
        if run:
            leading = len(run) == i and bool(secs) and "introduction" not in explicit
            b.run(b.section, None, "paragraph", children=run, title="",
                  imrad_type="introduction" if leading else "other",
                  sec_id="s0" if len(run) == i else None)  # fmt: skip
            run = []
        if ch is not None:
            b.run(b.section, ch, "paragraph")
