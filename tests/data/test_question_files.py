"""Question files of every common format through one reader (issue 55): JSON lines with any of
the usual id and text keys, TSV (MS MARCO, TREC topics), plain text, a BEIR folder; every
error names FILE:LINE, the format the file was read as and the formats accepted."""

from __future__ import annotations

import json
import logging

import pytest

from gralc.data.demo import demo_questions_path
from gralc.data.question_io import read_jsonl, read_queries, write_jsonl
from gralc.documents.question import Question


def write(tmp_path, name: str, text: str | bytes):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("key", ["_id", "id", "qid", "query_id"])
def test_jsonl_ids_under_every_usual_key(tmp_path, key):
    path = write(tmp_path, "q.jsonl", json.dumps({key: 7, "text": "Which dose?"}) + "\n\n"
                 + json.dumps({key: "q-2", "query": "Which drug?"}) + "\n")
    assert read_queries(path) == [("7", "Which dose?"), ("q-2", "Which drug?")]


def test_jsonl_text_keys_and_missing_ids(tmp_path):
    rows = [{"question": "First?"}, {"text": "Second?", "kind": "x"}, {"query": "Third?"},
            {"question": None, "text": "Fourth?"}]
    path = write(tmp_path, "q.json", "\n".join(json.dumps(r) for r in rows) + "\n")
    # a missing id is the 1-based line number, as gralc.search has always done
    assert read_queries(path) == [("1", "First?"), ("2", "Second?"), ("3", "Third?"), ("4", "Fourth?")]


def test_the_demo_question_file_reads_as_before():
    ours = read_queries(demo_questions_path())
    assert ours == [(q.id, q.text) for q in read_jsonl(demo_questions_path())]


def test_tsv_with_and_without_a_header(tmp_path):
    for header in ("qid\ttext\n", "id\tquery\n", ""):
        path = write(tmp_path, "topics.tsv", header + "301\tWhich drug lowers HbA1c?\r\n\n302\t  Dose?  \n")
        assert read_queries(path) == [("301", "Which drug lowers HbA1c?"), ("302", "Dose?")]


def test_plain_text_is_numbered_one_to_n(tmp_path):
    path = write(tmp_path, "questions.txt", "\ufeffWhich drug?\n\n  Which dose?\nWhy\ttabs?\n")
    assert read_queries(path) == [("1", "Which drug?"), ("2", "Which dose?"), ("3", "Why\ttabs?")]


def test_the_format_is_guessed_from_content_when_the_extension_says_little(tmp_path):
    jsonl = write(tmp_path, "queries.dat", '{"_id": "a", "text": "JSON?"}\n')
    tsv = write(tmp_path, "topics", "a\tTSV?\n")
    text = write(tmp_path, "asks", "Plain?\n")
    # Anserini's topics.*.txt are qid<TAB>text; a .txt of JSON objects is JSON lines
    anserini = write(tmp_path, "topics.dev.txt", "1048585\twhat is paula deen's brother\n2\tx y\n")
    json_txt = write(tmp_path, "q.txt", '{"id": 1, "question": "JSON in .txt?"}\n')
    assert read_queries(jsonl) == [("a", "JSON?")]
    assert read_queries(tsv) == [("a", "TSV?")]
    assert read_queries(text) == [("1", "Plain?")]
    assert read_queries(anserini)[0] == ("1048585", "what is paula deen's brother")
    assert read_queries(json_txt) == [("1", "JSON in .txt?")]


def test_an_explicit_format_overrides_the_guess(tmp_path):
    path = write(tmp_path, "q.tsv", "a\tb\n")
    assert read_queries(path, fmt="text") == [("1", "a\tb")]
    assert read_queries(write(tmp_path, "q.txt", "x\ty\n"), fmt="tsv") == [("x", "y")]
    with pytest.raises(ValueError, match="format 'csv': use one of jsonl, tsv, text, beir"):
        read_queries(path, fmt="csv")


def test_a_beir_folder_reads_its_queries(tmp_path):
    write(tmp_path, "beir/queries.jsonl", '{"_id": "q1", "text": "Why?", "metadata": {}}\n')
    assert read_queries(tmp_path / "beir") == [("q1", "Why?")]
    assert read_queries(tmp_path / "beir", fmt="beir") == [("q1", "Why?")]
    with pytest.raises(FileNotFoundError, match="no queries.jsonl"):
        read_queries(tmp_path)
    with pytest.raises(ValueError, match="is a folder"):
        read_queries(tmp_path / "beir", fmt="tsv")
    with pytest.raises(FileNotFoundError, match="question file not found"):
        read_queries(tmp_path / "nope.jsonl")


