"""Evidence-level metrics on hand-computed cases (gralc.evaluation.evidence)."""

from __future__ import annotations

import math

import pytest

from gralc.chunking.chunk import Chunk
from gralc.documents.model import Document, Paragraph
from gralc.documents.question import Question
from gralc.evaluation.evidence import (
    budget_pieces,
    ev_ndcg,
    evidence_metrics,
    resolve_evidence,
    span_hits,
)


def ch(doc: str, cid: str, s: int, e: int) -> Chunk:
    return Chunk(doc, cid, "x" * (e - s), s, e)


def pieces_of_10(chunk: Chunk) -> list[int]:
    """A word-piece every 10 characters (ends relative to the chunk text)."""
    n = len(chunk.text)
    return [min(n, i) for i in range(10, n + 10, 10)]


def test_hit_rule_uses_the_shorter_span():
    assert span_hits((0, 1000), (100, 140))  # a short answer inside a long chunk
    assert span_hits((100, 200), (0, 3000))  # a chunk inside a long gold paragraph
    assert span_hits((0, 120), (100, 140))  # 20 of 40 answer chars = exactly half
    assert not span_hits((0, 119), (100, 140))  # 19 of 40: below half
    assert span_hits((0, 119), (100, 140), min_coverage=0.4)  # the rule is a parameter
    assert not span_hits((0, 100), (100, 140))  # touching is no overlap
    assert not span_hits((5, 5), (0, 10))  # empty spans never hit


def test_ranking_metrics_by_hand():
    evidence = [(100, 140), (500, 520)]
    run = [ch("other", "o0", 100, 140),  # right offsets, wrong document
           ch("d", "c0", 0, 50),  # misses
           ch("d", "c1", 90, 200),  # hits evidence 0
           ch("d", "c2", 95, 150),  # hits evidence 0 again: no new gain
           ch("d", "c3", 505, 600)]  # hits evidence 1 (15 of 20 chars)
    m = evidence_metrics(run, "d", evidence, ks=(1, 3, 5))
    assert m["ev_mrr"] == pytest.approx(1 / 3)
    assert m["ev_recall@1"] == 0.0
    assert m["ev_recall@3"] == 0.5
    assert m["ev_recall@5"] == 1.0
    dcg = 1 / math.log2(4) + 1 / math.log2(6)
    idcg = 1 / math.log2(2) + 1 / math.log2(3)
    assert m["ev_ndcg@10"] == pytest.approx(dcg / idcg)
    assert "ev_recall@512wp" not in m  # no word-piece counter: no budgets


def test_ndcg_is_at_most_one_and_zero_without_hits():
    ev = [(0, 10)]
    run = [ch("d", f"c{i}", 0, 10) for i in range(5)]  # every chunk hits the same span
    assert ev_ndcg(run, "d", ev) == pytest.approx(1.0)
    assert ev_ndcg([ch("d", "c", 50, 60)], "d", ev) == 0.0


def test_budget_cuts_the_last_chunk_at_a_word_piece():
    run = [ch("d", "a", 0, 100), ch("e", "b", 0, 100), ch("d", "c", 200, 300)]
    # 10 + 10 pieces fill 20; a budget of 25 takes 5 pieces (50 chars) of the third chunk
    assert budget_pieces(run, 25, pieces_of_10) == [("d", (0, 100)), ("e", (0, 100)), ("d", (200, 250))]
    assert budget_pieces(run, 5, pieces_of_10) == [("d", (0, 50))]


def test_budgeted_recall_precision_iou_by_hand():
    evidence = [(240, 260), (0, 20)]
    run = [ch("d", "a", 0, 100), ch("e", "b", 0, 100), ch("d", "c", 200, 300)]
    m = evidence_metrics(run, "d", evidence, ks=(1,), budgets=(10, 25), piece_ends=pieces_of_10)
    # budget 10: chunk a only; it holds evidence 1 (0-20): recall 1/2
    assert m["ev_recall@10wp"] == 0.5
    assert m["ev_precision@10wp"] == pytest.approx(20 / 100)
    assert m["ev_iou@10wp"] == pytest.approx(20 / (100 + 40 - 20))
    # budget 25: a, b (other document), c cut at 250 -> evidence 0 covered 10 of 20 = half: hit
    assert m["ev_recall@25wp"] == 1.0
    retrieved = 100 + 100 + 50
    inter = 20 + 10
    assert m["ev_precision@25wp"] == pytest.approx(inter / retrieved)
    assert m["ev_iou@25wp"] == pytest.approx(inter / (retrieved + 40 - inter))


def test_overlapping_retrieved_text_counts_once_in_precision():
    run = [ch("d", "a", 0, 100), ch("d", "b", 50, 150)]
    m = evidence_metrics(run, "d", [(0, 150)], ks=(1,), budgets=(100,), piece_ends=pieces_of_10)
    assert m["ev_precision@100wp"] == 1.0
    assert m["ev_iou@100wp"] == 1.0


def test_within_article_ndcg():
    m = evidence_metrics([ch("x", "z", 0, 5)], "d", [(0, 10)], ks=(1,),
                         within_article=[ch("d", "b", 50, 60), ch("d", "a", 0, 10)])
    assert m["ev_mrr"] == 0.0
    assert m["wa_ndcg@10"] == pytest.approx(1 / math.log2(3))


def test_resolve_evidence_prefers_spans_then_paragraphs():
    doc = Document("d", "aaaa\n\nbbbb", paragraphs=[Paragraph("p1", 0, 4, None), Paragraph("p2", 6, 10, None)])
    assert resolve_evidence(Question("q", "?", "d", evidence_spans=[[1, 3]]), doc) == [(1, 3)]
    assert resolve_evidence(Question("q", "?", "d", gold_paragraph_ids=["p2", "gone"]), doc) == [(6, 10)]
    assert resolve_evidence(Question("q", "?", "d"), doc) == []
    with pytest.raises(ValueError, match="no evidence"):
        evidence_metrics([], "d", [])


def test_budgets_are_counted_in_minilm_word_pieces_whatever_the_encoder():
    """ev_recall@Nwp counts one fixed unit, all-MiniLM-L6-v2's word-pieces: the same counts
    for a MiniLM pipeline (its own tokenizer, reused) and for any other encoder."""
    from types import SimpleNamespace

    from transformers import AutoTokenizer

    from gralc.encoding.models import DEFAULT_MODEL_ID, default_model_path
    from gralc.evaluation.evidence import budget_counter

    minilm = AutoTokenizer.from_pretrained(default_model_path())
    other = SimpleNamespace(model_id="some/other-encoder", tokenizer=None)  # never asked
    own = SimpleNamespace(model_id=DEFAULT_MODEL_ID, tokenizer=minilm)
    chunk = SimpleNamespace(doc_id="d", chunk_id=0, char_start=0, char_end=44,
                            text="Remdesivir inhibits SARS-CoV-2 RNA polymerase.")
    assert budget_counter(own).tokenizer is minilm
    assert budget_counter(other)(chunk) == budget_counter(own)(chunk)
    assert len(budget_counter(other)(chunk)) > 5
