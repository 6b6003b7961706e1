"""BEIR folders as an evaluation data source (``data=beir data.path=DIR``) and any benchmark
written as one (issue 55): graded multi-document relevance, dropped questions counted, every
malformed line named by FILE:LINE, the demo benchmark round-tripping."""

from __future__ import annotations

import json
import logging

import pytest

from gralc.data.beir import beir_benchmarks, read_beir_qrels, write_beir
from gralc.data.benchmarks import DataConfig, demo_benchmark, load_benchmarks


def make_folder(tmp_path, corpus=None, queries=None, qrels=None, split="test"):
    folder = tmp_path / "scifact"
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    corpus = corpus if corpus is not None else [
        {"_id": "d1", "title": "Metformin", "text": "Metformin lowers HbA1c.\n\nIt is cheap."},
        {"_id": 2, "title": "", "text": "Untitled passage about insulin."},
        {"_id": "d3", "title": "Statins", "text": "Statins lower LDL."},
        {"_id": "empty", "title": "", "text": "  "},
    ]
    queries = queries if queries is not None else [
        {"_id": "q1", "text": "What lowers HbA1c?"}, {"_id": "q2", "text": "What lowers LDL?"},
        {"_id": "q3", "text": "Unjudged?"}, {"_id": 4, "text": "Only non-relevant?"},
    ]
    qrels = qrels if qrels is not None else (
        "query-id\tcorpus-id\tscore\nq1\t2\t1\nq1\td1\t2\nq1\td3\t0\nq2\td3\t1\nq2\tgone\t1\n"
        "4\td1\t0\nq9\td1\t1\n")
    for name, rows in (("corpus.jsonl", corpus), ("queries.jsonl", queries)):
        text = rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "qrels" / f"{split}.tsv").write_text(qrels, encoding="utf-8")
    return folder


def test_a_beir_folder_becomes_documents_and_graded_questions(tmp_path, caplog):
    folder = make_folder(tmp_path)
    with caplog.at_level(logging.INFO):
        bench, = load_benchmarks(DataConfig(name="beir", path=str(folder), split="test"))
    assert bench.name == "beir[scifact/test]"
    docs = {d.id: d for d in bench.documents}
    assert list(docs) == ["d1", "2", "d3"]  # the entry without text is skipped
    assert docs["d1"].title == "Metformin" and docs["d1"].text == "Metformin\n\nMetformin lowers HbA1c.\n\nIt is cheap."
    assert len(docs["d1"].paragraphs) == 2  # parsed by the plain-text reader: exact offsets
    assert docs["2"].title == "" and docs["2"].text == "Untitled passage about insulin."
    q1, q2 = bench.questions  # q3 has no judgement, 4 only a non-relevant one: dropped
    # every relevant document, most relevant first; score 0 is not relevant
    assert (q1.id, q1.gold_doc_id, q1.relevance) == ("q1", "d1", {"d1": 2, "2": 1})
    assert q1.evidence_spans == [[0, len(docs["d1"].text)]]  # the whole gold document
    assert (q1.split, q1.kind) == ("test", "beir")
    assert q2.relevance == {"d3": 1}  # 'gone' is not in the corpus
    assert bench.stats == {"n_queries_without_qrels": 2.0, "n_empty_documents": 1.0, "n_qrels_unknown": 2.0}
    assert "2 questions without a relevant document in test.tsv dropped" in caplog.text
    assert "1 judgements name questions that queries.jsonl lacks" in caplog.text
    assert "1 relevance judgements name documents that corpus.jsonl lacks" in caplog.text
    assert "1 entries with neither title nor text skipped (first on line 4)" in caplog.text


def test_splits_and_trec_qrels(tmp_path):
    folder = make_folder(tmp_path, qrels="q2 0 d3 1\nq1 0 d1 3\n", split="dev")
    bench, = beir_benchmarks(folder, "dev")
    assert [(q.id, q.relevance) for q in bench.questions] == [("q1", {"d1": 3}), ("q2", {"d3": 1})]
    with pytest.raises(FileNotFoundError, match=r"no qrels for split 'test'; this folder has \['dev'\]"):
        beir_benchmarks(folder)  # default: test
    with pytest.raises(ValueError, match="data=beir needs data.path=DIR"):
        load_benchmarks(DataConfig(name="beir"))
    with pytest.raises(ValueError, match="A BEIR folder has its official train/dev/test split"):
        load_benchmarks(DataConfig(name="beir", path=str(folder), cv_folds=5), cv_side="test")


def test_max_docs_caps_the_corpus(tmp_path):
    bench, = beir_benchmarks(make_folder(tmp_path), max_docs=1)
    assert [d.id for d in bench.documents] == ["d1"]
    assert [(q.id, q.relevance) for q in bench.questions] == [("q1", {"d1": 2})]


