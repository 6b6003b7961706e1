"""Retrieval metrics: ranking (MRR, Recall@k, nDCG@k), chunk-level set metrics, structure coverage.

Conventions (the PubMedQA* protocol of the paper): a **run** for one query is the retrieved
chunks, best first (a :class:`~gralc.chunking.chunk.Chunk`, a dict with its keys, or a
``(chunk, score)`` pair); a chunk is relevant when ``chunk.doc_id`` is a gold document id,
ranks are CHUNK positions and each gold document counts once. Ties follow trec_eval's rule
(score, then ``doc_id``, then ``chunk_id``, descending: :func:`rank_chunks` /
:func:`rank_docs`). A chunk's section is ``section_ids[0]`` (none when empty); IMRaD types are
the labels of :data:`gralc.documents.model.SECTION_TYPES`. The ranking metrics live in
:mod:`gralc.retrieval.rank_metrics` and are re-exported here.

Report keys: ``mrr``, ``recall@k``, ``ndcg@10``, ``seccov_pairs@k``, ``seccov_doc@k``,
``seccov_doc_frac@k``, ``cross_section_recall@k`` (see :func:`query_metrics`). The
conventions in full: docs/evaluation.md."""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from gralc.documents.model import SECTION_TYPES
from gralc.retrieval.rank_metrics import (  # noqa: F401  (the ranking metrics, re-exported)
    check_k,
    gold_set,
    mrr,
    ndcg_at_k,
    recall_at_k,
    reciprocal_rank,
)
from gralc.retrieval.ranking import rank_chunks  # noqa: F401  (the one tie-break rule)

ChunkLike = Any  # Chunk | dict | (Chunk | dict, score)


# ----- access and ordering ----------------------------------------------------------------
def _get(item: ChunkLike, name: str) -> Any:
    """Field ``name`` of a Chunk, a dict, or the chunk of a ``(chunk, score)`` pair."""
    if isinstance(item, tuple):
        item = item[0]
    if isinstance(item, Mapping):
        return item[name]
    return getattr(item, name)


def doc_ids_of(ranked_chunks: Sequence[ChunkLike]) -> list[str]:
    """``doc_id`` of every retrieved chunk, in run order (repeats kept).

    >>> from gralc.chunking.chunk import Chunk
    >>> doc_ids_of([Chunk("d1", "c0", "x", 0, 1), (Chunk("d1", "c1", "y", 1, 2), 0.3)])
    ['d1', 'd1']
    """
    return [_get(c, "doc_id") for c in ranked_chunks]


def rank_docs(chunk_scores: Iterable[tuple[ChunkLike, float]]) -> list[tuple[str, float]]:
    """Documents ranked by their best chunk: ``[(doc_id, max chunk score)]``.

    Order: score desc, then doc_id desc (the same fixed rule as :func:`rank_chunks`).

    >>> from gralc.chunking.chunk import Chunk
    >>> rank_docs([(Chunk("d1", "c0", "x", 0, 1), 0.2), (Chunk("d1", "c1", "y", 1, 2), 0.7), (Chunk("d2", "c0", "z", 0, 1), 0.5)])
    [('d1', 0.7), ('d2', 0.5)]
    """
    best: dict[str, float] = {}
    for chunk, score in chunk_scores:
        d = _get(chunk, "doc_id")
        best[d] = max(best.get(d, -math.inf), float(score))
    return sorted(sorted(best.items(), reverse=True), key=lambda p: -p[1])


# ----- chunk-level set metrics (Chunk-Link) ------------------------------------------------
def chunk_recall_precision_f1(
    retrieved_chunk_ids: Iterable[str], gold_chunk_ids: Iterable[str]
) -> tuple[float, float, float]:
    """Set-based ``(recall, precision, f1)`` of retrieved chunk ids against gold chunk ids.

    recall = |R ∩ G| / |G|, precision = |R ∩ G| / |R| (0 when nothing is retrieved),
    f1 = 2 p r / (p + r) (0 when p + r = 0); R and G are the distinct id sets.

    >>> chunk_recall_precision_f1(["c1", "c2"], ["c2", "c3", "c4"])
    (0.3333333333333333, 0.5, 0.4)
    """
    retrieved, gold = set(retrieved_chunk_ids), gold_set(gold_chunk_ids)
    hit = len(retrieved & gold)
    recall = hit / len(gold)
    precision = hit / len(retrieved) if retrieved else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return recall, precision, f1


