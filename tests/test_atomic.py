"""gralc.atomic, the one writer of whole files and folders: a writer that fails leaves the old
content and no temporary behind; and no other module renames a temporary file by hand."""

from __future__ import annotations

import ast
import json
import os
import stat
from pathlib import Path

import pytest

from gralc import atomic
from gralc.atomic import (
    atomic_path,
    atomic_write,
    current_umask,
    default_modes,
    write_bytes_atomic,
    write_json_atomic,
    write_text_atomic,
)

PACKAGE = Path(__file__).resolve().parents[1] / "gralc"


class Boom(Exception):
    pass


def test_writes_replace_the_file(tmp_path):
    path = tmp_path / "sub" / "a.json"  # parent folders are created
    write_json_atomic(path, {"x": Path("p")})
    assert json.loads(path.read_text()) == {"x": "p"}
    write_text_atomic(path, "é\n")
    assert path.read_text(encoding="utf-8") == "é\n"
    write_bytes_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.json"]


@pytest.mark.parametrize("mode", ["w", "wb"])
def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path, mode):
    path = tmp_path / "a.txt"
    path.write_text("old")
    with pytest.raises(Boom), atomic_write(path, mode) as f:
        f.write("new, half written" if mode == "w" else b"new, half written")
        raise Boom
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_failing_path_writer_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "v.safetensors"
    path.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt), atomic_path(path) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".v.safetensors.tmp-")
        tmp.write_bytes(b"new")
        raise KeyboardInterrupt  # not only Exception: any way out of the block
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["v.safetensors"]


def test_no_two_writers_share_a_temporary(tmp_path):
    path = tmp_path / "a.txt"
    with atomic_path(path) as one, atomic_path(path) as two:
        assert one != two
        one.write_text("1")
        two.write_text("2")
    assert path.read_text() == "1"  # the last to finish wins, whole
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_a_folder_replaces_the_old_folder_only_when_complete(tmp_path):
    folder = tmp_path / "store"
    with atomic_path(folder, folder=True) as tmp:
        (tmp / "a").write_text("1")
    with pytest.raises(Boom), atomic_path(folder, folder=True) as tmp:
        (tmp / "b").write_text("2")
        raise Boom
    assert [p.name for p in folder.iterdir()] == ["a"]
    with atomic_path(folder, folder=True) as tmp:
        (tmp / "b").write_text("2")
    assert [p.name for p in folder.iterdir()] == ["b"]
    assert [p.name for p in tmp_path.iterdir()] == ["store"]  # the old folder is gone


def test_swap_in_keeps_the_old_folder_for_the_caller(tmp_path):
    from gralc.atomic import swap_in

    out, new = tmp_path / "out", tmp_path / "new"
    new.mkdir()
    (new / "a").write_text("new")
    assert swap_in(new, out) is None and (out / "a").read_text() == "new"  # nothing there before
    new.mkdir()
    (new / "a").write_text("newer")
    old = swap_in(new, out)
    assert (out / "a").read_text() == "newer" and (old / "a").read_text() == "new"


def test_move_aside_keeps_a_folder_or_some_of_its_files(tmp_path):
    from gralc.atomic import move_aside

    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "sub" / "notes.md").write_text("mine")
    (run / "keep").write_text("k")
    aside = move_aside(run, ["sub/notes.md"])
    assert (aside / "sub" / "notes.md").read_text() == "mine" and (run / "keep").is_file()
    whole = move_aside(run)
    assert not run.exists() and (whole / "keep").read_text() == "k"
    assert whole != aside and whole.name.startswith("run.replaced-")  # two asides never clash


def test_text_writer_refuses_other_modes(tmp_path):
    with pytest.raises(ValueError, match="mode"), atomic_write(tmp_path / "a", "a"):
        pass


