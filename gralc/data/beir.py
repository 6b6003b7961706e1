"""BEIR folders as benchmarks (``eval.py data=beir data.path=DIR``), and any benchmark as one.

A BEIR folder holds ``corpus.jsonl`` (``{"_id", "title", "text"}`` a line), ``queries.jsonl``
(``{"_id", "text"}`` a line) and ``qrels/<split>.tsv`` (``query-id<TAB>corpus-id<TAB>score``
after a header line). :func:`beir_benchmarks` reads one: every corpus entry a
:class:`Document` (the plain-text reader, ``title`` as its first block), the questions by
:func:`gralc.data.question_io.read_queries`, judged by the split's qrels (score > 0 relevant,
graded; ``gold_doc_id`` the most relevant, whose whole text is the evidence). Questions without
a relevant document are dropped (counted); every malformed line is one ``ValueError`` naming
``FILE:LINE``. :func:`write_beir` writes any :class:`Benchmark` as a BEIR folder judged at the
document level, read back as the same documents and questions. The rules in full:
docs/data.md."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from gralc.atomic import atomic_write
from gralc.data.benchmark import Benchmark
from gralc.data.question_io import read_queries
from gralc.documents.beir import _SHAPE, _lines, beir_file, read_beir_corpus
from gralc.documents.model import Document, TextBuilder
from gralc.documents.question import Question

logger = logging.getLogger(__name__)

SPLITS = ("test", "dev", "train")
QRELS_HEADER = ("query-id", "corpus-id", "score")


def read_beir_qrels(path: str | Path) -> tuple[dict[str, dict[str, int]], dict[tuple[str, str], int]]:
    """``(qrels, lines)`` of a BEIR qrels TSV: ``qrels[query_id][doc_id] = score`` in file order
    (every score, relevant or not) and the line of each pair. The first line is a header when
    its last column is not a number; TREC qrels lines (``qid 0 docno rel``) are read too.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "test.tsv"
    >>> _ = f.write_text("query-id\\tcorpus-id\\tscore\\nq1\\td1\\t2\\nq1\\td2\\t0\\n")
    >>> read_beir_qrels(f)[0]
    {'q1': {'d1': 2, 'd2': 0}}
    """
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    lines: dict[tuple[str, str], int] = {}
    first = True
    for n, line in _lines(path):
        if not line.strip():
            continue
        cols = line.rstrip("\r\n").split("\t")
        if len(cols) != 3:
            cols = line.split()
            if len(cols) == 4:  # TREC qrels: qid iteration docno relevance
                cols = [cols[0], cols[2], cols[3]]
        cols = [c.strip() for c in cols]
        header, first = first and not _is_number(cols[-1]), False
        if header:
            continue
        if len(cols) != 3 or not cols[0] or not cols[1]:
            raise ValueError(f"{path}:{n}: expected query-id<TAB>corpus-id<TAB>score (or TREC's "
                             f"qid 0 docno rel), got {line.strip()[:80]!r}")
        try:
            score = int(cols[2])
        except ValueError:
            value = float(cols[2]) if _is_number(cols[2]) else None
            if value is None or not value.is_integer():
                raise ValueError(f"{path}:{n}: score {cols[2]!r} is not an integer (BEIR and TREC "
                                 "judge with integers: 0 not relevant, 1, 2, ... relevant)") from None
            score = int(value)
        qid, doc_id = cols[0], cols[1]
        judged = qrels.setdefault(qid, {})
        if doc_id in judged and judged[doc_id] != score:
            raise ValueError(f"{path}:{n}: ({qid}, {doc_id}) judged {score} here and "
                             f"{judged[doc_id]} on line {lines[qid, doc_id]}; keep one judgement")
        if doc_id not in judged:
            judged[doc_id] = score
            lines[qid, doc_id] = n
    return qrels, lines


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def beir_benchmarks(path: str | Path, splits: str = "test", max_docs: int | None = None) -> list[Benchmark]:
    """One benchmark per split of a BEIR folder (``splits``: ``test`` | ``dev`` | ``train``, or
    several separated by commas; ``all`` means ``test``), sharing one corpus (the first
    ``max_docs`` documents when set). See the module docstring.

    >>> from gralc.data.benchmarks import demo_benchmark
    >>> import tempfile
    >>> folder = write_beir(demo_benchmark(), tempfile.mkdtemp())
    >>> bench = beir_benchmarks(folder)[0]
    >>> len(bench.documents), len(bench.questions), bench.questions[0].relevance
    (10, 39, {'PMC9000001': 1})
    """
    folder = Path(path)
    if not folder.is_dir():
        raise FileNotFoundError(f"data.path={folder}: no such folder; {_SHAPE}")
    names = [s.strip() for s in splits.split(",") if s.strip()] or ["test"]
    names = ["test" if s == "all" else s for s in names]
    for split in names:
        beir_file(folder, f"qrels/{split}.tsv")
        if not (folder / "qrels" / f"{split}.tsv").is_file():
            have = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
            raise FileNotFoundError(f"{folder / 'qrels' / f'{split}.tsv'}: no qrels for split "
                                    f"{split!r}; this folder has {have or 'none'} (data.split=...)")
    if not (folder / "corpus.jsonl").is_file():
        raise FileNotFoundError(f"{folder}: no corpus.jsonl; {_SHAPE}")
    docs, skipped = read_beir_corpus(beir_file(folder, "corpus.jsonl"), max_docs)
    if not docs:
        raise ValueError(f"{folder / 'corpus.jsonl'}: no documents; {_SHAPE}")
    by_id = {d.id: d for d in docs}
    queries = read_queries(folder, fmt="beir")
    asked = {qid for qid, _ in queries}
    out = []
    for split in names:
        qrels_path = folder / "qrels" / f"{split}.tsv"
        qrels, lines = read_beir_qrels(qrels_path)
        unknown_q = [(q, d) for q in qrels if q not in asked for d in qrels[q]]
        if unknown_q:
            logger.warning("%s: %d judgements name questions that queries.jsonl lacks, dropped "
                           "(first on line %d)", qrels_path, len(unknown_q), lines[unknown_q[0]])
        unknown_d = [(q, d) for q in qrels if q in asked for d, s in qrels[q].items() if s > 0
                     and d not in by_id]  # fmt: skip
        if unknown_d:
            log = logger.info if max_docs is not None else logger.warning
            log("%s: %d relevance judgements name documents %s, dropped (first on line %d); the "
                "metrics count the judged documents in the corpus", qrels_path, len(unknown_d),
                f"beyond data.max_docs={max_docs}" if max_docs is not None else "that corpus.jsonl lacks",
                lines[unknown_d[0]])
        questions = []
        for qid, text in queries:
            relevant = [(d, s) for d, s in qrels.get(qid, {}).items() if s > 0 and d in by_id]
            if not relevant:
                continue
            relevant.sort(key=lambda p: -p[1])  # stable: file order among equal grades
            gold = by_id[relevant[0][0]]
            questions.append(Question(qid, text, gold.id, evidence_spans=[[0, len(gold.text)]],
                                      split=split, kind="beir", relevance=dict(relevant)))
        dropped = len(queries) - len(questions)
        logger.info("beir %s [%s]: %d documents, %d questions; %d questions without a relevant "
                    "document in %s dropped", folder.name, split, len(docs), len(questions),
                    dropped, qrels_path.name)
        stats = {"n_queries_without_qrels": float(dropped), "n_empty_documents": float(skipped),
                 "n_qrels_unknown": float(len(unknown_q) + len(unknown_d))}
        out.append(Benchmark(f"beir[{folder.name}/{split}]", docs, questions, stats))
    return out


def write_beir(benchmark: Benchmark, out_dir: str | Path, split: str = "test") -> Path:
    """Write ``benchmark`` as a BEIR folder judged at the document level (every relevant
    document of a question, :meth:`Question.relevant_docs`, with its relevance) and return it.

    A document whose text starts with its title block is written as that ``title`` and the
    rest of the text; any other as no title and its whole text (a title outside the text
    would come back as part of it). :func:`beir_benchmarks` reads back the same ids, titles
    and texts wherever the plain-text reader keeps every block (it drops metadata lines such
    as ``DOI: ...`` from the front matter; the demo and JATS articles keep them all).
    Evidence spans, paragraph ids and IMRaD labels are not part of the format: read back,
    every question's evidence is its whole gold document.

    >>> from gralc.data.benchmarks import demo_benchmark
    >>> import tempfile
    >>> folder = write_beir(demo_benchmark(), tempfile.mkdtemp())
    >>> sorted(p.name for p in folder.rglob("*") if p.is_file())
    ['corpus.jsonl', 'queries.jsonl', 'test.tsv']
    """
    out = Path(out_dir)
    for q in benchmark.questions:
        for value in (q.id, *q.relevant_docs()):
            if not value.strip() or any(c in value for c in "\t\r\n"):
                raise ValueError(f"question {q.id!r}: id {value!r} is empty or holds a tab or line "
                                 "break, which a BEIR qrels TSV cannot carry")
    with atomic_write(out / "corpus.jsonl") as f:
        for d in benchmark.documents:
            title, text = _title_and_body(d)
            f.write(json.dumps({"_id": d.id, "title": title, "text": text}, ensure_ascii=False) + "\n")
    with atomic_write(out / "queries.jsonl") as f:
        for q in benchmark.questions:
            f.write(json.dumps({"_id": q.id, "text": q.text}, ensure_ascii=False) + "\n")
    with atomic_write(out / "qrels" / f"{split}.tsv") as f:
        f.write("\t".join(QRELS_HEADER) + "\n")
        for q in benchmark.questions:
            for doc_id, grade in q.relevant_docs().items():
                f.write(f"{q.id}\t{doc_id}\t{grade}\n")
    return out


def _title_and_body(doc: Document) -> tuple[str, str]:
    """``(title, text)`` of a BEIR corpus entry that reads back as ``doc.text``: the title
    block split off when the text starts with it, else no title and the whole text."""
    sep = TextBuilder.SEPARATOR
    if doc.title and doc.title_start == 0 and doc.text[: doc.title_end] == doc.title and "\n" not in doc.title:
        rest = doc.text[doc.title_end :]
        if not rest or rest.startswith(sep):
            return doc.title, rest[len(sep) :]
    return "", doc.text


__all__ = ["SPLITS", "beir_benchmarks", "read_beir_corpus", "read_beir_qrels", "write_beir"]