CORPUS_ERRORS = [  # (corpus.jsonl content, line, what the message says)
    ('{"_id": "a", "text": "x"}\n{"_id": "b", "text": "y"\n', 2, "not valid JSON"),
    ('{"_id": "a", "text": "x"}\n\n{"text": "y"}\n', 3, "no '_id'"),
    ('{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', 2, "'_id' 'a' again (first on line 1)"),
    ('{"_id": "a", "title": 5, "text": "x"}\n', 1, "'title' must be a string"),
    ('{"_id": [1], "text": "x"}\n', 1, "'_id' must be a non-empty string or an integer"),
    ('["a"]\n', 1, "expected a JSON object"),
]


@pytest.mark.parametrize(("corpus", "line", "says"), CORPUS_ERRORS)
def test_corpus_errors_name_file_and_line(tmp_path, corpus, line, says):
    folder = make_folder(tmp_path, corpus=corpus, qrels="q1\ta\t1\n")
    with pytest.raises(ValueError) as exc:
        beir_benchmarks(folder)
    assert str(exc.value).startswith(f"{folder / 'corpus.jsonl'}:{line}: ") and says in str(exc.value)


def test_a_corpus_that_is_not_utf8_names_the_line(tmp_path):
    folder = make_folder(tmp_path, qrels="q1\ta\t1\n")
    (folder / "corpus.jsonl").write_bytes(b'{"_id": "a", "text": "x"}\n{"_id": "b", "text": "\xe9"}\n')
    with pytest.raises(ValueError, match=r"corpus\.jsonl:2: not UTF-8"):
        beir_benchmarks(folder)


QRELS_ERRORS = [  # (qrels content, line, what the message says)
    ("query-id\tcorpus-id\tscore\nq1\td1\n", 2, "expected query-id<TAB>corpus-id<TAB>score"),
    ("q1\td1\t1\nq1\td3\thigh\n", 2, "score 'high' is not an integer"),  # not a header: line 2
    ("q1\td1\t1.5\n", 1, "score '1.5' is not an integer"),
    ("q1\td1\t1\nq2\td3\t1\nq1\td1\t2\n", 3, "(q1, d1) judged 2 here and 1 on line 1"),
]


@pytest.mark.parametrize(("qrels", "line", "says"), QRELS_ERRORS)
def test_qrels_errors_name_file_and_line(tmp_path, qrels, line, says):
    folder = make_folder(tmp_path, qrels=qrels)
    with pytest.raises(ValueError) as exc:
        beir_benchmarks(folder)
    assert str(exc.value).startswith(f"{folder / 'qrels' / 'test.tsv'}:{line}: ") and says in str(exc.value)


def test_qrels_reader_keeps_every_score_and_tolerates_repeats(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td1\t2\nq1\td2\t0\nq2\td1\t1.0\n")
    qrels, lines = read_beir_qrels(path)
    assert qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}} and lines["q2", "d1"] == 5


def test_questions_repeated_in_queries_name_both_lines(tmp_path):
    folder = make_folder(tmp_path, queries='{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n')
    with pytest.raises(ValueError, match=r"queries\.jsonl:2: question id 'q1' again \(first on line 1\)"):
        beir_benchmarks(folder)


def test_the_demo_round_trips_through_a_beir_folder(tmp_path):
    demo = demo_benchmark()
    folder = write_beir(demo, tmp_path / "demo")
    assert (folder / "qrels" / "test.tsv").read_text().splitlines()[:2] == [
        "query-id\tcorpus-id\tscore", f"{demo.questions[0].id}\t{demo.questions[0].gold_doc_id}\t1"]
    back, = load_benchmarks(DataConfig(name="beir", path=str(folder), split="test"))
    assert [(d.id, d.title, d.text) for d in back.documents] == [(d.id, d.title, d.text) for d in demo.documents]
    assert [(q.id, q.text, q.gold_doc_id) for q in back.questions] == [
        (q.id, q.text, q.gold_doc_id) for q in demo.questions]
    assert all(q.relevance == {q.gold_doc_id: 1} for q in back.questions)
    # written again, the folder is the same: a fixed point
    again = write_beir(back, tmp_path / "again")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        assert (again / name).read_text() == (folder / name).read_text()


def test_write_beir_keeps_graded_relevance(tmp_path):
    bench, = beir_benchmarks(make_folder(tmp_path))
    back, = beir_benchmarks(write_beir(bench, tmp_path / "copy"))
    assert [(q.id, q.relevance) for q in back.questions] == [(q.id, q.relevance) for q in bench.questions]
    assert [(d.id, d.title, d.text) for d in back.documents] == [(d.id, d.title, d.text) for d in bench.documents]