# ----- structure coverage ------------------------------------------------------------------
def _top_section(chunk: ChunkLike) -> str | None:
    """The chunk's top-level section id, or None when it carries no section metadata."""
    ids = _get(chunk, "section_ids")
    return ids[0] if ids else None


def seccov_pairs_at_k(ranked_chunks: Sequence[ChunkLike], k: int) -> int:
    """Number of DISTINCT ``(doc_id, top-level section id)`` pairs among the top-k chunks.

    Chunks without section metadata add nothing (a content-only strategy that stores no
    section scores 0, not 1; reference pitfall 2). Unnormalised; across documents.

    >>> from gralc.chunking.chunk import Chunk
    >>> seccov_pairs_at_k([Chunk("d1", "c0", "x", 0, 1, section_ids=["s1"]), Chunk("d2", "c0", "y", 0, 1, section_ids=["s1"])], k=2)
    2
    """
    check_k(k)
    pairs = {(_get(c, "doc_id"), s) for c in ranked_chunks[:k] if (s := _top_section(c))}
    return len(pairs)


def seccov_doc_at_k(
    ranked_chunks: Sequence[ChunkLike],
    gold_doc_id: str,
    gold_doc_section_ids: Iterable[str],
    k: int,
) -> tuple[int, float]:
    """``(count, fraction)`` of the gold document's top-level sections hit by its top-k chunks.

    count = |{section_ids[0] of top-k chunks whose doc_id == gold_doc_id}| (chunks without
    sections add nothing); fraction = count / |gold_doc_section_ids| (the paper's normalised
    SecCov@k). Raises ``ValueError`` if the gold document has no sections, or if one of its
    chunks names a top-level section that is not in ``gold_doc_section_ids`` (mismatched
    metadata would otherwise be silently undercounted).

    >>> from gralc.chunking.chunk import Chunk
    >>> run = [Chunk("d1", "c0", "x", 0, 1, section_ids=["s1"]), Chunk("d1", "c1", "y", 1, 2, section_ids=["s2"])]
    >>> seccov_doc_at_k(run, "d1", ["s1", "s2", "s3", "s4"], k=2)
    (2, 0.5)
    """
    check_k(k)
    sections = set(gold_doc_section_ids)
    if not sections:
        raise ValueError(f"document {gold_doc_id!r} has no top-level sections: SecCov undefined")
    covered: set[str] = set()
    for c in ranked_chunks[:k]:
        s = _top_section(c)
        if _get(c, "doc_id") != gold_doc_id or s is None:
            continue
        if s not in sections:
            raise ValueError(
                f"chunk {_get(c, 'chunk_id')!r} names section {s!r}, which is not a top-level "
                f"section of {gold_doc_id!r}: pass the ids of doc.sections"
            )
        covered.add(s)
    return len(covered), len(covered) / len(sections)


def _check_types(types: Iterable[str], what: str) -> set[str]:
    types = set(types)
    bad = sorted(types - set(SECTION_TYPES))
    if bad:
        raise ValueError(
            f"{what} {bad} are not canonical IMRaD labels {SECTION_TYPES}; map raw section "
            "titles to labels first (reference pitfall 3)"
        )
    return types


