"""What a trained model's score reads of each indexed chunk besides its vector: the concepts
inside it (their GAT outputs u', for kg_prox), its sentence units (sentence evidence) and its
token vectors as codes (late interaction), kept per chunk row
(:class:`~gralc.retrieval.trained.ragged.Ragged`) and memory-mapped at load. Concept vectors are
stored once per batch of documents (``concepts.npy``, float16; ids in chunks and units), unit
vectors as int8 (:class:`Int8Rows`), unit texts as character spans cut from the index's chunk
texts when a merge rebuilds their BM25 (``units/texts.json`` keeps the few no chunk holds whole).

Built batch by batch (:meth:`ChunkTable.add`); token vectors are held exactly until
``codec.train_tokens`` of them have arrived, the codec is trained on those, and from then on
every batch is stored as codes (:mod:`gralc.retrieval.trained.token_store`; too few tokens for a
codec: float16). :meth:`ChunkTable.gather` turns chunk rows into the
:class:`~gralc.model.chunk_set.ChunkSet` the model scores. The layout: docs/inference.md
("Under the hood: the serving stack").
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gralc.atomic import atomic_write, write_text_atomic
from gralc.chunking.chunk import Chunk
from gralc.model.chunk_set import ChunkSet
from gralc.retrieval.indexes.bm25_blocks import write_bm25_blocks
from gralc.retrieval.trained.ragged import Ragged
from gralc.retrieval.trained.token_codec import TokenCodec, TokenCodecConfig
from gralc.retrieval.trained.token_store import TokenStore, train_codec

logger = logging.getLogger(__name__)
TABLE_FILE, UNITS_DIR, TOKENS_DIR, CONCEPTS_FILE = "table.json", "units", "tokens", "concepts.npy"
FORMAT = "gralc.chunk_table/3"
SPANS_FILE, TEXTS_FILE = "spans.npy", "texts.json"
#: fewer token vectors than this and a codec is not trained (FAISS's 39 points per centroid)
MIN_CODEC_TOKENS = 256 * 39


@dataclass
class Int8Rows:
    """Unit-length vectors stored as int8 with one float16 scale a row (``max |x| / 127``):
    half of float16's bytes; a component moves by at most half a step (``max |x| / 254``, about
    1e-3 for a 384-d unit vector), a cosine by about 1e-4. Reading ``rows[i]`` gives float32.

    >>> x = np.array([[0.6, -0.8], [1.0, 0.0]], np.float32)
    >>> r = Int8Rows.encode(x); r.codes.tolist(), bool(np.abs(r[np.arange(2)] - x).max() < 4e-3)
    ([[95, -127], [127, 0]], True)
    """

    codes: np.ndarray  # (n, d) int8
    scales: np.ndarray  # (n,) float16

    @classmethod
    def encode(cls, x: np.ndarray) -> Int8Rows:
        """Rows of ``x`` (n, d) as codes and scales."""
        x = np.asarray(x, dtype=np.float32).reshape(len(x), -1)
        scales = (np.abs(x).max(axis=1, initial=0.0) / 127).astype(np.float16)
        step = np.where(scales > 0, scales, 1).astype(np.float32)[:, None]
        return cls(np.clip(np.rint(x / step), -127, 127).astype(np.int8), scales)

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows) -> np.ndarray:
        return np.asarray(self.codes[rows], dtype=np.float32) * np.asarray(
            self.scales[rows], dtype=np.float32)[..., None]

    @classmethod
    def concat(cls, parts: list[Int8Rows]) -> Int8Rows:
        """The rows of ``parts`` in order, as one table."""
        return cls(np.concatenate([np.asarray(p.codes) for p in parts]),
                   np.concatenate([np.asarray(p.scales) for p in parts]))

    def save(self, folder: Path) -> None:
        """``vectors.npy`` (codes) and ``scales.npy`` in ``folder``."""
        for name, a in (("vectors.npy", self.codes), ("scales.npy", self.scales)):
            with atomic_write(folder / name, "wb") as f:
                np.save(f, np.ascontiguousarray(a))

    @classmethod
    def load(cls, folder: Path, mmap: bool) -> Int8Rows:
        """What :meth:`save` wrote; codes or scales of another type or length are an error
        naming the file."""
        codes, scales = _npy(folder / "vectors.npy", mmap), _npy(folder / "scales.npy", mmap)
        if codes.dtype != np.int8 or codes.ndim != 2:
            raise ValueError(f"{folder / 'vectors.npy'}: expected (units, dim) int8 codes, got "
                             f"{codes.dtype} {codes.shape}: rebuild the index")
        if scales.dtype != np.float16 or scales.shape != (len(codes),):
            raise ValueError(f"{folder / 'scales.npy'}: expected ({len(codes)},) float16 scales, got "
                             f"{scales.dtype} {scales.shape}: rebuild the index")
        return cls(codes, scales)


@dataclass
class UnitTable:
    """Sentence units: ``vectors`` (U, d) as :class:`Int8Rows`, ``entities`` (by unit: ids into the table's
    ``concepts``), ``pairs`` (unit rows by chunk), ``chunks`` (chunk rows by unit), :attr:`bm25`
    their lexical index (loaded, or built from ``records`` when first asked for: a table that
    is only written never holds it, :meth:`ChunkTable.save` writes it in blocks).

    Example: ``table.units.vectors.shape`` -> ``(U, d)``: one vector per sentence unit of the
    indexed chunks (``table``: a :class:`ChunkTable` of a model that scores sentence evidence).
    """

    vectors: Int8Rows
    entities: Ragged
    pairs: Ragged
    chunks: Ragged
    built: object = None  # the units' BM25Index once loaded or built
    records: list[Chunk] | None = None  # what it is built from

    @property
    def bm25(self):
        """The units' BM25 (:class:`~gralc.retrieval.indexes.bm25.BM25Index`, scores only)."""
        if self.built is None:
            from gralc.retrieval.indexes.bm25 import BM25Index

            if self.records is None:
                raise ValueError("the sentence units' BM25 is neither loaded nor buildable (no unit records)")
            self.built = BM25Index()
            self.built.index(self.records)
        return self.built


