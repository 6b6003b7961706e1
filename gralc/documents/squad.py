"""SQuAD-format JSON files whose contexts are whole articles (COVID-QA) as documents.

Every ``data[i].paragraphs[j]`` entry with a non-empty ``context`` becomes one document, read
by the plain-text article reader (:func:`gralc.documents.plaintext.parse_plain_text`), with
the id ``document_id`` (else the article's ``title``, else ``<file stem>-<i>``), suffixed
``#j`` when an article has several contexts. The questions are the data layer's
(:func:`gralc.data.benchmarks.squad_benchmark`); this module is what ``gralc.index
FILE.json`` and ``eval.py data=squad`` share.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gralc.documents.model import Document
from gralc.documents.plaintext import OffsetMap, parse_plain_text


@dataclass
class SquadContext:
    """One usable context: where it is (``FILE data[i].paragraphs[j]``), its raw entry, the
    parsed document and the map from raw context offsets into ``doc.text``."""

    where: str
    para: dict[str, Any]
    doc: Document
    offsets: OffsetMap


def read_squad(path: str | Path) -> dict[str, Any]:
    """The parsed JSON of a SQuAD-format file (a top-level ``data`` list), or one clear error."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such SQuAD-format JSON file")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a UTF-8 JSON file ({exc}); give a SQuAD-format file") from exc
    if not is_squad(raw):
        raise ValueError(f"{path}: no top-level 'data' list: not a SQuAD-format file "
                         "({'data': [{'paragraphs': [{'context', 'qas'}]}]})")
    return raw


def is_squad(raw: Any) -> bool:
    """Whether parsed JSON has SQuAD's shape (a top-level ``data`` list)."""
    return isinstance(raw, dict) and isinstance(raw.get("data"), list)


def iter_squad_contexts(
    path: str | Path,
    raw: dict[str, Any],
    on_skip: Callable[[str], None],
    max_docs: int | None = None,
) -> Iterator[SquadContext]:
    """The usable contexts of ``raw`` (read from ``path``) in file order; an empty or missing
    context calls ``on_skip(message)`` naming the entry and the fix."""
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
    """Every usable context of a SQuAD-format file as a document (see module docstring)."""
    contexts = iter_squad_contexts(path, read_squad(path), on_skip or (lambda _m: None))
    docs = [c.doc for c in contexts]
    if not docs:
        raise ValueError(f"{path}: no usable context; every entry was skipped")
    return docs


__all__ = ["SquadContext", "is_squad", "iter_squad_contexts", "load_squad_documents", "read_squad"]
