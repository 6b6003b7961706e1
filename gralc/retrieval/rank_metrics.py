"""Ranking metrics of one ranked list: reciprocal rank, MRR, Recall@k, nDCG@k.

Below training and evaluation alike, so validation during training (``val/mrr``,
``val/ev_mrr``) and the evaluation reports compute them with the same code. A ranked list
holds one id per retrieved item, best first; an id is whatever is relevant or not (a
document id for the document-level metrics of :mod:`gralc.evaluation.metrics`, a chunk
position for the evidence MRR of validation). Each gold id counts once, at its first
position, so no metric can exceed 1. Gold ids are one id, a collection of ids, or a mapping
id -> graded relevance (> 0, as in TREC/BEIR qrels), which only nDCG weighs (linear gain, as
trec_eval's ``ndcg_cut`` and ranx's ``ndcg`` do). :mod:`gralc.evaluation.metrics` re-exports them with
the conventions of the reports.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence


def gold_set(gold: Hashable | Iterable[Hashable] | Mapping[Hashable, float]) -> set:
    """Gold ids as a set; a single string is ONE id (never iterated character by character);
    a mapping id -> relevance gives its ids (every relevance must be > 0).

    >>> sorted(gold_set("d1")), sorted(gold_set({"d1": 2, "d2": 1}))
    (['d1'], ['d1', 'd2'])
    """
    return set(gold_gains(gold))


def gold_gains(gold: Hashable | Iterable[Hashable] | Mapping[Hashable, float]) -> dict:
    """Gold id -> gain: a mapping's graded relevance, else 1.0 for every id.

    >>> gold_gains({"d1": 2, "d2": 1})
    {'d1': 2.0, 'd2': 1.0}
    >>> gold_gains("d1")
    {'d1': 1.0}
    """
    if isinstance(gold, Mapping):
        gains = {g: float(v) for g, v in gold.items()}
        bad = [g for g, v in gains.items() if not v > 0]
        if bad:
            raise ValueError(f"gold relevance must be > 0 (list only relevant ids), got "
                             f"{ {g: gold[g] for g in bad[:3]} }")  # fmt: skip
    else:
        gains = dict.fromkeys([gold] if isinstance(gold, str) else gold, 1.0)
    if not gains:
        raise ValueError("no gold ids given: a query needs at least one relevant id")
    return gains


def check_k(k: int) -> None:
    """A cut-off ``k`` is a positive number of positions (``ValueError`` otherwise).

    >>> check_k(0)
    Traceback (most recent call last):
    ...
    ValueError: ...
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")


def reciprocal_rank(ranked_doc_ids: Iterable[Hashable], gold_doc_ids: Hashable | Iterable[Hashable]) -> float:
    """1 / (1-based position of the first retrieved chunk whose doc is gold); 0 if none is.
    ``ranked_doc_ids`` may be any iterable (read only up to the first gold id).

    >>> reciprocal_rank(["d2", "d1"], "d1")
    0.5
    """
    golds = gold_set(gold_doc_ids)
    for pos, d in enumerate(ranked_doc_ids, start=1):
        if d in golds:
            return 1.0 / pos
    return 0.0


def mrr(runs: Sequence[Iterable[Hashable]], golds: Sequence[Hashable | Iterable[Hashable]]) -> float:
    """Mean of :func:`reciprocal_rank` over ALL queries (a query with an empty run counts 0).

    ``runs[i]`` is query i's ranked doc-id list (one entry per retrieved chunk), ``golds[i]``
    its gold doc id(s). Averaging over every query, not only those the run answered, follows
    trec_eval / ranx (beir-cellar/beir#102).

    >>> mrr([["d2", "d1"], []], ["d1", "d3"])
    0.25
    """
    if len(runs) != len(golds):
        raise ValueError(f"{len(runs)} runs but {len(golds)} gold entries: one per query")
    if not runs:
        raise ValueError("no queries to average over")
    return sum(reciprocal_rank(r, g) for r, g in zip(runs, golds)) / len(runs)


def recall_at_k(ranked_doc_ids: Sequence[str], gold_doc_ids: str | Iterable[str], k: int) -> float:
    """|gold documents with at least one chunk in the top-k| / |gold documents|.

    Each gold document counts once, however many of its chunks are in the top-k. With one
    gold document (PubMedQA*) this is hit@k: 1.0 if any top-k chunk comes from it, else 0.0.
    Same definition as ranx / trec_eval ``recall@k`` (found / all relevant, not hit-rate).

    >>> recall_at_k(["d2", "d1", "d1"], {"d1", "d4"}, k=2)
    0.5
    """
    check_k(k)
    golds = gold_set(gold_doc_ids)
    return len(golds.intersection(ranked_doc_ids[:k])) / len(golds)


def ndcg_at_k(ranked_doc_ids: Sequence[str], gold_doc_ids: str | Iterable[str] | Mapping[str, float],
              k: int = 10) -> float:
    """nDCG@k with each gold document counted ONCE; binary, or graded when ``gold_doc_ids``
    maps ids to relevance.

    DCG@k = sum over positions i = 1..k of gain_i / log2(i + 1), where gain_i = the gold
    document's relevance (1 for plain ids) if the chunk at i is the FIRST retrieved chunk of a
    gold document, else 0 (later chunks of an already seen gold document gain 0). IDCG@k = the
    DCG of a run listing the gold documents first, most relevant first. nDCG@k = DCG@k /
    IDCG@k, always within [0, 1] (reference pitfall 4: counting every chunk of the gold doc
    gave values above 1). Linear gain, as trec_eval's ``ndcg_cut`` and ranx's ``ndcg``.

    >>> round(ndcg_at_k(["d9", "d1"], {"d1": 2, "d2": 1}, 10), 4)
    0.4796
    """
    check_k(k)
    gains = gold_gains(gold_doc_ids)
    seen: set[str] = set()
    dcg = 0.0
    for pos, d in enumerate(ranked_doc_ids[:k], start=1):
        if d in gains and d not in seen:
            seen.add(d)
            dcg += gains[d] / math.log2(pos + 1)
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 1) for i, g in enumerate(ideal, start=1))
    return dcg / idcg