class ChunkTable:
    """Per-chunk score inputs of K chunks (see the module docstring).

    Example: ``ChunkTable.load(Path("index/"), n_chunks).gather(index.vectors, rows)`` -> ``(the
    ChunkSet of the candidate chunk rows, their sentence-unit rows)``, what the exact score reads.
    """

    def __init__(self, codec: TokenCodecConfig | TokenCodec | None = None) -> None:
        """``codec``: how token vectors are stored (a config, trained on the corpus's first
        tokens; or a trained codec, e.g. one shared by the shards of a build)."""
        self.codec_config = codec.config if isinstance(codec, TokenCodec) else (codec or TokenCodecConfig())
        self._codec = codec if isinstance(codec, TokenCodec) else None
        self.n_chunks = 0
        # concepts: one float16 table, chunks and units hold ids (int32) into it
        self._concepts: list[np.ndarray] = []
        self._n_concepts = 0
        self.concepts: np.ndarray | None = None
        self._entities: list[Ragged] = []
        self.entities: Ragged | None = None
        # units, while building
        self._unit_vectors: list[Int8Rows] = []
        self._unit_entities: list[Ragged] = []
        self._unit_pairs: list[np.ndarray] = []
        self.unit_chunks: list[Chunk] = []
        self.units: UnitTable | None = None
        self.has_units = False
        # tokens: exact until the codec is trained, then codes
        self._backlog: list[tuple[torch.Tensor, torch.Tensor, int]] = []
        self._backlog_tokens = 0
        self.tokens: TokenStore | None = None
        self.has_tokens = False

    @property
    def codec(self) -> TokenCodec | None:
        """The trained token codec (None until enough tokens arrived or :meth:`finish`)."""
        return self._codec

    # ----- building -------------------------------------------------------------------------
    def add(self, made: ChunkSet, unit_chunks: list[Chunk] | None = None) -> None:
        """Append one batch of chunks (what the model made of a batch of documents); with
        sentence units, ``unit_chunks`` are their records (texts for their BM25)."""
        k = made.n_chunks
        u = made.units
        ent = F.normalize(made.entity_vectors.detach().float(), dim=-1).cpu().numpy()
        uent = (F.normalize(u.entity_vectors.detach().float(), dim=-1).cpu().numpy()
                if u is not None else ent[:0])
        ids = self._add_concepts(np.concatenate([ent, uent]))
        self._entities.append(Ragged.from_groups(ids[: len(ent)], made.entity_chunk.cpu().numpy(), k))
        if u is not None:
            n_units = u.n_chunks
            self.has_units = True
            self._unit_vectors.append(
                Int8Rows.encode(F.normalize(u.vectors.detach().float(), dim=-1).cpu().numpy()))
            self._unit_entities.append(Ragged.from_groups(ids[len(ent):], u.entity_chunk.cpu().numpy(), n_units))
            base = sum(len(v) for v in self._unit_vectors[:-1])
            p = made.unit_pairs.cpu().numpy()
            self._unit_pairs.append(np.stack([p[0] + self.n_chunks, p[1] + base]))
            self.unit_chunks.extend(unit_chunks or [])
        if made.token_vectors is not None:
            self.has_tokens = True
            self._add_tokens(made.token_vectors.detach(), made.token_chunk.cpu(), k)
        self.n_chunks += k
        self.concepts = self.entities = self.units = None

    def _add_concepts(self, vectors: np.ndarray) -> np.ndarray:
        """Ids of ``vectors`` (N, d') in the concept table: each distinct float16 row stored
        once (per batch: a concept's u' is one vector per document), int32."""
        half = np.ascontiguousarray(vectors, dtype=np.float16)
        if not len(half):
            return np.zeros(0, np.int32)
        unique, inverse = np.unique(half, axis=0, return_inverse=True)
        ids = (inverse.reshape(-1) + self._n_concepts).astype(np.int32)
        self._concepts.append(unique)
        self._n_concepts += len(unique)
        return ids

    def concept_vectors(self, ids: np.ndarray) -> np.ndarray:
        """(N, d') float32 vectors of concept ``ids`` (from :attr:`entities` or a unit's)."""
        self.finish()
        return np.asarray(self.concepts[np.asarray(ids, dtype=np.int64)], dtype=np.float32)

    def _add_tokens(self, vectors: torch.Tensor, rows: torch.Tensor, k: int) -> None:
        if self.tokens is None and self._codec is None:
            self._backlog.append((vectors.half(), rows, k))
            self._backlog_tokens += len(rows)
            if self.codec_config.kind == "float16" or self._backlog_tokens >= self.codec_config.train_tokens:
                self._flush_backlog()
            return
        if self.tokens is None:
            self.tokens = TokenStore(self._codec)
        self.tokens.add(vectors, rows, k)

    def _flush_backlog(self) -> None:
        """Train the codec on the tokens held so far (too few: store them exactly), then store
        them as codes."""
        vectors = torch.cat([v for v, _, _ in self._backlog]) if self._backlog else torch.zeros(0, 1)
        config = self.codec_config
        if config.kind != "float16" and len(vectors) < MIN_CODEC_TOKENS:
            logger.info("%d token vectors are too few to train a token codec (%d needed): stored "
                        "exactly (float16)", len(vectors), MIN_CODEC_TOKENS)
            config = TokenCodecConfig(kind="float16")
        self._codec = train_codec(vectors.float(), config)
        self.tokens = TokenStore(self._codec)
        for v, rows, k in self._backlog:
            self.tokens.add(v.float(), rows, k)
        self._backlog, self._backlog_tokens = [], 0

    def finish(self) -> ChunkTable:
        """Join the batches (trains the codec if the corpus was shorter than its sample; builds
        the units' BM25). Idempotent; reading methods call it."""
        if self.concepts is None:
            self.concepts = (np.concatenate(self._concepts) if self._concepts
                             else np.zeros((0, 1), np.float16))
            self._concepts = [self.concepts]
        if self.entities is None:
            self.entities = Ragged.concat(self._entities) if self._entities else Ragged(
                np.zeros(0, np.int32), np.zeros(1, np.int64))
            self._entities = [self.entities]
        if self.has_tokens and self.tokens is None:
            self._flush_backlog()
        if self.has_units and self.units is None:
            self.units = self._finish_units()
        return self

    def _finish_units(self) -> UnitTable:
        vectors = Int8Rows.concat(self._unit_vectors)
        self._unit_vectors = [vectors]
        entities = Ragged.concat(self._unit_entities)
        self._unit_entities = [entities]
        pairs = np.concatenate(self._unit_pairs, axis=1) if self._unit_pairs else np.zeros((2, 0), np.int64)
        self._unit_pairs = [pairs]
        if len(self.unit_chunks) != len(vectors):
            raise ValueError(f"{len(vectors)} sentence units but {len(self.unit_chunks)} unit records")
        return UnitTable(vectors, entities, *unit_links(pairs, self.n_chunks, len(vectors)),
                         records=self.unit_chunks)  # their BM25 built when first searched or saved

    def with_codec(self, codec: TokenCodecConfig | TokenCodec) -> ChunkTable:
        """A copy whose token vectors are stored with ``codec`` (a config is trained on the
        first ``train_tokens`` of them, as a build trains it): the same chunks coded another
        way, e.g. to compare codes with exact float16 tokens without chunking again."""
        import copy

        self.finish()
        out = copy.copy(self)
        out.codec_config = codec.config if isinstance(codec, TokenCodec) else codec
        out._codec = codec if isinstance(codec, TokenCodec) else None
        out._backlog, out._backlog_tokens, out.tokens = [], 0, None
        if self.tokens is not None:
            store = self.tokens
            offsets = store.codes.offsets
            for start in range(0, len(offsets) - 1, 4096):  # in slices of chunks
                stop = min(start + 4096, len(offsets) - 1)
                rows = np.arange(start, stop)
                codes, local = store.codes.gather(rows)
                out._add_tokens(torch.from_numpy(store.codec.decode(codes)), torch.from_numpy(local),
                                stop - start)
            if out.tokens is None:
                out._flush_backlog()
        return out

    # ----- reading --------------------------------------------------------------------------
    def gather(self, chunk_vectors: np.ndarray, rows: np.ndarray | None = None,
               tokens: bool = False) -> tuple[ChunkSet, np.ndarray | None]:
        """``(ChunkSet of chunk rows, the unit rows it holds)``: vectors from
        ``chunk_vectors`` (K, d) (the index's), entity table, sentence units and their overlap
        pairs renumbered to the set, and with ``tokens`` the decoded token vectors (the
        exhaustive path; two-stage search reads MaxSim from :attr:`tokens`). ``rows`` None:
        every chunk."""
        self.finish()
        rows = np.arange(self.n_chunks) if rows is None else np.asarray(rows, dtype=np.int64)
        vecs = torch.from_numpy(np.ascontiguousarray(chunk_vectors[rows], dtype=np.float32))
        ids, el = self.entities.gather(rows)
        out = ChunkSet(vecs, torch.from_numpy(self.concept_vectors(ids)), torch.from_numpy(el))
        unit_rows = None
        if self.units is not None:
            u = self.units
            ids, local = u.pairs.gather(rows)
            unit_rows, inverse = np.unique(ids, return_inverse=True)
            uids, uel = u.entities.gather(unit_rows)
            out.units = ChunkSet(torch.from_numpy(np.ascontiguousarray(u.vectors[unit_rows], dtype=np.float32)),
                                 torch.from_numpy(self.concept_vectors(uids)), torch.from_numpy(uel))
            out.unit_pairs = torch.from_numpy(np.stack([local, inverse.reshape(-1)]).astype(np.int64))
        if tokens and self.tokens is not None:
            codes, local = self.tokens.codes.gather(rows)
            out.token_vectors = torch.from_numpy(self.tokens.codec.decode(codes))
            out.token_chunk = torch.from_numpy(local)
        return out, unit_rows

    # ----- persistence ----------------------------------------------------------------------
    def save(self, folder: Path, chunks: list[Chunk] | None = None) -> None:
        """Write the table into ``folder`` (an index being written); ``chunks``: the index's
        chunk records, row by row (a unit's text is stored only where they do not hold it)."""
        self.finish()
        with atomic_write(folder / CONCEPTS_FILE, "wb") as f:
            np.save(f, np.ascontiguousarray(self.concepts, dtype=np.float16))
        Ragged(np.asarray(self.entities.values, dtype=np.int32), self.entities.offsets).save(folder, "entities")
        meta = {"format": FORMAT, "n_chunks": self.n_chunks, "n_concepts": len(self.concepts),
                "units": self.units is not None, "tokens": self.tokens is not None}
        if self.units is not None:
            d = folder / UNITS_DIR
            d.mkdir()
            self.units.vectors.save(d)
            self.units.entities.save(d, "entities")
            self.units.pairs.save(d, "pairs")
            self.units.chunks.save(d, "chunks")
            (d / "bm25").mkdir()
            if self.units.built is not None:
                self.units.built.write_to(d / "bm25", records=False)
            else:  # in blocks: a merge of a million chunks never holds the units' token lists
                write_bm25_blocks(d / "bm25", self.unit_chunks)
            meta["n_units"] = len(self.units.vectors)
            meta["unit_texts_kept"] = self._save_unit_spans(d, chunks)
        if self.tokens is not None:
            self.tokens.save(folder / TOKENS_DIR)
            meta["token_codec"] = self.tokens.codec.describe()
        write_text_atomic(folder / TABLE_FILE, json.dumps(meta, indent=2))

    def _save_unit_spans(self, d: Path, chunks: list[Chunk] | None) -> int:
        """``units/spans.npy`` and the texts of the units ``chunks`` do not hold whole
        (``units/texts.json``); how many those are."""
        records = self.unit_chunks
        if len(records) != len(self.units.vectors):
            raise ValueError(f"{len(self.units.vectors)} sentence units but {len(records)} unit records")
        if chunks is not None and len(chunks) != self.n_chunks:
            raise ValueError(f"{self.n_chunks} chunks in the table, {len(chunks)} chunk records given")
        spans = np.array([(u.char_start, u.char_end) for u in records], dtype=np.int64).reshape(-1, 2)
        with atomic_write(d / SPANS_FILE, "wb") as f:
            np.save(f, spans)
        by_unit = self.units.chunks
        rebuilt = unit_texts(spans, by_unit, chunks) if chunks is not None else [None] * len(records)

        def held(i: int, u: Chunk, text: str | None) -> bool:
            rows = by_unit.row(i)
            return text == u.text and len(rows) > 0 and chunks[int(rows[0])].doc_id == u.doc_id

        kept = {str(i): {"doc_id": u.doc_id, "text": u.text}
                for i, (u, text) in enumerate(zip(records, rebuilt)) if not held(i, u, text)}
        write_text_atomic(d / TEXTS_FILE, json.dumps({"units": kept}, ensure_ascii=False))
        return len(kept)

    @classmethod
    def load(cls, folder: Path, n_chunks: int, mmap: bool = True,
             chunks: list[Chunk] | None = None, unit_bm25: bool = True) -> ChunkTable:
        """Read what :meth:`save` wrote for an index of ``n_chunks`` chunks; anything missing
        or of the wrong size is an error naming the file. ``chunks`` (the index's chunk
        records): also rebuild the sentence units' records from them (their texts; a merge
        rebuilds the units' BM25 from those). ``unit_bm25=False``: the units' BM25 is not
        read (a merge's part: its vocabulary would be held for nothing, per part)."""
        from gralc.retrieval.indexes.bm25 import BM25Index
        from gralc.retrieval.indexes.folder import read_json

        meta = read_json(folder / TABLE_FILE)
        if meta.get("format") != FORMAT:
            raise ValueError(f"{folder / TABLE_FILE}: format {meta.get('format')!r}, this GraLC reads "
                             f"{FORMAT!r} (unit texts as spans, unit vectors int8): rebuild the index")
        if meta.get("n_chunks") != n_chunks:
            raise ValueError(f"{folder / TABLE_FILE}: {meta.get('n_chunks')} chunks, the index "
                             f"{n_chunks}: rebuild the index")
        self = cls()
        self.n_chunks = n_chunks
        self.concepts = _npy(folder / CONCEPTS_FILE, mmap)
        if self.concepts.ndim != 2 or self.concepts.dtype != np.float16:
            raise ValueError(f"{folder / CONCEPTS_FILE}: expected a (concepts, dim) float16 table, got "
                             f"{self.concepts.dtype} {self.concepts.shape}: rebuild the index")
        self._concepts = [self.concepts]
        self.entities = _ids(_sized(Ragged.load(folder, "entities", mmap), n_chunks,
                                    folder / "entities.offsets.npy"), len(self.concepts), folder / "entities.values.npy")
        self._entities = [self.entities]
        if meta.get("units"):
            d = folder / UNITS_DIR
            vectors = Int8Rows.load(d, mmap)
            n_units = len(vectors)
            self.units = UnitTable(
                vectors,
                _ids(_sized(Ragged.load(d, "entities", mmap), n_units, d / "entities.offsets.npy"),
                     len(self.concepts), d / "entities.values.npy"),
                _sized(Ragged.load(d, "pairs", mmap), n_chunks, d / "pairs.offsets.npy"),
                _sized(Ragged.load(d, "chunks", mmap), n_units, d / "chunks.offsets.npy"),
                BM25Index.load(d / "bm25", records=False) if unit_bm25 else None)
            if chunks is not None:
                self.unit_chunks = _unit_records(d, self.units.chunks, list(chunks), n_units)  # parsed once
            if unit_bm25 and len(self.units.bm25) != n_units:
                raise ValueError(f"{d / 'bm25'}: {len(self.units.bm25)} units, {d / 'vectors.npy'} "
                                 f"{n_units}: rebuild the index")
            self.has_units = True
        if meta.get("tokens"):
            self.tokens = TokenStore.load(folder / TOKENS_DIR, mmap)
            if len(self.tokens) != n_chunks:
                raise ValueError(f"{folder / TOKENS_DIR}: tokens of {len(self.tokens)} chunks, the "
                                 f"index {n_chunks}: rebuild the index")
            recorded = (meta.get("token_codec") or {}).get("sha256")
            if recorded != self.tokens.codec.digest():
                raise ValueError(f"{folder / TOKENS_DIR}: its codec is not the one {folder / TABLE_FILE} "
                                 "records (SHA-256 differs): the token table was altered; rebuild the index")
            self._codec = self.tokens.codec
            self.codec_config = self._codec.config
            self.has_tokens = True
        return self


