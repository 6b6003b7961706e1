"""Output folders that never lose a user's files, and that are verified before they are read.

Every folder GraLC writes whole (an index, a BM25 index, a merged shard index, an export, a
token codec, a corpus graph) is an *artefact*: its marker file ``.gralc-artefact.json`` names
its kind and is its **manifest**: every file GraLC wrote there, with its size and SHA-256.
:func:`write_artefact` writes one (target checked, locked, written aside, swapped in by
:func:`gralc.atomic.swap_in`, a user's files kept); :func:`verify_artefact` checks one before
any loader answers from it; :func:`claim_dir` marks a folder a long job writes file by file.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import stat
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gralc.atomic import default_modes, move, move_aside, swap_in, temp_name, write_text_atomic
from gralc.safe_load import file_sha256, json_int  # noqa: F401 - file_sha256: also gralc.artefacts.file_sha256

logger = logging.getLogger(__name__)

MARKER = ".gralc-artefact.json"
MANIFEST_FORMAT = "gralc.artefact/2"
#: kinds written file by file by a long job (no manifest of files; see :func:`claim_dir`)
OPEN_KINDS = ("eval_results", "train_run")


class OutputDirError(ValueError):
    """An output folder cannot be written without risking someone's files.

    Example: ``check_output_dir("my_notes/", "index")`` on a folder of the user's files ->
    ``OutputDirError`` (use another ``--out`` or ``--force``).
    """


class ArtefactError(ValueError):
    """An artefact is incomplete, altered or not written by this GraLC: rebuild it.

    Example: ``verify_artefact("index/")`` after a file of the index was edited ->
    ``ArtefactError`` naming the file and the fix (rebuild the index).
    """


# ----- the manifest --------------------------------------------------------------------------
def _files(folder: Path) -> list[str]:
    """Every file under ``folder`` (relative POSIX paths; a symbolic link counts as a file and
    is never followed), the marker excluded."""
    out = []
    for root, dirs, names in os.walk(folder):
        links = [d for d in dirs if (Path(root) / d).is_symlink()]
        dirs[:] = sorted(d for d in dirs if d not in links)
        for name in sorted([*names, *links]):
            rel = (Path(root) / name).relative_to(folder).as_posix()
            if rel != MARKER:
                out.append(rel)
    return out


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of ``folder`` as a dict, None when it has none or it is unreadable.

    >>> import tempfile
    >>> read_marker(Path(tempfile.mkdtemp())) is None
    True
    """
    from gralc.safe_load import read_json_untrusted

    marker = folder / MARKER
    if not marker.is_file():
        return None
    try:
        data = read_json_untrusted(marker)
    except ValueError:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("kind"), str) else None


def artefact_kind(folder: Path) -> str | None:
    """The kind of GraLC artefact ``folder`` holds (from its marker), else None.

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "index"
    >>> with write_artefact(d, "index") as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> artefact_kind(d)
    'index'
    """
    marker = read_marker(folder)
    return None if marker is None else marker["kind"]


def listed_files(marker: dict[str, Any] | None) -> dict[str, dict[str, Any]] | None:
    """The manifest of a marker: relative path -> ``{"size", "sha256"}``; None when there is no
    marker or it lists no files (an open kind, or one written before manifests).

    >>> listed_files({"kind": "index", "files": {"a.txt": {"size": 1, "sha256": "..."}}})
    {'a.txt': {'size': 1, 'sha256': '...'}}
    """
    files = None if marker is None else marker.get("files")
    if not isinstance(files, dict):
        return None
    return files


