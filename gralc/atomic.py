"""The one way GraLC writes a file or a folder so that a reader never sees half of it.

:func:`atomic_path` hands out a temporary name beside the target (``.<name>.tmp-<pid>-<random>``);
only when the writing block ends without an error is the result flushed (``fsync``) and renamed
onto the target, else it is removed and the target is left as it was. :func:`atomic_write`
yields an open file; :func:`write_text_atomic`, :func:`write_bytes_atomic`,
:func:`write_json_atomic` and :func:`write_yaml_atomic` write a whole value.

Folders: :func:`swap_in` puts a complete folder in place of another in one
``renameat2(RENAME_EXCHANGE)`` (two renames where the file system cannot exchange);
:func:`move_aside` renames an existing folder to ``<name>.replaced-<time>-<random>`` (never
deleting it); :func:`move` renames one file. :mod:`gralc.artefacts` builds its folder policy
(a user's files kept, manifests) on these. What takes the target's name has the permissions a
plain ``open()`` / ``mkdir()`` gives (:func:`default_modes`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def temp_name(path: Path, what: str = "tmp") -> Path:
    """A fresh hidden name beside ``path`` (``.<name>.<what>-<pid>-<random>``).

    >>> temp_name(Path("/runs/model.ckpt")).name.startswith(".model.ckpt.tmp-")
    True
    """
    return path.parent / f".{path.name}.{what}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def current_umask() -> int:
    """The process's umask, read from ``/proc/self/status`` (Linux), which changes nothing;
    elsewhere set and restored with ``os.umask`` (a file another thread creates in between
    would get the mask ``0o022``; GraLC's command lines write from one thread).

    >>> 0 <= current_umask() <= 0o777
    True
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_modes(path: str | os.PathLike[str]) -> None:
    """Give ``path`` (a file, or a folder and everything under it) the permissions a plain
    ``open()`` / ``mkdir()`` gives: files ``0o666 & ~umask``, folders ``0o777 & ~umask``.
    Symbolic links are neither changed nor followed.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "a.txt"; _ = f.write_text("x"); f.chmod(0o600)
    >>> default_modes(f); f.stat().st_mode & 0o777 == 0o666 & ~current_umask()
    True
    """
    path = Path(path)
    umask = current_umask()
    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
    if path.is_symlink():
        return
    if not path.is_dir():
        os.chmod(path, file_mode)
        return
    os.chmod(path, dir_mode)
    for root, dirs, files in os.walk(path):  # never descends into a link to a folder
        for name in dirs:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), dir_mode)
        for name in files:
            if not os.path.islink(os.path.join(root, name)):
                os.chmod(os.path.join(root, name), file_mode)


def _fsync(path: Path) -> None:
    if path.is_dir():
        for root, _, files in os.walk(path):
            for name in files:
                _fsync(Path(root) / name)
        return
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def atomic_path(path: str | os.PathLike[str], folder: bool = False) -> Iterator[Path]:
    """Yield a temporary path for a writer that takes a path (``torch.save``, safetensors'
    ``save_file``, ``faiss.write_index``, ``save_pretrained``); when the block ends without
    an error it replaces ``path`` (module docstring), else it is removed. The parent folders
    are created. With ``folder`` the temporary path is created as an empty folder. The result
    gets :func:`default_modes`, whatever modes the writer gave it.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> with atomic_path(d / "a.bin") as tmp:
    ...     _ = tmp.write_bytes(b"x")
    >>> (d / "a.bin").read_bytes()
    b'x'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    if folder:
        tmp.mkdir()
    try:
        yield tmp
        default_modes(tmp)
        _fsync(tmp)
        old = swap_in(tmp, path) if folder else os.replace(tmp, path)
        if old is not None:
            _remove(old)
    finally:
        if tmp.exists() or tmp.is_symlink():
            _remove(tmp)


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8",
                 newline: str | None = None) -> Iterator[IO[Any]]:
    """Yield ``path``'s temporary file opened with ``mode`` (``"w"`` text in ``encoding``, with
    ``newline`` as :func:`open` takes it; ``"wb"`` bytes); it replaces ``path`` when the block
    ends without an error.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> with atomic_write(d / "a.txt") as f:
    ...     _ = f.write("done")
    >>> (d / "a.txt").read_text()
    'done'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write writes a new file: mode 'w' or 'wb', not {mode!r}")
    text = "b" not in mode
    with atomic_path(path) as tmp, open(tmp, mode, encoding=encoding if text else None,
                                        newline=newline if text else None) as f:
        yield f


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically.

    >>> import tempfile
    >>> write_text_atomic(Path(tempfile.mkdtemp()) / "a.txt", "done").read_text()
    'done'
    """
    with atomic_write(path, "w", encoding) as f:
        f.write(text)
    return Path(path)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically.

    >>> import tempfile
    >>> write_bytes_atomic(Path(tempfile.mkdtemp()) / "a.bin", b"x").read_bytes()
    b'x'
    """
    with atomic_write(path, "wb") as f:
        f.write(data)
    return Path(path)


