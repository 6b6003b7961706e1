"""Lexical chunk index: BM25 (bm25s) with an English Snowball stemmer and English stopwords.

ONE :class:`bm25s.tokenization.Tokenizer` tokenises both the chunks and the queries, and its
vocabulary is saved with the index: a query tokenised with a fresh vocabulary would map
words to the wrong ids (xhluca/bm25s#91). Tokens are handed to bm25s as (stemmed) strings,
so index and query meet in one string space.

Directory layout::

    bm25/                 bm25s.BM25.save (score matrix + vocab)
    vocab.tokenizer.json  the tokenizer's vocabulary
    chunks.jsonl          one Chunk per line (row i = BM25 document i)
    config.json           BM25 parameters, tokenizer settings, gralc version, git hash
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from gralc.artefacts import verify_artefact, write_artefact
from gralc.chunking.chunk import Chunk
from gralc.retrieval.faiss_index import (
    CHUNKS_FILE,
    CONFIG_FILE,
    provenance,
    read_chunks,
    read_json,
    require,
    write_chunks,
)
from gralc.retrieval.ranking import rank_chunks

# bm25s sets its own logger to DEBUG on import, so every index build logs "Building index
# from tokens" whatever the application configured; NOTSET makes it follow the application.
logging.getLogger("bm25s").setLevel(logging.NOTSET)

VOCAB_FILE = "vocab.tokenizer.json"
_NON_WORD = re.compile(r"\W+")


@dataclass
class BM25Config:
    """BM25 parameters (bm25s ``method``: robertson | lucene | atire | bm25l | bm25+).
    ``ngram``: 1 indexes (stemmed, stopword-free) terms; 2 indexes pairs of consecutive terms,
    a phrase-match view (a question that copies a phrase of the answer sentence).
    ``field``: what of a chunk is indexed: ``text``, or ``concepts``, its linked concept ids
    (``Chunk.entity_ids``, each once; :mod:`gralc.retrieval.concept_match`), so BM25's IDF
    weighs a shared rare concept above a shared common one; queries are then concept-id
    strings (:func:`concept_terms`)."""

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


def _stemmer(name: str | None):
    """A Snowball stemmer, or None (``stemmer: null``: terms as they are, e.g. concept ids)."""
    return None if name is None else Stemmer.Stemmer(name)


def concept_terms(ids: Iterable[str]) -> str:
    """A concept-id set as one BM25 text (what a ``field="concepts"`` index holds per chunk and
    is asked with; :mod:`gralc.retrieval.concept_match`): each id once (first occurrence order), every non-word
    character made ``_`` so the tokenizer keeps an id (``D000086382``, ``C0011849``,
    ``builtin:x``) as one term; lower case, which the tokenizer applies anyway."""
    out = []
    for i in dict.fromkeys(ids):
        term = _NON_WORD.sub("_", str(i)).strip("_").lower()
        if term:
            out.append(f"cid_{term}")  # a prefix, so no id can collide with a stopword
    return " ".join(out)


class BM25Index:
    """BM25 over chunk texts; document i is ``chunks[i]``."""

    def __init__(self, config: BM25Config | None = None) -> None:
        self.config = config or BM25Config()
        self.tokenizer = bm25s.tokenization.Tokenizer(
            stopwords=self.config.stopwords, stemmer=_stemmer(self.config.stemmer)
        )
        self.retriever = bm25s.BM25(k1=self.config.k1, b=self.config.b, method=self.config.method)
        self.chunks: list[Chunk] = []
        self._size = 0  # texts indexed (chunks, or bm25_matrix's bare texts)

    def __len__(self) -> int:
        return self._size

    def _tokens(self, texts: Sequence[str], update_vocab: bool) -> list[list[str]]:
        if self.config.ngram == 2:
            # every word kept (no vocabulary filter), so pairs stay adjacent; a query goes
            # through a scratch tokenizer emptied each time, so searching never grows the index
            tok = self.tokenizer if update_vocab else self._scratch_tokenizer()
            words = tok.tokenize(list(texts), update_vocab=True, return_as="string", show_progress=False)
            return [[f"{a} {b}" for a, b in zip(w, w[1:]) if a and b] for w in words]
        return self.tokenizer.tokenize(
            list(texts), update_vocab=update_vocab, return_as="string", show_progress=False
        )

    def _scratch_tokenizer(self) -> bm25s.tokenization.Tokenizer:
        """A tokenizer with this index's settings and an empty vocabulary (term-pair queries)."""
        if getattr(self, "_scratch", None) is None:
            self._scratch = bm25s.tokenization.Tokenizer(
                stopwords=self.config.stopwords, stemmer=_stemmer(self.config.stemmer))
        self._scratch.reset_vocab()
        return self._scratch

    def index(self, chunks: Sequence[Chunk]) -> None:
        """Build the index over ``chunks`` (replaces any previous content)."""
        if not chunks:
            raise ValueError("BM25Index.index needs at least one chunk")
        if self.config.field == "concepts":
            self._index_texts([concept_terms(c.entity_ids) for c in chunks])
        else:
            self._index_texts([c.text for c in chunks])
        self.chunks = [replace(c, embedding=None) for c in chunks]

    def _index_texts(self, texts: Sequence[str]) -> None:
        self.tokenizer.reset_vocab()
        tokens = self._tokens(texts, True)
        if self.config.ngram == 2:  # a text without any pair still needs a row
            tokens = [t or ["<none>"] for t in tokens]
        self.retriever.index(tokens, show_progress=False)
        self._size = len(texts)

    def search(self, queries: Sequence[str], k: int) -> list[list[tuple[Chunk, float]]]:
        """Top-k ``(chunk, BM25 score)`` per query, ordered score desc, then doc_id desc,
        chunk_id desc. Chunks sharing no term with the query score 0 and rank last."""
        if not self.chunks:
            raise ValueError("BM25Index holds no chunk records: call index(chunks) or load(dir) first")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if isinstance(queries, str):
            raise TypeError("queries must be a list of strings, not one string")
        k = min(k, len(self.chunks))
        out = []
        for query in queries:
            scores = self.scores(query)
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            rows = np.flatnonzero(scores >= kth)  # the top-k and everything tied with it
            out.append(rank_chunks((self.chunks[i], float(scores[i])) for i in rows)[:k])
        return out

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every chunk for one query, shape (len(self),) (0 = no shared term)."""
        if not self._size:
            raise ValueError("BM25Index is empty: call index(chunks) or load(dir) first")
        tokens = [t for t in self._tokens([query], False)[0] if t]
        if self.config.ngram == 2:
            tokens = [t for t in tokens if t in self.retriever.vocab_dict]
        if not tokens:
            return np.zeros(self._size)
        return np.asarray(self.retriever.get_scores(tokens), dtype=np.float64)

    def score_matrix(self, queries: Sequence[str]) -> np.ndarray:
        """(Q, K) BM25 of every query against every chunk (rows of :meth:`scores`)."""
        if not queries:
            return np.zeros((0, self._size))
        return np.stack([self.scores(q) for q in queries])

    def save(self, directory: str | os.PathLike[str], force: bool = False) -> Path:
        """Write the index directory atomically (see module docstring and
        :mod:`gralc.artefacts`: a folder holding other files needs ``force``)."""
        with write_artefact(directory, "bm25_index", force) as tmp:
            self.write_to(tmp)
        return Path(directory)

    def write_to(self, folder: Path) -> None:
        """Write the index files into an existing (temporary) ``folder``."""
        if not self.chunks:
            raise ValueError("cannot save an empty BM25 index")
        meta = {"format": "gralc.bm25_index/1", "bm25": asdict(self.config),
                "bm25s_version": bm25s.__version__, **provenance()}
        self.retriever.save(str(folder / "bm25"))
        self.tokenizer.save_vocab(str(folder), VOCAB_FILE)
        write_chunks(folder / CHUNKS_FILE, self.chunks)
        (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | os.PathLike[str], records: bool = True) -> BM25Index:
        """Read a directory written by :meth:`save`; errors name the missing/corrupt file.
        ``records=False``: scores only (:meth:`scores`), the chunk records are counted, not
        read (an index's own chunk list serves them; a million records cost gigabytes)."""
        d = Path(directory)
        if not d.is_dir():
            raise FileNotFoundError(f"BM25 index directory {d} does not exist")
        verify_artefact(d)  # every file as written (gralc.artefacts), before any answer
        meta = read_json(d / CONFIG_FILE)
        self = cls(BM25Config(**meta["bm25"]))
        require(d / VOCAB_FILE)
        self.tokenizer.load_vocab(str(d), VOCAB_FILE)
        if not (d / "bm25").is_dir():
            raise FileNotFoundError(f"{d / 'bm25'} is missing: rebuild the BM25 index")
        self.retriever = bm25s.BM25.load(str(d / "bm25"))
        if records:
            self.chunks = read_chunks(d / CHUNKS_FILE)
            self._size = len(self.chunks)
        else:
            self._size = count_lines(d / CHUNKS_FILE)
        if self.retriever.scores["num_docs"] != self._size:
            raise ValueError(f"{d}: BM25 holds {self.retriever.scores['num_docs']} documents, "
                             f"{CHUNKS_FILE} {self._size} chunks")
        return self


def count_lines(path: Path) -> int:
    """Lines of a text file, read in blocks."""
    require(path)
    n = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n


@dataclass(frozen=True)
class TermStats:
    """Corpus term statistics for BM25 over texts that are not the corpus: document frequency
    of each (stemmed) term, the number of texts and their mean length in terms. Built once
    from a corpus's chunks (:meth:`from_texts`), they let :func:`bm25_matrix` score a
    training batch's few chunks as an index of the whole corpus would."""

    df: dict[str, int]
    n_docs: int
    avgdl: float

    @classmethod
    def from_texts(cls, texts: Sequence[str], config: BM25Config | None = None) -> TermStats:
        if not texts:
            raise ValueError("TermStats.from_texts needs at least one text")
        tokens = BM25Index(config)._tokens(texts, True)
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
    idx = BM25Index(config)
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
    or with ``stats`` from a whole corpus (:class:`TermStats`), as its index would score them."""
    if not texts:
        return np.zeros((len(queries), 0))
    if stats is not None:
        return _stats_matrix(queries, texts, config or BM25Config(), stats)
    idx = BM25Index(config)
    idx._index_texts(texts)
    return np.stack([idx.scores(q) for q in queries]) if queries else np.zeros((0, len(texts)))