# ----- what a writer writes is readable like a plain open() -------------------------------------
@pytest.fixture
def umask():
    """``umask(mask)`` sets the process umask; the old one comes back after the test."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def modes(folder: Path) -> dict[str, int]:
    """Permission bits of ``folder`` and everything under it, by relative path ('.': itself)."""
    out = {".": stat.S_IMODE(folder.stat().st_mode)}
    for p in sorted(folder.rglob("*")):
        out[p.relative_to(folder).as_posix()] = stat.S_IMODE(p.lstat().st_mode)
    return out


def test_the_umask_is_read_without_changing_it(umask, monkeypatch):
    umask(0o027)
    assert current_umask() == 0o027
    assert os.umask(0o027) == 0o027  # unchanged by the read

    def no_proc(*args, **kwargs):
        raise OSError("no /proc here")

    monkeypatch.setattr(atomic, "open", no_proc, raising=False)  # the fallback: os.umask twice
    assert current_umask() == 0o027
    assert os.umask(0o027) == 0o027


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_a_private_writer_gets_the_modes_of_a_plain_open(tmp_path, umask, mask):
    """safetensors creates its file 0600 (as mkstemp would): through atomic_path the file gets
    0666 & ~umask, a folder and what is inside it 0777 / 0666 & ~umask, like open() / mkdir()."""
    import torch
    from safetensors.torch import save_file

    umask(mask)
    with atomic_path(tmp_path / "w.safetensors") as tmp:
        save_file({"a": torch.zeros(2)}, str(tmp))
        assert stat.S_IMODE(tmp.stat().st_mode) == 0o600  # what the writer did
    assert modes(tmp_path)["w.safetensors"] == 0o666 & ~mask
    with atomic_path(tmp_path / "store", folder=True) as tmp:
        (tmp / "sub").mkdir(mode=0o700)
        os.close(os.open(tmp / "sub" / "secret", os.O_CREAT | os.O_WRONLY, 0o600))
        (tmp / "link").symlink_to("sub/secret")
    assert modes(tmp_path / "store") == {".": 0o777 & ~mask, "sub": 0o777 & ~mask,
                                         "sub/secret": 0o666 & ~mask,
                                         "link": 0o777}  # a link: not changed, not followed


def test_every_file_of_an_artefact_is_readable_by_the_group(tmp_path, umask):
    from gralc.artefacts import MARKER, write_artefact

    umask(0o022)
    with write_artefact(tmp_path / "export", "export") as tmp:
        (tmp / "encoder").mkdir(mode=0o700)
        os.close(os.open(tmp / "encoder" / "model.safetensors", os.O_CREAT | os.O_WRONLY, 0o600))
    got = modes(tmp_path / "export")
    assert got == {".": 0o755, MARKER: 0o644, "encoder": 0o755, "encoder/model.safetensors": 0o644}
    default_modes(tmp_path / "export" / "encoder" / "model.safetensors")  # idempotent on a file
    assert modes(tmp_path / "export") == got


# ----- no hand-written temp-then-rename outside gralc.atomic --------------------------------
#: (module path under gralc, enclosing function or None for every function) -> why it may rename
ALLOWED = {
    ("atomic.py", None): "the helper itself (atomic_path, swap_in, move_aside, move)",
}


def _renames(tree: ast.AST) -> list[tuple[int, str, str | None]]:
    """``(line, call, enclosing function)`` of every rename or temporary-file call: os.replace /
    os.rename / shutil.move, ``X.rename(...)``, ``X.replace(target)`` (Path.replace: one
    positional argument; str.replace takes two), mkstemp and NamedTemporaryFile."""
    found = []

    def visit(node: ast.AST, func: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func = node.name
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            if (
                (owner in ("os", "shutil") and name in ("replace", "rename", "renames", "move"))
                or (isinstance(f, ast.Attribute) and name == "rename")
                or (isinstance(f, ast.Attribute) and name == "replace" and len(node.args) == 1
                    and not node.keywords)
                or name in ("mkstemp", "NamedTemporaryFile")
            ):
                found.append((node.lineno, f"{owner + '.' if owner else ''}{name}", func))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, None)
    return found


def test_the_finder_sees_every_hand_written_rename():
    code = """
import os, shutil, tempfile
def a(tmp, path):
    tmp.replace(path)
    os.replace(tmp, path)
    path.rename(tmp)
    shutil.move(tmp, path)
    tempfile.mkstemp()
    "x".replace("a", "b")  # a string: not a rename
