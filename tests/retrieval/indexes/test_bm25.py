"""BM25 chunk index: exact terms, stemming, one vocabulary for index and query, persistence."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from gralc.chunking.chunk import Chunk
from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index, TermStats, bm25_matrix

TEXTS = [
    "Patients were treated with aspirin daily for twelve weeks.",
    "Metformin lowers hepatic glucose production in type 2 diabetes.",
    "Knockout mice showed no infections after the challenge.",
    "Statistical analysis used a two-sided t-test.",
    "The cohort included adults with chronic kidney disease.",
]


@pytest.fixture(scope="module")
def index() -> BM25Index:
    ix = BM25Index()
    ix.index([Chunk(doc_id=f"d{i}", chunk_id=f"d{i}::0", text=t, char_start=0,
                    char_end=len(t)) for i, t in enumerate(TEXTS)])
    return ix


def top(ix: BM25Index, query: str, k: int = 3) -> list[tuple[str, float]]:
    return [(c.chunk_id, s) for c, s in ix.search([query], k)[0]]


def test_exact_term_ranks_right_chunk_first(index: BM25Index) -> None:
    assert top(index, "metformin")[0][0] == "d1::0"
    assert top(index, "kidney disease cohort")[0][0] == "d4::0"
    # chunks sharing no term score 0 and come after the match
    assert top(index, "metformin")[0][1] > 0 and top(index, "metformin")[1][1] == 0.0


def test_stemming_and_stopwords(index: BM25Index) -> None:
    # Snowball English: treating/treats -> "treat" (matches "treated"); infected -> "infect"
    assert top(index, "treating")[0][0] == "d0::0"
    assert top(index, "infected")[0][0] == "d2::0"
    # stopwords only: nothing matches, every score is 0 (ties broken by ids descending)
    assert top(index, "the with a") == [("d4::0", 0.0), ("d3::0", 0.0), ("d2::0", 0.0)]


def test_query_does_not_grow_the_index_vocabulary(index: BM25Index) -> None:
    before = dict(index.retriever.vocab_dict)
    assert top(index, "zebrafish unseen words")[0][1] == 0.0
    assert index.retriever.vocab_dict == before


def test_save_load_round_trip(tmp_path: Path, index: BM25Index) -> None:
    index.save(tmp_path / "bm25")
    back = BM25Index.load(tmp_path / "bm25")
    for q in ["metformin glucose", "treated aspirin", "t-test analysis"]:
        assert top(back, q, 5) == top(index, q, 5)
    assert [c.to_dict() for c in back.chunks] == [c.to_dict() for c in index.chunks]


def test_load_missing_file_names_it(tmp_path: Path, index: BM25Index) -> None:
    index.save(tmp_path / "bm25")
    (tmp_path / "bm25" / "chunks.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="chunks.jsonl"):
        BM25Index.load(tmp_path / "bm25")


def test_corpus_term_stats_score_a_subset_as_the_corpus_index_does(index: BM25Index) -> None:
    """bm25_matrix with TermStats of the whole corpus gives a subset of texts the scores the
    corpus index gives them (the training batch's lexical term, optim.lexical_stats=corpus);
    without the stats the subset's own statistics give different scores."""
    queries = ["aspirin for patients", "glucose in diabetes patients", "kidney kidney cohort",
               "nothing here zzz"]
    full = index.score_matrix(queries)
    stats = TermStats.from_texts(TEXTS)
    assert stats.n_docs == len(TEXTS) and stats.df["patient"] == 1
    subset = [0, 1, 4]
    with_stats = bm25_matrix(queries, [TEXTS[i] for i in subset], stats=stats)
    assert np.allclose(with_stats, full[:, subset], atol=1e-5)
    own = bm25_matrix(queries, [TEXTS[i] for i in subset])
    assert not np.allclose(own, full[:, subset], atol=1e-3)
    assert not with_stats[3].any()
    with pytest.raises(ValueError, match="lucene"):
        bm25_matrix(queries, TEXTS, BM25Config(method="bm25+"), stats=stats)
    with pytest.raises(ValueError, match="at least one text"):
        TermStats.from_texts([])


def test_building_an_index_logs_nothing_below_the_application_level(
        caplog: pytest.LogCaptureFixture) -> None:
    """bm25s forces its logger to DEBUG on import; ours makes it follow the application's
    level, so a bench run at WARNING is not flooded with one line per index build."""
    caplog.set_level(logging.WARNING)  # the root level, as the CLIs' basicConfig sets it
    caplog.handler.setLevel(logging.NOTSET)  # the handler itself lets every record through
    BM25Index().index([Chunk(doc_id="d", chunk_id="d::0", text=TEXTS[0], char_start=0,
                             char_end=len(TEXTS[0]))])
    assert not [r for r in caplog.records if r.name.startswith("bm25s")]


def _chunks(texts: list[str]) -> list[Chunk]:
    return [Chunk("d", f"c{i}", t, 0, len(t)) for i, t in enumerate(texts)]


def test_term_pair_index_rewards_the_question_phrase_in_order(tmp_path: Path) -> None:
    """``ngram=2``: BM25 over pairs of consecutive (stemmed, stopword-free) terms; the same
    words without the phrase score 0, and a query word the chunks lack never joins the words
    around it into a false pair."""
    texts = ["The incubation period of the virus was five days.",
             "A period of incubation, said the virus, was days.",
             "Nothing related here."]
    pairs = BM25Index(BM25Config(ngram=2))
    pairs.index(_chunks(texts))
    s = pairs.scores("What is the incubation period of the virus?")
    assert s[0] > 0 and s[1] == 0 and s[2] == 0
    terms = BM25Index()
    terms.index(_chunks(texts))
    assert terms.scores("What is the incubation period of the virus?")[1] > 0  # unigrams match both
    # "zebra" is in no chunk: "incubation zebra period" has no pair "incub period"
    assert not pairs.scores("incubation zebra period").any()
    assert pairs.scores("incubation period").argmax() == 0
    words = dict(pairs.tokenizer.word_to_id)
    pairs.scores("zebrafish quokka incubation")  # searching never grows the index's vocabulary
    assert pairs.tokenizer.word_to_id == words
    pairs.save(tmp_path / "pairs")
    loaded = BM25Index.load(tmp_path / "pairs")
    assert loaded.config.ngram == 2
    assert np.array_equal(loaded.scores("What is the incubation period of the virus?"), s)
    with pytest.raises(ValueError, match="ngram"):
        BM25Config(ngram=3)
