"""What every index folder holds besides its index: chunk records as JSONL, its JSON files read
as untrusted (:func:`gralc.safe_load.read_json_untrusted`), arrays joined into one ``.npy``
a block at a time (a merge), and one message when a file is missing (the dense index, the BM25
index and the trained model's chunk table all read and write through these)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gralc.atomic import atomic_write
from gralc.chunking.chunk import Chunk
from gralc.safe_load import parse_json, read_json_untrusted

if TYPE_CHECKING:
    import numpy as np

_OPEN_LOCK = threading.Lock()  # the first record read of a ChunkRecords opens its file once


def write_chunks(path: Path, chunks: Sequence[Chunk]) -> None:
    """Chunk metadata as JSONL (no embeddings), written atomically.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "chunks.jsonl"; write_chunks(f, [Chunk("d1", "c0", "x", 0, 1)])
    >>> f.read_text().count("\\n")
    1
    """
    with atomic_write(path) as f:
        for c in chunks:
            f.write(json.dumps(c.to_dict(with_embedding=False), ensure_ascii=False) + "\n")


def read_chunks(path: Path) -> list[Chunk]:
    """Inverse of :func:`write_chunks`; errors name the file and line.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "chunks.jsonl"; write_chunks(f, [Chunk("d1", "c0", "x", 0, 1)])
    >>> read_chunks(f)[0].chunk_id
    'c0'
    """
    require(path)
    chunks = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            record = parse_json(line, path, line_no, "; rebuild the index")
            try:
                chunks.append(Chunk.from_dict(record))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{line_no}: corrupt chunk record ({e})") from e
    return chunks


def _chunk(line: bytes, path: Path, line_no: int) -> Chunk:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}:{line_no}: not UTF-8 ({e.reason}); rebuild the index") from None
    record = parse_json(text, path, line_no, "; rebuild the index")
    try:
        return Chunk.from_dict(record)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}:{line_no}: corrupt chunk record ({e})") from e


class ChunkRecords(Sequence[Chunk]):
    """The chunk records of a ``chunks.jsonl``, read when asked for: opening it finds where
    each line starts (the file read once in blocks, 8 bytes a chunk kept); ``records[i]``
    reads and parses line ``i`` alone (``os.pread``: safe from several threads). A search
    parses only the records of the chunks it returns, so an index of a million chunks opens
    without a million Python objects; a corrupt line is an error naming the file and line when
    it is read (the file's digest is checked when the index is opened).

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "chunks.jsonl"
    >>> write_chunks(f, [Chunk("d1", "c0", "x", 0, 1), Chunk("d2", "c1", "y", 0, 1)])
    >>> records = ChunkRecords(f); len(records), records[1].doc_id, [c.chunk_id for c in records]
    (2, 'd2', ['c0', 'c1'])
    """

    def __init__(self, path: Path, block: int = 1 << 24) -> None:
        import numpy as np

        require(path)
        self.path = Path(path)
        starts, size = [np.zeros(1, np.int64)], 0
        with open(path, "rb") as f:
            while buf := f.read(block):
                ends = np.flatnonzero(np.frombuffer(buf, np.uint8) == 10) + size + 1
                starts.append(ends.astype(np.int64))
                size += len(buf)
        self._starts = np.concatenate(starts)
        if self._starts[-1] != size:  # a last line without its newline
            self._starts = np.append(self._starts, size)
        self._fd: int | None = None  # opened at the first record read, held while the index is open

    def __len__(self) -> int:
        return len(self._starts) - 1

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"chunk row {i} outside the {n} chunks of {self.path}")
        i %= n
        start, end = int(self._starts[i]), int(self._starts[i + 1])
        fd = self._fd
        if fd is None:  # not at open: a merge opens hundreds of parts and only streams them
            fd = os.open(self.path, os.O_RDONLY)
            with _OPEN_LOCK:
                if self._fd is None:
                    self._fd = fd
                else:  # another thread opened it first
                    os.close(fd)
                    fd = self._fd
        return _chunk(os.pread(fd, end - start, start), self.path, i + 1)

    def __iter__(self):
        with open(self.path, "rb") as f:
            for line_no, line in enumerate(f, start=1):
                yield _chunk(line, self.path, line_no)

    def __del__(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)


def read_rows(array: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of ``array`` as a new (read-only) array; of a memory-mapped ``.npy``
    read from its file (``os.pread``), so a pass over a large file keeps none of its pages
    mapped into this process (they would count in its resident memory until it ends).

    >>> import numpy as np
    >>> read_rows(np.arange(6).reshape(3, 2), 1, 3).tolist()
    [[2, 3], [4, 5]]
    """
    import numpy as np

    stop = min(stop, len(array))
    if not isinstance(array, np.memmap) or array.filename is None or not array.flags.c_contiguous:
        return np.array(array[start:stop])
    row = array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64))
    fd = os.open(array.filename, os.O_RDONLY)
    try:
        data = os.pread(fd, max(0, stop - start) * row, array.offset + start * row)
    finally:
        os.close(fd)
    return np.frombuffer(data, dtype=array.dtype).reshape(-1, *array.shape[1:])


def write_concat(path: Path, parts: Sequence[np.ndarray], shifts: Sequence[int] | None = None,
                 dtype=None, block_bytes: int = 1 << 24) -> tuple[int, ...]:
    """Write the rows of ``parts`` (arrays of one row shape, e.g. memory-mapped) in order as
    one ``.npy`` at ``path``, ``shifts[i]`` added to part ``i``'s values (ids moving into a
    joined table), a block of rows at a time: memory bounded by a few ``block_bytes``, whatever
    the total. Returns the written shape.

    >>> import tempfile, numpy as np
    >>> f = Path(tempfile.mkdtemp()) / "a.npy"
    >>> write_concat(f, [np.array([0, 1]), np.array([0])], shifts=[0, 2])
    (3,)
    >>> np.load(f).tolist()
    [0, 1, 2]
    """
    import numpy as np

    parts = [p if isinstance(p, np.ndarray) else np.asarray(p) for p in parts]  # a np.memmap stays one
    if not parts or len({p.shape[1:] for p in parts}) != 1:
        raise ValueError(f"{path}: parts of one row shape needed, got {[p.shape for p in parts]}")
    dtype = np.dtype(dtype or parts[0].dtype)
    shape = (sum(len(p) for p in parts), *parts[0].shape[1:])
    block_rows = max(1, block_bytes // max(1, dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))))
    with atomic_write(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.lib.format.dtype_to_descr(dtype),
                                                 "fortran_order": False, "shape": shape})
        for i, p in enumerate(parts):
            shift = 0 if shifts is None else int(shifts[i])
            for start in range(0, len(p), block_rows):
                block = read_rows(p, start, start + block_rows)
                if shift:
                    block = block.astype(np.int64) + shift
                f.write(np.ascontiguousarray(block, dtype=dtype).tobytes())
    return shape


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object of an index folder (:func:`gralc.safe_load.read_json_untrusted`), the
    message of :func:`require` when it is missing.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "config.json"; _ = f.write_text('{"dim": 384}')
    >>> read_json(f)
    {'dim': 384}
    """
    require(path)
    return read_json_untrusted(path, expect=dict)


def require(path: Path) -> None:
    """FileNotFoundError (rebuild the index) unless ``path`` is a file.

    >>> import tempfile
    >>> require(Path(tempfile.mkdtemp()) / "index.faiss")
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the index directory is incomplete, rebuild it")
