"""TREC run and qrels files: what trec_eval, pytrec_eval, ranx and ir_measures score.

A **run** has one line per retrieved item, ``qid Q0 docno rank score run_name``, best first
within each query; a **qrels** file one line per judgement, ``qid 0 docno relevance``
(relevance > 0: relevant). :func:`write_trec_run` writes our rankings at one of two levels:
``chunk`` (docno = ``chunk_id``, scored against :func:`gralc.evaluation.trec.evidence_qrels`)
or ``doc`` (docno = ``doc_id``, each document once at its best chunk, :func:`doc_hits`;
scored against :func:`document_qrels`).

**Order.** TREC tools sort by score, not by the rank column, so the written scores are 32-bit
floats strictly decreasing down each query's list: each score is its nearest 32-bit float, or
the next one below the score written above it where that would tie or rise. Every
score-descending sort then keeps our order exactly (a nudged score differs from ours in the
7th significant digit at most). Why: docs/evaluation.md."""

from __future__ import annotations

import io
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from gralc.atomic import atomic_write
from gralc.documents.errors import DocumentParseError
from gralc.documents.question import Question
from gralc.safe_load import check_file_size

LEVELS = ("chunk", "doc")
#: ``{qid: {docno: relevance}}``: what ranx's ``Qrels`` and pytrec_eval take
Qrels = dict[str, dict[str, int]]
#: ``{qid: {docno: score}}``: what ranx's ``Run`` and pytrec_eval take
Run = dict[str, dict[str, float]]
Rows = Iterable[tuple[str, Sequence[Any]]]


def _pair(item: Any) -> tuple[Any, float]:
    """``(chunk, score)`` of a pair or a retrieval Hit."""
    if hasattr(item, "chunk") and hasattr(item, "score"):
        return item.chunk, float(item.score)
    chunk, score = item
    return chunk, float(score)


def doc_hits(hits: Sequence[Any]) -> list[tuple[Any, float]]:
    """Each document of a ranked list once, at its first chunk: ``[(chunk, score)]`` in order
    (for a list ranked by score, each document's best chunk; the documents then follow
    :func:`gralc.evaluation.metrics.rank_docs`' order).

    >>> from gralc.chunking.chunk import Chunk
    >>> c = [Chunk("d1", "d1::0", "", 0, 0), Chunk("d2", "d2::0", "", 0, 0), Chunk("d1", "d1::1", "", 0, 0)]
    >>> [(ch.chunk_id, s) for ch, s in doc_hits([(c[0], 0.9), (c[1], 0.8), (c[2], 0.7)])]
    [('d1::0', 0.9), ('d2::0', 0.8)]
    """
    seen: set[str] = set()
    out = []
    for item in hits:
        chunk, score = _pair(item)
        if chunk.doc_id not in seen:
            seen.add(chunk.doc_id)
            out.append((chunk, score))
    return out


def check_token(value: object, what: str) -> str:
    """``value`` when it can be one column of a TREC file (a non-empty word), else a ValueError
    naming ``what``: checked before any work by the commands that will write it.

    >>> check_token("gralc-bm25", "run name")
    'gralc-bm25'
    """
    if not isinstance(value, str) or not value or len(value.split()) != 1 or value != value.strip():
        raise ValueError(f"{what} {value!r} is empty or holds whitespace; TREC files are "
                         "whitespace-separated columns, so every id must be one word")
    return value


def trec_scores(scores: Iterable[float]) -> list[np.float32]:
    """The scores as written (module docstring): 32-bit floats, strictly decreasing.

    >>> [str(s) for s in trec_scores([0.5, 0.5, 0.25, 0.75])]
    ['0.5', '0.49999997', '0.25', '0.24999999']
    """
    out: list[np.float32] = []
    for s in scores:
        if not math.isfinite(s):
            raise ValueError(f"score {s} is not a finite number; a TREC run needs real scores")
        w = np.float32(s)
        if out and not w < out[-1]:
            w = np.nextafter(out[-1], np.float32(-np.inf))
        out.append(w)
    return out


