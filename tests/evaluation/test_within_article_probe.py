"""The within-article probe's query weighting and neighbour smoothing (bench/within_article_probe.py)."""

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from bench.within_article_probe import (
    best_unit,
    bigram_bm25,
    idf_weights,
    isolated_cosine,
    length_penalty,
    print_generic,
    sentence_units,
    smooth_neighbours,
    stopword_weights,
    weighted_maxsim,
)
from gralc.model.late_interaction import maxsim, piece_best


def _toy(seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 4, 8, generator=g)
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    tv = F.normalize(torch.randn(9, 8, generator=g), dim=-1)
    tc = torch.tensor([0, 0, 1, 1, 1, 2, 2, 2, 2])
    return q, mask, tv, tc


def _pieces(q, mask, tv, tc):
    return [piece_best(q[i, mask[i]], tv, tc, 3) for i in range(q.shape[0])]


def test_uniform_weights_are_the_products_maxsim():
    q, mask, tv, tc = _toy()
    got = weighted_maxsim(_pieces(q, mask, tv, tc), [[1.0] * 3, [1.0] * 4])
    assert torch.allclose(got, maxsim(q, mask, tv, tc, 3), atol=1e-6)


def test_weights_select_the_pieces_that_count():
    q, mask, tv, tc = _toy(1)
    only_first = weighted_maxsim(_pieces(q, mask, tv, tc), [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0]])
    single = maxsim(q[:, :1], mask[:, :1], tv, tc, 3)
    assert torch.allclose(only_first[0], single[0], atol=1e-6)
    last = maxsim(q[1:, 3:], mask[1:, 3:], tv, tc, 3)
    assert torch.allclose(only_first[1], last[0], atol=1e-6)


def test_stopword_weights_mask_function_words_and_punctuation():
    text = "What is the effect of IFITM3?"
    offsets = [(0, 4), (5, 7), (8, 11), (12, 18), (19, 21), (22, 25), (25, 28), (28, 29)]
    assert stopword_weights(text, offsets) == [0, 0, 0, 1, 0, 1, 1, 0]
    assert stopword_weights("what is", [(0, 4), (5, 7)]) == [1.0, 1.0]  # nothing left: uniform


def test_idf_weights_favour_rare_pieces():
    w = idf_weights([1, 2, 3], Counter({1: 90, 2: 5}), 100)
    assert w[0] < w[1] < w[2] and w[0] > 0


def test_smoothing_adds_the_best_neighbour_within_a_document():
    chunks = [SimpleNamespace(doc_id=d, char_start=s) for d, s in
              [("a", 100), ("a", 0), ("b", 0), ("a", 200)]]  # a: 1, 0, 3 in order; b alone
    score = np.array([[1.0, 2.0, 5.0, 4.0]])
    got = smooth_neighbours(score, chunks, 0.5)
    # chunk 0 (a, middle) neighbours 2.0 and 4.0; chunk 1 (a, first) neighbour 1.0;
    # chunk 2 (b, alone) itself; chunk 3 (a, last) neighbour 1.0
    assert got[0].tolist() == pytest.approx([3.0, 2.5, 7.5, 4.5])
    assert smooth_neighbours(score, chunks, 0.0) is score


def test_a_run_without_fold_models_is_refused_by_name(tmp_path):
    """``--run`` pointing at a folder without trained fold models: one message naming the
    folder and what it must hold, before any data is read."""
    from bench.late_interaction_cv import selected_checkpoint

    (tmp_path / "fold0" / "checkpoints").mkdir(parents=True)
    with pytest.raises(SystemExit, match=r"fold0: no trained fold model .*bench.covidqa_cv --train"):
        selected_checkpoint(tmp_path / "fold0")
    (tmp_path / "fold0" / "checkpoints" / "best-epoch=1.ckpt").write_bytes(b"")
    assert selected_checkpoint(tmp_path / "fold0").name == "best-epoch=1.ckpt"


def test_a_refit_run_takes_its_untrained_models_from_another_run(tmp_path, capsys):
    """A refit fold (``selected: "last"``, no initial.ckpt) is recognised, and without
    ``--untrained`` the missing untrained model is named before any data is read."""
    import json

    from bench.late_interaction_cv import is_refit, main

    fold = tmp_path / "refit" / "fold0"
    (fold / "checkpoints").mkdir(parents=True)
    (fold / "checkpoints" / "best-epoch=1-step=9.ckpt").write_bytes(b"")
    (fold / "result.json").write_text(json.dumps(
        {"selected": "last", "best_checkpoint": "/elsewhere/checkpoints/best-epoch=1-step=9.ckpt"}))
    assert is_refit(fold) and not is_refit(tmp_path)
    with pytest.raises(SystemExit):
        main(["--run", str(tmp_path / "refit"), "--train-folds", "0", "--weights", "0", "0.8"])
    assert f"{fold / 'initial.ckpt'}" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # an --untrained run without the fold's initial.ckpt
        main(["--run", str(tmp_path / "refit"), "--untrained", str(tmp_path / "other"),
              "--train-folds", "0", "--weights", "0", "0.8"])
    assert str(tmp_path / "other" / "fold0" / "initial.ckpt") in capsys.readouterr().err