BAD = [  # (file name, content, line of the error, what the message says, format read as)
    ("q.tsv", "qid\ttext\n1\tfine\n2 no tab\n", 3, "no tab", "TSV, from the .tsv extension"),
    ("q.tsv", "1\ta\tb\n", 1, "3 tab-separated columns", "TSV"),
    ("q.tsv", "1\tfine\n\t  x\n", 2, "empty id", "TSV"),
    ("q.tsv", "1\tfine\n2\t   \n", 2, "blank", "TSV"),
    ("q.jsonl", '{"id": 1, "text": "ok"}\n2\tnot json\n', 2, "not valid JSON", "JSON lines, from the .jsonl"),
    ("q.jsonl", '["a list"]\n', 1, "expected a JSON object, got list", "JSON lines"),
    ("q.jsonl", '{"id": 1}\n', 1, "no question", "JSON lines"),
    ("q.jsonl", '{"id": 1, "text": ["x"]}\n', 1, "'text' must be a string", "JSON lines"),
    ("q.jsonl", '{"id": true, "text": "x"}\n', 1, "'id' must be a non-empty string or an integer", "JSON lines"),
    ("q.jsonl", '{"id": 1.5, "text": "x"}\n', 1, "'id' must be", "JSON lines"),
    ("q.jsonl", '{"id": 1, "text": "  "}\n', 1, "blank", "JSON lines"),
    ("q.jsonl", '{"id": 1, "text": "x"}\n' + "[" * 100_000 + "\n", 2, "nested too deeply", "JSON lines"),
    ("q.jsonl", '{"id": "a", "text": "x"}\n\n{"qid": "a", "text": "y"}\n', 3,
     "question id 'a' again (first on line 1)", "JSON lines"),
    ("q.tsv", "7\tx\n8\ty\n7\tz\n", 3, "question id '7' again (first on line 1)", "TSV"),
    ("q.txt", b"fine\n\xe9t\xe9\n", 2, "not UTF-8 text", "plain text, from the .txt extension"),
    ("q.jsonl", b'{"id": 1, "text": "ok"}\n{"text": "\xff"}\n', 2, "not UTF-8 text", "JSON lines"),
]


@pytest.mark.parametrize(("name", "content", "line", "says", "read_as"), BAD)
def test_every_error_names_file_line_format_and_the_alternatives(tmp_path, name, content, line, says, read_as):
    path = write(tmp_path, name, content)
    with pytest.raises(ValueError) as exc:
        read_queries(path)
    message = str(exc.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert says in message and f"read as {read_as}" in message, message
    assert "accepted: JSON lines" in message and "TSV" in message and "BEIR folder" in message


def test_a_file_without_questions_says_so(tmp_path):
    with pytest.raises(ValueError, match=r"q\.jsonl: no questions\. Question file read as JSON lines"):
        read_queries(write(tmp_path, "q.jsonl", "\n \n"))
    with pytest.raises(ValueError, match="no questions"):
        read_queries(write(tmp_path, "q.tsv", "qid\ttext\n"))


def test_surrogates_become_replacement_characters_with_a_warning(tmp_path, caplog):
    path = write(tmp_path, "q.jsonl", '{"_id": "a", "text": "bad \\udcff byte"}\n')
    with caplog.at_level(logging.WARNING):
        assert read_queries(path) == [("a", "bad \ufffd byte")]
    assert f"{path}:1" in caplog.text


# ----- Question.relevance in our own question files ----------------------------------------
def test_relevance_round_trips_and_is_checked(tmp_path):
    q = Question("q1", "Which drug?", "d2", relevance={"d2": 2, "d7": 1})
    path = write_jsonl([q, Question("q2", "Which dose?", "d3")], tmp_path / "q.jsonl")
    back = read_jsonl(path)
    assert ["relevance" in json.loads(line) for line in path.read_text().splitlines()] == [True, False]
    assert back[0].relevance == {"d2": 2, "d7": 1} and back[0].relevant_docs() == {"d2": 2, "d7": 1}
    assert back[1].relevance == {} and back[1].relevant_docs() == {"d3": 1}
    for bad, says in ([{"d9": 1}, "does not hold gold_doc_id 'd1'"], [{"d1": 0}, "must be an int > 0"],
                      [{"d1": True}, "must be an int > 0"], [["d1"], "must be a mapping"]):
        path = write(tmp_path, "bad.jsonl", json.dumps({"id": "q", "text": "x", "gold_doc_id": "d1",
                                                        "relevance": bad}) + "\n")
        with pytest.raises(ValueError, match=rf"bad\.jsonl:1: .*{says}"):
            read_jsonl(path)
    with pytest.raises(ValueError, match="does not hold gold_doc_id"):
        Question("q", "x", "d1", relevance={"d2": 1})