def _write_marker(folder: Path, kind: str, files: bool = True) -> None:
    from gralc.runinfo import provenance

    doc: dict[str, Any] = {"format": MANIFEST_FORMAT, "kind": kind, **provenance(),
                           "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if files:
        doc["files"] = {rel: {"size": (folder / rel).stat().st_size, "sha256": file_sha256(folder / rel)}
                        for rel in _files(folder)}
    write_text_atomic(folder / MARKER, json.dumps(doc, indent=1))


#: suffixes of the files GraLC's readers open (data, tables, weights, settings); a tokenizer's
#: ``vocab.txt`` / ``merges.txt`` too in the kinds that hold an encoder
DATA_SUFFIXES = (".json", ".jsonl", ".npy", ".npz", ".faiss", ".safetensors", ".bin", ".yaml",
                 ".yml", ".pt", ".ckpt", ".pkl", ".pickle", ".tsv", ".csv", ".parquet", ".index",
                 ".model", ".msgpack", ".h5")
ENCODER_KINDS = ("encoder", "export")
#: the sub-folders GraLC writes into an artefact (an index's ``lexical/``, an export's ``encoder/``)
GRALC_DIRS = ("lexical", "phrase", "concepts", "graph", "trained", "model", "adapter", "encoder")


def unlisted_data_files(files: list[str], listed: dict[str, Any], kind: str) -> list[str]:
    """The files of an artefact (``files``: every path in it) that a GraLC reader could open
    but its manifest ``listed`` does not name: a data file (:data:`DATA_SUFFIXES`; ``.txt`` too in
    an encoder's kinds) at the top level, in a folder GraLC writes (:data:`GRALC_DIRS`) or
    beside a listed file. A user's notes (``NOTES.md``) and folders of their own
    (``results/run1.json``) are not among them, so they may stay; a removed manifest entry (or
    ``files: {}``) cannot switch the checks of GraLC's own files off.

    >>> unlisted_data_files(["NOTES.md", "chunks.jsonl", "results/r.json", "trained/t.npy"], {"trained/a.npy": {}}, "index")
    ['chunks.jsonl', 'trained/t.npy']
    """
    listed_dirs = {str(Path(rel).parent) for rel in listed}
    out = []
    for rel in files:
        if rel in listed:
            continue
        parent, suffix = str(Path(rel).parent), Path(rel).suffix.lower()
        if not (suffix in DATA_SUFFIXES or (suffix == ".txt" and kind in ENCODER_KINDS)):
            continue
        if parent == "." or parent in listed_dirs or Path(rel).parts[0] in GRALC_DIRS:
            out.append(rel)
    return out


_verified: dict[Path, tuple] = {}
_verified_lock = threading.Lock()


def artefact_root(folder: str | os.PathLike[str], levels: int = 4) -> Path | None:
    """``folder`` or its nearest ancestor (``levels`` up) that carries a marker, else None.

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "index"
    >>> with write_artefact(d, "index") as tmp:
    ...     (tmp / "lexical").mkdir()
    >>> artefact_root(d / "lexical") == d
    True
    """
    here = Path(folder).resolve()
    for cand in [here, *here.parents][: levels + 1]:
        if (cand / MARKER).is_file():
            return cand
    return None


def verify_artefact(folder: str | os.PathLike[str], kinds: Iterable[str] = ()) -> Path:
    """Check the artefact holding ``folder`` against its manifest; returns its root. ``kinds``:
    the kinds the caller can read (empty: any).

    The artefact (the folder, or the nearest enclosing artefact of a sub-folder) must have a
    manifest, and every listed file must exist with its size and SHA-256 (checked once per
    process while the files' sizes and times are unchanged). A missing manifest is an error,
    never "an older index".

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "index"
    >>> with write_artefact(d, "index") as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> verify_artefact(d, ("index",)) == d
    True
    """
    folder = Path(folder)
    if not folder.exists():
        raise FileNotFoundError(f"{folder} does not exist")
    root = artefact_root(folder)
    marker = None if root is None else read_marker(root)
    files = listed_files(marker)
    where = folder if root is None else root
    if marker is None or files is None or marker.get("kind") in OPEN_KINDS:
        raise ArtefactError(
            f"{where} has no GraLC manifest ({MARKER} listing its files and checksums): it was "
            "written by an older GraLC or by hand, so nothing proves its files belong together; "
            "rebuild it with this GraLC (or re-export the model)")
    kinds = tuple(kinds)
    if kinds and marker["kind"] not in kinds:
        raise ArtefactError(f"{root} is a GraLC {marker['kind']}, not a {' or '.join(kinds)}")
    stats = []
    for rel, entry in sorted(files.items()):
        path = _inside_root(root, rel)
        if not isinstance(entry, dict) or not isinstance(entry.get("size"), int) \
                or not isinstance(entry.get("sha256"), str):
            raise ArtefactError(f"{root / MARKER}: entry {rel!r} has no size and sha256: rebuild {root}")
        try:
            st = path.stat()
        except OSError:
            raise FileNotFoundError(f"{path} is missing: the artefact {root} is incomplete; "
                                    "rebuild it") from None
        if not stat.S_ISREG(st.st_mode):
            raise ArtefactError(f"{path} is not a regular file (a folder, pipe, socket or device stands "
                                f"where {root / MARKER} lists a file): rebuild {root}")
        stats.append((rel, st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns))
    unlisted = unlisted_data_files(_files(root), files, marker["kind"])
    if unlisted:
        raise ArtefactError(
            f"{root / MARKER} does not list {', '.join(unlisted[:3])}"
            f"{f' (and {len(unlisted) - 3} more)' if len(unlisted) > 3 else ''}: files GraLC reads "
            "must all be in the manifest (its entry was removed, or the file added by hand); "
            f"rebuild {root}, or move a file of your own into a folder of your own inside it")
    signature = (tuple(stats), (root / MARKER).stat().st_mtime_ns)
    with _verified_lock:
        if _verified.get(root) == signature:
            return root
    for rel, entry in sorted(files.items()):
        path = root / rel
        if path.stat().st_size != entry["size"] or file_sha256(path) != entry["sha256"]:
            raise ArtefactError(f"{path} was changed after GraLC wrote it (size or SHA-256 differs from "
                                f"{root / MARKER}): its contents no longer match the rest of {root}; "
                                "rebuild it, or restore the file")
    with _verified_lock:
        _verified[root] = signature
    return root


def manifest_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file inside an artefact: its manifest's entry when :func:`verify_artefact`
    checked that artefact in this process and the file is unchanged since (no second read of
    a large file), else computed. For cross-file digests: a file that records another's.

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "index"
    >>> with write_artefact(d, "index") as tmp:
    ...     _ = (tmp / "a.json").write_text("{}")
    >>> _ = verify_artefact(d); manifest_digest(d / "a.json") == file_sha256(d / "a.json")
    True
    """
    path = Path(path).resolve()
    root = artefact_root(path.parent)
    if root is not None:
        rel = path.relative_to(root).as_posix()
        with _verified_lock:
            signature = _verified.get(root)
        entry = (listed_files(read_marker(root)) or {}).get(rel)
        if signature is not None and isinstance(entry, dict):
            st = path.stat()
            if (rel, st.st_size, st.st_mtime_ns, st.st_ino) in signature[0]:
                return str(entry["sha256"])
    return file_sha256(path)


def model_digest(model: str | os.PathLike[str]) -> str:
    """SHA-256 naming a trained model: a checkpoint file's, or the files an export's manifest
    lists (verified; a user's own files beside them, e.g. notes, do not change it).

    Example: ``model_digest("runs/a/export")`` -> the 64-hex SHA-256 over the files its manifest
    lists (``retriever.json`` records it as ``model_sha256``).
    """
    path = Path(model)
    if path.is_file():
        return file_sha256(path)
    root = verify_artefact(path, ("export",))
    files = listed_files(read_marker(root)) or {}
    return hashlib.sha256("".join(f"{rel}:{files[rel]['sha256']}\n"
                                  for rel in sorted(files)).encode()).hexdigest()


def _inside_root(root: Path, rel: str) -> Path:
    from gralc.safe_load import path_inside

    try:
        return path_inside(root, rel, f"{root / MARKER}")
    except ValueError as exc:
        raise ArtefactError(str(exc)) from None


# ----- where an artefact may be written ------------------------------------------------------
def _related(target: Path, inp: Path) -> bool:
    return target == inp or inp in target.parents or target in inp.parents


def _protected() -> list[Path]:
    import gralc

    return [Path(gralc.__file__).resolve().parent]


def check_output_dir(target: str | os.PathLike[str], kind: str, force: bool = False,
                     inputs: Iterable[str | os.PathLike[str] | None] = (), out_key: str = "--out ",
                     force_key: str = "--force") -> Path:
    """Validate ``target`` for an artefact of ``kind`` before any expensive work; returns it
    resolved. Raises :class:`OutputDirError` naming the fix (``out_key`` / ``force_key``: how
    the calling command spells those options).

    It may not exist, be empty, or be an artefact of the same kind *with a manifest*; anything
    else (a user's folder, a GraLC folder of another kind, an older one without a manifest)
    needs ``force``, which moves that content aside to ``<target>.replaced-<time>``, never
    deleting it. A target equal to an input, inside one or holding one, or inside the
    installed package, is always refused.

    >>> import tempfile
    >>> check_output_dir(Path(tempfile.mkdtemp()) / "new", "index").name
    'new'
    """
    out = Path(target).expanduser().resolve()
    for inp in inputs:
        if inp is None:
            continue
        src = Path(inp).expanduser().resolve()
        if _related(out, src):
            raise OutputDirError(f"{out_key}{out} overlaps the input {src}: writing there could "
                                 "destroy it; choose an output folder outside every input")
    for pkg in _protected():
        if _related(out, pkg):
            raise OutputDirError(f"{out_key}{out} overlaps the installed GraLC package {pkg}: "
                                 "choose an output folder outside it")
    if not out.exists():
        above = next(p for p in out.parents if p.exists())
        if not above.is_dir():
            raise OutputDirError(f"{out_key}{out}: {above} is a file, not a folder, so nothing can be "
                                 "written below it; choose another path")
        return out
    if not out.is_dir():
        raise OutputDirError(f"{out_key}{out} is a file, not a folder: choose another path")
    entries = sorted(p.name for p in out.iterdir())
    marker = read_marker(out)
    if not entries or (marker is not None and marker["kind"] == kind
                       and (kind in OPEN_KINDS or listed_files(marker) is not None)):
        # a user's file named like a folder GraLC writes (``lexical``, ``graph``, ...): the
        # rebuild may need that name, said now rather than after the work
        taken = [n for n in entries if n in GRALC_DIRS and not (out / n).is_dir()]
        if taken and not force:
            raise OutputDirError(f"{out_key}{out} holds {', '.join(taken)}, a file of yours named like a "
                                 f"folder GraLC writes in a {kind}: move or rename it, or pass {force_key} "
                                 f"to move it aside to {out.name}.replaced-<time> (nothing is deleted)")
        return out
    if marker is not None and marker["kind"] == kind:
        what = f"a GraLC {kind} without a manifest of its files (written by an older GraLC)"
    elif marker is not None:
        what = f"a GraLC {marker['kind']}"
    else:
        what = f"{len(entries)} entries that GraLC did not write (e.g. {', '.join(entries[:3])})"
    if not force:
        raise OutputDirError(f"{out_key}{out} already holds {what}, not a GraLC {kind} it can update: "
                             f"choose another folder, empty it, or pass {force_key} to move its "
                             f"content aside to {out.name}.replaced-<time> (nothing is deleted)")
    return out


# ----- the lock ------------------------------------------------------------------------------
_held: dict[Path, int] = {}
_held_lock = threading.Lock()


def _lock_path(out: Path) -> Path:
    return out.parent / f".{out.name}.lock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: an empty lock older than this was left by a writer killed between creating and writing it
#: (both happen within microseconds of each other)
EMPTY_LOCK_GRACE_S = 10.0


def _stale(lock: Path) -> str | None:
    """Why ``lock`` is stale (its writer is dead on this host), else None."""
    try:
        raw = lock.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    try:
        info = json.loads(raw)
        pid, host = json_int(info["pid"], "pid"), str(info["host"])
    except (ValueError, KeyError, TypeError):
        if raw.isdigit():  # a lock of an older GraLC: its PID only, this host assumed
            pid, host = int(raw), socket.gethostname()
        elif not raw:  # a writer killed between creating the lock and writing into it
            try:
                age = time.time() - lock.stat().st_mtime
            except OSError:
                return None
            return f"it is empty and {age:.0f} s old" if age > EMPTY_LOCK_GRACE_S else None
        else:
            return None
    if host != socket.gethostname():
        return None
    return None if _pid_alive(pid) else f"process {pid} on {host} is gone"


@contextmanager
def output_lock(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the write lock ``.<target>.lock`` beside ``target`` (PID, host, time; reentrant
    within this process). Commands take it *before* their expensive work; a lock whose process
    is dead (same host) is taken over with a warning, together with the dead writer's
    temporary folders.

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "index"
    >>> with output_lock(d):
    ...     (d.parent / ".index.lock").is_file()
    True
    """
    out = Path(target).expanduser().resolve()
    with _held_lock:
        if out in _held:
            _held[out] += 1
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield out
        finally:
            with _held_lock:
                _held[out] -= 1
        return
    lock = _lock_path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(out, exc) from exc
    payload = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                          "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    for attempt in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            why = _stale(lock)
            if why is None or attempt:
                raise OutputDirError(
                    f"another GraLC process is writing {out} (lock {lock}: "
                    f"{lock.read_text(errors='replace').strip() if lock.exists() else '?'}); wait for "
                    "it to finish; if no such process runs (e.g. on another host), delete the lock") from None
            logger.warning("taking over the stale lock %s (%s)", lock, why)
            lock.unlink(missing_ok=True)
        except OSError as exc:
            raise _unwritable(out, exc) from exc
    with os.fdopen(fd, "w") as f:
        f.write(payload + "\n")
    with _held_lock:
        _held[out] = 1
    try:
        _clean_leftovers(out)
        yield out
    finally:
        with _held_lock:
            del _held[out]
        lock.unlink(missing_ok=True)


def _unwritable(out: Path, exc: OSError) -> OutputDirError:
    """One message for an output folder that cannot be written where it is asked for (raised
    ``from`` the OSError, so a full disk is still told as one: ``gralc.cli.disk_full``)."""
    why = "a file stands where a folder is needed" if isinstance(exc, FileExistsError | NotADirectoryError) \
        else (exc.strerror or str(exc))
    return OutputDirError(f"cannot write the output {out} ({why}, in {out.parent}); choose a folder "
                          "you can write, on a writable disk")


def _clean_leftovers(out: Path) -> None:
    """Temporary folders of a dead writer of ``out`` (we hold the lock, so nobody else writes
    them): a new artefact that never got swapped in is removed; an old one swapped out gives
    its user files back (:func:`_dispose`)."""
    for tmp in sorted(out.parent.glob(f".{out.name}.tmp-*")) + sorted(out.parent.glob(f".{out.name}.old-*")):
        if not tmp.is_dir():
            continue
        logger.warning("cleaning up %s, left by an interrupted write of %s", tmp, out)
        if read_marker(tmp) is None:  # a new artefact cut short: only GraLC's files
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            _dispose(tmp, out)


# ----- writing -------------------------------------------------------------------------------
@contextmanager
def write_artefact(target: str | os.PathLike[str], kind: str, force: bool = False,
                   inputs: Iterable[str | os.PathLike[str] | None] = ()) -> Iterator[Path]:
    """Yield a temporary folder to write the whole artefact into; on success it replaces
    ``target``; on error it is removed and ``target`` is untouched.

    ``target`` is checked (:func:`check_output_dir`) and locked (:func:`output_lock`); every
    file written gets the permissions a plain ``open()`` gives; the manifest is written last;
    :func:`gralc.atomic.swap_in` swaps the folder in. Of the old folder only the files its
    manifest lists are deleted; every other file (the user's ``NOTES.md``) moves into the new
    folder at the same path. A user's file whose name the new artefact also writes is never
    overwritten: the write is refused before the swap; with ``force`` that file is moved aside
    to ``<target>.replaced-<time>/`` (same relative path) and the write goes on.

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "index"
    >>> with write_artefact(d, "index") as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> sorted(listed_files(read_marker(d)))
    ['a.txt']
    """
    inputs = list(inputs)
    out = check_output_dir(target, kind, force, inputs)
    with output_lock(out):
        tmp = temp_name(out)
        tmp.mkdir()
        try:
            yield tmp
            default_modes(tmp)  # e.g. safetensors writes 0600: readable like every other file
            _write_marker(tmp, kind)
            check_output_dir(out, kind, force, inputs)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # only the new content lives there
            raise
        _swap_in(tmp, out, kind, force)


def claim_dir(target: str | os.PathLike[str], kind: str, force: bool = False,
              inputs: Iterable[str | os.PathLike[str] | None] = (), out_key: str = "--out ",
              force_key: str = "--force") -> Path:
    """A folder that a long job writes file by file (an evaluation run, a training run):
    validated like :func:`check_output_dir`, foreign content moved aside under ``force``,
    created, and marked as an artefact of ``kind`` at once (so a resumed run recognises it).

    >>> import tempfile
    >>> d = claim_dir(Path(tempfile.mkdtemp()) / "run", "eval_run"); artefact_kind(d)
    'eval_run'
    """
    out = check_output_dir(target, kind, force, inputs, out_key, force_key)
    if out.exists() and any(out.iterdir()) and artefact_kind(out) != kind:
        _move_aside(out)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / MARKER).is_file():
        _write_marker(out, kind, files=False)
    return out


def _move_aside(out: Path) -> Path:
    aside = move_aside(out)
    logger.warning("--force: the previous content of %s was moved to %s", out, aside)
    return aside


def user_files(folder: Path) -> list[str]:
    """Files in the artefact ``folder`` that its manifest does not list (the user's).

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "index"
    >>> with write_artefact(d, "index") as tmp:
    ...     _ = (tmp / "a.txt").write_text("x")
    >>> _ = (d / "NOTES.md").write_text("mine"); user_files(d)
    ['NOTES.md']
    """
    listed = listed_files(read_marker(folder)) or {}
    return [rel for rel in _files(folder) if rel not in listed]


def _swap_in(tmp: Path, out: Path, kind: str, force: bool = False) -> None:
    if not out.exists() or not any(out.iterdir()):
        swap_in(tmp, out)  # a new folder, or onto an empty one
        return
    marker = read_marker(out)
    if marker is None or marker["kind"] != kind or listed_files(marker) is None:
        _move_aside(out)  # only reached with force (check_output_dir)
        swap_in(tmp, out)
        return
    clash = [rel for rel in user_files(out)
             if (tmp / rel).exists() or any((tmp / p).exists() and not (tmp / p).is_dir()
                                            for p in Path(rel).parents if str(p) != ".")]
    if clash and not force:
        shutil.rmtree(tmp, ignore_errors=True)  # the new content only: nothing was swapped
        raise OutputDirError(f"{out} holds files GraLC did not write whose names the new {kind} "
                             f"needs ({', '.join(clash[:5])}): move or rename them, then rebuild, "
                             f"or pass --force to move them aside to {out.name}.replaced-<time>; "
                             "nothing was changed")
    if clash:  # force: a user's files whose names the new artefact needs, kept aside
        aside = move_aside(out, clash)
        logger.warning("--force: %s (not written by GraLC, but the new artefact needs the name) "
                       "moved to %s", ", ".join(clash), aside)
    old = swap_in(tmp, out)
    if old is not None:
        _dispose(old, out)


def _as_written(path: Path, entry: Any) -> bool:
    """Whether ``path`` still has the size and SHA-256 its manifest ``entry`` recorded (a plain
    file: a listed name that someone since replaced with their own content is theirs now)."""
    try:
        return (isinstance(entry, dict) and not path.is_symlink() and path.is_file()
                and path.stat().st_size == entry.get("size") and file_sha256(path) == entry.get("sha256"))
    except OSError:
        return False


def _dispose(old: Path, out: Path) -> None:
    """Delete the files ``old``'s manifest lists that are still as GraLC wrote them (size and
    SHA-256); move every other file into ``out`` (or, when ``out`` has one of that name, keep
    it in ``<out>.recovered-<time>``)."""
    listed = listed_files(read_marker(old)) or {}
    for rel in _files(old):
        src = old / rel
        if rel in listed and _as_written(src, listed[rel]):
            src.unlink()
            continue
        dest = out / rel
        if dest.exists() or not out.is_dir():
            dest = out.parent / f"{out.name}.recovered-{time.strftime('%Y%m%d-%H%M%S')}" / rel
            logger.warning("kept %s (a file GraLC did not write) in %s", rel, dest)
        move(src, dest)
    (old / MARKER).unlink(missing_ok=True)
    for root, dirs, _ in os.walk(old, topdown=False):
        for d in dirs:
            try:
                (Path(root) / d).rmdir()
            except OSError:
                pass
    try:
        old.rmdir()
    except OSError:
        logger.warning("left %s: it still holds entries that are not plain files", old)
