"""gralc.safe_load.read_json_untrusted, the one reader of JSON files: what it guarantees, and a
test that fails when a module parses a file's JSON by hand again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gralc.documents.errors import DocumentParseError
from gralc.documents.textio import read_json_file
from gralc.safe_load import read_json_untrusted

PACKAGE = Path(__file__).resolve().parents[1] / "gralc"


@pytest.mark.parametrize(("content", "message"), [
    (b'{"a": 1,}', r"a\.json:1: not valid JSON \(.*column 9\)"),
    (b'{"a":\n "\xff"}', r"a\.json:2: not a UTF-8 JSON file \(byte 0xff"),
    (b"[" * 100_000, r"a\.json: JSON nested too deeply"),
    (b'{"key": "${oc.env:HOME}"}', r"a\.json: key holds an interpolation"),
    (b"[1]", r"a\.json: expected a JSON object, found list"),
])
def test_every_bad_file_is_one_error_naming_it(tmp_path, content, message):
    path = tmp_path / "a.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as err:
        read_json_untrusted(path, expect=dict)
    assert type(err.value) is ValueError  # a user error, not a traceback of json's


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="index config not found: .*nope.json"):
        read_json_untrusted(tmp_path / "nope.json", "index config")


def test_document_readers_get_their_error_and_keep_their_text(tmp_path):
    """A user's document may hold ``${`` (it is data, never interpolated); its errors are
    DocumentParseErrors with the file and line, the hint appended."""
    path = tmp_path / "squad.json"
    path.write_bytes(b'{"data": "costs ${5}"}')
    assert read_json_file(path) == {"data": "costs ${5}"}
    path.write_bytes(b'{"data":\n x}')
    with pytest.raises(DocumentParseError, match=r"squad\.json:2: not valid JSON .*; give a SQuAD") as err:
        read_json_file(path, hint="; give a SQuAD-format file")
    assert err.value.line == 2 and err.value.path == str(path)


# ----- no second reader --------------------------------------------------------------------------
#: (module path under gralc, enclosing function) -> why it parses JSON from a file itself
OWN_JSON = {
    ("encoding/models.py", "_check_safetensors"): "the JSON header inside a binary .safetensors file",
}


def _file_json(tree: ast.AST) -> list[tuple[int, str | None]]:
    """``(line, enclosing function)`` of every ``json.load(f)`` and every ``json.loads`` of a
    file's content (``X.read_text()``, ``X.read_bytes()``, ``f.read()``)."""
    found = []

    def visit(node: ast.AST, func: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            func = node.name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "json":
            arg = node.args[0] if node.args else None
            if node.func.attr == "load" or (
                    node.func.attr == "loads" and isinstance(arg, ast.Call)
                    and isinstance(arg.func, ast.Attribute)
                    and arg.func.attr in ("read_text", "read_bytes", "read")):
                found.append((node.lineno, func))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, None)
    return found


def test_the_finder_sees_a_hand_written_reader():
    code = """
import json
def a(path, f, line):
    json.loads(path.read_text())
    json.load(f)
    json.loads(f.read())
    json.loads(line)        # one JSON Lines record, or a string: not a file
"""
    assert [line for line, _ in _file_json(ast.parse(code))] == [4, 5, 6]


def test_json_files_are_read_through_the_one_reader():
    bad, used = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "safe_load.py":
            continue
        for line, func in _file_json(ast.parse(path.read_text(encoding="utf-8"))):
            if (rel, func) in OWN_JSON:
                used.add((rel, func))
            else:
                bad.append(f"gralc/{rel}:{line} in {func}")
    assert bad == [], f"read JSON files with gralc.safe_load.read_json_untrusted: {bad}"
    assert used == set(OWN_JSON), f"stale OWN_JSON entries: {set(OWN_JSON) - used}"


def test_a_utf16_or_utf32_file_is_told_its_own_encoding(tmp_path):
    """Issue 58, class 10: a UTF-16 file was told to use ``iconv -f latin1``."""
    from gralc.safe_load import decode_utf8

    for codec, name in [("utf-16", "UTF-16"), ("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE"),
                        ("utf-32", "UTF-32"), ("utf-32-le", "UTF-32LE")]:
        with pytest.raises(ValueError, match=f"looks like {name}\\);.*iconv -f {name} -t utf-8 q.txt"):
            decode_utf8("Which drug lowers HbA1c?\n".encode(codec), tmp_path / "q.txt")
    with pytest.raises(ValueError, match="iconv -f latin1 -t utf-8 q.txt"):
        decode_utf8("caf\xe9 au lait".encode("latin1"), tmp_path / "q.txt")