def test_the_length_penalty_ranks_a_shorter_chunk_up():
    score = np.array([[0.80, 0.79, 0.50]])
    n = np.array([512, 64, 128])
    assert np.array_equal(length_penalty(score, n, 0.0), score)
    got = length_penalty(score, n, 0.02)
    assert got[0, 1] > got[0, 0] and got[0, 2] == pytest.approx(0.50)  # 128 pieces: unchanged
    assert got[0, 0] == pytest.approx(0.80 - 0.02 * np.log(4))


def test_sentence_units_split_chunks_by_sentence_and_take_the_best():
    """Two chunks over one document of three sentences; the second sentence straddles the
    chunk boundary, so each chunk holds a part of it (its own unit)."""
    sentences = [SimpleNamespace(start=0, end=10), SimpleNamespace(start=10, end=30),
                 SimpleNamespace(start=30, end=40)]
    offsets = np.array([[0, 4], [5, 9], [10, 14], [15, 19], [20, 24], [30, 34], [35, 39]])
    prepared = [SimpleNamespace(doc=SimpleNamespace(id="d", sentences=sentences),
                                tokens=SimpleNamespace(offsets=offsets))]
    chunks = [SimpleNamespace(doc_id="d", token_start=0, token_end=4),
              SimpleNamespace(doc_id="d", token_start=4, token_end=7)]
    token_chunk = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    unit, unit_chunk = sentence_units(chunks, prepared, token_chunk)
    assert unit.tolist() == [0, 0, 1, 1, 2, 3, 3] and unit_chunk.tolist() == [0, 0, 1, 1]
    got = best_unit(np.array([[0.1, 0.7, 0.4, 0.2]]), unit_chunk, 2)
    assert got.tolist() == [[0.7, 0.4]]
    with pytest.raises(ValueError, match="token vectors"):
        sentence_units(chunks, prepared, torch.tensor([0, 0, 0, 1, 1, 1, 1]))


def test_bigram_bm25_rewards_the_question_phrase_in_order():
    texts = ["the incubation period of the virus was five days",
             "a period of incubation, said the virus, was days",  # the same words, no phrase
             "nothing related"]
    got = bigram_bm25(texts, ["What is the incubation period of the virus?", "zebra crossing"])
    assert got.shape == (2, 3)
    assert got[0, 0] == pytest.approx(1.0) and got[0, 0] > got[0, 1] and got[0, 2] == 0
    assert not got[1].any()  # no shared phrase: a row of zeros, not a division by zero


def test_isolated_cosine_encodes_each_chunk_text_on_its_own():
    from gralc.encoding.encoder import EncoderConfig
    from gralc.pipeline import Pipeline, PipelineConfig

    pipe = Pipeline(PipelineConfig(encoder=EncoderConfig(device="cpu")))
    scorer = SimpleNamespace(pipeline_config=pipe.config)
    texts = ["Remdesivir shortened recovery in hospitalised patients.", "The weather was sunny."]
    got = isolated_cosine(scorer, pipe, texts, ["Remdesivir shortened recovery in hospitalised patients."])
    assert got.shape == (1, 2)
    assert got[0, 0] == pytest.approx(1.0, abs=1e-4) and got[0, 1] < 0.5


def test_generic_questions_are_told_apart_and_scored_separately(capsys):
    texts = ["What is a conclusion of this study?", "What is the conclusion of  this report ?",
             "What organ is most associated with the KATNAL1 gene?", "What did the study of bats find?"]
    got = print_generic(texts, [30, 1, 1, 2], [3, 1, 1, 1])
    generic, rest = got.values()
    assert generic["questions"] == 2 and rest["questions"] == 2  # "the study of bats" names a topic
    assert generic["chunks"] == pytest.approx(0.5) and generic["paragraphs"] == pytest.approx((0.5 + 1) / 2)
    assert rest["chunks"] == pytest.approx((1 + 1 / np.log2(3)) / 2)
    assert "by question kind" in capsys.readouterr().out
