"""Chunk-Link (Narita & Munakata 2025): complete retrieved chunks with the chunks that hold
the items of an enumeration they announce.

An enumeration often spans several chunks: the "preamble" ("Patients were excluded for the
following reasons:") lands in one chunk, its items in the next ones. Chunk-Link links each
chunk holding a preamble to the following chunks (``window`` = 5 in the paper) that hold the
items, and adds them to the retrieved list. The paper detects preambles with an LLM;
:func:`detect_preambles` is rule-based (announcing cues such as "the following", "as
follows", a count before a colon; sentences ending with a colon; titles such as "Inclusion
criteria"; lists themselves; ``detector=`` plugs an LLM in, returning preamble character
spans), and :func:`enumeration_for` says where the items are. The rules in full:
docs/evaluation.md."""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gralc.atomic import write_text_atomic
from gralc.chunking.chunk import Chunk
from gralc.documents.model import Document, Paragraph
from gralc.retrieval.hits import Candidate, Hit, as_hits
from gralc.safe_load import read_json_untrusted

Span = tuple[int, int]
Detector = Callable[[Document], list[Span]]
FORMAT = "gralc.chunk_link/1"

_NOT_ENUM = (
    r"(?:days?|weeks?|months?|years?|mornings?|evenings?|nights?|visits?|sections?|chapters?)"
)
_SENTENCE_CUE = re.compile(
    rf"\bthe\s+following\b(?!\s+{_NOT_ENUM}\b)|\bas\s+follows\b"
    r"|\b(?:include[sd]?|including|are|were|following)\s*:"
    r"|\b(?:two|three|four|five|six|seven|eight|nine|ten|several|multiple)\b[^.:;]{0,60}:(?=\s)",
    re.IGNORECASE,
)
_TITLE_CUE = re.compile(
    r"\b(?:criteria|key\s+(?:points|messages|findings)|highlights|recommendations?|steps"
    r"|summary\s+points|take[-\s]home|what\s+this\s+study\s+adds|advantages|disadvantages"
    r"|strengths\s+and\s+limitations)\b|:\s*$",
    re.IGNORECASE,
)
_ITEMS_COLON = re.compile(r":\s")


@dataclass(frozen=True)
class Enumeration:
    """A preamble (where the announcement is) and the span holding its items.

    >>> Enumeration(preamble=(0, 40), items=(41, 120)).items
    (41, 120)
    """

    preamble: Span
    items: Span


# ----- detection ---------------------------------------------------------------------------
def _sentence_spans(p: Paragraph) -> list[Span]:
    return [(s.start, s.end) for s in p.sentences] or [(p.start, p.end)]


def detect_preambles(doc: Document) -> list[Span]:
    """Sorted, distinct character spans of enumeration preambles in ``doc`` (rules above).

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\nPatients had the following symptoms:\\n\\n- fever\\n- cough", "d1")
    >>> [doc.text[s:e] for s, e in detect_preambles(doc)]
    ['Patients had the following symptoms:']
    """
    spans: set[Span] = set()
    for p in doc.paragraphs:
        for s, e in _sentence_spans(p):
            sentence = doc.text[s:e].rstrip()
            if _SENTENCE_CUE.search(sentence) or (
                sentence.endswith(":") and len(sentence.split()) >= 3  # not "Background:"
            ):
                spans.add((s, e))
    for sec in doc.iter_sections():
        if sec.title_end > sec.title_start and _TITLE_CUE.search(sec.title):
            spans.add((sec.title_start, sec.title_end))
    spans.update((lst.start, lst.end) for lst in doc.lists if lst.end > lst.start)
    return sorted(spans)


