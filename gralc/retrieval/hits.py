"""One retrieved candidate (:class:`Hit`), shared by the post-retrieval components
(Chunk-Link expansion, MAL-RAG probability selection, section-diverse re-ranking).

Searchers return one query's candidates as ``list[tuple[Chunk, float]]`` (score
descending); every post-processor accepts those pairs or :class:`Hit` objects
(:func:`as_hits`) and returns ``list[Hit]``. A :class:`Hit` unpacks like a pair
(``for chunk, score in hits``), so the components compose with each other and with
code written for pairs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from gralc.chunking.chunk import Chunk


@dataclass
class Hit:
    """A chunk retrieved for a query.

    ``score``: the value the list is ranked by (higher first). ``components``: named numbers
    explaining it (e.g. ``retrieval``, ``probability``, ``chunk_link``). ``via``: chunk_id of
    the hit that pulled this one in (Chunk-Link expansion), None for retrieved hits.
    ``path``: the graph path that brought it in (graph search: concept ids, seed first, or a
    community id; ``("dense",)`` for the cosine fill), empty for other searchers.
    Components never mutate the :class:`Chunk`.

    >>> hit = Hit(Chunk("d1", "d1_c0", "Metformin was titrated.", 0, 23), 0.82, {"cos": 0.82})
    >>> chunk, score = hit
    >>> chunk.chunk_id, score, hit.components
    ('d1_c0', 0.82, {'cos': 0.82})
    """

    chunk: Chunk
    score: float
    components: dict[str, float] = field(default_factory=dict)
    via: str | None = None
    path: tuple[str, ...] = ()

    def __iter__(self) -> Iterator[Chunk | float]:
        """Unpack as ``(chunk, score)``."""
        yield self.chunk
        yield self.score


Candidate = Hit | tuple[Chunk, float]


def as_hits(ranked: Iterable[Candidate]) -> list[Hit]:
    """Copies of ``ranked`` as :class:`Hit` objects (pairs become hits with no components).

    Raises TypeError / ValueError naming the offending position for anything else, or for a
    non-finite score.

    >>> as_hits([(Chunk("d1", "c0", "x", 0, 1), 0.5)])[0].components
    {}
    """
    hits: list[Hit] = []
    for i, item in enumerate(ranked):
        if isinstance(item, Hit):
            hit = Hit(item.chunk, float(item.score), dict(item.components), item.via, tuple(item.path))
        elif isinstance(item, tuple) and len(item) == 2:
            hit = Hit(item[0], float(item[1]))
        else:
            raise TypeError(
                f"candidate {i} is a {type(item).__name__}; expected a Hit or a "
                "(Chunk, score) tuple as returned by ChunkIndex.search"
            )
        if not isinstance(hit.chunk, Chunk):
            raise TypeError(f"candidate {i} holds a {type(hit.chunk).__name__}, not a Chunk")
        if not math.isfinite(hit.score):
            raise ValueError(f"candidate {i} ({hit.chunk.chunk_id}) has score {hit.score}")
        hits.append(hit)
    return hits


def as_pairs(hits: Iterable[Candidate]) -> list[tuple[Chunk, float]]:
    """``(chunk, score)`` pairs, e.g. to feed a Hit list back to pair-based code.

    >>> [(c.chunk_id, s) for c, s in as_pairs([Hit(Chunk("d1", "c0", "x", 0, 1), 0.5)])]
    [('c0', 0.5)]
    """
    return [(h.chunk, h.score) for h in as_hits(hits)]


def score_order(hits: list[Hit]) -> list[Hit]:
    """``hits`` in the one ranking order (:mod:`gralc.retrieval.ranking`): score desc, then
    doc_id desc, chunk_id desc.

    >>> hits = [Hit(Chunk("d1", "c0", "x", 0, 1), 0.5), Hit(Chunk("d2", "c0", "x", 0, 1), 0.5)]
    >>> [h.chunk.doc_id for h in score_order(hits)]
    ['d2', 'd1']
    """
    from gralc.retrieval.ranking import rank_chunks

    return rank_chunks(hits)
