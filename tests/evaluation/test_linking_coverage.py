"""Linking coverage (gralc/evaluation/linking_coverage.py): shares, densities and the concepts found in
the most articles, on hand-made texts with known answers and on the bundled demo corpus."""

from __future__ import annotations

import math

import pytest

from gralc.evaluation.linking_coverage import (
    fixed_chunk_texts,
    linking_coverage,
    mentions_per_1000_pieces,
    share_linked,
    top_concepts,
    word_pieces,
)
from gralc.knowledge.linker import EntityLinker
from gralc.knowledge.vocabulary import Concept, Vocabulary


@pytest.fixture(scope="module")
def tokenizer(minilm_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path)


@pytest.fixture(scope="module")
def toy_linker() -> EntityLinker:
    vocab = Vocabulary()
    vocab.add(Concept("D005334", "Fever", ["Pyrexia"]))
    vocab.add(Concept("D003371", "Cough"))
    vocab.add(Concept("D006801", "Humans"))
    return EntityLinker(vocab)


def test_shares_densities_and_ranking_by_articles_not_mentions(toy_linker, tokenizer):
    questions = ["Is pyrexia common?", "What was the weather like?", "Fever or cough?"]
    articles = ["Fever, fever and more fever in humans.", "A cough.", "A dry cough and humans."]
    cov = linking_coverage(toy_linker, tokenizer, questions, articles, chunk_size=4, top=2)
    assert cov["questions_with_concept"] == pytest.approx(2 / 3)
    assert cov["articles_with_concept"] == 1.0
    assert cov["distinct_concepts_questions"] == 2 and cov["distinct_concepts_articles"] == 3
    pieces = sum(len(tokenizer(a, add_special_tokens=False)["input_ids"]) for a in articles)
    assert cov["article_pieces"] == pieces
    assert cov["mentions_per_1000_pieces"] == pytest.approx(1000 * 7 / pieces)  # 3 fever, 2 cough, 2 humans
    # cough and humans are in two articles each; fever has the most mentions but one article
    assert [(c["id"], c["articles"], c["mentions"]) for c in cov["top_concepts"]] == [
        ("D003371", 2, 2), ("D006801", 2, 2)]
    assert cov["top_concepts"][0]["article_share"] == pytest.approx(2 / 3)
    assert cov["top_concepts"][0]["name"] == "Cough"
    # chunks of 4 word-pieces: some hold no concept ("A dry" ...), so less than every chunk
    assert cov["chunks"] == sum(math.ceil(len(tokenizer(a, add_special_tokens=False)["input_ids"]) / 4)
                                for a in articles)
    assert 0 < cov["chunks_with_concept"] < 1


def test_fixed_chunks_tile_the_text_in_windows_of_the_size(tokenizer):
    text = " ".join(f"word{i}" for i in range(50))
    n = word_pieces(tokenizer, text)
    chunks = fixed_chunk_texts(tokenizer, text, size=16)
    assert len(chunks) == math.ceil(n / 16)
    assert all(word_pieces(tokenizer, c) <= 16 for c in chunks)
    assert "".join(c.replace(" ", "") for c in chunks) == text.replace(" ", "")  # in order, no overlap
    assert sum(word_pieces(tokenizer, c) for c in chunks) == n
    with pytest.raises(ValueError):
        fixed_chunk_texts(tokenizer, text, size=0)


def test_empty_inputs_give_zero_not_an_error():
    assert share_linked([]) == 0.0 and mentions_per_1000_pieces([], 0) == 0.0
    assert top_concepts([]) == []


def test_demo_corpus_with_the_demo_vocabulary(tokenizer):
    """The built-in vocabulary on its own demo corpus: counts recounted independently where
    they can be, the rest pinned, so a change in the linker, the vocabulary or the measure
    shows."""
    from gralc.data.benchmarks import demo_benchmark
    from gralc.pipeline import KnowledgeConfig, load_knowledge

    bench = demo_benchmark()
    vocab, _ = load_knowledge(KnowledgeConfig())
    linker = EntityLinker(vocab)
    questions = [q.text for q in bench.questions]
    articles = [d.text for d in bench.documents]
    cov = linking_coverage(linker, tokenizer, questions, articles)
    assert (cov["articles"], cov["questions"], cov["chunk_size_pieces"]) == (10, 39, 256)
    pieces = [len(tokenizer(a, add_special_tokens=False)["input_ids"]) for a in articles]
    assert cov["article_pieces"] == sum(pieces) == 20057
    assert cov["chunks"] == sum(math.ceil(n / 256) for n in pieces) == 83
    assert cov["questions_with_concept"] == pytest.approx(37 / 39)  # two questions link none
    assert cov["chunks_with_concept"] == 1.0 and cov["articles_with_concept"] == 1.0
    assert round(cov["mentions_per_1000_pieces"] * sum(pieces) / 1000) == 1051
    assert (cov["distinct_concepts_articles"], cov["distinct_concepts_questions"]) == (153, 36)
    top = cov["top_concepts"]
    assert len(top) == 20 and [t["articles"] for t in top] == sorted((t["articles"] for t in top), reverse=True)
    assert (top[0]["id"], top[0]["name"], top[0]["articles"]) == ("D012306", "Risk", 7)
    assert top[0]["article_share"] == pytest.approx(0.7)
    for c in top[:5]:  # recount the leading concepts' articles, one article at a time
        assert c["articles"] == sum(any(m.concept_id == c["id"] for m in linker.link(a)) for a in articles)
