"""The BM25 scoring core the model's lexical terms read: settings, tokenisation, an in-memory
scorer over texts, corpus term statistics, and the concept-id texts of the concept match.

ONE :class:`bm25s.tokenization.Tokenizer` tokenises both the texts and the queries: a query
tokenised with a fresh vocabulary would map words to the wrong ids (xhluca/bm25s#91). Tokens
are handed to bm25s as (stemmed) strings, so texts and queries meet in one string space.

:class:`BM25Scorer` scores queries against texts; :class:`gralc.retrieval.indexes.bm25.BM25Index`
builds on it (chunk records, top-k search, saving and loading), so an index and a training
batch score the same texts with the same numbers. :func:`bm25_matrix` is the lexical term of a
training batch, whose chunks change with the learned boundaries.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import bm25s
import numpy as np
import Stemmer

from gralc.model.sparse_scores import Postings, PostingsRow, SparseScores

# bm25s sets its own logger to DEBUG on import, so every index build logs "Building index
# from tokens" whatever the application configured; NOTSET makes it follow the application.
logging.getLogger("bm25s").setLevel(logging.NOTSET)


@dataclass
class BM25Config:
    """BM25 parameters (bm25s ``method``: robertson | lucene | atire | bm25l | bm25+).
    ``ngram``: 1 indexes (stemmed, stopword-free) terms; 2 indexes pairs of consecutive terms,
    a phrase-match view (a question that copies a phrase of the answer sentence).
    ``field``: what of a chunk is indexed: ``text``, or ``concepts``, its linked concept ids
    (``Chunk.entity_ids``, each once; :mod:`gralc.retrieval.trained.concept_match`), so BM25's IDF
    weighs a shared rare concept above a shared common one; queries are then concept-id
    strings (:func:`concept_terms`).

    >>> BM25Config(ngram=2).stemmer
    'english'
    """

    k1: float = 1.5
    b: float = 0.75
    method: str = "lucene"
    stemmer: str | None = "english"
    stopwords: str | None = "en"
    ngram: int = 1
    field: str = "text"

    def __post_init__(self) -> None:
        if self.ngram not in (1, 2):
            raise ValueError(f"BM25Config.ngram must be 1 (terms) or 2 (term pairs), got {self.ngram}")
        if self.field not in ("text", "concepts"):
            raise ValueError(f"BM25Config.field must be 'text' or 'concepts', got {self.field!r}")
        if self.field == "concepts" and self.ngram != 1:
            raise ValueError("BM25Config.field='concepts' indexes single concept ids: ngram must be 1")


#: the term-pair BM25 of ``model.phrase_weight``
PHRASE_BM25 = BM25Config(ngram=2)
#: BM25 over concept ids (Lucene BM25, k1 1.2 as for short fields; a chunk's concepts once
#: each; ids neither stemmed nor stopword-filtered): the concept match
CONCEPT_BM25 = BM25Config(k1=1.2, b=0.75, stemmer=None, stopwords=None, field="concepts")


def _stemmer(name: str | None):
    """A Snowball stemmer, or None (``stemmer: null``: terms as they are, e.g. concept ids)."""
    return None if name is None else Stemmer.Stemmer(name)


class BM25Scorer:
    """BM25 of queries against the texts given to :meth:`_index_texts` (text i = row i).

    >>> bm25 = BM25Scorer.over(["metformin lowers glucose", "insulin dosing"])
    >>> (bm25.scores("metformin") > 0).tolist()
    [True, False]
    """

    def __init__(self, config: BM25Config | None = None) -> None:
        self.config = config or BM25Config()
        self.tokenizer = bm25s.tokenization.Tokenizer(
            stopwords=self.config.stopwords, stemmer=_stemmer(self.config.stemmer)
        )
        self.retriever = bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method)
        self._size = 0  # texts indexed

    @classmethod
    def over(cls, texts: Sequence[str], config: BM25Config | None = None) -> BM25Scorer:
        """A scorer of ``texts`` (at least one)."""
        out = cls(config)
        out._index_texts(texts)
        return out

    def __len__(self) -> int:
        return self._size

    def _tokens(self, texts: Sequence[str], update_vocab: bool) -> list[list[str]]:
        if self.config.ngram == 2:
            # every word kept (no vocabulary filter), so pairs stay adjacent; a query goes
            # through a scratch tokenizer emptied each time, so searching never grows the index
            tok = self.tokenizer if update_vocab else self._scratch_tokenizer()
            words = tok.tokenize(list(texts), update_vocab=True, return_as="string", show_progress=False)
            return [[f"{a} {b}" for a, b in zip(w, w[1:]) if a and b] for w in words]
        if update_vocab:
            return self.tokenizer.tokenize(list(texts), update_vocab=True, return_as="string",
                                           show_progress=False)
        # a query: ids through this index's vocabulary read backwards once (bm25s's "string"
        # inverts the whole vocabulary every call: 3 ms a question at 3.7M sentence units)
        ids = self.tokenizer.tokenize(list(texts), update_vocab=False, return_as="ids", show_progress=False)
        words = self._words()
        return [[words[i] for i in doc] for doc in ids]

    def _words(self) -> dict[int, str]:
        """The tokenizer's vocabulary id -> token, kept while the vocabulary is unchanged."""
        vocab = self.tokenizer.get_vocab_dict()
        key = (id(vocab), len(vocab))
        if self.__dict__.get("_words_key") != key:
            self._words_of, self._words_key = {v: k for k, v in vocab.items()}, key
        return self._words_of

    def _scratch_tokenizer(self) -> bm25s.tokenization.Tokenizer:
        """A tokenizer with this index's settings and an empty vocabulary (term-pair queries)."""
        if getattr(self, "_scratch", None) is None:
            self._scratch = bm25s.tokenization.Tokenizer(
                stopwords=self.config.stopwords, stemmer=_stemmer(self.config.stemmer))
        self._scratch.reset_vocab()
        return self._scratch

    def _index_texts(self, texts: Sequence[str]) -> None:
        self.tokenizer.reset_vocab()
        tokens = self._tokens(texts, True)
        if self.config.ngram == 2:  # a text without any pair still needs a row
            tokens = [t or ["<none>"] for t in tokens]
        self.retriever.index(tokens, show_progress=False)
        self._size = len(texts)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for one query, shape (len(self),) (0 = no shared term)."""
        if not self._size:
            raise ValueError(f"{type(self).__name__} is empty: call index(chunks) or load(dir) first")
        tokens = [t for t in self._tokens([query], False)[0] if t]
        if self.config.ngram == 2:
            tokens = [t for t in tokens if t in self.retriever.vocab_dict]
        if not tokens:
            return np.zeros(self._size)
        return np.asarray(self.retriever.get_scores(tokens), dtype=np.float64)

    def score_matrix(self, queries: Sequence[str]) -> np.ndarray:
        """(Q, K) BM25 of every query against every text (rows of :meth:`scores`)."""
        if not queries:
            return np.zeros((0, self._size))
        return np.stack([self.scores(q) for q in queries])

    def sparse_scores(self, query: str) -> PostingsRow:
        """:meth:`scores` as a :class:`~gralc.model.sparse_scores.PostingsRow`: read from the
        postings of the query's terms where asked (its best rows, its scores at some rows),
        the same numbers bit for bit, never a row as long as the corpus.

        >>> BM25Scorer.over(["metformin lowers glucose", "insulin dosing"]).sparse_scores("insulin").top(5, True)
        array([1])
        """
        if not self._size:
            raise ValueError(f"{type(self).__name__} is empty: call index(chunks) or load(dir) first")
        r = self.retriever
        ids = r.get_tokens_ids([t for t in self._tokens([query], False)[0] if t])
        extra = None
        if r.nonoccurrence_array is not None and len(ids):  # bm25l / bm25+: every text scores
            extra = r.nonoccurrence_array[np.asarray(ids)].sum()
        return PostingsRow(self._postings(), ids, np.dtype(r.dtype), extra)

    def sparse_matrix(self, queries: Sequence[str]) -> SparseScores:
        """:meth:`score_matrix` as :class:`~gralc.model.sparse_scores.SparseScores`."""
        return SparseScores([self.sparse_scores(q) for q in queries], self._size)

    def _postings(self) -> Postings:
        """The index's postings (rebuilt when the index is)."""
        sc = self.retriever.scores
        p = self.__dict__.get("_postings_of")
        if p is None or p.data is not sc["data"]:
            p = self._postings_of = Postings(sc["data"], sc["indices"], sc["indptr"], self._size)
        return p


