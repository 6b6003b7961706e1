"""Boundary signals (GraLC-RAG Eq. 5-8) and constraint detection."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from _struct_fixtures import Sec, build_document, minilm_offsets, word_tokens

from gralc.chunking.boundaries import (
    BoundaryConfig,
    boundary_scores,
    compute_signals,
    cut_allowed_mask,
    entity_crossing_mask,
    recommendation_evidence_pairs,
    semantic_signal,
    structural_signal,
    word_start_mask,
)
from gralc.documents.model import TextBuilder
from gralc.knowledge.mention import EntityMention


def _doc():
    # one token per word: 0-2 title | 3 Introduction | 4-6 para | 7-8 para | 9 Details |
    # 10-12 para | 13 Methods | 14-15 para
    return build_document(
        "d",
        "Tiny test doc",
        [
            Sec(
                "Introduction",
                "introduction",
                ["Alpha beta gamma.", "Delta epsilon."],
                [Sec("Details", "introduction", ["Zeta eta theta."])],
            ),
            Sec("Methods", "methods", ["Iota kappa."]),
        ],
    )


def test_structural_signal_exact_on_hand_built_doc():
    doc = _doc()
    tokens = word_tokens(doc.text)
    assert tokens.n_tokens == 16
    expected = torch.zeros(16)
    expected[[3, 13]] = 1.0  # top-level section titles
    expected[9] = 0.7  # subsection title
    expected[[4, 7, 10, 14]] = 0.4  # paragraphs
    assert torch.equal(structural_signal(doc, tokens.offsets), expected)


def test_structural_signal_is_zero_at_document_start():
    doc = build_document("d", "", [Sec("BACKGROUND", "introduction", ["One two."])])
    b = structural_signal(doc, word_tokens(doc.text).offsets)
    assert b.tolist() == pytest.approx([0.0, 0.4, 0.0])


def test_semantic_signal_exact_on_synthetic_vectors():
    h = torch.tensor([[1.0, 0], [1, 0], [0, 1], [0, 1], [1, 1]])
    got = semantic_signal(h, window=2)
    r2 = 1 / math.sqrt(2)
    expected = [0.0, 1 - r2, 1.0, 1 - 0.75 / math.sqrt(0.5 * 1.25), 1 - r2]
    assert got.tolist() == pytest.approx(expected, abs=1e-6)


def test_semantic_signal_matches_naive_loop_and_is_differentiable():
    h = torch.randn(50, 8, generator=torch.Generator().manual_seed(1), requires_grad=True)
    got = semantic_signal(h, window=4)
    for i in range(1, 50):
        left = h[max(0, i - 4) : i].mean(0)
        right = h[i : i + 4].mean(0)
        want = 1 - torch.nn.functional.cosine_similarity(left, right, dim=0)
        assert float(got[i].detach()) == pytest.approx(float(want.detach()), abs=1e-5)
    got.sum().backward()
    assert h.grad is not None and h.grad.abs().sum() > 0


def test_entity_mask_on_minilm_tokens_in_document_coordinates(minilm_path):
    # the mention lives in the second block: its offsets include the title (pitfall 7)
    b = TextBuilder()
    b.add("A title that shifts every offset")
    b.add("Patients with glioblastoma multiforme received temozolomide.")
    text = b.text
    s = text.index("glioblastoma multiforme")
    e = s + len("glioblastoma multiforme")
    offsets = minilm_offsets(text, minilm_path)
    mention = EntityMention(s, e, "D005909", "glioblastoma multiforme", "Glioblastoma")
    mask = entity_crossing_mask([mention], offsets)
    inside = [i for i in range(len(offsets)) if s < offsets[i, 0] < e]
    assert len(inside) >= 3  # "g ##lio ##bla ... multi ##form ##e"
    assert np.flatnonzero(mask.numpy()).tolist() == inside
    # the tokens the penalty lands on spell the mention (minus its first piece)
    covered = text[offsets[inside[0] - 1, 0] : offsets[inside[-1], 1]]
    assert covered == "glioblastoma multiforme"


def test_entity_mask_single_token_mention_is_empty():
    text = "aspirin reduces pain"
    mask = entity_crossing_mask(
        [EntityMention(0, 7, "D001241", "aspirin", "Aspirin")], word_tokens(text).offsets
    )
    assert not mask.any()


def test_boundary_scores_formula_and_gradients():
    struct = torch.tensor([0.0, 1.0, 0.4, 0.0])
    sem = torch.tensor([0.0, 0.2, 0.5, 0.1])
    mask = torch.tensor([False, False, True, True])
    alpha = torch.tensor([0.5, 0.3, 1.0], requires_grad=True)
    gamma = torch.tensor(0.5, requires_grad=True)
    b = boundary_scores(struct, sem, mask, alpha, gamma)
    assert b.tolist() == pytest.approx([0.0, 0.56, 0.2 + 0.15 - 0.5, 0.03 - 0.5])
    b.sum().backward()
    assert alpha.grad.tolist() == pytest.approx([1.4, 0.8, -1.0])
    assert float(gamma.grad) == pytest.approx(-2.0)


def test_word_start_mask():
    offsets = np.array([[0, 1], [1, 4], [5, 9], [9, 10]])
    assert word_start_mask(offsets).tolist() == [True, False, True, False]


def test_cut_allowed_mask_sentence_starts_only():
    # tokens: 0 "Tiny" | 1 "Intro" | 2-3 "One two." | 4-6 "Three four five." (one paragraph)
    doc = build_document("d", "Tiny", [Sec("Intro", "introduction", ["One two. Three four five."])])
    offsets = word_tokens(doc.text).offsets
    assert cut_allowed_mask(doc, offsets, "word").all()
    assert cut_allowed_mask(doc, offsets, "sentence").nonzero().flatten().tolist() == [0, 1, 2, 4]
    # a window's slice of the offsets (tokens 3-6: "two." "Three" "four" "five."): only
    # "Three" starts a sentence after the window's first token
    assert cut_allowed_mask(doc, offsets[3:], "sentence")[1:].nonzero().flatten().tolist() == [0]
    # word-pieces: "Ab" | "Cde" "fg" "hijkl." | "Mno" "pq" "rstu." (two sentences)
    doc2 = build_document("e", "", [Sec("Ab", "introduction", ["Cdefg hijkl. Mnopq rstu."])])
    pieces = np.array([[0, 2], [4, 7], [7, 9], [10, 16], [17, 20], [20, 22], [23, 28]])
    assert [doc2.text[a:b] for a, b in pieces][4] == "Mno"
    assert cut_allowed_mask(doc2, pieces, "word").tolist() == [True, True, False, True, True, False, True]
    assert cut_allowed_mask(doc2, pieces, "sentence").tolist() == [True, True, False, False, True, False, False]
    with pytest.raises(ValueError, match="cut_unit"):
        cut_allowed_mask(doc, offsets, "paragraph")


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="cut_unit"):
        BoundaryConfig(cut_unit="token")
    with pytest.raises(ValueError, match="decoder"):
        BoundaryConfig(decoder="greedy")
    with pytest.raises(ValueError, match="min_tokens"):
        BoundaryConfig(min_tokens=2000)
    assert BoundaryConfig().alpha.tolist() == pytest.approx([0.5, 0.3, 1.0])


def test_recommendation_evidence_pairs():
    doc = build_document(
        "g",
        "",
        [
            Sec(
                "Surgery",
                "other",
                [
                    "D2 dissection is recommended for gastric cancer. Level of evidence: A. "
                    "Patients were followed for five years. (Grade B) is not a recommendation here.",
                    "Adjuvant chemotherapy should be offered.",
                    "Evidence level II.",
                ],
            )
        ],
    )
    pairs = recommendation_evidence_pairs(doc)
    got = [(doc.text[r.start : r.end], doc.text[e.start : e.end]) for r, e in pairs]
    assert got == [
        ("D2 dissection is recommended for gastric cancer.", "Level of evidence: A."),
        ("Adjuvant chemotherapy should be offered.", "Evidence level II."),
    ]


def test_compute_signals_rejects_mentions_from_another_text():
    """Pitfall 7: spans linked on a text without the title are shifted; refuse them."""
    doc = _doc()
    tokens = word_tokens(doc.text)
    body = doc.text[doc.text.index("Alpha") :]  # the text without title and first heading
    s = body.index("gamma")
    shifted = EntityMention(s, s + 5, "D0", "gamma", "Gamma")
    with pytest.raises(ValueError, match="link entities on Document.text"):
        compute_signals(doc, tokens.vectors, tokens.offsets, [shifted], BoundaryConfig())
    s = doc.text.index("gamma")
    ok = EntityMention(s, s + 5, "D0", "GAMMA", "Gamma")
    signals = compute_signals(doc, tokens.vectors, tokens.offsets, [ok], BoundaryConfig())
    assert signals.score.shape == (16,)
    with pytest.raises(ValueError, match="encode doc.text"):
        compute_signals(doc, tokens.vectors, tokens.offsets + 100, [], BoundaryConfig())