def write_joined(folder: Path, parts: list[tuple[Path, ChunkTable]], chunks: list) -> dict:
    """Write into ``folder`` (an index being written) the table of the loaded tables' chunks in
    order, as :meth:`ChunkTable.save` writes one, file by file from their memory-mapped arrays: memory bounded by a block
    of rows and one part's chunk records, whatever the total (a merge of a million chunks).
    ``parts``: (the folder each table was loaded from, the table); ``chunks``: each part's chunk
    records (its units' texts are cut from them for the units' BM25, one part at a time).
    Returns the ``table.json`` written.

    Example: ``write_joined(tmp / "trained", [(d / "trained", ChunkTable.load(d / "trained", n))
    for d, n in shards], [ChunkIndex.load(d).chunks for d, _ in shards])`` -> ``{"format":
    "gralc.chunk_table/3", "n_chunks": ..., ...}`` (what :mod:`gralc.shard_index` does).
    """
    from gralc.retrieval.indexes.folder import write_concat
    from gralc.retrieval.trained.ragged import write_ragged_concat
    from gralc.safe_load import read_json_untrusted

    tables = [t for _, t in parts]
    concept_base = np.cumsum([0] + [len(t.concepts) for t in tables])[:-1]
    chunk_base = np.cumsum([0] + [t.n_chunks for t in tables])[:-1]
    write_concat(folder / CONCEPTS_FILE, [t.concepts for t in tables], dtype=np.float16)
    write_ragged_concat(folder, "entities", [t.entities for t in tables], concept_base)
    meta = {"format": FORMAT, "n_chunks": int(sum(t.n_chunks for t in tables)),
            "n_concepts": int(sum(len(t.concepts) for t in tables)),
            "units": tables[0].units is not None, "tokens": tables[0].tokens is not None}
    if any((t.units is None) != (tables[0].units is None) for t in tables):
        raise ValueError("some shards have sentence units and others not: rebuild them with one model")
    if any((t.tokens is None) != (tables[0].tokens is None) for t in tables):
        raise ValueError("some shards store token codes and others not: rebuild them with one model")
    if meta["units"]:
        d = folder / UNITS_DIR
        d.mkdir()
        units = [t.units for t in tables]
        unit_base = np.cumsum([0] + [len(u.vectors) for u in units])[:-1]
        write_concat(d / "vectors.npy", [u.vectors.codes for u in units])
        write_concat(d / "scales.npy", [u.vectors.scales for u in units])
        write_ragged_concat(d, "entities", [u.entities for u in units], concept_base)
        write_ragged_concat(d, "pairs", [u.pairs for u in units], unit_base)
        write_ragged_concat(d, "chunks", [u.chunks for u in units], chunk_base)
        write_concat(d / SPANS_FILE, [_npy(f / UNITS_DIR / SPANS_FILE, True) for f, _ in parts])
        kept = {}
        for (f, _), base in zip(parts, unit_base):
            got = read_json_untrusted(f / UNITS_DIR / TEXTS_FILE, "unit texts", expect=dict,
                                      allow_interpolation=True).get("units")
            kept.update({str(int(i) + int(base)): v for i, v in (got or {}).items()})
        write_text_atomic(d / TEXTS_FILE, json.dumps({"units": kept}, ensure_ascii=False))

        def records():  # one part's unit records at a time, cut from its own chunk texts
            for (f, t), part_chunks in zip(parts, chunks):
                yield from _unit_records(f / UNITS_DIR, t.units.chunks, list(part_chunks), len(t.units.vectors))

        (d / "bm25").mkdir()
        write_bm25_blocks(d / "bm25", records())
        meta["n_units"] = int(sum(len(u.vectors) for u in units))
        meta["unit_texts_kept"] = len(kept)
    if meta["tokens"]:
        stores = [t.tokens for t in tables]
        meta["token_codec"] = stores[0].write_joined(folder / TOKENS_DIR, stores)
    write_text_atomic(folder / TABLE_FILE, json.dumps(meta, indent=2))
    return meta


