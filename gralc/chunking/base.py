"""What a chunking strategy receives, and the one place chunk metadata is filled in."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np

from gralc.chunking.chunk import Chunk
from gralc.documents.model import Document, Section
from gralc.encoding.types import TokenEmbeddings
from gralc.knowledge.mention import EntityMention


@dataclass
class PreparedDocument:
    """A document with everything strategies may need, computed once.

    ``tokens``: whole-document token embeddings (None for strategies that do not need them).
    ``mentions``: entity mentions in ``doc.text`` coordinates, sorted by start.

    >>> from gralc.documents.plaintext import document_from_text
    >>> PreparedDocument(document_from_text("# T\\n\\nMetformin.", "d1")).tokens is None
    True
    """

    doc: Document
    tokens: TokenEmbeddings | None = None
    mentions: list[EntityMention] = field(default_factory=list)

    def offsets(self, tokenizer) -> np.ndarray:
        """(N, 2) character offsets of the document's word-pieces: the encoded tokens' when
        ``tokens`` is set, else ``tokenizer``'s (a strategy that needs no vectors).

        Example: ``prepared.offsets(encoder.tokenizer)[0]`` -> ``[start, end]`` of piece 0."""
        if self.tokens is not None:
            return self.tokens.offsets
        from gralc.chunking.sentence_spans import tokenize_offsets

        return tokenize_offsets(tokenizer, self.doc.text)


class SectionLocator:
    """Maps character positions of one document to its sections (innermost and top-level).

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1")
    >>> SectionLocator(doc).innermost(doc.paragraphs[0].start).title
    'Methods'
    """

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        # innermost section by start: deeper sections come later in a depth-first walk,
        # so for a position the last section (by start) that contains it is the innermost.
        self._sections: list[Section] = sorted(doc.iter_sections(), key=lambda s: (s.start, s.level))
        self._starts = [s.start for s in self._sections]
        self._mentions: list[EntityMention] | None = None
        self._mention_starts: list[int] | None = None

    def entity_ids(self, mentions: list[EntityMention], start: int, end: int) -> list[str]:
        """Concept ids of the ``mentions`` inside ``[start, end)``, in their order, no repeats.
        Mentions sorted by start (as :class:`PreparedDocument` keeps them) are found by
        bisection, so a document's many chunks do not each scan all of its mentions."""
        if mentions is not self._mentions:
            starts = [m.start for m in mentions]
            self._mentions = mentions
            self._mention_starts = starts if all(a <= b for a, b in pairwise(starts)) else None
        first = 0 if self._mention_starts is None else bisect_left(self._mention_starts, start)
        ids: dict[str, None] = {}  # ordered, O(1) membership
        for i in range(first, len(mentions)):
            m = mentions[i]
            if self._mention_starts is not None and m.start > end:
                break
            if m.start >= start and m.end <= end:
                ids.setdefault(m.concept_id)
        return list(ids)

    def innermost(self, pos: int) -> Section | None:
        """Innermost section containing ``pos`` (or the next section if ``pos`` is between)."""
        i = bisect_right(self._starts, pos) - 1
        while i >= 0:
            sec = self._sections[i]
            if sec.start <= pos < sec.end:
                # a later-starting deeper section may also contain pos: check forward
                return sec
            i -= 1
        # before any section (e.g. the title): use the first section after pos, if any
        j = bisect_right(self._starts, pos)
        return self._sections[j] if j < len(self._sections) else None

    def top_level_types(self, start: int, end: int) -> list[str]:
        """IMRaD types of the top-level sections overlapping ``[start, end)``, in order."""
        types: list[str] = []
        for sec in self.doc.sections:
            if sec.start < end and start < sec.end and sec.imrad_type not in types:
                types.append(sec.imrad_type)
        if not types:
            first = self.innermost(start)
            if first is not None:
                types.append(self.doc.top_level_type(first.id))
        return types


def section_label(section: Section) -> str:
    """A section's title, or its type capitalised for untitled sections (``Abstract``).

    >>> from gralc.documents.plaintext import document_from_text
    >>> section_label(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1").sections[0])
    'Methods'
    """
    return section.title or section.imrad_type.capitalize()


def make_chunk(
    prepared: PreparedDocument,
    strategy: str,
    index: int,
    char_start: int,
    char_end: int,
    token_start: int = -1,
    token_end: int = -1,
    level: str = "chunk",
    boundary_scores: dict[str, float] | None = None,
    locator: SectionLocator | None = None,
) -> Chunk:
    """Build a :class:`Chunk` with its text, section metadata and entity ids filled in.

    Pass a ``locator`` built once per document when making many chunks.

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1")
    >>> c = make_chunk(PreparedDocument(doc), "fixed", 0, 0, len(doc.text))
    >>> c.chunk_id, c.section_path, c.imrad_types
    ('d1::fixed::chunk::0', ['Methods'], ['methods'])
    """
    doc = prepared.doc
    if not 0 <= char_start <= char_end <= len(doc.text):
        raise ValueError(
            f"chunk span [{char_start}, {char_end}) outside document {doc.id!r} "
            f"of {len(doc.text)} characters"
        )
    locator = locator or SectionLocator(doc)
    sec = locator.innermost(char_start)
    path = doc.section_path(sec.id) if sec is not None else []
    entity_ids = locator.entity_ids(prepared.mentions, char_start, char_end)
    return Chunk(
        doc_id=doc.id,
        chunk_id=f"{doc.id}::{strategy}::{level}::{index}",
        text=doc.text[char_start:char_end],
        char_start=char_start,
        char_end=char_end,
        token_start=token_start,
        token_end=token_end,
        section_ids=[s.id for s in path],
        section_path=[section_label(s) for s in path],
        imrad_types=locator.top_level_types(char_start, char_end),
        entity_ids=entity_ids,
        level=level,
        strategy=strategy,
        boundary_scores=dict(boundary_scores or {}),
    )
