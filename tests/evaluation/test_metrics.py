"""Retrieval metrics: hand-computed values, ranx equality on tie-heavy runs, pitfalls 2-4."""

from __future__ import annotations

import math
import random

import pytest

from gralc.chunking.chunk import Chunk
from gralc.evaluation.metrics import (
    aggregate,
    chunk_recall_precision_f1,
    chunk_statistics,
    cross_section_recall_at_k,
    doc_ids_of,
    evaluate_with_ranx,
    mrr,
    ndcg_at_k,
    query_metrics,
    rank_chunks,
    rank_docs,
    recall_at_k,
    reciprocal_rank,
    seccov_doc_at_k,
    seccov_pairs_at_k,
)


def chunk(doc: str, i: int, sections: list[str] | None = None, types: list[str] | None = None,
          text: str = "", tokens: tuple[int, int] = (-1, -1)) -> Chunk:
    return Chunk(doc_id=doc, chunk_id=f"{doc}::{i}", text=text, char_start=0,
                 char_end=len(text), token_start=tokens[0], token_end=tokens[1],
                 section_ids=sections or [], imrad_types=types or [])


# ----- ranking metrics -----------------------------------------------------------------------
def test_reciprocal_rank_and_mrr_by_hand() -> None:
    # gold B first appears at chunk position 3 -> 1/3
    assert reciprocal_rank(["A", "A", "B", "B"], "B") == pytest.approx(1 / 3)
    assert reciprocal_rank(["A", "C"], "B") == 0.0
    # a single string is ONE id, not the set of its characters
    assert reciprocal_rank(["B"], "AB") == 0.0
    # MRR over ALL queries: (1/3 + 1 + 0 [empty run]) / 3 = 4/9
    assert mrr([["A", "A", "B"], ["B"], []], ["B", "B", "B"]) == pytest.approx(4 / 9)
    with pytest.raises(ValueError):
        mrr([["A"]], ["A", "B"])


def test_recall_at_k_counts_documents_once() -> None:
    run = ["A", "A", "A", "B", "C"]
    # one gold doc: hit@k
    assert recall_at_k(run, "B", 3) == 0.0 and recall_at_k(run, "B", 4) == 1.0
    # gold {A, C, D}: top-5 holds A and C -> 2/3 (three A chunks still count once)
    assert recall_at_k(run, {"A", "C", "D"}, 5) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        recall_at_k(run, "A", 0)


def test_ndcg_by_hand_and_bounded() -> None:
    # gold B at position 2: DCG = 1/log2(3); IDCG (1 gold) = 1/log2(2) = 1 -> 0.6309
    assert ndcg_at_k(["A", "B"], "B", 10) == pytest.approx(1 / math.log2(3))
    # gold {A, C}: A at 1 gains 1, A at 2 gains 0, C at 3 gains 1/log2(4) = 0.5
    # DCG = 1.5; IDCG = 1 + 1/log2(3) = 1.6309 -> 0.9197
    assert ndcg_at_k(["A", "A", "C"], {"A", "C"}, 10) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    # pitfall 4: ten chunks of the single gold doc must give exactly 1, not sum 1/log2(i+1)
    assert ndcg_at_k(["G"] * 10, "G", 10) == pytest.approx(1.0)
    # cut-off: gold at 11 is outside the top-10
    assert ndcg_at_k(["X"] * 10 + ["G"], "G", 10) == 0.0


def test_graded_relevance_weighs_ndcg_only() -> None:
    """A question judged against several documents (BEIR qrels): MRR and recall@k count every
    relevant document, nDCG weighs them by relevance (linear gain, trec_eval's ndcg_cut)."""
    gold = {"A": 2, "C": 1}
    # A (2) at 2 -> 2/log2(3); C (1) at 3 -> 1/2; ideal: A at 1 (2), C at 2 (1/log2(3))
    ideal = 2 + 1 / math.log2(3)
    assert ndcg_at_k(["X", "A", "C"], gold, 10) == pytest.approx((2 / math.log2(3) + 0.5) / ideal)
    assert ndcg_at_k(["A", "C"], {"A": 1, "C": 1}, 10) == ndcg_at_k(["A", "C"], {"A", "C"}, 10)
    row = query_metrics([chunk("X", 0), chunk("C", 0)], "A", (1, 5), relevance=gold)
    assert row["mrr"] == 0.5 and row["recall@5"] == 0.5 and row["recall@1"] == 0.0
    assert row["ndcg@10"] == pytest.approx((1 / math.log2(3)) / ideal)
    with pytest.raises(ValueError, match="> 0"):
        ndcg_at_k(["A"], {"A": 1, "B": 0}, 10)


