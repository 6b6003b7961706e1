"""Per-chunk rows of variable length (a chunk's concepts, sentence units, token codes) stored
flat with offsets (CSR), so the rows of a few candidate chunks are gathered without reading the
rest: ``values[offsets[i]:offsets[i + 1]]`` belong to chunk ``i``. Saved as two ``.npy``
files that :meth:`Ragged.load` memory-maps, so a table larger than RAM opens and a search
reads only the pages its candidates touch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gralc.atomic import atomic_write


class Ragged:
    """``values`` (N, ...) with ``offsets`` (K + 1,) int64: row ``i`` is
    ``values[offsets[i]:offsets[i + 1]]``.

    >>> r = Ragged.from_rows([np.array([1, 2]), np.array([3])], dtype=np.int64)
    >>> r.row(0).tolist(), r.counts.tolist()
    ([1, 2], [2, 1])
    """

    def __init__(self, values: np.ndarray, offsets: np.ndarray) -> None:
        offsets = np.asarray(offsets, dtype=np.int64)
        if offsets.ndim != 1 or not len(offsets) or offsets[0] != 0 or offsets[-1] != len(values):
            raise ValueError(f"offsets must run from 0 to {len(values)} (the number of values), "
                             f"got {offsets[:1].tolist()}...{offsets[-1:].tolist()}")
        if len(offsets) > 1 and (np.diff(offsets) < 0).any():
            raise ValueError("offsets must not decrease")
        self.values, self.offsets = values, offsets

    @classmethod
    def from_rows(cls, rows: Sequence[np.ndarray], width: tuple[int, ...] = (),
                  dtype=np.float32) -> Ragged:
        """One row per chunk, in order (empty rows allowed)."""
        counts = np.array([len(r) for r in rows], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        values = (np.concatenate([np.asarray(r, dtype=dtype).reshape(-1, *width) for r in rows])
                  if len(rows) else np.zeros((0, *width), dtype=dtype))
        return cls(values, offsets)

    @classmethod
    def from_groups(cls, values: np.ndarray, group: np.ndarray, n_rows: int) -> Ragged:
        """Rows from ``values`` (N, ...) and the row of each (``group`` (N,), non-decreasing)."""
        group = np.asarray(group, dtype=np.int64)
        if len(group) and ((np.diff(group) < 0).any() or group[0] < 0 or group[-1] >= n_rows):
            raise ValueError(f"rows must be sorted and in [0, {n_rows})")
        counts = np.bincount(group, minlength=n_rows) if len(group) else np.zeros(n_rows, np.int64)
        return cls(values, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def counts(self) -> np.ndarray:
        """(K,) length of each row."""
        return np.diff(self.offsets)

    def positions(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(value positions (T,), local row (T,))`` of ``rows`` (R,): the positions of every
        value of each row, in the order of ``rows``, and the index into ``rows`` of each."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, ends = self.offsets[rows], self.offsets[rows + 1]
        counts = ends - starts
        local = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        if not len(local):
            return local, local
        # position = start of its row + its rank inside the row
        first = np.concatenate([[0], np.cumsum(counts)[:-1]])
        pos = np.arange(len(local), dtype=np.int64) - np.repeat(first, counts) + np.repeat(starts, counts)
        return pos, local

    def gather(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(values of rows (T, ...), local row (T,))`` (see :meth:`positions`)."""
        pos, local = self.positions(rows)
        return np.asarray(self.values[pos]), local

    def row(self, i: int) -> np.ndarray:
        """Row ``i``'s values, ``values[offsets[i]:offsets[i + 1]]``."""
        return np.asarray(self.values[self.offsets[i] : self.offsets[i + 1]])

    @classmethod
    def concat(cls, parts: Sequence[Ragged]) -> Ragged:
        """One table of the parts' rows, in order."""
        if not parts:
            raise ValueError("Ragged.concat needs at least one part")
        values = np.concatenate([np.asarray(p.values) for p in parts])
        offsets, base = [np.zeros(1, np.int64)], 0
        for p in parts:
            offsets.append(p.offsets[1:] + base)
            base += int(p.offsets[-1])
        return cls(values, np.concatenate(offsets))

    def save(self, folder: Path, name: str) -> list[str]:
        """Write ``NAME.values.npy`` and ``NAME.offsets.npy`` into ``folder``; their names."""
        names = [f"{name}.values.npy", f"{name}.offsets.npy"]
        for file, array in zip(names, (np.ascontiguousarray(self.values), self.offsets)):
            with atomic_write(folder / file, "wb") as f:
                np.save(f, array)
        return names

    @classmethod
    def load(cls, folder: Path, name: str, mmap: bool = True) -> Ragged:
        """Read what :meth:`save` wrote (values memory-mapped unless ``mmap=False``); a
        missing, damaged or inconsistent file is a ValueError naming it."""
        paths = [folder / f"{name}.values.npy", folder / f"{name}.offsets.npy"]
        for p in paths:
            if not p.is_file():
                raise FileNotFoundError(f"{p} is missing: the index is incomplete, rebuild it")
        try:
            values = np.load(paths[0], mmap_mode="r" if mmap else None, allow_pickle=False)
            offsets = np.load(paths[1], allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ValueError(f"{paths[0].parent}/{name}.*.npy: unreadable ({exc}); rebuild the index") from None
        try:
            return cls(values, offsets)
        except ValueError as exc:
            raise ValueError(f"{paths[1]}: {exc}; rebuild the index") from None


def write_ragged_concat(folder: Path, name: str, parts: Sequence[Ragged],
                        shifts: Sequence[int] | None = None) -> list[str]:
    """:meth:`Ragged.save` of ``Ragged.concat(parts)`` (values moved by ``shifts``, as
    :func:`write_concat`) without holding the joined values; the file names.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> a, b = Ragged.from_rows([np.array([0, 1])], dtype=np.int64), Ragged.from_rows([np.array([0])], dtype=np.int64)
    >>> write_ragged_concat(d, "ids", [a, b], shifts=[0, 2])
    ['ids.values.npy', 'ids.offsets.npy']
    >>> r = Ragged.load(d, "ids"); r.row(0).tolist(), r.row(1).tolist()
    ([0, 1], [2])
    """
    from gralc.retrieval.indexes.folder import write_concat

    base = np.cumsum([0] + [int(p.offsets[-1]) for p in parts])
    offsets = np.concatenate([np.zeros(1, np.int64)] + [p.offsets[1:] + b for p, b in zip(parts, base)])
    write_concat(folder / f"{name}.values.npy", [p.values for p in parts], shifts)
    with atomic_write(folder / f"{name}.offsets.npy", "wb") as f:
        np.save(f, offsets)
    return [f"{name}.values.npy", f"{name}.offsets.npy"]


__all__ = ["Ragged", "write_ragged_concat"]