def cross_section_recall_at_k(
    ranked_chunks: Sequence[ChunkLike], gold_doc_id: str, required_types: Iterable[str], k: int
) -> float:
    """1.0 if the top-k chunks OF THE GOLD DOCUMENT cover all ``required_types``, else 0.0.

    Coverage = union of the chunks' ``imrad_types`` (canonical labels). Both sides must be
    canonical labels of :data:`~gralc.documents.model.SECTION_TYPES`, else ``ValueError``.
    The caller averages over questions (CS Recall@k).

    >>> from gralc.chunking.chunk import Chunk
    >>> run = [Chunk("d1", "c0", "x", 0, 1, imrad_types=["methods"]), Chunk("d1", "c1", "y", 1, 2, imrad_types=["results"])]
    >>> cross_section_recall_at_k(run, "d1", ["methods", "results"], k=2), cross_section_recall_at_k(run, "d1", ["methods", "results"], k=1)
    (1.0, 0.0)
    """
    check_k(k)
    required = _check_types(required_types, "required types")
    if not required:
        raise ValueError("required_types is empty: a cross-section question needs its types")
    found: set[str] = set()
    for c in ranked_chunks[:k]:
        if _get(c, "doc_id") == gold_doc_id:
            found |= _check_types(_get(c, "imrad_types"), f"chunk {_get(c, 'chunk_id')!r} types")
    return 1.0 if required <= found else 0.0


