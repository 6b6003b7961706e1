"""Read and write :class:`Question` records as JSON Lines (one object per line).

Keys are the :class:`Question` field names. On reading, ``"question"`` is accepted as an
alias of ``"text"`` (the demo corpus uses it); keys that are not :class:`Question` fields
(e.g. ``"kind"``) are ignored unless :class:`Question` has such a field. Writing is atomic:
a temporary file beside the target is renamed over it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, fields
from pathlib import Path

from gralc.documents.question import Question

_FIELDS = {f.name for f in fields(Question)}
_REQUIRED = ("id", "text", "gold_doc_id")
_LIST_FIELDS = ("gold_section_types", "gold_paragraph_ids", "evidence_spans")


def write_jsonl(questions: Iterable[Question], path: str | Path) -> Path:
    """Write ``questions`` to ``path`` (parent folders created), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for q in questions:
                f.write(json.dumps(asdict(q), ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def question_from_dict(row: dict, where: str = "<dict>") -> Question:
    """A :class:`Question` from one JSON object (``"question"`` = alias of ``"text"``)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    row = dict(row)
    if "text" not in row and "question" in row:
        row["text"] = row.pop("question")
    missing = [k for k in _REQUIRED if not row.get(k)]
    if missing:
        raise ValueError(f"{where}: missing or empty key(s) {missing}; every question needs "
                         f"'id', 'text' (or 'question') and 'gold_doc_id'")  # fmt: skip
    for key in _LIST_FIELDS:
        if key in row and not isinstance(row[key], list):
            raise ValueError(f"{where}: {key!r} must be a JSON list, got {row[key]!r}")
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
    out: list[Question] = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{where}: not valid JSON ({err})") from err
            out.append(question_from_dict(row, where))
    return out
