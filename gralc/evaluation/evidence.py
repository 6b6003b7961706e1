"""Evidence-level retrieval metrics: does a retrieved chunk hold the answer?

**Evidence** of a question is a list of character spans ``[start, end)`` in its gold
document's ``Document.text``: the answer spans (SQuAD-format benchmarks such as COVID-QA),
the gold paragraphs (PMC template questions, the demo questions) or the whole gold abstract
(PubMedQA*). :func:`resolve_evidence` finds them.

**Hit rule.** A retrieved chunk (or a retrieved piece of one) *hits* an evidence span when
both are in the same document and their overlap covers at least ``min_coverage`` (default
0.5) of the SHORTER of the two, in characters.

Per question: ``ev_mrr``, ``ev_recall@k``, ``ev_ndcg@10``, the budgeted ``ev_recall@Bwp`` /
``ev_precision@Bwp`` / ``ev_iou@Bwp`` (the top chunks' text cut at B word-pieces) and the
within-article ``wa_ndcg@10``; averages run over the questions that have evidence
(``n_evidence_questions``). Definitions and formulas: docs/evaluation.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

# the one budget counter (MiniLM word-pieces), named here too: the budgeted metrics count with it
from gralc.encoding.budget import PieceCounter as PieceCounter
from gralc.encoding.budget import budget_counter as budget_counter

Span = tuple[int, int]
#: ``piece_ends(chunk)``: the end offset of each word-piece of ``chunk.text``, relative to it
PieceEnds = Callable[[Any], Sequence[int]]

BUDGETS = (128, 256, 512, 1024, 2048)


def _chunk(item: Any) -> Any:
    if isinstance(item, tuple):
        return item[0]
    return getattr(item, "chunk", item)


def overlap(a: Span, b: Span) -> int:
    """Characters shared by two half-open spans.

    >>> overlap((0, 10), (5, 20)), overlap((0, 5), (5, 9))
    (5, 0)
    """
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


def span_hits(piece: Span, evidence: Span, min_coverage: float = 0.5) -> bool:
    """The hit rule: overlap >= ``min_coverage`` x the shorter span's length (and > 0).

    >>> span_hits((0, 100), (90, 110)), span_hits((0, 100), (95, 105), min_coverage=0.5)
    (True, True)
    """
    shorter = min(piece[1] - piece[0], evidence[1] - evidence[0])
    if shorter <= 0:
        return False
    ov = overlap(piece, evidence)
    return ov > 0 and ov >= min_coverage * shorter


def resolve_evidence(question: Any, doc: Any) -> list[Span]:
    """The question's evidence spans in ``doc.text``: its ``evidence_spans`` when set, else
    the spans of its ``gold_paragraph_ids`` present in ``doc``; [] when it has neither.

    >>> from gralc.documents.plaintext import document_from_text
    >>> from gralc.documents.question import Question
    >>> doc = document_from_text("# T\\n\\nIt took 8 weeks.", "d1")
    >>> resolve_evidence(Question("q1", "How long?", "d1", gold_paragraph_ids=["p0001"]), doc)
    [(3, 19)]
    """
    if question.evidence_spans:
        return [(int(s), int(e)) for s, e in question.evidence_spans]
    wanted = set(question.gold_paragraph_ids)
    return [(p.start, p.end) for p in doc.paragraphs if p.id in wanted]


def _hit_set(spans: Iterable[Span], evidence: Sequence[Span], min_coverage: float) -> set[int]:
    return {j for s in spans for j, ev in enumerate(evidence) if span_hits(s, ev, min_coverage)}


def hit_spans(chunk: Any, gold_doc_id: str, evidence: Sequence[Span], min_coverage: float = 0.5) -> set[int]:
    """Indices of the ``evidence`` spans (in ``gold_doc_id``'s text) that ``chunk`` (a chunk,
    a ``(chunk, score)`` pair or a Hit) hits by the hit rule; none for another document's
    chunk. The one test behind every evidence metric and the evidence qrels
    (:func:`gralc.evaluation.trec.evidence_qrels`).

    >>> from gralc.chunking.chunk import Chunk
    >>> hit_spans(Chunk("d1", "d1::0", "", 0, 100), "d1", [(10, 50), (90, 300), (120, 130)])
    {0}
    """
    c = _chunk(chunk)
    if c.doc_id != gold_doc_id:
        return set()
    return _hit_set([(c.char_start, c.char_end)], evidence, min_coverage)


def _union_length(spans: Iterable[Span]) -> int:
    total, end = 0, -1
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def _intersection_length(a: Sequence[Span], b: Sequence[Span]) -> int:
    """Characters in (union of a) ∩ (union of b)."""
    return _union_length(a) + _union_length(b) - _union_length([*a, *b])


def budget_pieces(run: Sequence[Any], budget: int, piece_ends: PieceEnds) -> list[tuple[str, Span]]:
    """``(doc_id, span)`` of the text taken from ``run`` within ``budget`` word-pieces.

    >>> from gralc.chunking.chunk import Chunk
    >>> ends = lambda chunk: list(range(chunk.char_start + 5, chunk.char_end + 1, 5))  # a piece per 5 characters
    >>> budget_pieces([Chunk("d1", "c0", "x" * 20, 0, 20)], 2, ends)
    [('d1', (0, 10))]
    """
    taken, used = [], 0
    for item in run:
        if used >= budget:
            break
        c = _chunk(item)
        ends = piece_ends(c)
        if not ends:
            continue
        if used + len(ends) <= budget:
            taken.append((c.doc_id, (c.char_start, c.char_end)))
            used += len(ends)
        else:
            cut = ends[budget - used - 1]
            taken.append((c.doc_id, (c.char_start, c.char_start + cut)))
            used = budget
    return taken


def ev_ndcg(run: Sequence[Any], gold_doc_id: str, evidence: Sequence[Span], k: int = 10,
            min_coverage: float = 0.5) -> float:
    """Evidence nDCG@k (module docstring); 0 when there is no evidence.

    >>> from gralc.chunking.chunk import Chunk
    >>> run = [Chunk("d1", "c0", "x", 0, 50), Chunk("d1", "c1", "y", 50, 100)]
    >>> round(ev_ndcg(run, "d1", [(60, 90)], k=10), 4)
    0.6309
    """
    if not evidence:
        return 0.0
    seen: set[int] = set()
    dcg = 0.0
    for pos, item in enumerate(run[:k], start=1):
        new = hit_spans(item, gold_doc_id, evidence, min_coverage) - seen
        if new:
            seen |= new
            dcg += 1.0 / math.log2(pos + 1)
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(k, len(evidence)) + 1))
    return dcg / idcg


def evidence_metrics(
    run: Sequence[Any],
    gold_doc_id: str,
    evidence: Sequence[Span],
    ks: Sequence[int] = (1, 5, 20),
    budgets: Sequence[int] = BUDGETS,
    piece_ends: PieceEnds | None = None,
    within_article: Sequence[Any] | None = None,
    min_coverage: float = 0.5,
) -> dict[str, float]:
    """Every evidence metric of one question (module docstring). ``run``: retrieved chunks
    (or ``(chunk, score)`` pairs / Hits) best first; ``piece_ends`` is needed for the
    budgeted metrics; ``within_article``: the gold document's chunks in ranked order.

    >>> from gralc.chunking.chunk import Chunk
    >>> m = evidence_metrics([Chunk("d1", "c0", "x", 0, 50), Chunk("d1", "c1", "y", 50, 100)], "d1", [(60, 90)], ks=(1, 5))
    >>> m["ev_recall@1"], m["ev_recall@5"], m["ev_mrr"]
    (0.0, 1.0, 0.5)
    """
    if not evidence:
        raise ValueError(f"question on {gold_doc_id!r} has no evidence spans")
    n = len(evidence)
    chunks = [_chunk(item) for item in run]
    first_hit = [hit_spans(c, gold_doc_id, evidence, min_coverage) for c in chunks]
    out: dict[str, float] = {"ev_mrr": 0.0}
    for pos, hit in enumerate(first_hit, start=1):
        if hit:
            out["ev_mrr"] = 1.0 / pos
            break
    for k in ks:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        out[f"ev_recall@{k}"] = len(set().union(*first_hit[:k])) / n
    out["ev_ndcg@10"] = ev_ndcg(chunks, gold_doc_id, evidence, 10, min_coverage)
    if piece_ends is not None:
        ev_len = _union_length(evidence)
        for b in budgets:
            taken = budget_pieces(chunks, b, piece_ends)
            gold = [s for d, s in taken if d == gold_doc_id]
            out[f"ev_recall@{b}wp"] = len(_hit_set(gold, evidence, min_coverage)) / n
            by_doc: dict[str, list[Span]] = {}
            for d, s in taken:
                by_doc.setdefault(d, []).append(s)
            retrieved = sum(_union_length(v) for v in by_doc.values())
            inter = _intersection_length(gold, evidence)
            out[f"ev_precision@{b}wp"] = inter / retrieved if retrieved else 0.0
            out[f"ev_iou@{b}wp"] = inter / (retrieved + ev_len - inter)
    if within_article is not None:
        out["wa_ndcg@10"] = ev_ndcg(within_article, gold_doc_id, evidence, 10, min_coverage)
    return out