# ----- per-query bundle, statistics, aggregation -------------------------------------------
def query_metrics(
    ranked_chunks: Sequence[ChunkLike],
    gold_doc_id: str,
    ks: Sequence[int] = (1, 5, 10),
    gold_doc_section_ids: Iterable[str] | None = None,
    required_types: Iterable[str] | None = None,
    relevance: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """All report metrics of one query, keyed as the reports expect.

    Always ``mrr``, ``ndcg@10``, ``recall@k`` and ``seccov_pairs@k`` for each k; with
    ``gold_doc_section_ids`` also ``seccov_doc@k`` / ``seccov_doc_frac@k``; with
    ``required_types`` also ``cross_section_recall@k``. ``relevance`` (a question judged
    against several documents, :meth:`Question.relevant_docs`): MRR, recall@k and the graded
    nDCG@10 count every one of them; without it ``gold_doc_id`` is the one relevant
    document. The structure metrics always look at ``gold_doc_id``.

    >>> from gralc.chunking.chunk import Chunk
    >>> m = query_metrics([Chunk("d2", "c0", "x", 0, 1), Chunk("d1", "c0", "y", 0, 1)], "d1", ks=(1, 5))
    >>> m["mrr"], m["recall@1"], m["recall@5"]
    (0.5, 0.0, 1.0)
    """
    docs = doc_ids_of(ranked_chunks)
    gold = relevance if relevance else gold_doc_id
    out = {"mrr": reciprocal_rank(docs, gold), "ndcg@10": ndcg_at_k(docs, gold, 10)}
    sections = None if gold_doc_section_ids is None else list(gold_doc_section_ids)
    types = None if required_types is None else set(required_types)
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(docs, gold, k)
        out[f"seccov_pairs@{k}"] = float(seccov_pairs_at_k(ranked_chunks, k))
        if sections is not None:
            count, frac = seccov_doc_at_k(ranked_chunks, gold_doc_id, sections, k)
            out[f"seccov_doc@{k}"], out[f"seccov_doc_frac@{k}"] = float(count), frac
        if types is not None:
            out[f"cross_section_recall@{k}"] = cross_section_recall_at_k(
                ranked_chunks, gold_doc_id, types, k
            )
    return out


def _summary(values: list[float], prefix: str) -> dict[str, float]:
    if not values:
        return {f"{prefix}_{s}": math.nan for s in ("mean", "median", "min", "max")}
    return {
        f"{prefix}_mean": statistics.fmean(values),
        f"{prefix}_median": float(statistics.median(values)),
        f"{prefix}_min": float(min(values)),
        f"{prefix}_max": float(max(values)),
    }


def chunk_statistics(chunks: Sequence[ChunkLike]) -> dict[str, float]:
    """Size statistics: ``n_chunks``, ``n_docs``, ``chars_{mean,median,min,max}`` (len(text)),
    ``tokens_{mean,median,min,max}`` over chunks with a token span (``token_start >= 0``; NaN
    when none has one) and ``n_with_tokens``.

    >>> from gralc.chunking.chunk import Chunk
    >>> chunk_statistics([Chunk("d1", "c0", "abcd", 0, 4, 0, 2), Chunk("d2", "c0", "ab", 0, 2, 0, 1)])["tokens_mean"]
    1.5
    """
    if not chunks:
        raise ValueError("chunk_statistics needs at least one chunk")
    chars = [float(len(_get(c, "text"))) for c in chunks]
    tokens = [
        float(_get(c, "token_end") - _get(c, "token_start"))
        for c in chunks
        if _get(c, "token_start") >= 0
    ]
    return {
        "n_chunks": float(len(chunks)),
        "n_docs": float(len({_get(c, "doc_id") for c in chunks})),
        **_summary(chars, "chars"),
        **_summary(tokens, "tokens"),
        "n_with_tokens": float(len(tokens)),
    }


def aggregate(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Mean of every key over all queries. Every query must carry the same keys (a metric
    averaged over a subset of queries would be silently inflated).

    >>> aggregate([{"mrr": 1.0}, {"mrr": 0.5}])
    {'mrr': 0.75}
    """
    if not per_query:
        raise ValueError("no per-query results to aggregate")
    keys = set(per_query[0])
    for i, row in enumerate(per_query):
        if set(row) != keys:
            raise ValueError(
                f"query {i} has keys {sorted(row)}, query 0 has {sorted(keys)}: compute the "
                "same metrics for every query"
            )
    return {k: statistics.fmean(float(row[k]) for row in per_query) for k in sorted(keys)}


# ----- cross-check against ranx ------------------------------------------------------------
def evaluate_with_ranx(
    runs: Sequence[Sequence[str]],
    golds: Sequence[str | Iterable[str]],
    metrics: Sequence[str] = ("mrr", "recall@5", "ndcg@10"),
) -> dict[str, float]:
    """Our runs scored by ranx's metric kernels (``ranx.evaluate``), for tests.

    ``runs[i]``: query i's doc ids in chunk order (already ranked by our tie-break). ranx
    needs unique ids per query, so a repeated doc id (a later chunk of the same document) is
    given a fresh non-relevant id: exactly our "each document counts once" rule. Scores are
    ``len(run) - position``, so ranx sees our order with no ties; empty runs count 0. Runs and
    qrels are passed as ranx's numeric form (numba typed lists of ``[[id, value], ...]``
    arrays sorted by value desc), because building ``ranx.Run``/``Qrels`` from dicts
    recompiles numba code for every new data set (about a minute on 2 cores).

    Example: ``evaluate_with_ranx([["d2", "d1"]], ["d1"], ["mrr"])`` -> ``{'mrr': 0.5}`` (as
    :func:`~gralc.retrieval.rank_metrics.mrr` computes it).
    """
    import numpy as np
    from numba.typed import List as TypedList
    from ranx import evaluate

    if len(runs) != len(golds):
        raise ValueError(f"{len(runs)} runs but {len(golds)} gold entries: one per query")
    ids: dict[str, int] = {}
    qrels, run = TypedList(), TypedList()
    for ranked, gold in zip(runs, golds):
        qrels.append(np.array([[ids.setdefault(g, len(ids)), 1.0] for g in sorted(gold_set(gold))]))
        seen: set[str] = set()
        rows = []
        for pos, d in enumerate(ranked):
            key = ids.setdefault(d, len(ids)) if d not in seen else -1 - len(rows)  # unique
            seen.add(d)
            rows.append([key, float(len(ranked) - pos)])
        run.append(np.array(rows, dtype=np.float64).reshape(-1, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety warnings inside ranx
        res = evaluate(qrels, run, list(metrics))
    res = res if isinstance(res, dict) else {metrics[0]: res}
    return {m: float(v) for m, v in res.items()}
