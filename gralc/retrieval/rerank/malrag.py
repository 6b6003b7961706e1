"""MAL-RAG probability-threshold selection (Zheng, Ni & Hong 2025, arXiv 2501.16952).

MAL-RAG retrieves from one index holding chunks of four abstraction levels (``document``,
``section``, ``paragraph``, ``sentences``; see :mod:`gralc.chunking.multilevel`). At
inference the retrieved candidates' cosine similarities are turned into probabilities with
a softmax, candidates are ranked by probability, and they are accepted until the cumulative
probability reaches ``tau`` (the paper uses ``tau = 0.5``; it reports that the threshold
raises answer correctness by ~2 points at the cost of context recall, 86.1 -> 79.1). The
paper states no temperature, i.e. a plain softmax over the raw cosine similarities:
``temperature = 1.0`` here. Cosine similarities lie in [-1, 1], so at temperature 1 the
probabilities are close to uniform and ``tau = 0.5`` keeps roughly half of the candidate
pool: the number kept depends on how many candidates the searcher returned (the pool is
the softmax's support), so fix that number when comparing runs. A lower temperature
sharpens the distribution and keeps fewer chunks. The paper also caps the retrieved text
(10,000 words): ``max_words``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from gralc.retrieval.hits import Candidate, Hit, as_hits, score_order

#: Abstraction levels from the most general; any other level (``chunk``) ranks below them.
LEVELS = ("document", "section", "paragraph", "sentences")


def softmax_probabilities(scores: Iterable[float], temperature: float = 1.0) -> np.ndarray:
    """``softmax(scores / temperature)`` as a float64 array of shape (n,).

    >>> softmax_probabilities([0.0, 0.0]).tolist()
    [0.5, 0.5]
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    s = np.asarray(list(scores), dtype=np.float64) / temperature
    if s.size == 0:
        return s
    e = np.exp(s - s.max())
    return e / e.sum()


def _level_rank(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else len(LEVELS)


def _contained(hit: Hit, selected: list[Hit]) -> bool:
    """Whether ``hit``'s span lies inside a selected chunk of the same document at the same
    or a more general level."""
    c = hit.chunk
    return any(
        s.chunk.doc_id == c.doc_id
        and s.chunk.char_start <= c.char_start
        and c.char_end <= s.chunk.char_end
        and _level_rank(s.chunk.level) <= _level_rank(c.level)
        for s in selected
    )


def select_by_probability(
    ranked: Iterable[Candidate],
    tau: float = 0.5,
    temperature: float = 1.0,
    max_chunks: int | None = None,
    drop_contained: bool = False,
    max_words: int | None = None,
) -> list[Hit]:
    """Keep the best candidates until their cumulative softmax probability reaches ``tau``.

    ``ranked``: one query's candidates (any levels mixed); they are ordered by score
    descending (ties: doc_id, then chunk_id, descending). The softmax runs over ALL given candidates. A candidate is
    kept when the cumulative probability of the candidates before it is still below ``tau``,
    so the candidate that crosses ``tau`` is kept and at least one candidate always is;
    ``tau >= 1`` keeps everything. ``max_chunks`` / ``max_words`` (whitespace words of
    ``chunk.text``) stop the selection earlier; the first chunk is kept even if longer than
    ``max_words``.

    ``drop_contained`` (default False, the paper keeps every level): skip a candidate whose
    span lies inside an already selected chunk of the same document at the same or a more
    general level (e.g. a paragraph inside a selected section); its text is already in the
    context, so its probability still counts towards ``tau`` but it takes no slot. Only
    earlier (better-scored) containers count: a selected paragraph is not removed when its
    section comes later.

    Returns kept hits in order with the input score and components plus ``probability`` and
    ``cumulative`` (mass up to and including the hit).

    >>> from gralc.chunking.chunk import Chunk
    >>> ranked = [(Chunk("d1", f"c{i}", "x", 0, 1), s) for i, s in enumerate([3.0, 1.0, 0.0])]
    >>> [(h.chunk.chunk_id, round(h.components["cumulative"], 2)) for h in select_by_probability(ranked, tau=0.9)]
    [('c0', 0.84), ('c1', 0.96)]
    """
    if not 0 < tau:
        raise ValueError(f"tau must be > 0 (a cumulative probability), got {tau}")
    if max_chunks is not None and max_chunks < 1:
        raise ValueError(f"max_chunks must be >= 1 or None, got {max_chunks}")
    hits = score_order(as_hits(ranked))
    probs = softmax_probabilities([h.score for h in hits], temperature)
    selected: list[Hit] = []
    cumulative, words = 0.0, 0
    for hit, p in zip(hits, probs):
        if cumulative >= tau - 1e-12:
            break
        if max_chunks is not None and len(selected) >= max_chunks:
            break
        cumulative += float(p)
        if drop_contained and _contained(hit, selected):
            continue
        n_words = len(hit.chunk.text.split())
        if max_words is not None and selected and words + n_words > max_words:
            break
        words += n_words
        hit.components.update(probability=float(p), cumulative=cumulative)
        selected.append(hit)
    return selected