def trec_run_lines(rows: Rows, run_name: str = "gralc", level: str = "chunk") -> Iterator[str]:
    """The lines of :func:`write_trec_run` (without line breaks), query by query.

    >>> from gralc.chunking.chunk import Chunk
    >>> list(trec_run_lines([("q1", [(Chunk("d1", "d1::c0", "x", 0, 1), 0.9)])]))
    ['q1 Q0 d1::c0 1 0.9 gralc']
    """
    if level not in LEVELS:
        raise ValueError(f"level={level!r}: use one of {', '.join(LEVELS)}")
    check_token(run_name, "run name")
    seen_q: set[str] = set()
    for qid, hits in rows:
        check_token(qid, "question id")
        if qid in seen_q:
            raise ValueError(f"question id {qid!r} twice in one run; every question needs its own id")
        seen_q.add(qid)
        pairs = doc_hits(hits) if level == "doc" else [_pair(h) for h in hits]
        names = [c.doc_id if level == "doc" else c.chunk_id for c, _ in pairs]
        seen: set[str] = set()
        for name in names:
            check_token(name, "document id" if level == "doc" else "chunk id")
            if name in seen:
                raise ValueError(f"question {qid!r}: chunk {name!r} retrieved twice; a run lists each once")
            seen.add(name)
        for rank, (name, score) in enumerate(zip(names, trec_scores(s for _, s in pairs)), start=1):
            yield f"{qid} Q0 {name} {rank} {score!s} {run_name}"


def write_trec_run(rows: Rows, out: str | Path | TextIO, run_name: str = "gralc",
                   level: str = "chunk") -> int:
    """Write ranked hits as a TREC run; return the number of lines written.

    ``rows``: ``(question id, hits)`` per question, in order; ``hits`` best first, each a
    retrieval :class:`~gralc.retrieval.hits.Hit` or a ``(chunk, score)`` pair. ``out``: a
    path (written atomically) or an open text stream (``sys.stdout``). ``level``: ``chunk``
    (docno = chunk id) or ``doc`` (docno = document id, each document at its first chunk).
    Ranks are 1, 2, ...; scores as the module docstring says. A question with no hits writes
    no line. Ids holding whitespace and a chunk listed twice are a ``ValueError``.

    >>> import sys
    >>> from gralc.chunking.chunk import Chunk
    >>> a, b = Chunk("d1", "d1::0", "", 0, 0), Chunk("d2", "d2::0", "", 0, 0)
    >>> write_trec_run([("q1", [(a, 0.75), (b, 0.75)])], sys.stdout, "minilm")
    q1 Q0 d1::0 1 0.75 minilm
    q1 Q0 d2::0 2 0.74999994 minilm
    2
    """
    lines = trec_run_lines(rows, run_name, level)
    if isinstance(out, (str, Path)):
        n = 0
        with atomic_write(out) as f:
            for n, line in enumerate(lines, start=1):  # noqa: B007 (n counts the lines)
                f.write(line + "\n")
        return n
    n = 0
    for line in lines:
        out.write(line + "\n")
        n += 1
    return n


def document_qrels(questions: Iterable[Question]) -> Qrels:
    """Document-level qrels: every relevant document of every question with its relevance
    (:meth:`Question.relevant_docs`); score a ``level="doc"`` run against them.

    >>> document_qrels([Question("q1", "Which drug?", "d2", relevance={"d2": 2, "d7": 1})])
    {'q1': {'d2': 2, 'd7': 1}}
    """
    out: Qrels = {}
    for q in questions:
        if q.id in out:
            raise ValueError(f"question id {q.id!r} twice; qrels need one entry per question")
        out[q.id] = q.relevant_docs()
    return out


