"""A BM25 index built in blocks of chunks, in memory bounded by the block and the vocabulary.

bm25s builds its score matrix from every tokenised text at once (bm25s issue #5: no incremental
indexing), which at a million chunks holds gigabytes of Python token lists. :func:`write_bm25_blocks`
tokenises a block at a time with the one tokenizer (:class:`~gralc.model.lexical.BM25Scorer`),
keeps each block's (document, term, count) triples on disk and the document frequencies and
lengths in memory, and once the corpus is known writes bm25s's own score matrix (its formulas,
:mod:`bm25s.scoring`) column by column into memory-mapped files: the folder is the one
:meth:`BM25Index.write_to(folder, records=False) <gralc.retrieval.indexes.bm25.BM25Index.write_to>`
writes, opened by :meth:`BM25Index.load` and scoring as an in-memory build of the same texts.
Memory: one block's tokens and triples, plus O(vocabulary) (the term dictionary, bm25s's at
search time too); the score matrix itself is never held.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import bm25s
import numpy as np
from bm25s import scoring

from gralc.atomic import atomic_write, write_text_atomic
from gralc.chunking.chunk import Chunk
from gralc.model.lexical import BM25Config, BM25Scorer, concept_terms
from gralc.runinfo import provenance

#: chunks tokenised at once (a block's token lists and triples are what a build holds)
BLOCK_CHUNKS = 20_000


def write_bm25_blocks(folder: str | Path, chunks: Iterable[Chunk], config: BM25Config | None = None,
                      block: int = BLOCK_CHUNKS, scratch: str | Path | None = None) -> int:
    """Write the BM25 index of ``chunks`` (an iterable, read once, in order: row i = the i-th
    chunk) into the existing empty ``folder``, as ``BM25Index(config)`` indexing them and
    written with ``records=False``; returns the number of chunks. ``scratch``: where the
    blocks' triples wait (a temporary folder by default; removed at the end).

    >>> import tempfile
    >>> from gralc.artefacts import write_artefact
    >>> from gralc.retrieval.indexes.bm25 import BM25Index
    >>> d = Path(tempfile.mkdtemp()) / "bm25"
    >>> with write_artefact(d, "bm25_index") as tmp:
    ...     write_bm25_blocks(tmp, [Chunk("d1", "c0", "metformin lowers glucose", 0, 24),
    ...                             Chunk("d2", "c0", "insulin dosing", 0, 14)], block=1)
    2
    >>> (BM25Index.load(d, records=False).scores("metformin") > 0).tolist()
    [True, False]
    """
    config = config or BM25Config()
    folder = Path(folder)
    owned = scratch is None
    scratch = Path(tempfile.mkdtemp(prefix="gralc-bm25-")) if owned else Path(scratch)
    try:
        builder = _Blocks(config, scratch)
        batch: list[str] = []
        for c in chunks:
            batch.append(concept_terms(c.entity_ids) if config.field == "concepts" else c.text)
            if len(batch) >= block:
                builder.add(batch)
                batch = []
        if batch:
            builder.add(batch)
        if not builder.n_docs:
            raise ValueError("a BM25 index needs at least one chunk")
        builder.write(folder)
        return builder.n_docs
    finally:
        if owned:
            shutil.rmtree(scratch, ignore_errors=True)


class _Blocks:
    """The running state of a block build: tokenizer, term ids, document frequencies and
    lengths; each block's triples in ``scratch`` (sorted by term, then document)."""

    def __init__(self, config: BM25Config, scratch: Path) -> None:
        self.config, self.scratch = config, scratch
        self.scorer = BM25Scorer(config)  # its tokenizer and tokenisation, as an in-memory build
        self.scorer.tokenizer.reset_vocab()
        self.vocab: dict[str, int] = {}
        self.df = np.zeros(1024, np.int64)
        self.lengths: list[np.ndarray] = []
        self.runs: list[Path] = []
        self.n_docs = 0

    def add(self, texts: list[str]) -> None:
        tokens = self.scorer._tokens(texts, True)
        if self.config.ngram == 2:  # a text without any pair still needs a row (as BM25Scorer)
            tokens = [t or ["<none>"] for t in tokens]
        setdefault = self.vocab.setdefault
        ids = np.fromiter((setdefault(t, len(self.vocab)) for doc in tokens for t in doc), np.int64)
        lengths = np.fromiter((len(doc) for doc in tokens), np.int64, len(tokens))
        docs = np.repeat(np.arange(len(tokens), dtype=np.int64), lengths)
        if len(self.vocab) > len(self.df):
            self.df = np.concatenate([self.df, np.zeros(2 * len(self.vocab) - len(self.df), np.int64)])
        # one (term, document) key a pair: counts are term frequencies, sorted by term, then document
        keys, tf = np.unique(ids * len(tokens) + docs, return_counts=True)
        terms, rows = keys // len(tokens), keys % len(tokens)
        np.add.at(self.df, terms, 1)
        run = self.scratch / f"run{len(self.runs):06d}.npz"
        with atomic_write(run, "wb") as f:
            np.savez(f, terms=terms.astype(np.int32), docs=(rows + self.n_docs).astype(np.int64),
                     tf=tf.astype(np.float32))
        self.runs.append(run)
        self.lengths.append(lengths.astype(np.int32))
        self.n_docs += len(tokens)

    def write(self, folder: Path) -> None:
        """The bm25s folder (``bm25/``), the tokenizer's vocabulary and ``config.json``."""
        from gralc.retrieval.indexes.bm25 import VOCAB_FILE
        from gralc.retrieval.indexes.dense import CONFIG_FILE

        cfg = self.config
        ref = bm25s.BM25(k1=cfg.k1, b=cfg.b, method=cfg.method)  # bm25s's own settings and dtypes
        n_vocab, n = len(self.vocab), self.n_docs
        df = self.df[:n_vocab]
        lengths = np.concatenate(self.lengths)
        avg = np.array(lengths).mean()  # as bm25s: the mean token count of a text
        idf_fn = scoring._select_idf_scorer(ref.idf_method)
        idf = np.array([idf_fn(int(d), N=n) if d else 0.0 for d in df], dtype=ref.dtype)
        tfc_fn = scoring._select_tfc_scorer(ref.method)
        nonoccurrence = None
        if ref.method in ref.methods_requiring_nonoccurrence:
            nonoccurrence = scoring._build_nonoccurrence_array(
                dict(enumerate(df.tolist())), n, idf_fn, tfc_fn, avg, avg, ref.k1, ref.b, ref.delta, ref.dtype)
        nnz = int(df.sum())
        indptr = np.zeros(n_vocab + 1, np.int64)
        np.cumsum(df, out=indptr[1:])
        out = folder / "bm25"
        out.mkdir()
        index_dtype = np.int32 if nnz < 2**31 else np.int64
        with atomic_write(out / "indptr.csc.index.npy", "wb") as f:
            np.save(f, indptr.astype(index_dtype))
        for name, dtype in (("data", ref.dtype), ("indices", ref.int_dtype)):
            np.lib.format.open_memmap(out / f"{name}.csc.index.npy", "w+", np.dtype(dtype), (nnz,)).flush()
        cursor = indptr[:-1].copy()  # the next free slot of each term's column
        for run in self.runs:
            with np.load(run) as r:
                terms, docs, tf = r["terms"].astype(np.int64), r["docs"], r["tf"]
            scores = idf[terms] * tfc_fn(tf_array=tf, l_d=lengths[docs], l_avg=avg, k1=ref.k1, b=ref.b,
                                         delta=ref.delta)
            if nonoccurrence is not None:
                scores = scores - nonoccurrence[terms]
            counts = np.bincount(terms, minlength=n_vocab)
            first = np.searchsorted(terms, terms)  # terms sorted: a term's first entry in the run
            slots = cursor[terms] + np.arange(len(terms)) - first
            cursor += counts
            # mapped per run and dropped again: written pages go to the page cache, not the heap
            data = np.load(out / "data.csc.index.npy", mmap_mode="r+")
            data[slots] = scores
            data.flush()
            indices = np.load(out / "indices.csc.index.npy", mmap_mode="r+")
            indices[slots] = docs
            indices.flush()
            del data, indices
        if nonoccurrence is not None:
            with atomic_write(out / "nonoccurrence_array.index.npy", "wb") as f:
                np.save(f, nonoccurrence)
        vocab = dict(self.vocab)
        vocab.setdefault("", n_vocab)  # bm25s's empty token (index(create_empty_token=True))
        write_text_atomic(out / "vocab.index.json", json.dumps(vocab, ensure_ascii=False))
        params = dict(k1=ref.k1, b=ref.b, delta=ref.delta, method=ref.method, idf_method=ref.idf_method,
                      dtype=ref.dtype, int_dtype=ref.int_dtype, num_docs=n, version=bm25s.__version__,
                      backend=ref.backend)
        write_text_atomic(out / "params.index.json", json.dumps(params, indent=4))
        self.scorer.tokenizer.save_vocab(str(folder), VOCAB_FILE)
        meta = {"format": "gralc.bm25_index/1", "bm25": asdict(cfg), "n_docs": n, "records": False,
                "bm25s_version": bm25s.__version__, "built_in_blocks": len(self.runs), **provenance()}
        write_text_atomic(folder / CONFIG_FILE, json.dumps(meta, indent=2))
