"""ASCM chunk quality metrics: SCS, EPR, ERL."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gralc.chunking.chunk import Chunk
from gralc.chunking.quality import (
    entity_preservation_rate,
    recommendation_evidence_linking_rate,
    semantic_coherence,
)
from gralc.documents.model import Sentence
from gralc.knowledge.mention import EntityMention


def _mention(s: int, e: int) -> EntityMention:
    return EntityMention(s, e, "D0", "x", "x")


def test_semantic_coherence_exact():
    chunks = [(0, 30), (30, 60)]
    sentences = [(0, 9), (10, 19), (20, 29), (31, 40), (41, 50)]
    vectors = np.array([[1.0, 0], [0, 2], [1, 1], [3, 0], [1, 1]])
    # chunk 1: cos pairs 0, 1/sqrt2, 1/sqrt2; chunk 2: 1/sqrt2
    r = 1 / math.sqrt(2)
    assert semantic_coherence(chunks, sentences, vectors) == pytest.approx(((2 * r) / 3 + r) / 2)


def test_semantic_coherence_skips_single_sentence_chunks_and_accepts_chunks():
    chunks = [Chunk("d", "c0", "", 0, 10), Chunk("d", "c1", "", 10, 40)]
    sentences = [Sentence(0, 9, "p"), Sentence(11, 20, "p"), Sentence(21, 30, "p")]
    vectors = torch.tensor([[1.0, 0], [0, 1], [0, 1]])
    assert semantic_coherence(chunks, sentences, vectors) == pytest.approx(1.0)
    assert semantic_coherence(chunks, sentences[:2], vectors[:2]) is None
    with pytest.raises(ValueError, match="vectors"):
        semantic_coherence(chunks, sentences, vectors[:2])


def test_entity_preservation_rate():
    chunks = [(0, 10), (10, 20)]
    mentions = [_mention(2, 5), _mention(8, 12), _mention(12, 20), _mention(30, 35)]
    # 3 mentions overlap chunks, 1 (8-12) is cut, 30-35 lies outside every chunk
    assert entity_preservation_rate(chunks, mentions) == pytest.approx(2 / 3)
    assert entity_preservation_rate(chunks, []) is None


def test_recommendation_evidence_linking_rate():
    rec1, ev1 = Sentence(0, 20, "p"), Sentence(21, 30, "p")
    rec2, ev2 = Sentence(40, 55, "p"), Sentence(56, 70, "p")
    chunks = [(0, 35), (35, 60), (60, 80)]
    assert recommendation_evidence_linking_rate(chunks, [(rec1, ev1), (rec2, ev2)]) == 0.5
    assert recommendation_evidence_linking_rate([(0, 80)], [(rec1, ev1), (rec2, ev2)]) == 1.0
    assert recommendation_evidence_linking_rate(chunks, []) is None
