"""Sentence evidence in a chunk's score (MaxP-style passage scoring inside a chunk).

A question's answer usually sits in one sentence; a chunk holding it is scored, besides by
its own vector, by its best-matching sentence group: the same model scores every group of
``k`` consecutive sentences of a paragraph (a *unit*, pooled from the same enriched token
vectors H' as the chunks, with its own BM25 for the lexical term), and a chunk's score
becomes ``(1 - w) * score(chunk) + w * max score(unit overlapping the chunk)`` (a chunk no
unit overlaps, e.g. a lone title, keeps its own score). Retrieval still returns chunks, so the
retrieved-text budget is the chunks'. ``w`` (``model.sentence_evidence``) is chosen by
cross-validation, not learned; training with it set scores chunks this way too (gradient
reaches the best unit's tokens through the max).
(Passage-level evidence for document ranking: Dai & Callan, SIGIR 2019, "MaxP".)
"""

from __future__ import annotations

import torch

from gralc.documents.model import Document
from gralc.knowledge.mention import token_span

Spans = list[tuple[int, int]]


def sentence_unit_spans(doc: Document, offsets: torch.Tensor, k: int) -> Spans:
    """Token spans ``[start, end)`` of every group of ``k`` consecutive sentences inside a
    paragraph of ``doc`` (a paragraph without sentences is one unit), given the tokens' char
    ``offsets`` (N, 2); groups with no token are left out.

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\nIt took 8 weeks. It helped.", "d1")
    >>> sentence_unit_spans(doc, torch.tensor([[0, 1], [3, 5], [6, 10], [11, 19], [20, 22], [23, 30]]), k=1)
    [(1, 4), (4, 6)]
    """
    if k < 1:
        raise ValueError(f"sentences per unit must be >= 1, got {k}")
    spans: Spans = []
    for par in doc.paragraphs:
        sents = par.sentences
        chars = [(g[0].start, g[-1].end) for g in (sents[i : i + k] for i in range(0, len(sents), k))]
        for start, end in chars or [(par.start, par.end)]:
            ts, te = token_span(offsets, start, end)
            if te > ts:
                spans.append((ts, te))
    return spans


def overlap_pairs(chunk_spans: Spans, unit_spans: Spans) -> torch.Tensor:
    """(2, P) int64 rows ``(chunk index, unit index)`` of every chunk and unit sharing a token
    (one document's spans, both sorted by start).

    >>> overlap_pairs([(0, 5), (5, 9)], [(0, 3), (3, 7), (7, 9)]).tolist()
    [[0, 0, 1, 1], [0, 1, 1, 2]]
    """
    pairs: list[tuple[int, int]] = []
    j0 = 0
    for i, (cs, ce) in enumerate(chunk_spans):
        while j0 < len(unit_spans) and unit_spans[j0][1] <= cs:
            j0 += 1
        j = j0
        while j < len(unit_spans) and unit_spans[j][0] < ce:
            if unit_spans[j][1] > cs:
                pairs.append((i, j))
            j += 1
    if not pairs:
        return torch.zeros(2, 0, dtype=torch.long)
    return torch.tensor(pairs, dtype=torch.long).T.contiguous()


def best_unit_scores(unit_scores: torch.Tensor, pairs: torch.Tensor,
                     chunk_scores: torch.Tensor) -> torch.Tensor:
    """(Q, K): per chunk the best score (Q, U) of the units overlapping it (``pairs`` (2, P)
    rows chunk, unit); a chunk without units gets its own score from ``chunk_scores`` (Q, K).

    >>> best_unit_scores(torch.tensor([[0.2, 0.9]]), torch.tensor([[0, 0], [0, 1]]), torch.tensor([[0.5, 0.3]]))
    tensor([[0.9000, 0.3000]])
    """
    q, k = chunk_scores.shape
    out = torch.full((q, k), float("-inf"), dtype=unit_scores.dtype, device=unit_scores.device)
    if pairs.shape[1]:
        src = unit_scores[:, pairs[1]]
        out = out.scatter_reduce(1, pairs[0].expand(q, -1), src, reduce="amax", include_self=True)
    return torch.where(torch.isinf(out), chunk_scores.to(out.dtype), out)


def with_sentence_evidence(chunk_scores: torch.Tensor, unit_scores: torch.Tensor,
                           pairs: torch.Tensor, weight: float) -> torch.Tensor:
    """``(1 - weight) * chunk_scores + weight * best_unit_scores(...)``, (Q, K).

    >>> with_sentence_evidence(torch.tensor([[0.4]]), torch.tensor([[0.8]]), torch.tensor([[0], [0]]), 0.5)
    tensor([[0.6000]])
    """
    best = best_unit_scores(unit_scores, pairs, chunk_scores)
    return (1.0 - weight) * chunk_scores + weight * best


__all__ = ["best_unit_scores", "overlap_pairs", "sentence_unit_spans", "with_sentence_evidence"]
