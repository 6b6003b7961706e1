"""MAL-RAG cumulative softmax-probability selection on hand-computed numbers."""

from __future__ import annotations

import pytest
from _retrieval_fixtures import build_document, paragraph_chunks

from gralc.chunking.base import PreparedDocument, make_chunk
from gralc.retrieval.hits import Hit
from gralc.retrieval.rerank.malrag import select_by_probability, softmax_probabilities


@pytest.fixture
def multilevel():
    """A document, one chunk per level: document, 2 sections, 3 paragraphs."""
    doc = build_document(
        "m1",
        [("Methods", ["Mice were fed.", "Cells were counted."]), ("Results", ["Weight rose."])],
    )
    prepared = PreparedDocument(doc)
    paras = paragraph_chunks(doc, level="paragraph")
    secs = [
        make_chunk(prepared, "ml", i, s.start, s.end, level="section")
        for i, s in enumerate(doc.sections)
    ]
    whole = make_chunk(prepared, "ml", 0, 0, len(doc.text), level="document")
    return whole, secs, paras


def test_softmax_matches_hand_computation():
    # exp(2), exp(1), exp(0) = 7.389056, 2.718282, 1 ; sum 11.107338
    assert softmax_probabilities([2.0, 1.0, 0.0]) == pytest.approx(
        [0.665241, 0.244728, 0.090031], abs=1e-6
    )
    # temperature 0.5 doubles the logits: exp(4), exp(2), 1 -> sum 62.987206
    assert softmax_probabilities([2.0, 1.0, 0.0], 0.5) == pytest.approx(
        [0.866813, 0.117310, 0.015876], abs=1e-6
    )


@pytest.mark.parametrize(("tau", "n_kept"), [(0.5, 1), (0.665, 1), (0.7, 2), (0.95, 3), (1.0, 3)])
def test_cumulative_cut(multilevel, tau, n_kept):
    _, _, (a, b, c) = multilevel
    kept = select_by_probability([(a, 2.0), (b, 1.0), (c, 0.0)], tau=tau)
    assert [h.chunk for h in kept] == [a, b, c][:n_kept]
    assert kept[-1].components["cumulative"] == pytest.approx(
        [0.665241, 0.909969, 1.0][n_kept - 1], abs=1e-6
    )


def test_cosine_scores_are_nearly_uniform_at_temperature_one(multilevel):
    whole, (s1, s2), (p1, _, _) = multilevel
    ranked = [(s1, 0.9), (p1, 0.8), (whole, 0.7), (s2, 0.6)]  # any levels mixed
    # p = 0.288651, 0.261182, 0.236328, 0.213838 -> cumulative 0.5498 after two chunks
    kept = select_by_probability(ranked, tau=0.5)
    assert [h.chunk.level for h in kept] == ["section", "paragraph"]
    assert kept[1].components["probability"] == pytest.approx(0.261182, abs=1e-6)
    # temperature 0.1: logits 9, 8, 7, 6 -> p0 = 1 / (1 + e^-1 + e^-2 + e^-3) = 0.643914
    sharp = select_by_probability(ranked, tau=0.5, temperature=0.1)
    assert len(sharp) == 1 and sharp[0].components["probability"] == pytest.approx(
        0.643914, abs=1e-6
    )


def test_order_scores_and_input_kinds(multilevel):
    _, _, (a, b, c) = multilevel
    kept = select_by_probability([Hit(c, 0.0, {"dense": 0.0}), (a, 2.0), (b, 1.0)], tau=1.0)
    assert [h.chunk for h in kept] == [a, b, c]  # sorted by score
    assert [h.score for h in kept] == [2.0, 1.0, 0.0]
    assert kept[2].components["dense"] == 0.0


def test_max_chunks_and_words(multilevel):
    _, _, (a, b, c) = multilevel
    ranked = [(a, 0.2), (b, 0.1), (c, 0.0)]
    assert len(select_by_probability(ranked, tau=1.0, max_chunks=2)) == 2
    # "Mice were fed." 3 words + "Cells were counted." 3 words > 5
    assert [h.chunk for h in select_by_probability(ranked, tau=1.0, max_words=5)] == [a]


def test_ties_follow_the_ranking_rule(multilevel):
    _, _, (a, b, c) = multilevel  # one document: chunk_id descending among tied scores
    kept = select_by_probability([(a, 0.0), (b, 0.0), (c, 0.0)], tau=1.0)
    assert [h.chunk.chunk_id for h in kept] == sorted((x.chunk_id for x in (a, b, c)), reverse=True)


def test_drop_contained(multilevel):
    whole, (s1, _), (p1, _, p3) = multilevel
    ranked = [(s1, 0.9), (p1, 0.85), (p3, 0.8), (whole, 0.7)]
    assert len(select_by_probability(ranked, tau=1.0)) == 4
    kept = select_by_probability(ranked, tau=1.0, drop_contained=True)
    # p1 lies inside the selected Methods section; p3 comes before the document chunk
    assert [h.chunk for h in kept] == [s1, p3, whole]


def test_bad_arguments(multilevel):
    _, _, (a, _, _) = multilevel
    with pytest.raises(ValueError, match="temperature"):
        select_by_probability([(a, 1.0)], temperature=0.0)
    with pytest.raises(ValueError, match="tau"):
        select_by_probability([(a, 1.0)], tau=0.0)
    with pytest.raises(TypeError, match="Hit or a"):
        select_by_probability([a])
    assert select_by_probability([]) == []
