"""A BEIR ``corpus.jsonl`` as documents (``{"_id", "title", "text"}`` a line): what
``gralc index BEIR_FOLDER`` indexes and ``data=beir`` evaluates (:mod:`gralc.data.beir` reads
the queries and qrels). Each entry is parsed by the plain-text reader
(:func:`gralc.documents.plaintext.parse_plain_text`), its ``title`` the document's title."""

from __future__ import annotations

import logging
from pathlib import Path

from gralc.documents.corpus import max_article_bytes
from gralc.documents.errors import DocumentParseError
from gralc.documents.model import Document
from gralc.documents.plaintext import parse_plain_text
from gralc.documents.textio import load_json, replace_surrogates_in, surrogate_warning

logger = logging.getLogger(__name__)

_SHAPE = ("a BEIR folder holds corpus.jsonl ({\"_id\", \"title\", \"text\"} a line), queries.jsonl "
          "({\"_id\", \"text\"} a line) and qrels/<split>.tsv (query-id<TAB>corpus-id<TAB>score)")


def _lines(path: Path):
    """``(line number, text)`` of a UTF-8 file, streamed (a BEIR corpus may be gigabytes), each
    line at most an article's bound (:func:`~gralc.documents.corpus.max_article_bytes`: one line
    is one document), refused before it is read whole when longer."""
    limit = max_article_bytes()
    try:
        f = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise DocumentParseError(f"cannot read {path}: {exc.strerror}; {_SHAPE}", path=path) from None
    with f:
        for n, data in enumerate(iter(lambda: f.readline(limit + 1), b""), 1):
            if len(data) > limit and not (len(data) == limit + 1 and data.endswith(b"\n")):
                raise DocumentParseError(
                    f"{path}:{n}: a line longer than {limit / 1e6:g} MB, the most one entry (one "
                    "document) may have; split the document, or raise the limit with "
                    "GRALC_MAX_ARTICLE_MB", path=path, line=n)  # fmt: skip
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DocumentParseError(
                    f"{path}:{n}: not UTF-8 (byte 0x{data[exc.start]:02x} at column {exc.start + 1}); "
                    f"re-save it as UTF-8", path=path, line=n) from None  # fmt: skip
            yield n, text.removeprefix("\ufeff") if n == 1 else text


def beir_file(folder: str | Path, rel: str) -> Path:
    """``folder/rel``, a file of a BEIR folder, when it really lies inside the folder (the rule
    of every corpus walker, :func:`~gralc.documents.corpus.inside_corpus`): a link that leads
    elsewhere is one error, never read.

    >>> import tempfile; d = Path(tempfile.mkdtemp()); beir_file(d, "corpus.jsonl").name
    'corpus.jsonl'
    """
    from gralc.documents.corpus import inside_corpus

    path = Path(folder) / rel
    if not inside_corpus(folder, path):
        raise ValueError(f"{path} leads outside {folder} (a link to {path.resolve()}): GraLC reads a "
                         "BEIR folder's own files only; copy the file into the folder")
    return path


def _string_id(value: object, key: str, where: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value
    raise ValueError(f"{where}: {key!r} must be a non-empty string or an integer, got {value!r}; {_SHAPE}")


def read_beir_corpus(path: str | Path, max_docs: int | None = None) -> tuple[list[Document], int]:
    """``(documents, entries skipped for having no text)`` of a BEIR ``corpus.jsonl`` (the
    first ``max_docs`` documents when set); see the module docstring.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "corpus.jsonl"
    >>> _ = f.write_text('{"_id": "d1", "title": "Metformin", "text": "It lowers HbA1c."}\\n')
    >>> docs, skipped = read_beir_corpus(f)
    >>> docs[0].id, docs[0].title, docs[0].text, skipped
    ('d1', 'Metformin', 'Metformin\\n\\nIt lowers HbA1c.', 0)
    """
    path = Path(path)
    docs: list[Document] = []
    first_line: dict[str, int] = {}
    skipped, first_skipped = 0, 0
    for n, line in _lines(path):
        if max_docs is not None and len(docs) >= max_docs:
            break
        if not line.strip():
            continue
        where = f"{path}:{n}"
        row = load_json(line, path, n, hint=f"; {_SHAPE}")
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}; {_SHAPE}")
        row, changed, first = replace_surrogates_in(row)
        if changed:
            logger.warning("%s", surrogate_warning(where, changed, first))
        if row.get("_id") is None:
            raise ValueError(f"{where}: no '_id'; {_SHAPE}")
        doc_id = _string_id(row["_id"], "_id", where)
        if doc_id in first_line:
            raise ValueError(f"{where}: document '_id' {doc_id!r} again (first on line "
                             f"{first_line[doc_id]}); every document needs its own id")
        first_line[doc_id] = n
        fields = {}
        for key in ("title", "text"):
            value = row.get(key)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{where}: {key!r} must be a string, got {type(value).__name__}; {_SHAPE}")
            fields[key] = (value or "").replace("\r\n", "\n").replace("\r", "\n")
        if not fields["title"].strip() and not fields["text"].strip():
            skipped += 1
            first_skipped = first_skipped or n
            continue
        docs.append(parse_plain_text(fields["text"], doc_id, source=where, title=fields["title"])[0])
    if skipped:
        logger.warning("%s: %d entries with neither title nor text skipped (first on line %d)",
                       path, skipped, first_skipped)
    return docs, skipped


def is_beir_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a BEIR ``corpus.jsonl``.

    >>> import tempfile
    >>> is_beir_folder(tempfile.mkdtemp())
    False
    """
    return Path(path).is_dir() and (Path(path) / "corpus.jsonl").is_file()