def test_tie_break_is_score_then_ids_descending() -> None:
    a, b, c = chunk("d1", 0), chunk("d2", 0), chunk("d2", 1)
    ranked = rank_chunks([(a, 0.5), (b, 0.5), (c, 0.5), (chunk("d0", 0), 0.9)])
    # 0.9 first; among the 0.5 ties: doc d2 > d1, then chunk d2::1 > d2::0
    assert [p[0].chunk_id for p in ranked] == ["d0::0", "d2::1", "d2::0", "d1::0"]
    # same result whatever the input order
    assert rank_chunks(reversed(ranked)) == ranked
    # documents by best chunk: d0 0.9, then d2 and d1 tied at 0.5 -> d2 first (id desc)
    assert rank_docs([(a, 0.5), (b, 0.5), (c, 0.1), (chunk("d0", 3), 0.9)]) == [
        ("d0", 0.9), ("d2", 0.5), ("d1", 0.5)
    ]


def test_matches_ranx_on_tie_heavy_runs() -> None:
    rng = random.Random(0)
    runs, golds = [], []
    for _ in range(100):
        # 20-40 chunks from 12 docs, scores on a coarse grid -> many exact ties
        pairs = [(chunk(f"d{rng.randrange(12):02d}", i), rng.choice([0.1, 0.2, 0.3, 0.5]))
                 for i in range(rng.randrange(20, 41))]
        runs.append(doc_ids_of(rank_chunks(pairs)))
        golds.append({f"d{rng.randrange(14):02d}" for _ in range(rng.randrange(1, 4))})
    runs[7] = []  # an empty run counts 0 for both
    ours = {
        "mrr": mrr(runs, golds),
        "recall@5": sum(recall_at_k(r, g, 5) for r, g in zip(runs, golds)) / len(runs),
        "ndcg@10": sum(ndcg_at_k(r, g, 10) for r, g in zip(runs, golds)) / len(runs),
    }
    theirs = evaluate_with_ranx(runs, golds, ["mrr", "recall@5", "ndcg@10"])
    assert ours == pytest.approx(theirs, abs=1e-12)
    assert 0 < ours["mrr"] < 1 and 0 < ours["ndcg@10"] <= 1


# ----- chunk-level set metrics -------------------------------------------------------------
def test_chunk_recall_precision_f1_by_hand() -> None:
    # Chunk-Link's example: 5 retrieved, 1 of 2 gold -> r 0.5, p 0.2, f1 = 0.2/0.7
    r, p, f = chunk_recall_precision_f1(["a", "b", "c", "d", "e"], ["a", "z"])
    assert (r, p) == (0.5, 0.2) and f == pytest.approx(2 * 0.5 * 0.2 / 0.7)
    assert chunk_recall_precision_f1([], ["a"]) == (0.0, 0.0, 0.0)


# ----- section coverage (pitfall 2) ------------------------------------------------------------
def test_seccov_pairs_counts_distinct_doc_section_pairs() -> None:
    run = [chunk("A", 0, ["s1", "s1.2"]), chunk("A", 1, ["s1"]), chunk("A", 2, ["s2"]),
           chunk("B", 0, ["s1"]), chunk("C", 0, [])]
    # (A,s1), (A,s2), (B,s1) -> 3; C has no section and adds nothing
    assert seccov_pairs_at_k(run, 5) == 3
    assert seccov_pairs_at_k(run, 2) == 1


def test_seccov_never_rewards_missing_section_metadata() -> None:
    blind = [chunk("A", i) for i in range(5)]  # a content-only strategy storing no sections
    assert seccov_pairs_at_k(blind, 5) == 0
    assert seccov_doc_at_k(blind, "A", ["s1", "s2", "s3"], 5) == (0, 0.0)


