"""Hybrid fusion of a dense and a lexical ranking (gralc.retrieval.indexes.fusion)."""

from __future__ import annotations

import math

import pytest

from gralc.chunking.chunk import Chunk
from gralc.retrieval.indexes.fusion import FusionConfig, fuse


def c(cid: str, doc: str = "d") -> Chunk:
    return Chunk(doc, cid, cid, 0, 1)


A, B, C, D = c("a"), c("b"), c("c"), c("d")
DENSE = [(A, 0.9), (B, 0.5), (C, 0.1)]
LEXICAL = [(C, 12.0), (D, 6.0), (A, 0.0)]


def ids(hits):
    return [h.chunk.chunk_id for h in hits]


def test_weighted_fusion_by_hand():
    hits = fuse(DENSE, LEXICAL, FusionConfig("weighted", lexical_weight=0.5))
    # normalised: dense a 1, b 0.5, c 0; lexical c 1, d 0.5, a 0
    scores = {h.chunk.chunk_id: h.score for h in hits}
    assert scores == pytest.approx({"a": 0.5, "b": 0.25, "c": 0.5, "d": 0.25})
    assert ids(hits) == ["c", "a", "d", "b"]  # ties: chunk_id descending (one rule)
    comp = {h.chunk.chunk_id: h.components for h in hits}
    assert comp["d"]["lexical"] == 6.0 and math.isnan(comp["d"]["dense"])


def test_weight_zero_and_one_are_the_input_rankings():
    # c (the worst dense candidate, normalised 0) ties with d (absent from the dense list)
    assert ids(fuse(DENSE, LEXICAL, FusionConfig("weighted", lexical_weight=0.0)))[:2] == ["a", "b"]
    assert ids(fuse(DENSE, LEXICAL, FusionConfig("weighted", lexical_weight=1.0)))[:2] == ["c", "d"]


def test_rrf_by_hand():
    hits = fuse(DENSE, LEXICAL, FusionConfig("rrf", rrf_k=60), k=2)
    scores = {h.chunk.chunk_id: h.score for h in hits}
    # a: 1/61 + 1/63, c: 1/63 + 1/61 (tie, c first by chunk_id desc), b: 1/62, d: 1/62
    assert ids(hits) == ["c", "a"]
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)


def test_chunks_of_different_documents_with_one_id_stay_apart():
    hits = fuse([(c("x", "d1"), 1.0)], [(c("x", "d2"), 1.0)], FusionConfig("rrf"))
    assert sorted(h.chunk.doc_id for h in hits) == ["d1", "d2"]


@pytest.mark.parametrize("kwargs, match", [
    ({"method": "max"}, "fusion.method"), ({"lexical_weight": 1.5}, "lexical_weight"),
    ({"rrf_k": -1}, "rrf_k"), ({"candidates": 0}, "candidates")])
def test_bad_settings_name_the_key(kwargs, match):
    with pytest.raises(ValueError, match=match):
        FusionConfig(**kwargs)