def enumeration_for(doc: Document, span: Span) -> Enumeration | None:
    """Where the items announced by the preamble ``span`` are (None if nowhere).

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\nPatients had the following symptoms:\\n\\n- fever\\n- cough", "d1")
    >>> e = enumeration_for(doc, detect_preambles(doc)[0]); doc.text[e.items[0]:e.items[1]]
    '\\n\\n- fever\\n- cough'
    """
    s, e = span
    for lst in doc.lists:
        if (lst.start, lst.end) == span:
            first = doc.paragraph(lst.item_ids[0]) if lst.item_ids else None
            head_end = first.end if first is not None else s
            return Enumeration((s, head_end), (head_end, e)) if head_end < e else None
    for sec in doc.iter_sections():
        if (sec.title_start, sec.title_end) == span and sec.title_end < sec.end:
            return Enumeration(span, (sec.title_end, sec.end))
    paragraphs = sorted(doc.paragraphs, key=lambda p: p.start)
    starts = [p.start for p in paragraphs]
    own = next((p for p in paragraphs if p.start <= s < p.end), None)
    after = own.end if own is not None else e
    i = bisect_left(starts, after)
    nxt = paragraphs[i] if i < len(paragraphs) else None
    if nxt is not None and nxt.kind == "list_item":
        end = nxt.end
        for p in paragraphs[i:]:
            if p.kind != "list_item" or p.list_id != nxt.list_id:
                break
            end = p.end
        lst = next((x for x in doc.lists if x.id == nxt.list_id), None)
        return Enumeration(span, (e, max(end, lst.end if lst is not None else end)))
    colon = _ITEMS_COLON.search(doc.text, s, e)  # first ": " (not "1:500")
    if colon is not None and doc.text[colon.end() : e].strip():
        return Enumeration(span, (colon.end(), e))  # "three outcomes: A, B and C."
    if own is not None and doc.text[e : own.end].strip():
        return Enumeration(span, (e, own.end))  # items in the rest of the paragraph
    if nxt is None:
        return None
    titled = any(
        after <= sec.title_start < nxt.start and sec.title_end > sec.title_start
        for sec in doc.iter_sections()
    )
    return None if titled else Enumeration(span, (e, nxt.end))


# ----- linking -----------------------------------------------------------------------------
def _overlaps(c: Chunk, span: Span) -> bool:
    return c.char_start < span[1] and span[0] < c.char_end


