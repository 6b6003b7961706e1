"""The model's one builder of its lexical score inputs (gralc.model.score_inputs) and the
export-time scoring settings (gralc.model.scoring_config)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gralc.chunking.boundaries import BoundaryConfig
from gralc.chunking.chunk import Chunk
from gralc.model.gralc_model import ModelConfig
from gralc.model.lexical import TermStats, bm25_matrix
from gralc.model.score_inputs import ScoreInputBuilder, ScoreInputs, ScoreTerms
from gralc.model.scoring_config import ScoringConfig
from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index
from gralc.retrieval.trained.concept_match import concept_index, concept_scores

TEXTS = ["Metformin lowers blood glucose in type 2 diabetes.",
         "The spike protein binds the ACE2 receptor of host cells.",
         "Blood glucose was measured after the metformin dose.",
         "Host cells express the receptor in the lung."]
UNITS = ["Metformin lowers blood glucose.", "In type 2 diabetes.", "The spike protein binds ACE2.",
         "Blood glucose was measured.", "The receptor in the lung."]
CONCEPTS = [["D008687", "D003924"], ["D064370", "D000085962"], ["D008687"], []]
QUESTIONS = ["Does metformin lower blood glucose?", "Which receptor does the spike protein bind?",
             "What was measured after the dose?"]
Q_CONCEPTS = [["D008687"], ["D064370", "D000085962"], []]
ALL = ScoreTerms(lexical=True, units=True, phrase=True, concepts=True)


def _chunks(texts, concepts=None):
    concepts = concepts or [[] for _ in texts]
    return [Chunk("doc", f"c{i}", t, 0, len(t), entity_ids=list(c))
            for i, (t, c) in enumerate(zip(texts, concepts))]


def test_terms_follow_the_model_config():
    assert ScoreTerms.of(ModelConfig()) == ScoreTerms()
    assert ScoreTerms.of(ModelConfig(use_lexical=True, sentence_evidence=0.3, phrase_weight=0.05)) == \
        ScoreTerms(lexical=True, units=True, phrase=True)
    # the units' BM25 feeds the lexical term of the units: none without it
    assert not ScoreTerms.of(ModelConfig(sentence_evidence=0.3)).units
    assert ScoreTerms.of(ModelConfig(), ScoringConfig(kg_prox_idf=True)).concepts
    assert ScoreTerms.of(ModelConfig(), ScoringConfig(late_interaction=0.8)) == ScoreTerms()
    assert ScoreTerms.of(ModelConfig(concept_weight=0.1)) == ScoreTerms(concepts=True)


def test_batch_texts_and_saved_indexes_give_the_same_inputs_to_the_digit():
    """A training batch's scorers (over texts) and an index's (BM25Index of chunk records)
    build identical inputs, each term as its own scorer gives it."""
    over_texts = ScoreInputBuilder.over_texts(ALL, TEXTS, UNITS, CONCEPTS).build(QUESTIONS, Q_CONCEPTS)
    units = BM25Index()
    units.index(_chunks(UNITS))
    phrase = BM25Index(BM25Config(ngram=2))
    phrase.index(_chunks(TEXTS))
    lexical = BM25Index()
    lexical.index(_chunks(TEXTS))
    concepts = concept_index(_chunks(TEXTS, CONCEPTS))
    indexed = ScoreInputBuilder(ALL, lexical, units, phrase, concepts).build(QUESTIONS, Q_CONCEPTS)
    for name in ("lexical", "unit_lexical", "phrase", "concepts"):
        a, b = getattr(over_texts, name), getattr(indexed, name)
        assert a.dtype == np.float64 and np.array_equal(a, b), name
    assert indexed.lexical.shape == (3, 4) and indexed.unit_lexical.shape == (3, 5)
    assert np.array_equal(indexed.lexical, np.stack([lexical.scores(q) for q in QUESTIONS]))
    assert np.array_equal(indexed.concepts, np.stack([concept_scores(concepts, c) for c in Q_CONCEPTS]))
    assert (indexed.lexical > 0).sum() >= 3 and indexed.phrase.max() > 0 and indexed.concepts.max() > 0
    assert np.all(indexed.concepts[2] == 0)  # a question without concepts matches none


def test_corpus_term_stats_change_only_the_lexical_term():
    stats = TermStats.from_texts(TEXTS + ["glucose " * 3, "Another text about lungs."])
    plain = ScoreInputBuilder.over_texts(ALL, TEXTS, UNITS, CONCEPTS).build(QUESTIONS, Q_CONCEPTS)
    corpus = ScoreInputBuilder.over_texts(ALL, TEXTS, UNITS, CONCEPTS, stats).build(QUESTIONS, Q_CONCEPTS)
    assert np.array_equal(corpus.lexical, bm25_matrix(QUESTIONS, TEXTS, stats=stats))
    assert not np.allclose(corpus.lexical, plain.lexical)
    for name in ("unit_lexical", "phrase", "concepts"):
        assert np.array_equal(getattr(corpus, name), getattr(plain, name)), name


def test_only_the_terms_that_are_on_are_built_and_each_needs_its_scorer():
    got = ScoreInputBuilder.over_texts(ScoreTerms(phrase=True), TEXTS).build(QUESTIONS)
    assert got.lexical is None and got.unit_lexical is None and got.concepts is None
    assert got.phrase.shape == (3, 4)
    with pytest.raises(ValueError, match="units"):
        ScoreInputBuilder(ScoreTerms(units=True))
    with pytest.raises(ValueError, match="concept ids"):
        ScoreInputBuilder.over_texts(ScoreTerms(concepts=True), TEXTS, concept_ids=CONCEPTS).build(QUESTIONS)
    empty = ScoreInputBuilder.over_texts(ScoreTerms(lexical=True, units=True), [], []).build(QUESTIONS)
    assert empty.lexical.shape == (3, 0) and empty.unit_lexical.shape == (3, 0)


def test_select_and_tensors_keep_the_values():
    x = ScoreInputBuilder.over_texts(ALL, TEXTS, UNITS, CONCEPTS).build(QUESTIONS, Q_CONCEPTS)
    one = x.select(1, np.array([3, 1]), np.array([2]))
    assert np.array_equal(one.lexical, x.lexical[1:2, [3, 1]])
    assert np.array_equal(one.unit_lexical, x.unit_lexical[1:2, [2]])
    t = x.tensors()
    assert list(t) == ["lexical", "unit_lexical", "phrase", "concepts"]
    assert t["lexical"].dtype == torch.float64 and torch.equal(t["lexical"], torch.from_numpy(x.lexical))
    assert x.tensors(dtype=torch.float32)["phrase"].dtype == torch.float32
    assert ScoreInputs().tensors() == dict.fromkeys(t)


def test_scoring_config_holds_the_inference_settings_and_validated_overrides():
    """The inference-only settings are the ScoringConfig's own fields (real defaults: off); the
    trained score terms an export may replace are the ModelConfig fields marked ``export`` and
    cut_unit, each stated once, as ``overrides`` applied to the saved configs."""
    from dataclasses import fields

    from gralc.model.scoring_config import export_keys, scoring_keys

    s = ScoringConfig.from_dict({"sentence_evidence": 0.3, "late_interaction": 0.8,
                                 "phrase_weight": 0.05, "cut_unit": "sentence", "kg_prox_idf": None})
    assert (s.late_interaction, s.kg_prox_idf) == (0.8, False)
    assert s.overrides == {"sentence_evidence": 0.3, "phrase_weight": 0.05, "cut_unit": "sentence"}
    assert s.settings() == {"late_interaction": 0.8, "kg_prox_idf": False, "sentence_evidence": 0.3,
                            "phrase_weight": 0.05, "cut_unit": "sentence"}
    assert s.own() == ScoringConfig(late_interaction=0.8)
    model, boundary = s.apply({"use_lexical": True}, {"window": 8})
    assert model == {"use_lexical": True, "sentence_evidence": 0.3, "phrase_weight": 0.05}
    assert boundary == {"window": 8, "cut_unit": "sentence"}
    assert BoundaryConfig(**boundary).cut_unit == "sentence"
    assert ScoringConfig.from_dict({"overrides": {"phrase_weight": 0.05}}) == \
        ScoringConfig(overrides={"phrase_weight": 0.05})
    assert ScoringConfig().settings() == {"late_interaction": 0.0, "kg_prox_idf": False}
    assert s.updated({"late_interaction": 0.5, "phrase_weight": None}).settings() == \
        {**s.settings(), "late_interaction": 0.5}
    # each setting has one home: the inference-only ones are no ModelConfig field
    own = {f.name for f in fields(ScoringConfig)} - {"overrides"}
    assert own == {"late_interaction", "kg_prox_idf"}
    assert not own & {f.name for f in fields(ModelConfig)}
    assert export_keys() == ("sentence_evidence", "evidence_sentences", "phrase_weight",
                             "concept_weight", "cut_unit")
    assert set(scoring_keys()) == own | set(export_keys())
    with pytest.raises(ValueError, match="only"):
        ScoringConfig.from_dict({"beta_init": 0.1})
    with pytest.raises(ValueError, match="sentence_evidence"):
        ScoringConfig.from_dict({"sentence_evidence": 1.5})
    with pytest.raises(ValueError, match="evidence_sentences"):
        ScoringConfig.from_dict({"evidence_sentences": "two"})
    with pytest.raises(ValueError, match="late_interaction"):
        ScoringConfig(late_interaction=1.0)
    with pytest.raises(ValueError, match="kg_prox_idf"):
        ScoringConfig(kg_prox_idf="yes")
    with pytest.raises(ValueError, match="cut_unit"):
        ScoringConfig.from_dict({"cut_unit": "paragraph"})
