"""The one way GraLC writes a file (or a folder) so that a reader never sees half of it.

Every writer goes through :func:`atomic_path`: it hands out a temporary name beside the
target (``.<name>.tmp-<pid>-<random>``, so two writers, in one process or many, never share
one), and only when the writing block ends without an error is the result flushed to disk
(``fsync``) and renamed onto the target in one ``os.replace``. On any error (a full disk, a
``KeyboardInterrupt``) the temporary file or folder is removed and the target is left as it
was. :func:`atomic_write` yields an open file instead of a path; :func:`write_text_atomic`,
:func:`write_bytes_atomic` and :func:`write_json_atomic` write a whole value.

A folder target (``folder=True``) is written complete under the temporary name; an existing
folder is renamed aside (``.<name>.old-<pid>-<random>``) just before the new one takes its
name and deleted afterwards, so the target name never holds a partial folder.
(:mod:`gralc.artefacts` keeps its own folder swap, which also preserves a user's files.)

Whatever the writer did, what takes the target's name has the permissions a plain ``open()``
or ``mkdir()`` gives (:func:`default_modes`: files ``0666 & ~umask``, folders
``0777 & ~umask``): some writers (safetensors) create their files private (``0600``), which
left an export's weights unreadable to the group that reads the rest of it.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def temp_name(path: Path, what: str = "tmp") -> Path:
    """A fresh hidden name beside ``path`` (``.<name>.<what>-<pid>-<random>``)."""
    return path.parent / f".{path.name}.{what}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def current_umask() -> int:
    """The process's umask, read from ``/proc/self/status`` (Linux), which changes nothing;
    elsewhere set and restored with ``os.umask`` (a file another thread creates in between
    would get the mask ``0o022``; GraLC's command lines write from one thread)."""
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
    Symbolic links are neither changed nor followed."""
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
    gets :func:`default_modes`, whatever modes the writer gave it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(path)
    if folder:
        tmp.mkdir()
    try:
        yield tmp
        default_modes(tmp)
        _fsync(tmp)
        if folder and path.exists():
            old = temp_name(path, "old")
            os.replace(path, old)
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(old, path)  # the old folder back under its name
                raise
            _remove(old)
        else:
            os.replace(tmp, path)
    finally:
        if tmp.exists() or tmp.is_symlink():
            _remove(tmp)


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w",
                 encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Yield ``path``'s temporary file opened with ``mode`` (``"w"`` text in ``encoding``,
    ``"wb"`` bytes); it replaces ``path`` when the block ends without an error."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write writes a new file: mode 'w' or 'wb', not {mode!r}")
    with atomic_path(path) as tmp, open(tmp, mode, encoding=None if "b" in mode else encoding) as f:
        yield f


def write_text_atomic(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_write(path, "w", encoding) as f:
        f.write(text)
    return Path(path)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically."""
    with atomic_write(path, "wb") as f:
        f.write(data)
    return Path(path)


def write_json_atomic(path: str | os.PathLike[str], payload: Any) -> Path:
    """Write ``payload`` as indented JSON (``default=str`` for paths, dates) atomically."""
    return write_text_atomic(path, json.dumps(payload, indent=2, default=str))
