"""Untrusted text and JSON for the document and question readers: one error or one repair.

Every reader that takes a file from a user (JATS is lxml's job) goes through these helpers, so
that invalid input ends in ONE of two ways and never in a traceback:

* bytes that are not UTF-8, JSON syntax errors, JSON nested deeper than Python's reader
  recurses (``[[[[...`` a 100 000 deep ends in a RecursionError inside ``json.loads``): a
  :class:`DocumentParseError` (a ``ValueError``, hence exit code 2 at every command line)
  naming the file and line and saying what to do;
* unpaired UTF-16 surrogates inside strings (a JSON ``"\\udcff"`` escape, or a command-line
  argument holding bytes that are not UTF-8, which Python hands over as ``'\\udcff'``): they
  cannot be encoded, so the tokenizer would fail later with a bare ``TypeError``. Each one is
  replaced by U+FFFD (one character for one, so every character offset into the string, e.g.
  a SQuAD ``answer_start``, still holds), and the caller reports a warning.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from gralc.documents.errors import DocumentParseError

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_utf8(data: bytes, name: str | Path, what: str = "UTF-8") -> str:
    """``data`` as UTF-8 text (a leading BOM dropped), or one error naming the line and the fix
    (``what``: how the message calls the expected content, e.g. ``a UTF-8 JSON file``)."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        path = Path(name)
        raise DocumentParseError(
            f"{name}:{line}: not {what} (byte 0x{data[exc.start]:02x} at byte offset {exc.start}); "
            f"re-save it as UTF-8, e.g. iconv -f latin1 -t utf-8 {path.name} > fixed{path.suffix}",
            path=name, line=line) from None  # fmt: skip


def load_json(text: str, name: str | Path, line: int | None = None, hint: str = "") -> Any:
    """``json.loads(text)``; a syntax error or too deep a nesting is one error naming ``name``
    (and ``line``: the line of a JSON Lines record), ``hint`` appended (where to get the file).
    """
    where = f"{name}:{line}" if line is not None else str(name)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        raise DocumentParseError(f"{name}:{at}: not valid JSON ({exc.msg}, column {exc.colno})"
                                 f"{hint}", path=name, line=at) from None  # fmt: skip
    except RecursionError:
        raise DocumentParseError(f"{where}: JSON nested too deeply to read (deeper than Python's "
                                 f"JSON reader recurses); no real data file nests so deep{hint}",
                                 path=name, line=line) from None  # fmt: skip


def read_json_file(path: str | Path, hint: str = "") -> Any:
    """The JSON of a UTF-8 file, errors as in :func:`decode_utf8` and :func:`load_json`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentParseError(f"cannot read {path}: {exc.strerror}; check the path and "
                                 "permissions", path=path) from None  # fmt: skip
    return load_json(decode_utf8(data, path, "a UTF-8 JSON file"), path, hint=hint)


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with every unpaired surrogate replaced by U+FFFD (same length), and how many."""
    if not _SURROGATE.search(text):
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def replace_surrogates_in(data: Any) -> tuple[Any, int, str]:
    """Parsed JSON with :func:`replace_surrogates` applied to every string (keys too), in place
    where it can; ``(data, strings changed, where the first one is)`` with the place written as
    ``data[0].paragraphs[1].context``. Walks with a stack (the JSON may nest as deep as
    ``json.loads`` allowed); a place is a ``(parent place, key)`` link, spelled out only for
    the first change."""
    changed, first = 0, ""

    def fix(value: str, place: tuple | None) -> str:
        nonlocal changed, first
        value, n = replace_surrogates(value)
        if n:
            changed += 1
            first = first or _json_path(place)
        return value

    if isinstance(data, str):
        return fix(data, None), changed, first
    stack: list[tuple[Any, tuple | None]] = [(data, None)]
    while stack:
        node, place = stack.pop()
        if isinstance(node, dict):
            keys = [fix(k, place) if isinstance(k, str) else k for k in node]
            if any(a is not b for a, b in zip(keys, node)):  # a key changed: rebuild, in order
                values = list(node.values())
                node.clear()
                node.update(zip(keys, values))
            entries = list(node.items())
        elif isinstance(node, list):
            entries = list(enumerate(node))
        else:
            continue
        nested = []
        for key, value in entries:
            if isinstance(value, str):
                node[key] = fix(value, (place, key))
            elif isinstance(value, (dict, list)):
                nested.append((value, (place, key)))
        stack.extend(reversed(nested))  # document order
    return data, changed, first


def _json_path(place: tuple | None) -> str:
    parts = []
    while place is not None:
        place, key = place
        parts.append(key)
    out = ""
    for key in reversed(parts):
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out or "the top level"


def surrogate_warning(where: str, count: int, first: str = "", strings: bool = True) -> str:
    """The one warning for :func:`replace_surrogates_in` (``count`` strings, the ``first`` of
    them) or :func:`replace_surrogates` (``strings=False``: ``count`` characters)."""
    what = "string(s) with unpaired UTF-16 surrogates" if strings else "unpaired UTF-16 surrogate(s)"
    at = f", first at {first}" if first else ""
    return (f"{where}: {count} {what} (a \\udXXX escape, or bytes that were not UTF-8){at}; "
            "replaced by U+FFFD")
