"""Hand-built Documents and chunks for the retrieval post-processing tests."""

from __future__ import annotations

import re

from gralc.chunking.base import PreparedDocument, SectionLocator, make_chunk
from gralc.chunking.chunk import Chunk
from gralc.documents.model import (
    Document,
    ListBlock,
    Paragraph,
    Section,
    Sentence,
    TextBuilder,
)


def _sentences(text: str, start: int, par_id: str) -> list[Sentence]:
    return [
        Sentence(start + m.start(), start + m.end(), par_id)
        for m in re.finditer(r"\S.*?(?:[.!?](?=\s|$)|$)", text)
    ]


def build_document(doc_id: str, sections: list[tuple[str, list]]) -> Document:
    """Title, then top-level sections ``(title, blocks)``; a block is a paragraph text or a
    list of strings (a ListBlock whose items are ``list_item`` paragraphs)."""
    b = TextBuilder()
    t0, t1 = b.add(f"Title of {doc_id}")
    doc = Document(doc_id, "", f"Title of {doc_id}", t0, t1)
    for n, (title, blocks) in enumerate(sections, start=1):
        ts, te = b.add(title)
        sec = Section(f"{doc_id}-s{n}", title, 1, "other", ts, ts, ts, te)
        for block in blocks:
            items = block if isinstance(block, list) else [block]
            lst = None
            if isinstance(block, list):
                lst = ListBlock(f"{doc_id}-l{len(doc.lists) + 1}", -1, -1, sec.id)
                doc.lists.append(lst)
            for text in items:
                ps, pe = b.add(text)
                pid = f"{doc_id}-p{len(doc.paragraphs) + 1}"
                kind = "list_item" if lst is not None else "paragraph"
                par = Paragraph(pid, ps, pe, sec.id, kind, lst.id if lst else None)
                par.sentences = _sentences(text, ps, pid)
                doc.paragraphs.append(par)
                sec.paragraph_ids.append(pid)
                if lst is not None:
                    lst.item_ids.append(pid)
                    lst.start = ps if lst.start < 0 else lst.start
                    lst.end = pe
        sec.end = b.length
        doc.sections.append(sec)
    doc.text = b.text
    return doc


def paragraph_chunks(
    doc: Document, groups: list[list[int]] | None = None, level: str = "chunk"
) -> list[Chunk]:
    """One chunk per group of consecutive paragraph indexes (default: one per paragraph)."""
    prepared, locator = PreparedDocument(doc), SectionLocator(doc)
    groups = groups or [[i] for i in range(len(doc.paragraphs))]
    return [
        make_chunk(
            prepared,
            "test",
            n,
            doc.paragraphs[g[0]].start,
            doc.paragraphs[g[-1]].end,
            level=level,
            locator=locator,
        )
        for n, g in enumerate(groups)
    ]
