"""Section-diverse re-ranking: MMR and round-robin quota on a crafted two-document case."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from _retrieval_fixtures import build_document, paragraph_chunks

from gralc.retrieval.rerank.diversity import section_diverse_rerank, section_key

SCORES = {"a1x": 0.90, "a1y": 0.88, "a1z": 0.86, "a2x": 0.80, "b1x": 0.75, "a3x": 0.70, "b2x": 0.60}


@pytest.fixture(scope="module")
def chunks():
    """Chunks named <doc><section><letter>: A has sections 1-3, B sections 1-2."""
    a = build_document(
        "A",
        [("Methods", ["M x.", "M y.", "M z."]), ("Results", ["R x."]), ("Discussion", ["D x."])],
    )
    b = build_document("B", [("Methods", ["M x."]), ("Results", ["R x."])])
    names = ["a1x", "a1y", "a1z", "a2x", "a3x", "b1x", "b2x"]
    return dict(zip(names, paragraph_chunks(a) + paragraph_chunks(b)))


def ranked(chunks, scores=SCORES):
    return sorted(((chunks[n], s) for n, s in scores.items()), key=lambda p: -p[1])


def names(chunks, hits):
    by_id = {c.chunk_id: n for n, c in chunks.items()}
    return [by_id[h.chunk.chunk_id] for h in hits]


def n_sections(hits):
    return len({section_key(h.chunk) for h in hits})


def test_section_keys(chunks):
    assert section_key(chunks["a2x"]) == ("A", "A-s2")
    assert section_key(replace(chunks["b1x"], section_ids=[])) == ("B", None)


def test_mmr_covers_more_sections_than_plain_ranking(chunks):
    plain = ranked(chunks)[:4]
    assert len({section_key(c) for c, _ in plain}) == 2
    top4 = section_diverse_rerank(ranked(chunks), k=4)
    # hand-computed: rel = (s - 0.6) / 0.3; step 3: a1y 0.7*0.933-0.3 = 0.353 > b1x 0.7*0.5
    assert names(chunks, top4) == ["a1x", "a2x", "a1y", "b1x"]
    assert n_sections(top4) == 3
    full = section_diverse_rerank(ranked(chunks), k=10)
    assert names(chunks, full) == ["a1x", "a2x", "a1y", "b1x", "a1z", "a3x", "b2x"]
    assert [h.score for h in top4] == [4.0, 3.0, 2.0, 1.0]  # rank scores
    assert top4[1].components["retrieval"] == 0.80
    assert top4[1].components["mmr"] == pytest.approx(0.7 * (0.2 / 0.3))


def test_lambda_one_is_the_plain_ranking(chunks):
    out = section_diverse_rerank(ranked(chunks), k=7, lambda_=1.0)
    assert names(chunks, out) == [n for n, _ in sorted(SCORES.items(), key=lambda x: -x[1])]


def test_quota_round_robin(chunks):
    out = section_diverse_rerank(ranked(chunks), k=7, method="quota")
    assert names(chunks, out) == ["a1x", "a2x", "b1x", "a3x", "b2x", "a1y", "a1z"]
    assert n_sections(out[:5]) == 5
    one_doc = section_diverse_rerank(ranked(chunks), k=7, method="quota", top_docs=1)
    assert names(chunks, one_doc) == ["a1x", "a2x", "a3x", "a1y", "a1z", "b1x", "b2x"]
    two_each = section_diverse_rerank(
        ranked(chunks), k=4, method="quota", top_docs=1, per_section_quota=2
    )
    assert names(chunks, two_each) == ["a1x", "a1y", "a2x", "a3x"]


def test_complete_fills_the_tail_with_the_top_documents_missing_sections(chunks):
    # quota order over all documents: a1x a2x b1x a3x b2x a1y a1z (hand-derived)
    plain_quota = section_diverse_rerank(ranked(chunks), 4, method="quota", top_docs=None)
    assert names(chunks, plain_quota) == ["a1x", "a2x", "b1x", "a3x"]
    no_slots = section_diverse_rerank(ranked(chunks), 4, method="complete", complete_slots=0)
    assert names(chunks, no_slots) == names(chunks, plain_quota)
    one = section_diverse_rerank(
        ranked(chunks), 3, method="complete", complete_slots=1, top_docs=1
    )
    assert names(chunks, one) == ["a1x", "a2x", "a3x"]  # quota would show b1x third
    assert one[2].components["completes_section"] == 1.0
    two = section_diverse_rerank(
        ranked(chunks), 4, method="complete", complete_slots=2, top_docs=2
    )
    assert names(chunks, two) == ["a1x", "a2x", "a3x", "b1x"]  # round-robin A, B
    full = section_diverse_rerank(ranked(chunks), 10, method="complete", complete_slots=2)
    assert sorted(names(chunks, full)) == sorted(SCORES)  # nothing lost, nothing repeated


@pytest.mark.parametrize("seed", range(20))
def test_a_documents_first_chunk_never_moves_down(seed):
    """quota over all documents (and complete's head) never ranks a document's best chunk
    lower than plain ranking, so the reciprocal rank of the first relevant document cannot
    drop (the MRR claim in the module doc)."""
    rng = random.Random(seed)
    docs = [
        build_document(d, [(t, [f"{t} {i}." for i in range(3)]) for t in ("Methods", "Results")])
        for d in "ABCDE"
    ]
    pool = [c for d in docs for c in paragraph_chunks(d)]
    cands = sorted(((c, rng.random()) for c in pool), key=lambda p: -p[1])
    first = {}
    for i, (c, _) in enumerate(cands):
        first.setdefault(c.doc_id, i)
    k, slots = 12, 4
    quota = section_diverse_rerank(cands, len(cands), method="quota", top_docs=None)
    complete = section_diverse_rerank(cands, k, method="complete", complete_slots=slots)
    for out, limit in ((quota, len(cands)), (complete, k - slots)):
        seen = {}
        for i, h in enumerate(out):
            seen.setdefault(h.chunk.doc_id, i)
        for doc_id, i in first.items():
            if i < limit:
                assert seen[doc_id] <= i


def test_chunks_without_section_share_one_key_per_document(chunks):
    n1 = replace(chunks["a1x"], chunk_id="A::none1", section_ids=[])
    n2 = replace(chunks["a1y"], chunk_id="A::none2", section_ids=[])
    cands = [(n1, 0.9), (n2, 0.85), (chunks["a2x"], 0.8)]
    # n2: 0.5*0.5 - 0.5*1 = -0.25 < a2x: 0 ; a free bonus would have ranked n2 second
    out = section_diverse_rerank(cands, k=3, lambda_=0.5)
    assert [h.chunk.chunk_id for h in out] == ["A::none1", chunks["a2x"].chunk_id, "A::none2"]


def test_embedding_similarity_term(chunks):
    e1, e2 = np.array([1.0, 0.0], np.float32), np.array([0.0, 1.0], np.float32)
    x = replace(chunks["a1x"], embedding=e1)
    y = replace(chunks["a2x"], embedding=e1)
    z = replace(chunks["b1x"], embedding=e2)
    cands = [(x, 0.9), (y, 0.85), (z, 0.8)]
    ids = lambda hits: [h.chunk.chunk_id for h in hits]  # noqa: E731
    assert ids(section_diverse_rerank(cands, 3, lambda_=0.5)) == [
        x.chunk_id,
        y.chunk_id,
        z.chunk_id,
    ]
    with_emb = section_diverse_rerank(cands, 3, lambda_=0.5, embedding_weight=1.0)
    assert ids(with_emb) == [x.chunk_id, z.chunk_id, y.chunk_id]  # y duplicates x's content
    with pytest.raises(ValueError, match="has none"):
        section_diverse_rerank([(chunks["a1x"], 1.0)], 1, embedding_weight=1.0)


@pytest.mark.parametrize("method", ["mmr", "quota", "complete"])
def test_deterministic_ties(chunks, method):
    tied = {n: 0.5 for n in SCORES}
    base = section_diverse_rerank(ranked(chunks, tied), k=7, method=method)
    for seed in range(5):
        shuffled = ranked(chunks, tied)
        random.Random(seed).shuffle(shuffled)
        assert names(chunks, section_diverse_rerank(shuffled, k=7, method=method)) == names(
            chunks, base
        )
    # the one ranking rule: among tied scores, doc_id then chunk_id descending
    assert names(chunks, base)[0] == max(SCORES, key=lambda n: (chunks[n].doc_id, chunks[n].chunk_id))


def test_bad_arguments(chunks):
    with pytest.raises(ValueError, match="unknown diversity method 'x'"):
        section_diverse_rerank(ranked(chunks), 3, method="x")
    with pytest.raises(ValueError, match="k must be"):
        section_diverse_rerank(ranked(chunks), 0)
    with pytest.raises(ValueError, match="complete_slots"):
        section_diverse_rerank(ranked(chunks), 3, method="complete", complete_slots=4)
    assert section_diverse_rerank([], 3) == []
