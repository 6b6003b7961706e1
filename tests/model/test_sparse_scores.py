"""BM25 rows read from postings: the dense row's numbers bit for bit, its best rows, a search's inputs.

The postings row is what a search over a million chunks reads (no corpus-long array per
question); everything else (candidates, normalisers, the score) must see what the dense row
gave, so each check here compares with the dense path on the same scorer.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gralc.model.lexical import CONCEPT_BM25, PHRASE_BM25, BM25Config, BM25Scorer
from gralc.model.score_inputs import ScoreInputBuilder, ScoreTerms
from gralc.model.sparse_scores import SparseScores
from gralc.retrieval.trained.candidates import CandidateConfig, candidate_rows, top_rows

WORDS = ["aspirin", "glucose", "kidney", "the", "mice", "cohort", "dose", "virus", "fever",
         "lung", "cell", "binding", "of", "patients", "spike"]
CONFIGS = {"lucene": BM25Config(), "bm25+": BM25Config(method="bm25+"),
           "robertson": BM25Config(method="robertson"), "pairs": PHRASE_BM25, "concepts": CONCEPT_BM25}

texts = st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join),
                 min_size=1, max_size=40)
queries = st.lists(st.sampled_from([*WORDS, "unseen"]), min_size=0, max_size=6).map(" ".join)


def same_best(dense: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    """``got`` and ``want`` are best rows of ``dense``: as many, distinct, the same scores
    (rows may differ only among ties)."""
    assert len(got) == len(want) == len(set(got.tolist()))
    assert sorted(dense[got].tolist()) == sorted(dense[want].tolist())


@pytest.mark.parametrize("name", list(CONFIGS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=texts, query=queries, n=st.integers(1, 12))
def test_a_postings_row_is_the_dense_row(name: str, corpus: list[str], query: str, n: int) -> None:
    s = BM25Scorer.over(corpus, CONFIGS[name])
    dense = s.scores(query)
    row = s.sparse_scores(query)
    assert np.array_equal(row.toarray(), dense)  # every number, the unposted texts' default too
    assert row.max() == dense.max()
    cols = np.arange(len(corpus))[::-1]
    assert np.array_equal(row.take(cols), dense[cols])
    same_best(dense, row.top(n, positive=True), top_rows(dense, n, positive=True))


def test_maxscore_skips_weak_terms_and_keeps_the_best_rows() -> None:
    # "fever" is in every text but one: its bound cannot lift a text into the top 3 of
    # "aspirin dose fever", so only the rare terms' texts are scored (and still the right ones)
    corpus = ["fever"] * 500 + [f"aspirin dose fever {i}" for i in range(5)] + ["aspirin"] * 20 + ["dose rash"]
    s = BM25Scorer.over(corpus)
    row = s.sparse_scores("aspirin dose fever")
    read = []
    original = row.take
    row.take = lambda cols: (read.append(len(np.atleast_1d(cols))), original(cols))[1]
    got = row.top(3, positive=True)
    dense = s.scores("aspirin dose fever")
    same_best(dense, got, top_rows(dense, 3, positive=True))
    assert set(got.tolist()) <= set(range(500, 505))
    assert max(read) < 100, read  # not the 505 texts "fever" posts


def test_a_search_reads_the_same_inputs_sparse_or_dense() -> None:
    corpus = ["aspirin lowers fever in patients", "the spike binding of the virus",
              "kidney cohort dose", "mice lung cell virus spike", "fever of unknown origin"]
    units = [t for text in corpus for t in text.split(" of ")]
    terms = ScoreTerms(lexical=True, units=True, phrase=True)
    builder = ScoreInputBuilder(terms, BM25Scorer.over(corpus), BM25Scorer.over(units),
                                BM25Scorer.over(corpus, PHRASE_BM25))
    qs = ["virus spike binding", "fever", "nothing shared"]
    dense, sparse = builder.build(qs), builder.build(qs, sparse=True)
    for name in ("lexical", "unit_lexical", "phrase"):
        assert isinstance(getattr(sparse, name), SparseScores)
        assert np.array_equal(np.asarray(getattr(sparse, name)), getattr(dense, name))
    rows = np.array([0, 3])
    for i in range(len(qs)):
        a = dense.select(i, rows, np.array([1, 2])).tensors()
        b = sparse.select(i, rows, np.array([1, 2])).tensors()
        assert all(np.array_equal(a[k], b[k]) for k in ("lexical", "unit_lexical", "phrase"))
        cfg = CandidateConfig(lexical=2, phrase=1)
        assert np.array_equal(candidate_rows(cfg, None, dense.lexical[i], dense.phrase[i]),
                              candidate_rows(cfg, None, sparse.lexical[i], sparse.phrase[i]))
