"""Sentence evidence in a chunk's score (gralc.model.sentence_evidence): toy spans by hand."""

import pytest
import torch

from gralc.documents.model import Document, Paragraph, Sentence
from gralc.model.gralc_model import ModelConfig
from gralc.model.sentence_evidence import (
    best_unit_scores,
    overlap_pairs,
    sentence_unit_spans,
    with_sentence_evidence,
)


def test_overlap_pairs_find_every_chunk_unit_pair_sharing_a_token():
    chunks = [(0, 5), (5, 12), (12, 20)]
    units = [(0, 3), (3, 7), (7, 12), (14, 18)]  # unit 1 straddles chunks 0 and 1; 12-14 uncovered
    assert overlap_pairs(chunks, units).T.tolist() == [[0, 0], [0, 1], [1, 1], [1, 2], [2, 3]]
    assert overlap_pairs(chunks, []).shape == (2, 0)


def test_best_unit_score_is_the_max_over_overlapping_units_else_the_chunk_own():
    pairs = overlap_pairs([(0, 5), (5, 12), (12, 20)], [(0, 3), (3, 7), (7, 12)])
    units = torch.tensor([[0.1, 0.9, 0.2], [0.5, 0.0, 0.3]])
    chunks = torch.tensor([[0.4, 0.3, 0.7], [0.2, 0.6, 0.1]])
    best = best_unit_scores(units, pairs, chunks)
    # chunk 2 has no unit: its own score stays
    assert torch.allclose(best, torch.tensor([[0.9, 0.9, 0.7], [0.5, 0.3, 0.1]]))
    mixed = with_sentence_evidence(chunks, units, pairs, 0.25)
    assert torch.allclose(mixed, 0.75 * chunks + 0.25 * best)
    assert torch.equal(with_sentence_evidence(chunks, units, pairs, 0.0), chunks)


def test_sentence_units_group_k_sentences_inside_each_paragraph():
    text = "A b. C d. E f. G h."
    #       0    5    10   15
    sents = [Sentence(i * 5, i * 5 + 4, "p1" if i < 3 else "p2") for i in range(4)]
    doc = Document(id="d", text=text, paragraphs=[
        Paragraph("p1", 0, 14, None, sentences=sents[:3]),
        Paragraph("p2", 15, 19, None, sentences=sents[3:])])
    # one token per character span of two characters
    offsets = torch.tensor([[i, i + 2] for i in range(0, 20, 2)])
    one = sentence_unit_spans(doc, offsets, 1)
    two = sentence_unit_spans(doc, offsets, 2)
    assert len(one) == 4 and len(two) == 3  # [s0 s1] [s2] | [s3]: groups never cross paragraphs
    assert two[0][0] == one[0][0] and two[0][1] == one[1][1] and two[1] == one[2]
    with pytest.raises(ValueError, match="sentences per unit"):
        sentence_unit_spans(doc, offsets, 0)


def test_sentence_evidence_settings_are_validated():
    with pytest.raises(ValueError, match="sentence_evidence"):
        ModelConfig(sentence_evidence=1.0)
    with pytest.raises(ValueError, match="evidence_sentences"):
        ModelConfig(evidence_sentences=0)
