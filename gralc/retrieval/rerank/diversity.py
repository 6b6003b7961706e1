"""Section-diverse re-ranking (GraLC-RAG paper, future work 3: "re-ranking that explicitly
maximizes section diversity to improve cross-section recall").

Cross-section questions need evidence from several top-level sections of the relevant
article; plain top-k tends to return several chunks of one section. Re-rankers of one
query's candidates: ``mmr`` (maximal marginal relevance, with a same-section and an embedding
redundancy), ``quota`` (round-robin over the sections of the ``top_docs`` best documents,
``per_section_quota`` chunks each), ``complete`` (what ``eval.py``'s ``*_diverse`` rows use:
the ``quota`` order over all documents, the last ``complete_slots`` of the top ``k`` given
to the unseen top-level sections of the ``top_docs`` best documents) and ``tail`` (the same
completion after the plain ranking's first ``k - complete_slots``: the head is untouched).

A chunk's section key is ``(doc_id, section_ids[0])`` (``(doc_id, None)`` without one); ties
follow :mod:`gralc.retrieval.ranking`. Hits come with a rank score (``n - position``), the
retrieval score in ``components["retrieval"]``. The formulas: docs/evaluation.md."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from gralc.chunking.chunk import Chunk
from gralc.retrieval.hits import Candidate, Hit, as_hits, score_order

SectionKey = tuple[str, "str | None"]
#: the settings of the ``*_diverse`` evaluation rows (chosen on the PMC cross-section
#: questions: docs/evaluation.md)
SECTION_DIVERSE = {"method": "complete", "per_section_quota": 1, "top_docs": 3, "complete_slots": 6}
#: a trained search's ``search.diverse`` choices: ``round_robin`` (:data:`SECTION_DIVERSE`) and
#: ``complete_tail`` (the plain ranking first, its last 30 % of slots for unseen sections: 6 of
#: 20 as measured, 3 of 10, none below 4, so the head is kept at any k)
DIVERSE_METHODS = {"round_robin": SECTION_DIVERSE, "complete_tail": {**SECTION_DIVERSE, "method": "tail"}}
TAIL_SHARE = 0.3


def section_key(chunk: Chunk) -> SectionKey:
    """``(doc_id, top-level section id or None)``.

    >>> from gralc.chunking.chunk import Chunk
    >>> section_key(Chunk("d1", "c0", "x", 0, 1, section_ids=["s2", "s2.1"]))
    ('d1', 's2')
    """
    return chunk.doc_id, (chunk.section_ids[0] if chunk.section_ids else None)


def _unit_embeddings(hits: list[Hit]) -> np.ndarray:
    """(n, d) L2-normalised embeddings; ValueError naming a chunk without one."""
    for h in hits:
        if h.chunk.embedding is None:
            raise ValueError(
                f"embedding_weight > 0 needs chunk embeddings, but {h.chunk.chunk_id} has none: "
                "load the index with its embeddings or set embedding_weight=0"
            )
    e = np.stack([np.asarray(h.chunk.embedding, dtype=np.float64) for h in hits])
    return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)


def _mmr(
    hits: list[Hit], k: int, lambda_: float, same_section_penalty: float, embedding_weight: float
) -> list[Hit]:
    scores = np.array([h.score for h in hits])
    span = scores.max() - scores.min()
    rel = (scores - scores.min()) / span if span > 0 else np.ones_like(scores)
    emb = _unit_embeddings(hits) if embedding_weight > 0 else None
    key_ids = {key: i for i, key in enumerate(dict.fromkeys(section_key(h.chunk) for h in hits))}
    keys = np.array([key_ids[section_key(h.chunk)] for h in hits])
    shared = np.zeros(len(hits))  # 1 where the section key is already selected
    max_sim = np.zeros(len(hits))  # max cosine to the selected chunks, clipped at 0
    open_ = np.ones(len(hits), dtype=bool)
    out: list[Hit] = []
    while open_.any() and len(out) < k:
        value = lambda_ * rel - (1 - lambda_) * (
            same_section_penalty * shared + embedding_weight * max_sim
        )
        # argmax returns the first maximum: hits are in the ranking rule's order
        best = int(np.argmax(np.where(open_, value, -np.inf)))
        open_[best] = False
        hits[best].components["mmr"] = float(value[best])
        out.append(hits[best])
        shared[keys == keys[best]] = 1.0
        if emb is not None:
            max_sim = np.maximum(max_sim, emb @ emb[best])
    return out


def _quota(hits: list[Hit], k: int, per_section_quota: int, top_docs: int | None) -> list[Hit]:
    doc_order: list[str] = []
    for h in hits:  # hits are best first, so a document's first hit is its best
        if h.chunk.doc_id not in doc_order:
            doc_order.append(h.chunk.doc_id)
    chosen_docs = set(doc_order if top_docs is None else doc_order[:top_docs])
    queues: dict[SectionKey, list[Hit]] = defaultdict(list)  # insertion order = section order
    for h in hits:
        if h.chunk.doc_id in chosen_docs:
            queues[section_key(h.chunk)].append(h)
    out: list[Hit] = []
    rnd = 0
    while len(out) < k and any(queues.values()):
        for queue in queues.values():
            take, queue[:] = queue[:per_section_quota], queue[per_section_quota:]
            for h in take[: k - len(out)]:
                h.components["round"] = float(rnd)
                out.append(h)
        rnd += 1
    taken = {id(h) for h in out}
    out += [h for h in hits if id(h) not in taken][: k - len(out)]
    return out


def _complete(
    hits: list[Hit], k: int, per_section_quota: int, top_docs: int | None, complete_slots: int,
    plain_head: bool = False,
) -> list[Hit]:
    order = hits if plain_head else _quota(hits, len(hits), per_section_quota, None)
    head = order[: max(0, k - complete_slots)]
    shown = {section_key(h.chunk) for h in head}
    docs = list(dict.fromkeys(h.chunk.doc_id for h in order))
    docs = docs if top_docs is None else docs[:top_docs]
    missing: dict[str, list[Hit]] = {d: [] for d in docs}  # per document, best chunk first
    for h in order[len(head) :]:
        key = section_key(h.chunk)
        if h.chunk.doc_id in missing and key[1] is not None and key not in shown:
            missing[h.chunk.doc_id].append(h)
            shown.add(key)
    tail: list[Hit] = []
    while len(tail) < k - len(head) and any(missing.values()):
        for queue in missing.values():
            if queue and len(tail) < k - len(head):
                h = queue.pop(0)
                h.components["completes_section"] = 1.0
                tail.append(h)
    taken = {id(h) for h in head + tail}
    return (head + tail + [h for h in order if id(h) not in taken])[:k]


def section_diverse(ranked: Iterable[Candidate], k: int, name: str = "round_robin") -> list[Hit]:
    """``ranked`` re-ranked with :data:`DIVERSE_METHODS` ``[name]`` into its top ``k`` (its
    complete slots at most ``k``; ``complete_tail``: :data:`TAIL_SHARE` of ``k``).

    >>> from gralc.chunking.chunk import Chunk
    >>> a = Chunk("d1", "c0", "x", 0, 1, section_ids=["s1"]); b = Chunk("d1", "c1", "y", 2, 3, section_ids=["s1"])
    >>> c = Chunk("d1", "c2", "z", 4, 5, section_ids=["s2"])
    >>> [h.chunk.chunk_id for h in section_diverse([(a, 0.9), (b, 0.85), (c, 0.5)], k=2)]
    ['c0', 'c2']
    >>> d = Chunk("d1", "c3", "w", 6, 7, section_ids=["s1"])  # the plain head kept, one slot completes s2:
    >>> [h.chunk.chunk_id for h in section_diverse_rerank([(a, 0.9), (b, 0.85), (d, 0.6), (c, 0.5)], 3, "tail",
    ...                                                   complete_slots=1)]
    ['c0', 'c1', 'c2']
    """
    opts = dict(DIVERSE_METHODS[name])
    opts["complete_slots"] = int(TAIL_SHARE * k) if opts["method"] == "tail" else min(opts["complete_slots"], k)
    return section_diverse_rerank(ranked, k, **opts)


def section_diverse_rerank(
    ranked: Iterable[Candidate],
    k: int,
    method: str = "mmr",
    lambda_: float = 0.7,
    same_section_penalty: float = 1.0,
    embedding_weight: float = 0.0,
    per_section_quota: int = 1,
    top_docs: int | None = 3,
    complete_slots: int = 4,
) -> list[Hit]:
    """Re-rank one query's candidates so that the top ``k`` covers several sections.

    ``method`` ``mmr`` uses ``lambda_`` (1 = plain ranking), ``same_section_penalty`` and
    ``embedding_weight`` (> 0 needs every ``chunk.embedding``); ``quota`` uses
    ``per_section_quota`` and ``top_docs`` (None = all documents); ``complete`` uses
    ``per_section_quota``, ``top_docs`` and ``complete_slots`` (0 <= slots <= k). Returns
    ``min(k, len(ranked))`` hits (see the module doc for scores and components).

    >>> from gralc.chunking.chunk import Chunk
    >>> a = Chunk("d1", "c0", "x", 0, 1, section_ids=["s1"]); b = Chunk("d1", "c1", "y", 2, 3, section_ids=["s1"])
    >>> c = Chunk("d1", "c2", "z", 4, 5, section_ids=["s2"])
    >>> [h.chunk.chunk_id for h in section_diverse_rerank([(a, 0.9), (b, 0.85), (c, 0.5)], k=2, method="quota")]
    ['c0', 'c2']
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if method not in ("mmr", "quota", "complete", "tail"):
        raise ValueError(
            f"unknown diversity method {method!r}: use 'mmr', 'quota', 'complete' or 'tail'"
        )
    if method in ("complete", "tail") and not 0 <= complete_slots <= k:
        raise ValueError(f"complete_slots must be in [0, k={k}], got {complete_slots}")
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_}")
    if per_section_quota < 1 or (top_docs is not None and top_docs < 1):
        raise ValueError("per_section_quota and top_docs must be >= 1 (top_docs may be None)")
    hits = score_order(as_hits(ranked))
    if not hits:
        return []
    for h in hits:
        h.components.setdefault("retrieval", h.score)
    if method == "mmr":
        out = _mmr(hits, k, lambda_, same_section_penalty, embedding_weight)
    elif method == "quota":
        out = _quota(hits, k, per_section_quota, top_docs)
    else:
        out = _complete(hits, k, per_section_quota, top_docs, complete_slots, plain_head=method == "tail")
    for i, h in enumerate(out):
        h.score = float(len(out) - i)
    return out
