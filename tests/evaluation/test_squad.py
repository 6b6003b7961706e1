"""SQuAD-format full-text benchmarks (COVID-QA): documents, answer spans as evidence, bad input."""

from __future__ import annotations

import json
import logging

import pytest

from gralc.data.benchmarks import DataConfig, load_benchmarks, squad_benchmark

ARTICLE = ("A study of cough in ferrets\n\nhttps://www.ncbi.nlm.nih.gov/pmc/articles/PMC123/\n"
           "DOI: 10.1000/xyz\n\nAbstract: Ferrets cough when infected.\n\n"
           "Text: The incubation period was 4 days in all animals. Symptoms resolved by day 9.")


def write(tmp_path, qas, context=ARTICLE, extra=None):
    entries = [{"paragraphs": [{"context": context, "document_id": 7, "qas": qas}]}]
    entries += extra or []
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"version": "x", "data": entries}), encoding="utf-8")
    return path


def qa(qid, text, start, question="How long was the incubation period?"):
    return {"id": qid, "question": question, "answers": [{"text": text, "answer_start": start}]}


def test_answers_become_exact_evidence_spans(tmp_path):
    start = ARTICLE.index("4 days")
    bench = squad_benchmark(write(tmp_path, [qa(1, "4 days", start), qa(2, " 4 days", start)]))
    (doc,) = bench.documents
    assert doc.id == "7" and doc.doi == "10.1000/xyz"
    for q in bench.questions:
        (span,) = q.evidence_spans
        assert doc.text[span[0]:span[1]] == "4 days"
    assert bench.stats["n_unmapped_answers"] == 0 and bench.stats["n_repaired_answers"] == 0
    assert "https://" not in doc.text  # metadata lines are not chunk text


def test_bad_entries_are_reported_and_the_rest_runs(tmp_path, caplog):
    good = ARTICLE.index("day 9")
    qas = [qa(1, "day 9", good),
           qa(2, "day 9", 3),  # answer_start wrong: repaired to the occurrence
           qa(3, "never said", 0),  # text not in the context
           {"id": 4, "question": "Unanswered?", "answers": []},
           qa(5, "DOI: 10.1000/xyz", ARTICLE.index("DOI:"))]  # in a dropped metadata line
    extra = [{"paragraphs": [{"context": "   ", "document_id": 8, "qas": [qa(9, "x", 0)]}]}]
    path = write(tmp_path, qas, extra=extra)
    with caplog.at_level(logging.WARNING):
        bench = squad_benchmark(path)
    assert [q.id for q in bench.questions] == ["1", "2", "3", "5"]
    assert bench.questions[1].evidence_spans == bench.questions[0].evidence_spans
    assert bench.questions[2].evidence_spans == [] and bench.questions[3].evidence_spans == []
    s = bench.stats
    assert (s["n_repaired_answers"], s["n_unplaced_answers"], s["n_questions_without_answers"],
            s["n_skipped_contexts"], s["n_unmapped_answers"]) == (1, 1, 1, 1, 1)
    text = caplog.text
    assert str(path) in text and "data[0].paragraphs[0].qas[2]" in text
    assert "data[1].paragraphs[0]: empty or missing 'context'" in text
    assert "does not occur in the context; fix its 'text' or 'answer_start'" in text


@pytest.mark.parametrize("content, match", [
    (b"\xff\xfe not utf8", "not a UTF-8 JSON file"),
    (b'{"version": 1}', "no top-level 'data' list"),
    (b'{"data": [{"paragraphs": [{"context": ""}]}]}', "no usable context"),
])
def test_unusable_files_fail_with_the_file_named(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match) as err:
        squad_benchmark(path)
    assert str(path) in str(err.value)


def test_config_needs_a_path():
    with pytest.raises(ValueError, match="data=squad needs data.path"):
        load_benchmarks(DataConfig(name="squad"))


def test_covidqa_dev_maps_every_answer(shared_data):
    bench = squad_benchmark(shared_data / "covidqa" / "covidqa_dev.json")
    assert (len(bench.documents), len(bench.questions)) == (49, 633)
    assert bench.stats["n_unmapped_answers"] == 0 and bench.stats["n_unplaced_answers"] == 0
    docs = {d.id: d for d in bench.documents}
    raw = json.loads((shared_data / "covidqa" / "covidqa_dev.json").read_text(encoding="utf-8"))
    answers = {str(q["id"]): q["answers"][0]["text"].strip()
               for a in raw["data"] for p in a["paragraphs"] for q in p["qas"]}
    for q in bench.questions:
        (s, e), = q.evidence_spans
        assert docs[q.gold_doc_id].text[s:e] == answers[q.id]


def test_a_squad_file_is_a_corpus_for_indexing(tmp_path, caplog):
    """gralc.index FILE.json reads a SQuAD-format file as eval.py data=squad does: the same
    documents, same ids and texts (an empty context is skipped with its entry named)."""
    from gralc.pipeline import load_documents

    second = {"paragraphs": [{"context": ARTICLE.replace("ferrets", "mice"), "document_id": 8,
                              "qas": []}, {"context": " ", "qas": []}]}
    path = write(tmp_path, [qa(1, "4 days", ARTICLE.index("4 days"))], extra=[second])
    with caplog.at_level(logging.WARNING):
        docs = load_documents(path)
    bench = squad_benchmark(path)
    assert [(d.id, d.text) for d in docs] == [(d.id, d.text) for d in bench.documents]
    assert [d.id for d in docs] == ["7", "8#0"]
    assert "data[1].paragraphs[1]" in caplog.text
