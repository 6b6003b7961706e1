"""Read and write :class:`Question` records as JSON Lines (one object per line).

Keys are the :class:`Question` field names. On reading, ``"question"`` is accepted as an
alias of ``"text"`` (the demo corpus uses it); keys that are not :class:`Question` fields
(e.g. ``"kind"``) are ignored unless :class:`Question` has such a field. Writing is atomic:
a temporary file beside the target is renamed over it.

A question file is untrusted input: bytes that are not UTF-8, a line that is not JSON or nests
too deeply to read, a key of the wrong type (``"text": ["..."]``) are each one ValueError
naming ``FILE:LINE``, the key and the fix; unpaired ``\\udXXX`` escapes in a string are replaced
by U+FFFD with a warning naming the line (left in, the tokenizer fails on them later).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path

from gralc.atomic import atomic_write
from gralc.documents.question import Question, clean_question_text
from gralc.documents.textio import decode_utf8, load_json, replace_surrogates_in, surrogate_warning

log = logging.getLogger(__name__)

_FIELDS = {f.name for f in fields(Question)}
_REQUIRED = ("id", "text", "gold_doc_id")
_LIST_FIELDS = ("gold_section_types", "gold_paragraph_ids", "evidence_spans")
_STR_FIELDS = ("long_answer", "decision", "split", "kind")
_ID_FIELDS = ("id", "gold_doc_id")  # a string, or a number written as one


def write_jsonl(questions: Iterable[Question], path: str | Path) -> Path:
    """Write ``questions`` to ``path`` (parent folders created), atomically."""
    path = Path(path)
    with atomic_write(path) as f:
        for q in questions:
            f.write(json.dumps(asdict(q), ensure_ascii=False) + "\n")
    return path


def question_from_dict(row: dict, where: str = "<dict>") -> Question:
    """A :class:`Question` from one JSON object (``"question"`` = alias of ``"text"``)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    row, changed, first = replace_surrogates_in(dict(row))
    if changed:
        log.warning("%s", surrogate_warning(where, changed, first))
    if "text" not in row and "question" in row:
        row["text"] = row.pop("question")
    missing = [k for k in _REQUIRED if not row.get(k)]
    if missing:
        raise ValueError(f"{where}: missing or empty key(s) {missing}; every question needs "
                         f"'id', 'text' (or 'question') and 'gold_doc_id'")  # fmt: skip
    row["text"] = clean_question_text(row["text"], f"{where}: 'text'")
    if not row["text"].strip():
        raise ValueError(f"{where}: 'text' is blank; every question needs words to search with")
    for key in _ID_FIELDS:
        if isinstance(row[key], int) and not isinstance(row[key], bool):
            row[key] = str(row[key])
        elif not isinstance(row[key], str):
            raise ValueError(f"{where}: {key!r} must be a string, got {row[key]!r}")
    for key in _STR_FIELDS:
        if key in row and not isinstance(row[key], str):
            raise ValueError(f"{where}: {key!r} must be a string, got {row[key]!r}")
    for key in _LIST_FIELDS:
        if key in row and not isinstance(row[key], list):
            raise ValueError(f"{where}: {key!r} must be a JSON list, got {row[key]!r}")
    for key in ("gold_section_types", "gold_paragraph_ids"):
        if not all(isinstance(x, str) for x in row.get(key, [])):
            raise ValueError(f"{where}: {key!r} must be a list of strings, got {row[key]!r}")
    for span in row.get("evidence_spans", []):
        if not (isinstance(span, list) and len(span) == 2 and all(isinstance(x, int) for x in span)
                and 0 <= span[0] < span[1]):
            raise ValueError(f"{where}: evidence span {span!r} must be [start, end] with "
                             "0 <= start < end (character offsets in the gold document)")
    return Question(**{k: v for k, v in row.items() if k in _FIELDS})


def read_jsonl(path: str | Path) -> list[Question]:
    """Questions from a JSONL file (blank lines skipped); errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"question file not found: {path}")
    text = decode_utf8(path.read_bytes(), path)
    out: list[Question] = []
    # lines as a text file has them (\n, \r\n, \r), not str.splitlines (which also breaks
    # at U+2028, legal inside a JSON string)
    for line_no, line in enumerate(io.StringIO(text, newline=None), 1):
        if not line.strip():
            continue
        row = load_json(line, path, line_no)
        out.append(question_from_dict(row, f"{path}:{line_no}"))
    return out
