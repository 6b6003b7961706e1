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
from gralc.documents.errors import DocumentParseError
from gralc.documents.question import Question, clean_question_text, relevance_problem
from gralc.documents.textio import decode_utf8, load_json, replace_surrogates_in, surrogate_warning
from gralc.safe_load import check_file_size, require_file

log = logging.getLogger(__name__)

_FIELDS = {f.name for f in fields(Question)}
_REQUIRED = ("id", "text", "gold_doc_id")
_LIST_FIELDS = ("gold_section_types", "gold_paragraph_ids", "evidence_spans")
_STR_FIELDS = ("long_answer", "decision", "split", "kind")
_ID_FIELDS = ("id", "gold_doc_id")  # a string, or a number written as one


def write_jsonl(questions: Iterable[Question], path: str | Path) -> Path:
    """Write ``questions`` to ``path`` (parent folders created), atomically. ``relevance`` is
    written only where set (a file of single-gold questions reads as it always did).

    >>> import tempfile
    >>> path = write_jsonl([Question("q1", "How long?", "d1")], tempfile.mkdtemp() + "/q.jsonl")
    >>> read_jsonl(path)[0].text
    'How long?'
    """
    path = Path(path)
    with atomic_write(path) as f:
        for q in questions:
            row = asdict(q)
            if not row["relevance"]:
                del row["relevance"]
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def question_from_dict(row: dict, where: str = "<dict>") -> Question:
    """A :class:`Question` from one JSON object (``"question"`` = alias of ``"text"``).

    >>> question_from_dict({"id": "q1", "question": "How long?", "gold_doc_id": "d1"}).text
    'How long?'
    """
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
    if "relevance" in row and (row["relevance"] or not isinstance(row["relevance"], dict)):
        problem = relevance_problem(row["relevance"], row["gold_doc_id"])
        if problem:
            raise ValueError(f"{where}: {problem}")
    return Question(**{k: v for k, v in row.items() if k in _FIELDS})