def test_seccov_doc_by_hand() -> None:
    run = [chunk("A", 0, ["s1"]), chunk("B", 0, ["t9"]), chunk("A", 1, ["s3", "s3.1"]),
           chunk("A", 2, ["s1"])]
    # gold A has 4 top-level sections; its top-3 chunks cover s1, s3 -> (2, 0.5)
    assert seccov_doc_at_k(run, "A", ["s1", "s2", "s3", "s4"], 3) == (2, 0.5)
    assert seccov_doc_at_k(run, "A", ["s1", "s2", "s3", "s4"], 1) == (1, 0.25)
    with pytest.raises(ValueError, match="not a top-level section"):
        seccov_doc_at_k(run, "A", ["s1"], 3)
    with pytest.raises(ValueError, match="no top-level sections"):
        seccov_doc_at_k(run, "A", [], 3)


# ----- cross-section recall (pitfall 3) --------------------------------------------------------
def test_cross_section_recall_by_hand() -> None:
    run = [chunk("A", 0, types=["methods"]), chunk("B", 0, types=["results"]),
           chunk("A", 1, types=["results", "discussion"])]
    assert cross_section_recall_at_k(run, "A", {"methods", "results"}, 3) == 1.0
    # top-2: only A's methods chunk (B's results chunk is another document) -> 0
    assert cross_section_recall_at_k(run, "A", {"methods", "results"}, 2) == 0.0


def test_cross_section_recall_raises_on_raw_titles() -> None:
    run = [chunk("A", 0, types=["methods"])]
    with pytest.raises(ValueError, match="canonical IMRaD"):
        cross_section_recall_at_k(run, "A", {"2.3 Statistical analysis", "results"}, 5)
    raw = [chunk("A", 0, types=["Materials and Methods"])]
    with pytest.raises(ValueError, match="canonical IMRaD"):
        cross_section_recall_at_k(raw, "A", {"methods"}, 5)


# ----- bundle, statistics, aggregation ----------------------------------------------------------
def test_query_metrics_keys_and_values() -> None:
    run = [chunk("B", 0, ["t1"], ["introduction"]), chunk("A", 0, ["s1"], ["methods"]),
           chunk("A", 1, ["s2"], ["results"])]
    m = query_metrics(run, "A", ks=(1, 3), gold_doc_section_ids=["s1", "s2", "s3"],
                      required_types={"methods", "results"})
    assert m["mrr"] == 0.5 and m["recall@1"] == 0.0 and m["recall@3"] == 1.0
    assert m["ndcg@10"] == pytest.approx(1 / math.log2(3))
    assert m["seccov_pairs@3"] == 3 and m["seccov_doc@3"] == 2
    assert m["seccov_doc_frac@3"] == pytest.approx(2 / 3)
    assert m["cross_section_recall@1"] == 0.0 and m["cross_section_recall@3"] == 1.0


def test_chunk_statistics_by_hand() -> None:
    cs = [chunk("A", 0, text="abcd", tokens=(0, 2)), chunk("A", 1, text="ab", tokens=(2, 8)),
          chunk("B", 0, text="abcdefghi")]
    s = chunk_statistics(cs)
    # chars 4, 2, 9 -> mean 5, median 4; tokens only for the two spanned chunks: 2, 6
    assert (s["n_chunks"], s["n_docs"], s["chars_mean"], s["chars_median"]) == (3, 2, 5, 4)
    assert (s["chars_min"], s["chars_max"], s["tokens_mean"], s["n_with_tokens"]) == (2, 9, 4, 2)


def test_aggregate_means_and_rejects_missing_keys() -> None:
    assert aggregate([{"mrr": 1.0, "recall@5": 1.0}, {"mrr": 0.5, "recall@5": 0.0}]) == {
        "mrr": 0.75, "recall@5": 0.5
    }
    with pytest.raises(ValueError, match="same metrics"):
        aggregate([{"mrr": 1.0}, {"mrr": 1.0, "recall@5": 1.0}])
