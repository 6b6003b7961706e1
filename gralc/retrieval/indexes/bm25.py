"""Lexical chunk index: BM25 (bm25s) with an English Snowball stemmer and English stopwords.

The scoring core (settings, tokenisation, scores, corpus term statistics) is
:mod:`gralc.model.lexical`, which the model's score inputs read too; :class:`BM25Index` adds
the chunk records, top-k search and the folder on disk. The tokenizer's vocabulary is saved
with the index: a query tokenised with a fresh vocabulary would map words to the wrong ids
(xhluca/bm25s#91).

Directory layout::

    bm25/                 bm25s.BM25.save (score matrix + vocab)
    vocab.tokenizer.json  the tokenizer's vocabulary
    chunks.jsonl          one Chunk per line (row i = BM25 document i); none inside an index
    config.json           BM25 parameters, tokenizer settings, gralc version, git hash, count
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

import bm25s
import numpy as np

from gralc.artefacts import verify_artefact, write_artefact
from gralc.atomic import write_text_atomic
from gralc.chunking.chunk import Chunk
from gralc.model.lexical import (  # noqa: F401  (the core's names, re-exported)
    BM25Config,
    BM25Scorer,
    TermStats,
    bm25_matrix,
    concept_terms,
)
from gralc.retrieval.indexes.dense import CHUNKS_FILE, CONFIG_FILE
from gralc.retrieval.indexes.folder import read_chunks, read_json, require, write_chunks
from gralc.retrieval.ranking import rank_chunks
from gralc.runinfo import provenance
from gralc.safe_load import json_int

VOCAB_FILE = "vocab.tokenizer.json"


class BM25Index(BM25Scorer):
    """BM25 over chunk texts; document i is ``chunks[i]``.

    >>> bm25 = BM25Index(); bm25.index([Chunk("d1", "c0", "metformin lowers glucose", 0, 24),
    ...                                 Chunk("d2", "c0", "insulin dosing", 0, 14)])
    >>> [(c.doc_id, round(s, 3)) for c, s in bm25.search(["metformin"], k=1)[0]]
    [('d1', 0.254)]
    """

    def __init__(self, config: BM25Config | None = None) -> None:
        super().__init__(config)
        self.chunks: list[Chunk] = []

    def index(self, chunks: Sequence[Chunk]) -> None:
        """Build the index over ``chunks`` (replaces any previous content)."""
        if not chunks:
            raise ValueError("BM25Index.index needs at least one chunk")
        if self.config.field == "concepts":
            self._index_texts([concept_terms(c.entity_ids) for c in chunks])
        else:
            self._index_texts([c.text for c in chunks])
        self.chunks = [replace(c, embedding=None) for c in chunks]

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

    def save(self, directory: str | os.PathLike[str], force: bool = False) -> Path:
        """Write the index directory atomically (see module docstring and
        :mod:`gralc.artefacts`: a folder holding other files needs ``force``)."""
        with write_artefact(directory, "bm25_index", force) as tmp:
            self.write_to(tmp)
        return Path(directory)

    def write_to(self, folder: Path, records: bool = True) -> None:
        """Write the index files into an existing (temporary) ``folder``; ``records=False``:
        without the chunk records (a BM25 inside an index, whose own chunk list holds them)."""
        if not self.chunks:
            raise ValueError("cannot save an empty BM25 index")
        meta = {"format": "gralc.bm25_index/1", "bm25": asdict(self.config), "n_docs": len(self.chunks),
                "records": records, "bm25s_version": bm25s.__version__, **provenance()}
        self.retriever.save(str(folder / "bm25"))
        self.tokenizer.save_vocab(str(folder), VOCAB_FILE)
        if records:
            write_chunks(folder / CHUNKS_FILE, self.chunks)
        write_text_atomic(folder / CONFIG_FILE, json.dumps(meta, indent=2))

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
        if meta.get("records", True) is False:
            if records:
                raise ValueError(f"{d} keeps no chunk records (a BM25 inside an index: the index's "
                                 f"{CHUNKS_FILE} holds them); load it with records=False")
            self._size = json_int(meta.get("n_docs"), f"{d / CONFIG_FILE}: n_docs", minimum=1)
        elif records:
            self.chunks = read_chunks(d / CHUNKS_FILE)
            self._size = len(self.chunks)
        else:
            self._size = count_lines(d / CHUNKS_FILE)
        if self.retriever.scores["num_docs"] != self._size:
            raise ValueError(f"{d}: BM25 holds {self.retriever.scores['num_docs']} documents, "
                             f"{CHUNKS_FILE} {self._size} chunks")
        return self


def count_lines(path: Path) -> int:
    """Lines of a text file, read in blocks.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "a.jsonl"; _ = f.write_text("{}\\n{}\\n")
    >>> count_lines(f)
    2
    """
    require(path)
    n = 0
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            n += block.count(b"\n")
    return n
