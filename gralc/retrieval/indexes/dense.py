"""Dense chunk index: FAISS inner product over L2-normalised float32 vectors (= cosine).

Directory layout written by :meth:`ChunkIndex.save` (atomically)::

    index.faiss   the FAISS index (faiss.write_index) of an hnsw or ivf index; a flat index has
                  none: it is searched over vectors.npy itself (``faiss.knn``), one copy
    vectors.npy   the normalised (n, d) float32 vectors, so any index type can be rebuilt/merged
    chunks.jsonl  one Chunk.to_dict() per line, without embedding; line i = FAISS row i
    config.json   index config, encoder id, pipeline config, gralc version, git hash

Every file is listed with its size and SHA-256 in the artefact's manifest and verified by
:meth:`ChunkIndex.load` (:func:`gralc.artefacts.verify_artefact`): an edited, permuted or
reordered file would return the wrong texts for the vectors.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gralc.artefacts import verify_artefact, write_artefact
from gralc.atomic import atomic_path, atomic_write, write_text_atomic
from gralc.chunking.chunk import Chunk
from gralc.retrieval.indexes.folder import (
    ChunkRecords,
    read_json,
    read_rows,
    require,
    write_chunks,
    write_concat,
)
from gralc.retrieval.ranking import rank_chunks
from gralc.runinfo import provenance
from gralc.safe_load import file_sha256, json_int

if TYPE_CHECKING:
    import faiss


def _faiss():
    """FAISS, imported where an index is built, searched or read: training and lexical
    search (``gralc.retrieval.indexes.bm25`` reads this module's file helpers) never load it."""
    import faiss

    return faiss

INDEX_FILE, VECTORS_FILE, CHUNKS_FILE, CONFIG_FILE = (
    "index.faiss", "vectors.npy", "chunks.jsonl", "config.json",
)
KINDS = ("flat", "hnsw", "ivf")


@dataclass
class IndexConfig:
    """``kind``: flat (exact, default) | hnsw | ivf. ``ivf_nlist`` None = about 4 sqrt(n).

    >>> IndexConfig(kind="hnsw").hnsw_m
    32
    """

    kind: str = "flat"
    #: HNSW: links per node
    hnsw_m: int = 32
    #: HNSW: candidates kept while searching (recall vs speed)
    ef_search: int = 64
    ivf_nlist: int | None = None
    #: IVF: lists searched per question (recall vs speed)
    nprobe: int = 16

    def __post_init__(self) -> None:  # checked when the settings are read, before any work
        if self.kind not in KINDS:
            raise ValueError(f"unknown index kind {self.kind!r}: use one of {KINDS}")
        for name in ("hnsw_m", "ef_search", "nprobe"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"index.{name} must be an integer >= 1, got {getattr(self, name)!r}")


#: what :meth:`ChunkIndex.write_to` writes since the files are bound by digest (3: a flat
#: index without index.faiss)
CHUNK_INDEX_FORMAT = "gralc.chunk_index/3"
#: the files whose rows are the same chunks, in the same order (index.faiss: hnsw and ivf only)
BOUND_FILES = (INDEX_FILE, VECTORS_FILE, CHUNKS_FILE)


def bound_files(meta: dict) -> tuple[str, ...]:
    """The :data:`BOUND_FILES` an index with ``meta`` (its ``config.json``) holds: a flat
    index keeps no ``index.faiss``.

    >>> bound_files({"format": CHUNK_INDEX_FORMAT, "index": {"kind": "flat"}})
    ('vectors.npy', 'chunks.jsonl')
    """
    kind = (meta.get("index") or {}).get("kind") if isinstance(meta.get("index"), dict) else None
    if kind == "flat":
        return BOUND_FILES[1:]
    return BOUND_FILES


def check_bound_files(directory: Path, meta: dict) -> None:
    """ValueError unless ``meta`` (the index's ``index.json``) records, for each of
    :data:`BOUND_FILES`, the SHA-256 its manifest lists (and the manifest verified against the
    file): a FAISS index or vectors of another index, or a reordered chunk list, cannot pass
    with only the manifest signed again. An index written before (format 1) is refused too:
    rebuilding it records the digests.

    Example: ``check_bound_files(Path("index/"), read_json(Path("index/config.json")))`` ->
    ``None`` for an index as :meth:`ChunkIndex.save` wrote it; a ``vectors.npy`` of another
    index copied in (manifest signed again) -> ValueError naming it.
    """
    from gralc.artefacts import listed_files, read_marker

    where = directory / CONFIG_FILE
    if not isinstance(meta, dict) or meta.get("format") != CHUNK_INDEX_FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise ValueError(f"{where}: format {got!r}, not {CHUNK_INDEX_FORMAT!r} (an index written "
                         "before its files were bound by digest, or edited): rebuild the index")
    recorded, listed = meta.get("digests"), listed_files(read_marker(directory)) or {}
    for name in bound_files(meta):
        entry = listed.get(name)
        want = recorded.get(name) if isinstance(recorded, dict) else None
        if not isinstance(entry, dict) or not isinstance(want, str) or entry.get("sha256") != want:
            raise ValueError(f"{directory / name} is not the file this index was built with ({where} "
                             f"records another SHA-256 for it): files of two indexes were mixed, or "
                             "a file was replaced; rebuild the index")


class VectorsIP:
    """A flat index's search: FAISS's exact inner product (``faiss.knn``, the code
    ``IndexFlatIP`` runs) straight over its owner's ``vectors`` (in memory, or memory-mapped
    from ``vectors.npy``), so the vectors are held and stored once.

    >>> ix = ChunkIndex(2); ix.add([Chunk("d", "c", "x", 0, 1, embedding=np.array([3, 4], "float32"))])
    >>> type(ix.index).__name__, ix.index.ntotal, ix.index.search(np.array([[1, 0]], "float32"), 1)[1].tolist()
    ('VectorsIP', 1, [[0]])
    """

    is_trained = True

    def __init__(self, owner: ChunkIndex) -> None:
        self.owner = owner

    @property
    def ntotal(self) -> int:
        """How many vectors the owner holds (FAISS's name for it)."""
        return len(self.owner.vectors)

    def add(self, vectors: np.ndarray) -> None:
        """Nothing to do: the owner appends ``vectors`` to its own."""

    def search(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``(scores, rows)`` (Q, k) of the ``k`` best inner products of each row of ``q``, as
        ``IndexFlatIP.search`` returns them."""
        faiss = _faiss()
        return faiss.knn(q, self.owner.vectors, k, faiss.METRIC_INNER_PRODUCT)


# ----- the index ---------------------------------------------------------------------------
class ChunkIndex:
    """FAISS index over chunk embeddings; FAISS row i is ``chunks[i]``.

    >>> index = ChunkIndex(2)
    >>> index.add([Chunk("d1", "c0", "x", 0, 1, embedding=np.array([1, 0], "float32")),
    ...            Chunk("d2", "c0", "y", 0, 1, embedding=np.array([0, 1], "float32"))])
    >>> [(c.doc_id, s) for c, s in index.search(np.array([[1, 0]], "float32"), k=1)[0]]
    [('d1', 1.0)]
    """

    def __init__(self, dim: int, config: IndexConfig | None = None) -> None:
        self.config = config or IndexConfig()
        if self.config.kind not in KINDS:
            raise ValueError(f"unknown index kind {self.config.kind!r}: use one of {KINDS}")
        self.dim = dim
        self.chunks: Sequence[Chunk] = []  # a list, or ChunkRecords of a loaded index
        self.vectors = np.zeros((0, dim), dtype=np.float32)
        self.index: faiss.Index | None = None
        self.nlist: int | None = None  # resolved IVF nlist
        self._keys: set[tuple[str, str]] | None = set()

    def __len__(self) -> int:
        return len(self.chunks)

    def _build(self, n: int) -> faiss.Index:
        faiss, cfg = _faiss(), self.config
        if cfg.kind == "flat":
            return VectorsIP(self)
        if cfg.kind == "hnsw":
            return faiss.IndexHNSWFlat(self.dim, cfg.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        # about 4 sqrt(n) lists, capped so each list gets the >= 39 training points FAISS wants
        self.nlist = cfg.ivf_nlist or max(1, min(round(4 * math.sqrt(n)), n // 39))
        if n < self.nlist:
            raise ValueError(f"IVF with nlist={self.nlist} needs >= {self.nlist} vectors, got {n}")
        quantizer = faiss.IndexFlatIP(self.dim)
        return faiss.IndexIVFFlat(quantizer, self.dim, self.nlist, faiss.METRIC_INNER_PRODUCT)

    def _apply_search_params(self) -> None:
        if isinstance(self.index, VectorsIP):
            return
        if self.config.kind == "hnsw":
            self.index.hnsw.efSearch = self.config.ef_search
        elif self.config.kind == "ivf":
            self.index.nprobe = self.config.nprobe

    def add(self, chunks: Sequence[Chunk]) -> None:
        """Add chunks (each with a (dim,) embedding). IVF trains on the FIRST batch added."""
        if not chunks:
            return
        keys = [(c.doc_id, c.chunk_id) for c in chunks]
        if self._keys is None:  # a loaded index: its records in memory before it grows
            self.chunks = list(self.chunks)
            self._keys = {(c.doc_id, c.chunk_id) for c in self.chunks}
        for c in chunks:
            if c.embedding is None:
                raise ValueError(f"chunk {c.chunk_id!r} has no embedding: encode chunks first")
            if c.embedding.shape != (self.dim,):
                raise ValueError(
                    f"chunk {c.chunk_id!r} embedding has shape {c.embedding.shape}, "
                    f"index expects ({self.dim},)"
                )
        dup = self._keys.intersection(keys) or {k for k, n in Counter(keys).items() if n > 1}
        if dup:
            raise ValueError(f"duplicate chunk ids (doc_id, chunk_id): e.g. {min(dup)}")
        vecs = np.ascontiguousarray(np.stack([c.embedding for c in chunks]), dtype=np.float32)
        bad = ~np.isfinite(vecs).all(axis=1) | ~vecs.any(axis=1)
        if bad.any():
            ids = [c.chunk_id for c, b in zip(chunks, bad) if b]
            raise ValueError(f"chunks {ids[:5]} have zero or non-finite embeddings")
        _faiss().normalize_L2(vecs)
        if self.index is None:
            self.index = self._build(len(vecs))
            if not self.index.is_trained:
                self.index.train(vecs)
            self._apply_search_params()
        self.index.add(vecs)
        self._keys.update(keys)
        self.vectors = np.concatenate([self.vectors, vecs])
        self.chunks.extend(replace(c, embedding=None) for c in chunks)

    def search(self, query_vecs: np.ndarray, k: int) -> list[list[tuple[Chunk, float]]]:
        """Top-k ``(chunk, cosine score)`` per query row of ``query_vecs`` (Q, d).

        Order: score desc, then doc_id desc, chunk_id desc (:func:`rank_chunks`); the search
        widens until every candidate tied with the k-th score is seen, so ties are resolved
        by that rule, not by FAISS internals.
        """
        q = np.array(query_vecs, dtype=np.float32, ndmin=2, copy=True)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ValueError(f"query_vecs must have shape (Q, {self.dim}), got {q.shape}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        n = len(self.chunks)
        if n == 0:
            return [[] for _ in range(len(q))]
        _faiss().normalize_L2(q)
        k = min(k, n)
        width = min(n, k + 1)  # one extra to see whether the k-th score is tied
        all_scores, all_ids = self.index.search(q, width)
        out = []
        for row, scores, ids in zip(q, all_scores, all_ids):
            w = width
            while True:
                s, i = scores[ids >= 0], ids[ids >= 0]
                if w >= n or len(s) <= k or s[-1] < s[k - 1]:
                    break
                w = min(n, w * 2)
                scores, ids = (a[0] for a in self.index.search(row[None], w))
            pairs = rank_chunks((self.chunks[j], float(v)) for j, v in zip(i, s))
            out.append(pairs[:k])
        return out

    def search_rows(self, query_vecs: np.ndarray, n: int) -> list[np.ndarray]:
        """Per query row of ``query_vecs`` (Q, d) the FAISS rows of its ``n`` nearest chunks
        (fewer when the index is smaller; approximate for HNSW / IVF), unordered: the dense
        candidates of a two-stage search."""
        q = np.array(query_vecs, dtype=np.float32, ndmin=2, copy=True)
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ValueError(f"query_vecs must have shape (Q, {self.dim}), got {q.shape}")
        if not len(self.chunks) or n < 1:
            return [np.zeros(0, np.int64) for _ in range(len(q))]
        _faiss().normalize_L2(q)
        _, ids = self.index.search(q, min(n, len(self.chunks)))
        return [row[row >= 0].astype(np.int64) for row in ids]

    # ----- persistence --------------------------------------------------------------------
    def save(
        self,
        directory: str | os.PathLike[str],
        encoder_id: str | None = None,
        pipeline_config: dict[str, Any] | None = None,
        force: bool = False,
    ) -> Path:
        """Write the index directory atomically (see module docstring and
        :mod:`gralc.artefacts`: a folder holding other files needs ``force``)."""
        with write_artefact(directory, "chunk_index", force) as tmp:
            self.write_to(tmp, encoder_id, pipeline_config)
        return Path(directory)

    def write_to(self, folder: Path, encoder_id: str | None = None,
                 pipeline_config: dict[str, Any] | None = None) -> None:
        """Write the index files into an existing (temporary) ``folder``."""
        if self.index is None:
            raise ValueError("cannot save an empty index: add chunks first")
        if not isinstance(self.index, VectorsIP):  # a flat index is its vectors.npy
            with atomic_path(folder / INDEX_FILE) as tmp:
                _faiss().write_index(self.index, str(tmp))
        with atomic_write(folder / VECTORS_FILE, "wb") as f:
            np.save(f, self.vectors)
        write_chunks(folder / CHUNKS_FILE, self.chunks)
        self._write_config(folder, len(self.chunks), encoder_id, pipeline_config)

    def _write_config(self, folder: Path, n: int, encoder_id: str | None, pipeline_config: dict | None) -> None:
        meta = {
            "format": CHUNK_INDEX_FORMAT,
            "index": asdict(self.config),
            "resolved_ivf_nlist": self.nlist,
            "dim": self.dim,
            "n_vectors": n,
            "encoder_id": encoder_id,
            "pipeline_config": pipeline_config,
            "faiss_version": _faiss().__version__,
            **provenance(),
        }
        # the three files belong together (row i of each is chunk i): each one's digest, so a
        # file of another index, or a reordered chunk list, is refused even under a re-signed manifest
        meta["digests"] = {name: file_sha256(folder / name) for name in bound_files(meta)}
        write_text_atomic(folder / CONFIG_FILE, json.dumps(meta, indent=2))

    @classmethod
    def write_joined(cls, folder: Path, parts: Sequence[ChunkIndex], encoder_id: str | None = None,
                     pipeline_config: dict[str, Any] | None = None, config: IndexConfig | None = None,
                     block_rows: int = 8192) -> int:
        """Write into ``folder`` (an index being written) one index of the ``parts``' chunks in
        order (loaded from their folders; ``faiss_index=False`` spares reading their FAISS
        files), streamed: their vectors and chunk lines copied in blocks, a FAISS index (hnsw /
        ivf; ``config``, default the first part's) filled a block at a time from the written
        vectors. Memory: a block, the FAISS index itself (none for flat) and 8 bytes a chunk for
        the duplicate check. Returns the number of chunks.

        Example: ``ChunkIndex.write_joined(tmp, [ChunkIndex.load(d, faiss_index=False) for d in
        shard_dirs])`` -> ``97552``; ``ChunkIndex.load`` of the folder then answers as one
        index built over all the chunks (:mod:`gralc.shard_index`).
        """
        import hashlib

        if not parts:
            raise ValueError("merge needs at least one index")
        dims = {ix.dim for ix in parts}
        if len(dims) != 1:
            raise ValueError(f"cannot merge indexes of different dimensions {sorted(dims)}")
        out = cls(dims.pop(), config or parts[0].config)
        seen: set[int] = set()
        for ix in parts:  # a chunk id twice would answer with the wrong text
            for c in ix.chunks:
                key = int.from_bytes(hashlib.blake2b(f"{c.doc_id}\0{c.chunk_id}".encode(), digest_size=8).digest(), "little")
                if key in seen:
                    raise ValueError(f"duplicate chunk ids (doc_id, chunk_id): e.g. {(c.doc_id, c.chunk_id)}")
                seen.add(key)
        del seen
        n, _ = write_concat(folder / VECTORS_FILE, [ix.vectors for ix in parts], dtype=np.float32)
        with atomic_write(folder / CHUNKS_FILE, "wb") as f:  # the parts' lines, byte for byte
            for ix in parts:
                path = ix.chunks.path if isinstance(ix.chunks, ChunkRecords) else None
                if path is None:
                    raise ValueError("write_joined reads the parts' chunks.jsonl: load them from their folders")
                with open(path, "rb") as src:
                    for block in iter(lambda: src.read(1 << 22), b""):
                        f.write(block)
        vectors = np.load(folder / VECTORS_FILE, mmap_mode="r")  # read in blocks (read_rows)
        if out.config.kind != "flat":
            out.index = out._build(n)
            if not out.index.is_trained:  # IVF: trained on up to 256 rows a list, evenly spread
                step = max(1, n // (256 * (out.nlist or 1)))
                out.index.train(np.concatenate([read_rows(vectors, s, s + block_rows)[(-s) % step :: step]
                                                for s in range(0, n, block_rows)]))
            for start in range(0, n, block_rows):
                out.index.add(read_rows(vectors, start, start + block_rows))
            with atomic_path(folder / INDEX_FILE) as tmp:
                _faiss().write_index(out.index, str(tmp))
            out.index = None
        del vectors
        out._write_config(folder, n, encoder_id, pipeline_config)
        return n

    @classmethod
    def load(cls, directory: str | os.PathLike[str], faiss_index: bool = True) -> ChunkIndex:
        """Read a directory written by :meth:`save`; errors name the missing/corrupt file.
        ``faiss_index=False``: its FAISS file is not read, searches run exactly over the
        vectors (a merge's part: only its records and vectors are read)."""
        d = Path(directory)
        if not d.is_dir():
            raise FileNotFoundError(f"index directory {d} does not exist")
        verify_artefact(d)  # every file as written (gralc.artefacts), before any answer
        meta = read_json(d / CONFIG_FILE)
        check_bound_files(d, meta)
        try:
            self = cls(json_int(meta["dim"], f"{d / CONFIG_FILE}: dim", 1), IndexConfig(**meta["index"]))
        except (KeyError, TypeError) as e:
            raise ValueError(f"{d / CONFIG_FILE}: missing or invalid field ({e})") from e
        self.nlist = meta.get("resolved_ivf_nlist")
        self.chunks = ChunkRecords(d / CHUNKS_FILE)  # parsed when asked for
        require(d / VECTORS_FILE)
        try:
            # memory-mapped: a search reads the rows of its candidates only
            self.vectors = np.load(d / VECTORS_FILE, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as e:
            raise ValueError(f"{d / VECTORS_FILE}: corrupt vectors file ({e})") from e
        if self.config.kind == "flat" or not faiss_index:  # flat: searched over vectors.npy itself
            self.index = VectorsIP(self)
        else:
            require(d / INDEX_FILE)
            try:
                self.index = _faiss().read_index(str(d / INDEX_FILE))
            except RuntimeError as e:
                raise ValueError(f"{d / INDEX_FILE}: corrupt FAISS index ({e})") from e
        sizes = {"chunks": len(self.chunks), "vectors": len(self.vectors), "faiss": self.index.ntotal}
        if len(set(sizes.values())) != 1 or self.vectors.shape[1:] != (self.dim,):
            raise ValueError(f"index directory {d} is inconsistent: sizes {sizes}, dim {self.dim}")
        self._keys = None  # read from the chunk records when chunks are added
        self._apply_search_params()
        return self