def unit_links(pairs: np.ndarray, n_chunks: int, n_units: int) -> tuple[Ragged, Ragged]:
    """``(units by chunk, chunks by unit)`` of (2, P) overlap pairs (chunk row, unit row).

    >>> by_chunk, by_unit = unit_links(np.array([[0, 0, 1], [0, 1, 1]]), n_chunks=2, n_units=2)
    >>> by_chunk.row(0).tolist(), by_unit.row(1).tolist()
    ([0, 1], [0, 1])
    """
    by_chunk = np.lexsort((pairs[1], pairs[0]))
    by_unit = np.lexsort((pairs[0], pairs[1]))
    return (Ragged.from_groups(pairs[1][by_chunk].astype(np.int64), pairs[0][by_chunk], n_chunks),
            Ragged.from_groups(pairs[0][by_unit].astype(np.int64), pairs[1][by_unit], n_units))


def unit_texts(spans: np.ndarray, chunks_of_unit: Ragged, chunks: list[Chunk]) -> list[str]:
    """Each unit's text cut from the texts of the chunks it overlaps (``spans``: (U, 2)
    character spans in their document; a chunk's text is ``doc.text[char_start:char_end]``),
    joined in document order; what lies between two chunks (whitespace) is not in them.

    >>> c = [Chunk("d", "c0", "Ab cd.", 0, 6), Chunk("d", "c1", "Ef.", 7, 10)]
    >>> unit_texts(np.array([[3, 6], [3, 10]]), Ragged(np.array([0, 0, 1]), np.array([0, 1, 3])), c)
    ['cd.', 'cd.Ef.']
    """
    out = []
    for i, (start, end) in enumerate(np.asarray(spans).tolist()):
        parts = []
        for r in sorted(chunks_of_unit.row(i).tolist(), key=lambda r: chunks[r].char_start):
            c = chunks[r]
            s, e = max(start, c.char_start), min(end, c.char_end)
            if s < e:
                parts.append(c.text[s - c.char_start : e - c.char_start])
        out.append("".join(parts))
    return out