def write_json_atomic(path: str | os.PathLike[str], payload: Any) -> Path:
    """Write ``payload`` as indented JSON (``default=str`` for paths, dates) atomically.

    >>> import tempfile
    >>> write_json_atomic(Path(tempfile.mkdtemp()) / "a.json", {"k": [1]}).read_text()
    '{\\n  "k": [\\n    1\\n  ]\\n}'
    """
    return write_text_atomic(path, json.dumps(payload, indent=2, default=str))


# ----- folders: swap, move aside, move ---------------------------------------------------------
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Swap two existing paths in one atomic ``renameat2(RENAME_EXCHANGE)``; False (nothing
    changed) where the C library or the file system cannot.

    >>> exchange("/nonexistent-a", "/nonexistent-b")
    False
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return rc == 0


def swap_in(new: str | os.PathLike[str], target: str | os.PathLike[str]) -> Path | None:
    """Put the complete folder ``new`` at ``target``; returns where ``target``'s old content
    now lives (for the caller to dispose of), or None when there was none. An empty folder is
    simply replaced; else one :func:`exchange`, or two renames (the old content back under its
    name if the second fails).

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> (d / "new").mkdir(); swap_in(d / "new", d / "out") is None and (d / "out").is_dir()
    True
    """
    new, target = Path(new), Path(target)
    if not target.exists() or (target.is_dir() and not any(target.iterdir())):
        os.replace(new, target)
        return None
    if exchange(new, target):
        return new  # the old content now lives at the temporary name
    old = temp_name(target, "old")
    os.replace(target, old)
    try:
        os.replace(new, target)
    except BaseException:
        os.replace(old, target)  # the old folder back under its name
        raise
    return old


def aside_name(path: str | os.PathLike[str]) -> Path:
    """A free name beside ``path`` for its old content: ``<name>.replaced-<time>-<random>``.

    >>> aside_name("/runs/a").name.startswith("a.replaced-")
    True
    """
    path = Path(path)
    return path.parent / f"{path.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"


def move(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> Path:
    """Rename ``src`` to ``dst`` (same file system; ``dst``'s parent folders are created).

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "a").write_text("x")
    >>> move(d / "a", d / "sub" / "b").read_text()
    'x'
    """
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)
    return dst


def move_aside(path: str | os.PathLike[str], rels: Iterable[str] | None = None) -> Path:
    """Keep, never delete: rename ``path`` to :func:`aside_name` (``rels`` None), or move only
    the files ``rels`` (relative to the folder ``path``) there at the same relative paths.
    Returns the aside folder.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); (d / "run").mkdir()
    >>> move_aside(d / "run").name.startswith("run.replaced-") and not (d / "run").exists()
    True
    """
    path = Path(path)
    aside = aside_name(path)
    if rels is None:
        os.replace(path, aside)
        return aside
    for rel in rels:
        move(path / rel, aside / rel)
    return aside