def write_trec_qrels(qrels: Mapping[str, Mapping[str, int]], out: str | Path | TextIO) -> int:
    """Write qrels (``{qid: {docno: relevance}}``) as TREC qrels lines ``qid 0 docno rel``;
    return the number of lines. ``out``: a path (written atomically) or a text stream.

    >>> import sys
    >>> write_trec_qrels({"q1": {"d2": 2, "d7": 1}}, sys.stdout)
    q1 0 d2 2
    q1 0 d7 1
    2
    """
    lines = []
    for qid, judged in qrels.items():
        check_token(qid, "question id")
        for docno, rel in judged.items():
            check_token(docno, "docno")
            if not isinstance(rel, (int, np.integer)) or isinstance(rel, bool):
                raise ValueError(f"question {qid!r}: relevance of {docno!r} must be an integer, got {rel!r}")
            lines.append(f"{qid} 0 {docno} {int(rel)}\n")
    if isinstance(out, (str, Path)):
        with atomic_write(out) as f:
            f.writelines(lines)
    else:
        out.writelines(lines)
    return len(lines)


def _read_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    check_file_size(path, DocumentParseError)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DocumentParseError(f"cannot read {path}: {exc.strerror}", path=path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DocumentParseError(f"{path}:{line}: not UTF-8 text", path=path, line=line) from None
    for n, line in enumerate(io.StringIO(text, newline=None), start=1):
        if line.strip():
            yield n, line.split()


def _read_table(path: Path, shape: str, value_col: int, parse, what: str, again: str) -> dict:
    """``{qid: {docno: parse(column value_col)}}`` of a whitespace-separated TREC file whose
    lines read ``shape``; a line of another width, a value ``parse`` refuses (``what``) or a
    (qid, docno) pair seen twice (``again``) is a ``ValueError`` naming ``FILE:LINE``."""
    width = len(shape.split())
    table: dict[str, dict[str, Any]] = {}
    first: dict[tuple[str, str], int] = {}
    for n, cols in _read_lines(path):
        if len(cols) != width:
            raise DocumentParseError(f"{path}:{n}: {len(cols)} columns; a line reads '{shape}'",
                                     path=path, line=n)
        qid, docno, raw = cols[0], cols[2], cols[value_col]
        try:
            value = parse(raw)
        except ValueError:
            raise DocumentParseError(f"{path}:{n}: {raw!r} is not {what}", path=path, line=n) from None
        if (qid, docno) in first:
            raise DocumentParseError(f"{path}:{n}: ({qid}, {docno}) {again} (first on line "
                                     f"{first[qid, docno]})", path=path, line=n)
        first[qid, docno] = n
        table.setdefault(qid, {})[docno] = value
    return table


def read_trec_run(path: str | Path) -> Run:
    """A TREC run file as ``{qid: {docno: score}}`` (the scores as written); a line without
    six columns, a score that is not a number or a docno listed twice for one query is a
    ``ValueError`` naming ``FILE:LINE``.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "run.txt"; _ = f.write_text("q1 Q0 d1 1 0.9 gralc\\n")
    >>> read_trec_run(f)
    {'q1': {'d1': 0.9}}
    """
    return _read_table(Path(path), "qid Q0 docno rank score run_name", 4, float,
                       "a number (the score)", "listed again")


def read_trec_qrels(path: str | Path) -> Qrels:
    """A TREC qrels file as ``{qid: {docno: relevance}}``; a line without four columns, a
    relevance that is not an integer or a pair judged twice is a ``ValueError`` naming
    ``FILE:LINE``.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "qrels.txt"; _ = f.write_text("q1 0 d1 2\\nq1 0 d2 1\\n")
    >>> read_trec_qrels(f)
    {'q1': {'d1': 2, 'd2': 1}}
    """
    return _read_table(Path(path), "qid 0 docno relevance", 3, int, "an integer (the relevance)",
                       "judged again")


__all__ = ["LEVELS", "Qrels", "Run", "doc_hits", "document_qrels", "read_trec_qrels", "read_trec_run",
           "trec_run_lines", "trec_scores", "write_trec_qrels", "write_trec_run"]
