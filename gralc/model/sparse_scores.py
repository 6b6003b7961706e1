"""BM25 scores of questions read from the postings of their terms, never as a corpus-long row.

At a million chunks (3.7 million sentence units) one question's dense BM25 row is 8-30 MB, a
batch of 64 gigabytes, and a search needs of it only the best few rows and the scores of its
candidates. :meth:`~gralc.model.lexical.BM25Scorer.sparse_scores` gives a :class:`PostingsRow`
over the BM25 index's own postings (bm25s's CSC arrays: a term's documents, ascending, with
their scores): :meth:`PostingsRow.take` sums the question's terms at given rows, in bm25s's
order, so every number equals the dense row's bit for bit; :meth:`PostingsRow.top` finds the
best rows exactly (ties aside) with MaxScore (Turtle & Flood 1995): the terms whose best
scores together cannot reach the n-th best of a seed set are read only at the rows the others
post. :class:`SparseScores` stacks Q rows and reads like the dense (Q, N) matrix (``x[i]``,
``x[i, cols]``, ``np.asarray(x)``). bm25s has no such pruning, and an engine that has (PISA,
Lucene) scores with other numbers than the ones the model was trained on.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

#: texts of the rarest terms scored exactly for MaxScore's threshold (at most 1/16 of them)
SEED_ROWS = 8192
#: relative slack on a bound, above float32 summation error
BOUND_SLACK = 1e-5


class Postings:
    """One BM25 index's postings (bm25s's ``data``, ``indices``, ``indptr``: term t's documents
    ``indices[indptr[t]:indptr[t+1]]`` with their scores), each term's documents sorted and its
    best score kept once read.

    >>> p = Postings(np.array([0.5, 2.0, 1.0], np.float32), np.array([4, 1, 3]), np.array([0, 1, 3]), 5)
    >>> p.term(1)[0].tolist(), p.term(1)[2]
    ([1, 3], 2.0)
    """

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, size: int) -> None:
        self.data, self.indices, self.indptr, self.size = data, indices, indptr, size
        self._terms: dict[int, tuple[np.ndarray, np.ndarray, float, float]] = {}
        self._scratch = threading.local()

    def scratch(self, dtype: np.dtype) -> np.ndarray:
        """A zeroed row of one score per text, this thread's (the caller zeroes what it
        touched): no corpus-long allocation a question."""
        row = getattr(self._scratch, "row", None)
        if row is None or row.dtype != dtype:
            row = self._scratch.row = np.zeros(self.size, dtype)
        return row

    def term(self, t: int) -> tuple[np.ndarray, np.ndarray, float, float]:
        """``(documents ascending, their scores, best score, worst score)`` of term ``t``."""
        got = self._terms.get(t)
        if got is None:
            a, b = int(self.indptr[t]), int(self.indptr[t + 1])
            docs, vals = self.indices[a:b], self.data[a:b]
            if len(docs) > 1 and not bool(np.all(docs[1:] > docs[:-1])):
                order = np.argsort(docs, kind="stable")
                docs, vals = docs[order], vals[order]
            got = (docs, vals, float(vals.max()) if len(vals) else 0.0,
                   float(vals.min()) if len(vals) else 0.0)
            self._terms[t] = got
        return got


class PostingsRow:
    """One question's BM25 over ``postings.size`` texts: the sum over its term ids ``terms``
    (query order, repeats included, as bm25s sums them), plus ``extra`` for every text (bm25l /
    bm25+'s non-occurrence score, else None), divided by ``scale`` (the concept match's unit).

    >>> from gralc.model.lexical import BM25Scorer
    >>> row = BM25Scorer.over(["fever cough", "fever", "rash"]).sparse_scores("fever cough")
    >>> row.top(1).tolist(), row.take(np.array([1, 2])).round(3).tolist()
    ([0], [0.212, 0.0])
    """

    def __init__(self, postings: Postings, terms: Sequence[int], dtype: np.dtype,
                 extra: np.generic | None = None, scale: float = 1.0) -> None:
        self.postings, self.terms, self.dtype = postings, list(terms), np.dtype(dtype)
        self.extra, self.scale = extra, scale
        self.size = postings.size
        self._top: dict[tuple[int, bool], np.ndarray] = {}

    def __len__(self) -> int:
        return self.size

    @property
    def default(self) -> float:
        """The score of a text sharing no term with the question."""
        d = np.zeros(1, self.dtype)
        if self.extra is not None:
            d += self.extra
        return float(d[0]) / self.scale

    def _finish(self, acc: np.ndarray) -> np.ndarray:
        if self.extra is not None:
            acc += self.extra
        out = acc.astype(np.float64)
        return out / self.scale if self.scale != 1.0 else out

    def toarray(self) -> np.ndarray:
        """The dense (size,) float64 row, as ``BM25Scorer.scores`` gives it."""
        acc = np.zeros(self.size, self.dtype)
        for t in self.terms:
            docs, vals = self.postings.term(t)[:2]
            acc[docs] += vals  # a term's documents are distinct: bm25s's np.add.at
        return self._finish(acc)

    def take(self, cols: np.ndarray | int) -> np.ndarray | float:
        """Scores at ``cols`` (float64; an int: one float), the dense row's numbers exactly."""
        if np.ndim(cols) == 0:
            return float(self.take(np.asarray([cols]))[0])
        cols = np.asarray(cols, dtype=np.int64)
        acc = np.zeros(len(cols), self.dtype)
        for t in self.terms:
            docs, vals = self.postings.term(t)[:2]
            if len(docs):
                at = np.minimum(np.searchsorted(docs, cols), len(docs) - 1)
                hit = docs[at] == cols
                acc[hit] += vals[at[hit]]
        return self._finish(acc)

    def max(self) -> float:
        """The best score of any text."""
        best = self.top(1)
        return float(self.take(best)[0]) if len(best) else self.default

    def top(self, n: int, positive: bool = False) -> np.ndarray:
        """Rows of the ``n`` highest scores, unordered (``positive``: only those above 0): those
        of the dense row (:func:`~gralc.retrieval.trained.candidates.top_rows`), ties aside.

        Terms are read whole only while their best scores could lift a row into the top ``n``
        (MaxScore); a scorer whose texts all score (bm25l / bm25+) or whose terms can score
        below 0 reads the dense row."""
        key = (n, positive)
        if key not in self._top:  # asked again by the candidate rule after a worker thread
            self._top[key] = self._best(n, positive)
        return self._top[key]

    def _best(self, n: int, positive: bool) -> np.ndarray:
        if n <= 0 or not self.size:
            return np.zeros(0, np.int64)
        uniq, count = np.unique(np.asarray(self.terms, dtype=np.int64), return_counts=True)
        info = [self.postings.term(int(t)) for t in uniq]
        if self.extra is not None or any(lo < 0 for *_, lo in info) or not positive:
            dense = self.toarray()
            rows = np.arange(self.size) if n >= self.size else np.argpartition(-dense, n - 1)[:n]
            return rows[dense[rows] > 0] if positive else rows
        bound = np.array([c * hi for c, (*_, hi, _lo) in zip(count.tolist(), info)])
        theta = self._seed_threshold(n, info)
        essential = np.ones(len(info), bool)
        if theta > 0:  # terms, weakest first, whose bounds together stay below theta
            order = np.argsort(bound, kind="stable")
            weak = np.cumsum(bound[order]) * (1 + BOUND_SLACK) < theta
            essential[order[weak]] = False
        rows, vals = self._essential_scores(info, count, essential)
        if not len(rows):
            return np.zeros(0, np.int64)
        best = np.arange(len(rows)) if n >= len(rows) else np.argpartition(-vals, n - 1)[:n]
        best = best[vals[best] > 0]
        return rows[best].astype(np.int64)

    def _essential_scores(self, info, count: np.ndarray, essential: np.ndarray):
        """``(rows, scores)``: every text an ``essential`` term posts, scored with every term
        (the others read at those rows only); summed term by term (for choosing rows, the
        exact numbers are :meth:`take`'s)."""
        strong = [(docs, vals, c) for (docs, vals, *_), c, e in zip(info, count.tolist(), essential) if e]
        posted = sum(len(d) for d, *_ in strong)
        if posted * 256 < self.size:  # few texts: their union, sorted
            rows = np.unique(np.concatenate([d for d, *_ in strong])) if strong else np.zeros(0, np.int64)
            acc = np.zeros(len(rows), np.float64)
            read = [(d, v, c) for (d, v, *_), c in zip(info, count.tolist())]
        else:  # many: a corpus-long scratch row, its non-zeros
            full = self.postings.scratch(self.dtype)
            for docs, vals, c in strong:
                full[docs] += vals * c
            rows = np.flatnonzero(full)
            read = []
            for (docs, vals, *_), c, e in zip(info, count.tolist(), essential):
                if not e and len(docs) < 4 * len(rows):  # cheaper added whole than looked up
                    full[docs] += vals * c
                elif not e:
                    read.append((docs, vals, c))
            acc = full[rows].astype(np.float64)
            for docs, *_ in info:
                full[docs] = 0  # clean for the next question
        for docs, vals, c in read:
            if len(docs) and len(rows):
                at = np.minimum(np.searchsorted(docs, rows), len(docs) - 1)
                hit = docs[at] == rows
                acc[hit] += vals[at[hit]] * c
        return rows, acc

    def _seed_threshold(self, n: int, info) -> float:
        """A lower bound on the n-th best score: the n-th best exact score among the texts of
        the rarest terms (any texts give one; those holding a rare term score high), at most
        ``SEED_ROWS`` of them."""
        budget = max(n, min(SEED_ROWS, self.size // 16))
        seed: list[np.ndarray] = []
        have = 0
        for j in np.argsort([len(docs) for docs, *_ in info], kind="stable"):
            docs = info[j][0][: budget - have]
            seed.append(docs)
            have += len(docs)
            if have >= budget:
                break
        rows = np.unique(np.concatenate(seed)) if seed else np.zeros(0, np.int64)
        if len(rows) < n:
            return 0.0
        vals = self.take(rows) * self.scale  # back in the postings' unit
        return float(np.partition(vals, len(vals) - n)[len(vals) - n])

    def scaled(self, factor: float) -> PostingsRow:
        """The row with every score divided by ``factor``."""
        return PostingsRow(self.postings, self.terms, self.dtype, self.extra, self.scale * factor)


class SparseScores:
    """Q questions' :class:`PostingsRow` of one set of N texts, read like the dense (Q, N)
    matrix: ``x[i]`` a row, ``x[i, cols]`` scores, ``np.asarray(x)`` the dense float64 matrix.

    >>> from gralc.model.lexical import BM25Scorer
    >>> x = BM25Scorer.over(["fever cough", "rash"]).sparse_matrix(["rash", "cough"])
    >>> x.shape, x[0, 0], np.asarray(x).argmax(axis=1).tolist()
    ((2, 2), 0.0, [1, 0])
    """

    def __init__(self, rows: Sequence[PostingsRow], size: int) -> None:
        self.rows, self.size = list(rows), size
        if any(r.size != size for r in self.rows):
            raise ValueError(f"every row must score {size} texts")

    @property
    def shape(self) -> tuple[int, int]:
        """``(questions, texts)``."""
        return len(self.rows), self.size

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, key):
        if isinstance(key, tuple):
            i, cols = key
            return self.rows[i].take(cols)
        return self.rows[key]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = np.stack([r.toarray() for r in self.rows]) if self.rows else np.zeros((0, self.size))
        return out if dtype is None else out.astype(dtype)

    def scaled(self, factor: float) -> SparseScores:
        """Every score divided by ``factor``."""
        return SparseScores([r.scaled(factor) for r in self.rows], self.size)


__all__ = ["Postings", "PostingsRow", "SparseScores"]