@dataclass(frozen=True)
class TermStats:
    """Corpus term statistics for BM25 over texts that are not the corpus: document frequency
    of each (stemmed) term, the number of texts and their mean length in terms. Built once
    from a corpus's chunks (:meth:`from_texts`), they let :func:`bm25_matrix` score a
    training batch's few chunks as an index of the whole corpus would.

    >>> stats = TermStats.from_texts(["metformin lowers glucose", "insulin dosing"])
    >>> stats.n_docs, stats.df["metformin"]
    (2, 1)
    """

    df: dict[str, int]
    n_docs: int
    avgdl: float

    @classmethod
    def from_texts(cls, texts: Sequence[str], config: BM25Config | None = None) -> TermStats:
        """The statistics of ``texts`` (at least one), tokenised as :class:`BM25Scorer` with
        ``config`` tokenises them."""
        if not texts:
            raise ValueError("TermStats.from_texts needs at least one text")
        tokens = BM25Scorer(config)._tokens(texts, True)
        df: dict[str, int] = {}
        for toks in tokens:
            for t in set(toks):
                df[t] = df.get(t, 0) + 1
        return cls(df, len(texts), max(sum(map(len, tokens)) / len(texts), 1e-9))


def _stats_matrix(
    queries: Sequence[str], texts: Sequence[str], config: BM25Config, stats: TermStats
) -> np.ndarray:
    """BM25 (Lucene: idf = ln(1 + (N - df + 0.5) / (df + 0.5)), tf / (tf + k1 (1 - b + b
    dl / avgdl)), bm25s's formula, a test checks they agree) of ``queries`` against ``texts``
    with ``stats``'s df, N and avgdl; a term absent from ``stats`` counts as df = 1."""
    if config.method != "lucene":
        raise ValueError(f"corpus term statistics support BM25 method 'lucene', not {config.method!r}")
    idx = BM25Scorer(config)
    docs = idx._tokens(texts, True)
    query_tokens = idx._tokens(queries, False)
    norm = config.k1 * ((1 - config.b) + config.b * np.array([len(d) for d in docs]) / stats.avgdl)
    out = np.zeros((len(queries), len(texts)))
    tf_of: dict[str, np.ndarray] = {}
    for qi, q in enumerate(query_tokens):
        for t in q:
            if not t:
                continue
            tf = tf_of.get(t)
            if tf is None:
                tf = tf_of[t] = np.array([d.count(t) for d in docs], dtype=np.float64)
            if not tf.any():
                continue
            df = stats.df.get(t, 1)
            idf = np.log(1 + (stats.n_docs - df + 0.5) / (df + 0.5))
            out[qi] += idf * tf / (tf + norm)
    return out


