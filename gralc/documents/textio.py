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

import re
from pathlib import Path
from typing import Any

from gralc import safe_load
from gralc.documents.errors import DocumentParseError

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_utf8(data: bytes, name: str | Path, what: str = "UTF-8") -> str:
    """:func:`gralc.safe_load.decode_utf8`, its error a :class:`DocumentParseError`.

    >>> decode_utf8("é".encode(), "a.txt")
    'é'
    """
    return safe_load.decode_utf8(data, name, what, DocumentParseError)


def load_json(text: str, name: str | Path, line: int | None = None, hint: str = "") -> Any:
    """:func:`gralc.safe_load.parse_json` (one JSON Lines record: ``line``), its error a
    :class:`DocumentParseError`.

    >>> load_json('{"_id": "d1"}', "corpus.jsonl", 1)
    {'_id': 'd1'}
    """
    return safe_load.parse_json(text, name, line, hint, DocumentParseError)


def read_json_file(path: str | Path, hint: str = "") -> Any:
    """The JSON of a user's UTF-8 file (:func:`gralc.safe_load.read_json_untrusted`; document
    text may hold ``${`` as it is never interpolated), its error a :class:`DocumentParseError`.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "a.json"; _ = f.write_text('{"text": "${x}"}')
    >>> read_json_file(f)
    {'text': '${x}'}
    """
    return safe_load.read_json_untrusted(path, hint=hint, allow_interpolation=True,
                                         error=DocumentParseError)


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with every unpaired surrogate replaced by U+FFFD (same length), and how many.

    >>> replace_surrogates("ok\\udcff")
    ('ok\\ufffd', 1)
    """
    if not _SURROGATE.search(text):
        return text, 0
    return _SURROGATE.subn(REPLACEMENT, text)


def replace_surrogates_in(data: Any) -> tuple[Any, int, str]:
    """Parsed JSON with :func:`replace_surrogates` applied to every string (keys too), in place
    where it can; ``(data, strings changed, where the first one is)`` with the place written as
    ``data[0].paragraphs[1].context``. Walks with a stack (the JSON may nest as deep as
    ``json.loads`` allowed); a place is a ``(parent place, key)`` link, spelled out only for
    the first change.

    >>> replace_surrogates_in({"data": [{"context": "ok\\udcff"}]})
    ({'data': [{'context': 'ok\\ufffd'}]}, 1, 'data[0].context')
    """
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
    them) or :func:`replace_surrogates` (``strings=False``: ``count`` characters).

    >>> surrogate_warning("q.jsonl", 1, "data[0]")[:40]
    'q.jsonl: 1 string(s) with unpaired UTF-1'
    """
    what = "string(s) with unpaired UTF-16 surrogates" if strings else "unpaired UTF-16 surrogate(s)"
    at = f", first at {first}" if first else ""
    return (f"{where}: {count} {what} (a \\udXXX escape, or bytes that were not UTF-8){at}; "
            "replaced by U+FFFD")