"""
    assert [c for _, c, _ in _renames(ast.parse(code))] == [
        "tmp.replace", "os.replace", "path.rename", "shutil.move", "tempfile.mkstemp"]


def test_only_gralc_atomic_renames_files():
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, call, func in _renames(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, None) not in ALLOWED and (rel, func) not in ALLOWED:
                bad.append(f"gralc/{rel}:{line} {call}() in {func}")
    assert bad == [], ("write through gralc.atomic (atomic_write / atomic_path) instead of "
                       f"renaming a temporary by hand: {bad}")


# ----- no plain write of a file outside gralc.atomic ---------------------------------------------
#: the context managers whose block writes into a temporary that appears whole or not at all
ATOMIC_BLOCKS = {"atomic_path", "atomic_write", "write_artefact"}
#: (module path under gralc, enclosing function) -> why it may write a file plainly
PLAIN_WRITES = {
    ("artefacts.py", "output_lock"): "the lock file: created with O_EXCL (a rename cannot refuse "
                                     "an existing file); nobody reads it as data",
    ("sweep.py", "_run_one"): "a running configuration's log: its command's output as it comes",
    ("experiments/seed_folds.py", "run_job"): "a running fold's log: appended as it comes",
}
#: the names of calls that write a file -> the owners they must be called on ("": any)
_WRITERS = {
    "write_text": "", "write_bytes": "", "savefig": "", "to_csv": "", "to_parquet": "",
    "save_pretrained": "", "save_file": "", "write_index": "", "savez": "", "savez_compressed": "",
    "save": ("torch", "np", "numpy", "OmegaConf"), "dump": ("json", "yaml", "pickle"),
    "safe_dump": ("yaml",), "fdopen": ("os",),
}


def _name(f: ast.AST) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _write_mode(call: ast.Call, positional: int) -> bool:
    """``call`` opens for writing: its mode (the ``positional``-th argument or ``mode=``) is a
    constant holding w, a, x or +."""
    mode = call.args[positional] if len(call.args) > positional else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(
        c in mode.value for c in "wax+")


def _is_write(call: ast.Call) -> bool:
    """``call`` writes a file: a writer of :data:`_WRITERS` (``yaml.dump(x)`` without a stream
    returns a string), ``open(path, "w")`` or ``path.open("w")`` (modes w, a, x, +)."""
    f, name = call.func, _name(call.func)
    owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
    owners = _WRITERS.get(name)
    if owners == "":
        return True
    if owners:
        to_string = name in ("dump", "safe_dump") and owner != "json" and len(call.args) < 2 \
            and not any(k.arg == "stream" for k in call.keywords)
        return owner in owners and not to_string and (name != "fdopen" or _write_mode(call, 1))
    if name == "open" and isinstance(f, ast.Name):
        return _write_mode(call, 1)
    return name == "open" and owner not in ("os", "tarfile") and _write_mode(call, 0)


def _plain_writes(tree: ast.AST) -> list[tuple[int, str, str | None]]:
    """``(line, call, enclosing function)`` of every call that writes a file (:func:`_is_write`)
    outside a block of :data:`ATOMIC_BLOCKS`."""
    found = []

    def visit(node: ast.AST, func: str | None, safe: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func, safe = node.name, False
        if isinstance(node, ast.With | ast.AsyncWith) and any(
                isinstance(i.context_expr, ast.Call) and _name(i.context_expr.func) in ATOMIC_BLOCKS
                for i in node.items):
            for item in node.items:
                visit(item, func, safe)
            for child in node.body:
                visit(child, func, True)
            return
        if isinstance(node, ast.Call) and not safe and _is_write(node):
            f = node.func
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            found.append((node.lineno, f"{owner + '.' if owner else ''}{_name(f)}", func))
        for child in ast.iter_child_nodes(node):
            visit(child, func, safe)

    visit(tree, None, False)
    return found


def test_the_finder_sees_every_plain_write():
    code = """
import json, torch, numpy as np
def a(path, fig, x):
    path.write_text("x")
    open(path, "w").write("x")
    path.open("a")
    json.dump(x, f)
    torch.save(x, path)
    np.save(path, x)
    fig.savefig(path)
    peft.save_pretrained(path)
    open(path).read()           # a read
    path.open()                 # a read
    model.save(path)            # not a writer of files by that name
    yaml.safe_dump(x)           # a string
    with atomic_write(path) as f:
        json.dump(x, f)         # inside the atomic block
    with atomic_path(path, folder=True) as tmp:
        (tmp / "a").write_text("x")
"""
    assert [c for _, c, _ in _plain_writes(ast.parse(code))] == [
        "path.write_text", "open", "path.open", "json.dump", "torch.save", "np.save", "fig.savefig",
        "peft.save_pretrained"]


def test_every_file_is_written_through_gralc_atomic():
    """A file GraLC writes appears whole or not at all: written inside an atomic_path /
    atomic_write / write_artefact block (a folder written whole counts), or by a helper of
    gralc.atomic; the few exceptions say why in :data:`PLAIN_WRITES`."""
    bad, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "atomic.py":
            continue
        for line, call, func in _plain_writes(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, func) in PLAIN_WRITES:
                used.add((rel, func))
            else:
                bad.append(f"gralc/{rel}:{line} {call}() in {func}")
    assert bad == [], ("write through gralc.atomic (write_text_atomic / atomic_write / atomic_path, "
                       f"or inside a write_artefact block) so that no reader sees half a file: {bad}")
    assert used == set(PLAIN_WRITES), f"stale PLAIN_WRITES entries: {set(PLAIN_WRITES) - used}"
