"""The concept match (gralc.retrieval.trained.concept_match): BM25 over linked concept ids, IDF-weighted,
one term per id; and kg_prox weighed per question concept (model.kg_prox_idf)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gralc.chunking.chunk import Chunk
from gralc.model.hybrid_scorer import kg_proximity
from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index
from gralc.retrieval.trained.concept_match import (
    concept_idf,
    concept_index,
    concept_matrix,
    concept_scores,
    concept_terms,
    question_concepts,
)

IDS = ["D000086382", "D007239", "D014777", "C0011849", "builtin:the", "D002477"]


def _chunks(sets: list[list[str]]) -> list[Chunk]:
    return [Chunk("doc", f"c{i}", "text", 0, 4, entity_ids=list(s)) for i, s in enumerate(sets)]


def test_every_id_is_one_term_never_a_stopword():
    assert concept_terms(["D007239", "D007239", "builtin:the"]) == "cid_d007239 cid_builtin_the"
    index = concept_index(_chunks([IDS, ["D007239"]]))
    terms = {t for t in index.retriever.vocab_dict if t}
    assert terms == {concept_terms([i]) for i in IDS}  # "the" survives: no id is a stopword
    assert concept_scores(index, ["builtin:the"])[0] > 0


def test_a_rare_shared_concept_outscores_a_common_one():
    """IDF: 'Infections' in every chunk counts for almost nothing, the virus in one chunk counts."""
    sets = [["D007239", "D000086382"], ["D007239", "D014777"], ["D007239", "D002477"], ["D007239"]]
    index = concept_index(_chunks(sets))
    s = concept_scores(index, ["D007239", "D000086382"])
    assert s.argmax() == 0 and s[0] > 5 * s[1:].max()
    assert np.all(concept_scores(index, ["D999999"]) == 0)
    assert np.all(concept_scores(index, []) == 0)
    idf = concept_idf(index, ["D007239", "D000086382", "D999999"])
    n = 4
    assert idf == pytest.approx([math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in (4, 1, 0)])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(IDS), max_size=5), min_size=1, max_size=8),
       st.lists(st.lists(st.sampled_from(IDS), max_size=4), min_size=1, max_size=3))
def test_the_index_of_inference_and_the_matrix_of_training_agree(chunk_sets, questions):
    """One score: a search's index over chunks == training's matrix over the same concept sets."""
    index = concept_index(_chunks(chunk_sets))
    by_index = np.stack([concept_scores(index, q) for q in questions])
    assert np.allclose(by_index, concept_matrix(questions, chunk_sets), atol=1e-6)
    assert (by_index >= 0).all()
    # a chunk holding no question concept scores 0; holding one scores > 0
    for qi, q in enumerate(questions):
        for ci, c in enumerate(chunk_sets):
            assert (by_index[qi, ci] > 0) == bool(set(q) & set(c))


def test_the_concept_index_saves_its_field(tmp_path):
    index = concept_index(_chunks([IDS[:3], IDS[2:]]))
    index.save(tmp_path / "concepts")
    back = BM25Index.load(tmp_path / "concepts", records=False)
    assert back.config.field == "concepts"
    assert np.allclose(back.scores(concept_terms(IDS[:2])), index.scores(concept_terms(IDS[:2])))
    with pytest.raises(ValueError, match="field"):
        BM25Config(field="title")
    with pytest.raises(ValueError, match="ngram must be 1"):
        BM25Config(field="concepts", ngram=2)


def test_synonyms_meet_in_one_descriptor_with_the_full_mesh(shared_data):
    """'2019-nCoV', 'SARS-CoV-2' and 'COVID-19 virus' link to one MeSH 2024 descriptor, so the
    concept match scores them alike (kg_prox compares embeddings of different surface forms)."""
    from gralc.knowledge.linker import EntityLinker
    from gralc.knowledge.vocabulary import Vocabulary

    linker = EntityLinker(Vocabulary.from_thesaurus_tsv(shared_data / "mesh" / "mesh2024_thesaurus_terms.tsv"))
    ids = question_concepts(linker, ["Where did 2019-nCoV come from?", "Where did SARS-CoV-2 come from?",
                                     "Where did the COVID-19 virus come from?"])
    assert ids[0] == ids[1] == ids[2] and len(ids[0]) == 1
    index = concept_index(_chunks([ids[0] + ["D007239"], ["D007239"]]))
    assert concept_scores(index, ids[2])[0] > 0 == concept_scores(index, ids[2])[1]


def test_kg_prox_weighs_question_concepts():
    """Float weights: ones are the plain mean, a zero weight drops a concept, IDF-like weights
    pull the score towards the rare concept's match."""
    torch.manual_seed(0)
    q_ent = torch.randn(1, 3, 8)
    ents = torch.randn(5, 8)
    rows = torch.tensor([0, 0, 1, 1, 2])
    mask = torch.tensor([[True, True, False]])
    plain = kg_proximity(q_ent, mask, ents, rows, 3)
    assert torch.allclose(kg_proximity(q_ent, mask.float(), ents, rows, 3), plain, atol=1e-6)
    only_first = kg_proximity(q_ent, torch.tensor([[1.0, 0.0, 0.0]]), ents, rows, 3)
    assert torch.allclose(only_first, kg_proximity(q_ent, torch.tensor([[True, False, False]]), ents, rows, 3))
    weighted = kg_proximity(q_ent, torch.tensor([[3.0, 1.0, 0.0]]), ents, rows, 3)
    a = kg_proximity(q_ent[:, :1], torch.tensor([[True]]), ents, rows, 3)
    b = kg_proximity(q_ent[:, 1:2], torch.tensor([[True]]), ents, rows, 3)
    assert torch.allclose(weighted, (3 * a + b) / 4, atol=1e-6)
