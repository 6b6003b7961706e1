"""Output folders that never lose a user's files.

Every folder GraLC writes (an index, a BM25 index, a merged shard index, an export, an
evaluation run's results) is an *artefact*: it
carries a marker file ``.gralc-artefact.json`` naming its kind. :func:`check_output_dir`
accepts a target that does not exist, is empty, or is already an artefact of the same kind
(an older GraLC folder without a marker is recognised by its files); anything else needs
``force``, and a target equal to an input, inside one, or holding one is always refused.
:func:`write_artefact` validates first, takes a lock file beside the target (a second writer
gets a clear error, not a crash), lets the caller write EVERY file into a temporary folder
beside the target, then swaps it in with one rename. An old artefact of the same kind is
removed only after the new one is in place; with ``force``, foreign content is moved aside to
``<target>.replaced-<time>``, never deleted.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

logger = logging.getLogger(__name__)

MARKER = ".gralc-artefact.json"
#: files that identify a folder written by an older GraLC (before the marker existed)
LEGACY_FILES = {
    "index": ("retriever.json", "index.faiss", "chunks.jsonl"),
    "chunk_index": ("index.faiss", "vectors.npy", "chunks.jsonl"),
    "bm25_index": ("bm25", "vocab.tokenizer.json", "chunks.jsonl"),
    "export": ("inference.yaml", "weights.safetensors"),
    "eval_results": ("metrics.json", "tables.md", "config.yaml"),
}


class OutputDirError(ValueError):
    """An output folder cannot be written without risking someone's files."""


def artefact_kind(folder: Path) -> str | None:
    """The kind of GraLC artefact ``folder`` holds (marker first, then legacy files)."""
    marker = folder / MARKER
    if marker.is_file():
        try:
            return str(json.loads(marker.read_text(encoding="utf-8"))["kind"])
        except (ValueError, KeyError, TypeError, OSError):
            return None
    for kind, names in LEGACY_FILES.items():
        if all((folder / n).exists() for n in names):
            return kind
    return None


def _related(target: Path, inp: Path) -> bool:
    return target == inp or inp in target.parents or target in inp.parents


def check_output_dir(target: str | os.PathLike[str], kind: str, force: bool = False,
                     inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """Validate ``target`` for an artefact of ``kind`` before any expensive work (module
    docstring); returns it resolved. Raises :class:`OutputDirError` naming the fix."""
    out = Path(target).expanduser().resolve()
    for inp in inputs:
        src = Path(inp).expanduser().resolve()
        if _related(out, src):
            raise OutputDirError(f"--out {out} overlaps the input {src}: writing there could "
                                 "destroy it; choose an output folder outside the input")
    if not out.exists():
        return out
    if not out.is_dir():
        raise OutputDirError(f"--out {out} is a file, not a folder: choose another path")
    entries = sorted(p.name for p in out.iterdir())
    if not entries or artefact_kind(out) == kind:
        return out
    found = artefact_kind(out)
    what = f"a GraLC {found}" if found else f"{len(entries)} entries that GraLC did not write " \
        f"(e.g. {', '.join(entries[:3])})"
    if not force:
        raise OutputDirError(f"--out {out} already holds {what}, not a GraLC {kind}: choose "
                             "another folder, empty it, or pass --force to move its content "
                             f"aside to {out.name}.replaced-<time> (nothing is deleted)")
    return out


@contextmanager
def write_artefact(target: str | os.PathLike[str], kind: str, force: bool = False,
                   inputs: Iterable[str | os.PathLike[str]] = ()) -> Iterator[Path]:
    """Yield a temporary folder to write the whole artefact into; on success it replaces
    ``target`` in one rename (module docstring); on error it is removed and ``target`` is
    untouched."""
    inputs = list(inputs)
    out = check_output_dir(target, kind, force, inputs)
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = out.parent / f".{out.name}.lock"
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        raise OutputDirError(f"another GraLC process is writing {out} (lock file {lock}); wait "
                             "for it to finish, or delete the lock if no such process runs") from None
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
        os.close(fd)
        tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            yield tmp
            _write_marker(tmp, kind)
            _swap_in(tmp, check_output_dir(out, kind, force, inputs), kind)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        lock.unlink(missing_ok=True)


def claim_dir(target: str | os.PathLike[str], kind: str, force: bool = False,
              inputs: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """A folder that a long job writes file by file (an evaluation run): validated like
    :func:`check_output_dir`, foreign content moved aside under ``force``, created, and marked
    as an artefact of ``kind`` at once (so a resumed run recognises it)."""
    out = check_output_dir(target, kind, force, inputs)
    if out.exists() and any(out.iterdir()) and artefact_kind(out) != kind:
        aside = out.parent / f"{out.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}"
        os.replace(out, aside)
        logger.warning("--force: the previous content of %s was moved to %s", out, aside)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / MARKER).is_file():
        _write_marker(out, kind)
    return out


def _write_marker(folder: Path, kind: str) -> None:
    import gralc

    (folder / MARKER).write_text(json.dumps({"kind": kind, "gralc_version": gralc.__version__,
                                             "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}),
                                 encoding="utf-8")


def _swap_in(tmp: Path, out: Path, kind: str) -> None:
    if not out.exists():
        os.replace(tmp, out)
        return
    ours = not any(out.iterdir()) or artefact_kind(out) == kind
    aside = out.parent / (f".{out.name}.old-{uuid.uuid4().hex[:8]}" if ours
                          else f"{out.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
    os.replace(out, aside)
    os.replace(tmp, out)
    if ours:
        shutil.rmtree(aside, ignore_errors=True)
    else:
        logger.warning("--force: the previous content of %s was moved to %s", out, aside)
