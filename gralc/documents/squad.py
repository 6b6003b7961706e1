"""SQuAD-format JSON files whose contexts are whole articles (COVID-QA) as documents.

Every ``data[i].paragraphs[j]`` entry with a non-empty ``context`` becomes one document, read
by the plain-text article reader (:func:`gralc.documents.plaintext.parse_plain_text`), with
the id ``document_id`` (else the article's ``title``, else ``<file stem>-<i>``), suffixed
``#j`` when an article has several contexts. The questions are the data layer's
(:func:`gralc.data.benchmarks.squad_benchmark`); this module is what ``gralc.index
FILE.json`` and ``eval.py data=squad`` share.

The file is untrusted input: bytes that are not UTF-8, JSON nested too deeply to read and an
entry of the wrong type (``"paragraphs": 5``, a question that is a list) are one error naming
the file and the entry; unpaired ``\\udXXX`` escapes in any string become U+FFFD, one
character for one so that every ``answer_start`` still holds, with one warning.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gralc.documents.model import Document
from gralc.documents.plaintext import OffsetMap, parse_plain_text
from gralc.documents.textio import read_json_file, replace_surrogates_in, surrogate_warning

log = logging.getLogger(__name__)
_SHAPE = "{'data': [{'paragraphs': [{'context': str, 'qas': [{'question': str, 'answers': [...]}]}]}]}"


@dataclass
class SquadContext:
    """One usable context: where it is (``FILE data[i].paragraphs[j]``), its raw entry, the
    parsed document and the map from raw context offsets into ``doc.text``.

    Example: ``next(iter_squad_contexts(path, read_squad(path), print)).where`` (``path = "covid.json"``) ->
    ``'covid.json data[0].paragraphs[0]'``.
    """

    where: str
    para: dict[str, Any]
    doc: Document
    offsets: OffsetMap


def read_squad(path: str | Path) -> dict[str, Any]:
    """The parsed JSON of a SQuAD-format file (a top-level ``data`` list), or one clear error.

    Example: ``read_squad("COVID-QA.json")["data"][0]["paragraphs"][0]["context"]`` -> the first
    context's text (a file without a ``data`` list raises ``DocumentParseError``).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such SQuAD-format JSON file")
    raw = read_json_file(path, hint="; give a SQuAD-format file")
    if not is_squad(raw):
        raise ValueError(f"{path}: no top-level 'data' list: not a SQuAD-format file "
                         "({'data': [{'paragraphs': [{'context', 'qas'}]}]})")
    _check_types(path, raw)
    raw, changed, first = replace_surrogates_in(raw)
    if changed:
        log.warning("%s", surrogate_warning(str(path), changed, first))
    return raw


def _check_types(path: Path, raw: dict[str, Any]) -> None:
    """One ValueError naming the first entry of a wrong JSON type (missing keys and empty
    contexts are the readers' to skip, with a warning)."""

    def wrong(where: str, expected: str, value: Any) -> ValueError:
        return ValueError(f"{path} {where}: expected {expected}, got {type(value).__name__} "
                          f"{str(value)[:60]!r}; a SQuAD-format file is {_SHAPE}")  # fmt: skip

    for i, article in enumerate(raw["data"]):
        if not isinstance(article, dict):
            raise wrong(f"data[{i}]", "an object with 'paragraphs'", article)
        paragraphs = article.get("paragraphs", [])
        if not isinstance(paragraphs, list):
            raise wrong(f"data[{i}].paragraphs", "a list", paragraphs)
        for j, para in enumerate(paragraphs):
            where = f"data[{i}].paragraphs[{j}]"
            if not isinstance(para, dict):
                raise wrong(where, "an object with 'context' and 'qas'", para)
            if para.get("context") is not None and not isinstance(para["context"], str):
                raise wrong(f"{where}.context", "a string (the article's text)", para["context"])
            qas = para.get("qas", [])
            if not isinstance(qas, list):
                raise wrong(f"{where}.qas", "a list", qas)
            for k, qa in enumerate(qas):
                if not isinstance(qa, dict):
                    raise wrong(f"{where}.qas[{k}]", "an object with 'question' and 'answers'", qa)
                if qa.get("question") is not None and not isinstance(qa["question"], str):
                    raise wrong(f"{where}.qas[{k}].question", "a string", qa["question"])
                if qa.get("answers") is not None and not isinstance(qa["answers"], list):
                    raise wrong(f"{where}.qas[{k}].answers", "a list", qa["answers"])


def is_squad(raw: Any) -> bool:
    """Whether parsed JSON has SQuAD's shape (a top-level ``data`` list).

    >>> is_squad({"data": []}), is_squad([])
    (True, False)
    """
    return isinstance(raw, dict) and isinstance(raw.get("data"), list)


def iter_squad_contexts(
    path: str | Path,
    raw: dict[str, Any],
    on_skip: Callable[[str], None],
    max_docs: int | None = None,
) -> Iterator[SquadContext]:
    """The usable contexts of ``raw`` (read from ``path``) in file order; an empty or missing
    context calls ``on_skip(message)`` naming the entry and the fix.

    Example: ``[c.doc.id for c in iter_squad_contexts(path, read_squad(path), print)]`` -> one
    document id per usable context, in file order.
    """
    path = Path(path)
    n = 0
    for i, article in enumerate(raw["data"]):
        paragraphs = article.get("paragraphs", []) if isinstance(article, dict) else []
        for j, para in enumerate(paragraphs):
            where = f"{path} data[{i}].paragraphs[{j}]"
            context = para.get("context") if isinstance(para, dict) else None
            if not isinstance(context, str) or not context.strip():
                on_skip(f"{where}: empty or missing 'context'; skipped (give the article's full text)")
                continue
            base = str(para.get("document_id") or article.get("title") or f"{path.stem}-{i}")
            doc_id = base if len(paragraphs) == 1 else f"{base}#{j}"
            doc, offsets = parse_plain_text(context, doc_id, source=str(path))
            yield SquadContext(where, para, doc, offsets)
            n += 1
        if max_docs is not None and n >= max_docs:
            return


def load_squad_documents(path: str | Path, on_skip: Callable[[str], None] | None = None) -> list[Document]:
    """Every usable context of a SQuAD-format file as a document (see module docstring).

    Example: ``load_squad_documents("COVID-QA.json")`` -> one :class:`Document` per usable context.
    """
    contexts = iter_squad_contexts(path, read_squad(path), on_skip or (lambda _m: None))
    docs = [c.doc for c in contexts]
    if not docs:
        raise ValueError(f"{path}: no usable context; every entry was skipped")
    return docs


__all__ = ["SquadContext", "is_squad", "iter_squad_contexts", "load_squad_documents", "read_squad"]