def _unit_records(d: Path, chunks_of_unit: Ragged, chunks: list[Chunk], n_units: int) -> list[Chunk]:
    """The sentence units' records of a table in ``d`` (``units/``): spans, texts cut from
    ``chunks`` or kept in ``texts.json``, each checked against the table."""
    from gralc.safe_load import read_json_untrusted

    spans = _npy(d / SPANS_FILE, mmap=False)
    if spans.shape != (n_units, 2) or spans.dtype.kind not in "iu" or (
            n_units and (int(spans.min()) < 0 or bool((spans[:, 0] > spans[:, 1]).any()))):
        raise ValueError(f"{d / SPANS_FILE}: expected ({n_units}, 2) integer spans (0 <= start <= end), "
                         f"got {spans.dtype} {spans.shape}: rebuild the index")
    kept = read_json_untrusted(d / TEXTS_FILE, "unit texts", expect=dict,
                               allow_interpolation=True).get("units")
    if not isinstance(kept, dict):
        raise ValueError(f"{d / TEXTS_FILE}: no 'units' object: rebuild the index")
    if len(chunks_of_unit.values) and int(np.max(chunks_of_unit.values)) >= len(chunks):
        raise ValueError(f"{d / 'chunks.values.npy'}: chunk rows past the index's {len(chunks)} chunks: "
                         "rebuild the index")
    texts = unit_texts(spans, chunks_of_unit, chunks)
    out = []
    for i, ((start, end), text) in enumerate(zip(spans.tolist(), texts)):
        entry = kept.get(str(i))
        if entry is not None:
            if not (isinstance(entry, dict) and isinstance(entry.get("text"), str)
                    and isinstance(entry.get("doc_id"), str)):
                raise ValueError(f"{d / TEXTS_FILE}: unit {i} is not {{doc_id, text}}: rebuild the index")
            doc, text = entry["doc_id"], entry["text"]
        else:
            rows = chunks_of_unit.row(i)
            if not len(rows):
                raise ValueError(f"{d / TEXTS_FILE}: unit {i} lies in no chunk and has no text kept: "
                                 "rebuild the index")
            doc = chunks[int(rows[0])].doc_id
        out.append(Chunk(doc, f"{doc}::unit::{i}", text, int(start), int(end), level="sentences"))
    return out


def _ids(table: Ragged, n_concepts: int, path: Path) -> Ragged:
    """``table`` when it holds integer ids inside a concept table of ``n_concepts`` rows."""
    values = table.values
    if values.ndim != 1 or values.dtype.kind not in "iu" or (
            len(values) and (int(values.min()) < 0 or int(values.max()) >= n_concepts)):
        raise ValueError(f"{path}: not ids into the {n_concepts} concepts of {CONCEPTS_FILE}: "
                         "rebuild the index")
    return table


def _sized(table: Ragged, n: int, path: Path) -> Ragged:
    if len(table) != n:
        raise ValueError(f"{path}: {len(table)} rows, expected {n}: rebuild the index")
    return table


def _npy(path: Path, mmap: bool) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the index is incomplete, rebuild it")
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path}: unreadable ({exc}); rebuild the index") from None


__all__ = ["ChunkTable", "Int8Rows", "UnitTable", "unit_links", "unit_texts", "write_joined"]