def read_jsonl(path: str | Path) -> list[Question]:
    """Questions from a JSONL file (blank lines skipped); errors name the file and line.

    >>> from gralc.data.demo import demo_questions_path
    >>> read_jsonl(demo_questions_path())[0].gold_doc_id
    'PMC9000001'
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"question file not found: {path}")
    require_file(path, "question file")
    check_file_size(path)
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


# ----- question files of any common format: (id, question) pairs ---------------------------
#: the formats :func:`read_queries` reads
QUERY_FORMATS = ("jsonl", "tsv", "text", "beir")
_QUERY_ID_KEYS = ("_id", "id", "qid", "query_id")
_QUERY_TEXT_KEYS = ("question", "text", "query")
_TSV_ID_HEADERS = {"qid", "id", "_id", "query_id", "query-id", "queryid", "topic", "topic_id"}
_TSV_TEXT_HEADERS = {"text", "query", "question", "title", "query_text"}
_FORMAT_NAMES = {"jsonl": "JSON lines", "tsv": "TSV", "text": "plain text",
                 "beir": "a BEIR folder's queries.jsonl"}
ACCEPTED = ("accepted: JSON lines (.jsonl/.json; the id in _id, id, qid or query_id, the question "
            "in question, text or query), TSV (.tsv; id<TAB>question), plain text (.txt; one "
            "question a line), a BEIR folder (its queries.jsonl); name the format (jsonl, tsv, "
            "text or beir) to override the guess")


def read_queries(path: str | Path, fmt: str | None = None) -> list[tuple[str, str]]:
    """``(id, question)`` of every question in a question file of any common format.

    ``fmt`` None guesses: a folder is a BEIR folder (its ``queries.jsonl``); ``.jsonl``/
    ``.json``/``.ndjson`` are JSON lines, ``.tsv`` TSV, ``.txt`` plain text, unless its first
    line is a JSON object (JSON lines) or every line is ``id<TAB>question`` (TSV, as
    Anserini's ``topics.*.txt``); another extension goes by the first line (a JSON object:
    JSON lines; a tab: TSV; else plain text). ``fmt`` = ``jsonl`` | ``tsv`` | ``text`` |
    ``beir`` chooses. Per format:

    * JSON lines (BEIR's queries.jsonl, our question files): the id from ``_id``, ``id``,
      ``qid`` or ``query_id`` (a number becomes its string; none: the 1-based line number),
      the question from ``question``, ``text`` or ``query`` (the first present); other keys
      are ignored.
    * TSV (MS MARCO queries, TREC topics as ``qid<TAB>text``): two columns a line; a first
      line ``qid<TAB>text`` / ``id<TAB>query`` (and the like) is a header and skipped.
    * plain text: one question a line, ids ``1`` .. ``n`` in order.

    Blank lines are skipped. A file that is not UTF-8, a line that does not parse, a blank
    question, a repeated id (both lines named) or a file without questions are one
    ``ValueError`` naming ``FILE:LINE``, the format it was read as and the formats accepted;
    unpaired UTF-16 surrogates become U+FFFD with a warning (:func:`clean_question_text`).

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "topics.tsv"
    >>> _ = f.write_text("qid\\ttext\\n301\\tWhich drug lowers HbA1c?\\n")
    >>> read_queries(f)
    [('301', 'Which drug lowers HbA1c?')]
    """
    path = Path(path)
    if fmt is not None and fmt not in QUERY_FORMATS:
        raise ValueError(f"question file format {fmt!r}: use one of {', '.join(QUERY_FORMATS)}")
    if path.is_dir():
        if fmt not in (None, "beir"):
            raise ValueError(f"{path} is a folder, not a {_FORMAT_NAMES[fmt]} file; a folder of "
                             f"questions is a BEIR folder (queries.jsonl inside); {ACCEPTED}")
        from gralc.documents.beir import beir_file

        queries = beir_file(path, "queries.jsonl")
        if not queries.is_file():
            raise FileNotFoundError(f"{path}: a folder given as questions is read as a BEIR folder, "
                                    f"but it has no queries.jsonl; {ACCEPTED}")
        return _read_queries(queries, "beir", "the path is a folder")
    if not path.exists():
        raise FileNotFoundError(f"question file not found: {path}")
    require_file(path, "question file")
    check_file_size(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from None
    return _read_queries(path, fmt, "as asked", data)


def _first_line(text: str) -> str:
    return next((line for line in io.StringIO(text, newline=None) if line.strip()), "")


def _is_json_object(line: str) -> bool:
    if not line.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _is_tsv_row(line: str) -> bool:
    cols = line.rstrip("\r\n").split("\t")
    return len(cols) == 2 and bool(cols[0].strip()) and len(cols[0].split()) == 1


def _guess_format(path: Path, text: str) -> tuple[str, str]:
    """``(format, why)`` of a question file given without a format."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl", f"from the {suffix} extension"
    if suffix == ".tsv":
        return "tsv", "from the .tsv extension"
    first = _first_line(text)
    if suffix == ".txt":
        if _is_json_object(first):
            return "jsonl", "from the content: its first line is a JSON object, despite the .txt extension"
        if all(_is_tsv_row(line) for line in io.StringIO(text, newline=None) if line.strip()):
            return "tsv", "from the content: every line is id<TAB>question, despite the .txt extension"
        return "text", "from the .txt extension"
    if _is_json_object(first):
        return "jsonl", "from the content: its first line is a JSON object"
    if "\t" in first:
        return "tsv", "from the content: its first line has a tab"
    return "text", "from the content: no JSON object, no tab on its first line"


def _read_queries(path: Path, fmt: str | None, why: str, data: bytes | None = None) -> list[tuple[str, str]]:
    if data is None:
        check_file_size(path)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from None
    if fmt is None:  # guessed before decoding, so that a decoding error says it too
        fmt, why = _guess_format(path, data.decode("utf-8", errors="replace").removeprefix("\ufeff"))
    how = f"read as {_FORMAT_NAMES[fmt]}, {why}"
    try:
        text = decode_utf8(data, path, "UTF-8 text")
    except DocumentParseError as exc:
        raise DocumentParseError(f"{exc}. Question file {how}; {ACCEPTED}", path=exc.path,
                                 line=exc.line) from None

    def fail(line_no: int, problem: str) -> DocumentParseError:
        return DocumentParseError(f"{path}:{line_no}: {problem}. Question file {how}; {ACCEPTED}",
                                  path=path, line=line_no)

    out: list[tuple[str, str]] = []
    first_seen: dict[str, int] = {}
    header_checked = False
    for line_no, line in enumerate(io.StringIO(text, newline=None), 1):
        if not line.strip():
            continue
        if fmt in ("jsonl", "beir"):
            qid, question = _jsonl_query(line, path, line_no, how, fail)
        elif fmt == "tsv":
            cols = line.rstrip("\r\n").split("\t")
            if not header_checked:
                header_checked = True
                if (len(cols) == 2 and cols[0].strip().lower() in _TSV_ID_HEADERS
                        and cols[1].strip().lower() in _TSV_TEXT_HEADERS):
                    continue
            if len(cols) != 2:
                what = "no tab" if len(cols) == 1 else f"{len(cols)} tab-separated columns"
                raise fail(line_no, f"{what}; a TSV question file has two columns, id<TAB>question")
            qid, question = cols[0].strip(), cols[1].strip()
            if not qid:
                raise fail(line_no, "empty id before the tab")
        else:
            qid, question = str(len(out) + 1), line.strip()
        if isinstance(question, str) and not question.strip():
            raise fail(line_no, "the question is blank; every question needs words to search with")
        try:  # the one question gate: bounded, no invisible-only question
            question = clean_question_text(question, f"{path}:{line_no}")
        except ValueError as exc:
            raise fail(line_no, str(exc).removeprefix(f"{path}:{line_no}: ")) from None
        if qid in first_seen:
            raise fail(line_no, f"question id {qid!r} again (first on line {first_seen[qid]}); "
                                "every question needs its own id")
        first_seen[qid] = line_no
        out.append((qid, question))
    if not out:
        raise DocumentParseError(f"{path}: no questions. Question file {how}; {ACCEPTED}", path=path)
    return out


def _jsonl_query(line: str, path: Path, line_no: int, how: str, fail) -> tuple[str, object]:
    """``(id, question)`` of one JSON line (the question still to be checked)."""
    obj = load_json(line, path, line_no, hint=f". Question file {how}; {ACCEPTED}")
    if not isinstance(obj, dict):
        raise fail(line_no, f"expected a JSON object, got {type(obj).__name__}")
    obj, changed, first = replace_surrogates_in(obj)
    if changed:
        log.warning("%s", surrogate_warning(f"{path}:{line_no}", changed, first))
    id_key = next((k for k in _QUERY_ID_KEYS if obj.get(k) is not None), None)
    if id_key is None:
        qid = str(line_no)
    else:
        value = obj[id_key]
        if isinstance(value, int) and not isinstance(value, bool):
            qid = str(value)
        elif isinstance(value, str) and value.strip():
            qid = value
        else:
            raise fail(line_no, f"{id_key!r} must be a non-empty string or an integer, got {value!r}")
    text_key = next((k for k in _QUERY_TEXT_KEYS if obj.get(k) is not None), None)
    if text_key is None:
        raise fail(line_no, f"no question: none of the keys {list(_QUERY_TEXT_KEYS)} "
                            f"(keys here: {sorted(obj)[:8]})")
    if not isinstance(obj[text_key], str):
        raise fail(line_no, f"{text_key!r} must be a string, got {type(obj[text_key]).__name__}")
    return qid, obj[text_key]