def bm25_matrix(
    queries: Sequence[str], texts: Sequence[str], config: BM25Config | None = None,
    stats: TermStats | None = None,
) -> np.ndarray:
    """(Q, K) BM25 of each query against ``texts``: the lexical term of a training batch,
    whose chunks change with the learned boundaries. Term statistics from these texts alone,
    or with ``stats`` from a whole corpus (:class:`TermStats`), as its index would score them.

    >>> (bm25_matrix(["metformin", "insulin"], ["metformin lowers glucose", "insulin dosing"]) > 0).tolist()
    [[True, False], [False, True]]
    """
    if not texts:
        return np.zeros((len(queries), 0))
    if stats is not None:
        return _stats_matrix(queries, texts, config or BM25Config(), stats)
    idx = BM25Scorer.over(texts, config)
    return np.stack([idx.scores(q) for q in queries]) if queries else np.zeros((0, len(texts)))


_NON_WORD = re.compile(r"\W+")


def concept_terms(ids: Iterable[str]) -> str:
    """A concept-id set as one BM25 text (what a ``field="concepts"`` index holds per chunk and
    is asked with; :mod:`gralc.retrieval.trained.concept_match`): each id once (first occurrence
    order), every non-word character made ``_`` so the tokenizer keeps an id (``D000086382``, ``C0011849``,
    ``builtin:x``) as one term; lower case, which the tokenizer applies anyway.

    >>> concept_terms(["D008687", "builtin:x", "D008687"])
    'cid_d008687 cid_builtin_x'
    """
    out = []
    for i in dict.fromkeys(ids):
        term = _NON_WORD.sub("_", str(i)).strip("_").lower()
        if term:
            out.append(f"cid_{term}")  # a prefix, so no id can collide with a stopword
    return " ".join(out)


def idf_scale(n_chunks: int) -> float:
    """The concept match's fixed unit: the IDF of a concept held by one chunk of ``n_chunks``
    (the largest IDF there is), so a shared concept adds at most about its share of it. Not the
    question's best chunk, as the lexical terms are normalised: a question with one generic
    concept ("Infections") would then give every chunk holding it the full weight, and the IDF
    would count for nothing.

    >>> round(idf_scale(2), 4)
    0.6931
    """
    return float(np.log(1 + (max(n_chunks, 1) - 0.5) / 1.5))


def concept_matrix(questions: Sequence[Sequence[str]], chunks: Sequence[Sequence[str]]) -> np.ndarray:
    """(Q, K) concept match of each question's ids against each chunk's ids, term statistics
    from these chunks (a training batch, whose chunks change with the learned boundaries), in
    the unit of :func:`gralc.retrieval.trained.concept_match.concept_scores`.

    >>> (concept_matrix([["D008687"]], [["D008687", "D006442"], ["D007328"]]) > 0).tolist()
    [[True, False]]
    """
    return bm25_matrix([concept_terms(q) for q in questions], [concept_terms(c) for c in chunks],
                       CONCEPT_BM25) / idf_scale(len(chunks))


__all__ = ["CONCEPT_BM25", "PHRASE_BM25", "BM25Config", "BM25Scorer", "TermStats", "bm25_matrix",
           "concept_matrix", "concept_terms", "idf_scale"]