def build_links(
    doc: Document, chunks_of_doc: list[Chunk], window: int = 5, detector: Detector | None = None
) -> dict[str, list[str]]:
    """``{preamble chunk_id: [item chunk_ids]}`` for one document.

    Chunks are grouped by ``level`` (a multi-level index is linked level by level) and put in
    char order (start, end, chunk_id). Every chunk overlapping a preamble is linked to those
    of its next ``window`` chunks that overlap the preamble's items. Chunks with no link are
    left out.

    Example: ``build_links(doc, chunks_of_doc)`` -> ``{'d1::structure_aware::chunk::3':
    ['d1::structure_aware::chunk::4']}`` when chunk 3 announces a list that chunk 4 holds.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    foreign = [c.chunk_id for c in chunks_of_doc if c.doc_id != doc.id]
    if foreign:
        raise ValueError(f"chunks {foreign[:3]} do not belong to document {doc.id!r}")
    spans = (detector or detect_preambles)(doc)
    for s, e in spans:
        if not 0 <= s < e <= len(doc.text):
            raise ValueError(
                f"preamble detector returned span ({s}, {e}) outside document {doc.id!r} "
                f"of {len(doc.text)} characters"
            )
    enums = [en for span in spans if (en := enumeration_for(doc, span)) is not None]
    by_level: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks_of_doc:
        by_level[c.level].append(c)
    links: dict[str, list[str]] = {}
    for level_chunks in by_level.values():
        ordered = sorted(level_chunks, key=lambda c: (c.char_start, c.char_end, c.chunk_id))
        for i, c in enumerate(ordered):
            items = [en.items for en in enums if _overlaps(c, en.preamble)]
            targets = [
                d.chunk_id
                for d in ordered[i + 1 : i + 1 + window]
                if any(_overlaps(d, span) for span in items)
            ]
            if targets:
                links[c.chunk_id] = targets
    return links


class ChunkLinker:
    """Enumeration links of a corpus and the expansion of retrieved lists with them.

    Example: ``ChunkLinker(window=5).fit(docs, chunks).expand(hits, {c.chunk_id: c for c in chunks}, k=10)``
    -> the top 10 with the item chunks of each retrieved preamble pulled in (``Hit.via`` names it).
    """

    def __init__(
        self, window: int = 5, detector: Detector | None = None, epsilon: float = 1e-6
    ) -> None:
        self.window = window
        self.detector = detector
        self.epsilon = epsilon
        self.links: dict[str, list[str]] = {}

    def fit(self, docs: Iterable[Document], chunks: Iterable[Chunk]) -> ChunkLinker:
        """Link the chunks of every document (each chunk's document must be in ``docs``)."""
        by_doc: dict[str, list[Chunk]] = defaultdict(list)
        for c in chunks:
            by_doc[c.doc_id].append(c)
        docs_by_id = {d.id: d for d in docs}
        missing = sorted(set(by_doc) - set(docs_by_id))
        if missing:
            raise ValueError(f"chunks of documents {missing[:3]} given but not the documents")
        self.links = {}
        for doc_id, doc_chunks in by_doc.items():
            self.links.update(
                build_links(docs_by_id[doc_id], doc_chunks, self.window, self.detector)
            )
        return self

    def linked(self, chunk_id: str) -> list[str]:
        """Chunk ids linked from ``chunk_id`` (empty if none)."""
        return list(self.links.get(chunk_id, []))

    def expand(
        self, ranked: Iterable[Candidate], all_chunks_by_id: Mapping[str, Chunk], k: int
    ) -> list[Hit]:
        """The top ``k`` of ``ranked`` (list order) completed with their linked chunks.

        Each linked chunk is inserted right after its preamble hit (one hop, no recursion)
        with score ``preamble score - j * epsilon`` (j = 1, 2, ...), ``components
        {"chunk_link": 1.0}`` and ``via`` = the preamble's chunk_id. Chunks already in the
        top ``k`` or already inserted are not repeated, so the result has between
        ``min(k, len(ranked))`` and ``k * (1 + window)`` hits.
        """
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        top = as_hits(ranked)[:k]
        present = {h.chunk.chunk_id for h in top}
        out: list[Hit] = []
        for hit in top:
            out.append(hit)
            for j, cid in enumerate(
                (c for c in self.links.get(hit.chunk.chunk_id, []) if c not in present), start=1
            ):
                if cid not in all_chunks_by_id:
                    raise ValueError(
                        f"linked chunk {cid!r} is not in all_chunks_by_id: pass the chunks the "
                        "linker was fitted on (e.g. the index's chunk table)"
                    )
                present.add(cid)
                out.append(
                    Hit(
                        all_chunks_by_id[cid],
                        hit.score - j * self.epsilon,
                        {"chunk_link": 1.0},
                        via=hit.chunk.chunk_id,
                    )
                )
        return out

    # ----- persistence -----------------------------------------------------------------
    def save(self, path: str | Path) -> None:
        """Write the links as JSON (the detector is code and is not saved)."""
        payload = {
            "format": FORMAT,
            "window": self.window,
            "epsilon": self.epsilon,
            "links": self.links,
        }
        write_text_atomic(path, json.dumps(payload, indent=1, sort_keys=True))

    @classmethod
    def load(cls, path: str | Path) -> ChunkLinker:
        """Read links written by :meth:`save`."""
        payload = read_json_untrusted(Path(path), allow_interpolation=True)
        if payload.get("format") != FORMAT:
            raise ValueError(f"{path} is not a Chunk-Link file (format {FORMAT!r} expected)")
        linker = cls(window=payload["window"], epsilon=payload["epsilon"])
        linker.links = {k: list(v) for k, v in payload["links"].items()}
        return linker
