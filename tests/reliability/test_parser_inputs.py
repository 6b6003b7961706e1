"""No input file or question may crash a parser (issue 45).

Deep nesting of any JATS element (not only ``<sec>``), deeply nested or ill-typed JSON, invalid
UTF-8 in a question and the exit code of ``python -m gralc.documents``: every case ends in a
document whose offsets are exact, or in one clear error naming the file and the entry.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gralc.data.benchmarks import squad_benchmark
from gralc.data.question_io import read_jsonl
from gralc.documents.corpus import load_corpus
from gralc.documents.errors import DocumentParseError
from gralc.documents.jats import parse_jats
from gralc.documents.plaintext import parse_plain_text
from gralc.documents.pubmedqa import load_pqal
from gralc.documents.squad import read_squad

REPO = Path(__file__).resolve().parents[2]
#: deeper than Python's recursion limit (1000 frames), within libxml2's depth limit (2048)
DEPTH = 1500
#: deeper than any JSON reader in Python recurses
JSON_DEPTH = 100_000


def article(body: str) -> bytes:
    return ('<article xmlns:mml="http://www.w3.org/1998/Math/MathML"><front><article-meta>'
            "<title-group><article-title>Deep</article-title></title-group></article-meta></front>"
            f"<body>{body}</body></article>").encode()


# ----- JATS: deep nesting of elements other than <sec> ------------------------------------------
def test_deep_inline_bold_keeps_the_text(check_offsets):
    body = "<p>Start " + "<bold>" * DEPTH + "deep core" + "</bold>" * DEPTH + " end.</p>"
    doc = parse_jats(article(body), source="bold.nxml")
    check_offsets(doc, one_line=True)
    assert "Start deep core end." in doc.text


def test_deep_inline_italic_and_xref_keep_every_reference_span(check_offsets):
    half = DEPTH // 2
    body = ("<p>See " + '<italic><xref ref-type="fig" rid="F1">' * half + "Fig 1"
            + "</xref></italic>" * half + " here.</p>")
    doc = parse_jats(article(body), source="xref.nxml")
    check_offsets(doc, one_line=True)
    assert "See Fig 1 here." in doc.text and len(doc.crossrefs) == half
    assert all(doc.text[x.start : x.end] == "Fig 1" for x in doc.crossrefs)


def test_deep_list_nesting_keeps_every_item(check_offsets):
    depth = DEPTH // 2  # two elements a level: <list><list-item>
    body = "".join(f"<list><list-item><p>Item {i}.</p>" for i in range(depth))
    doc = parse_jats(article(body + "</list-item></list>" * depth), source="list.nxml")
    check_offsets(doc, one_line=True)
    items = [doc.text[p.start : p.end] for p in doc.paragraphs if p.kind == "list_item"]
    assert items == [f"Item {i}." for i in range(depth)] and len(doc.lists) == depth


def test_deep_boxed_text_keeps_every_box(check_offsets):
    body = "".join(f"<boxed-text><p>Box {i}.</p>" for i in range(DEPTH)) + "</boxed-text>" * DEPTH
    doc = parse_jats(article(body), source="boxed.nxml")
    check_offsets(doc, one_line=True)
    assert [doc.text[p.start : p.end] for p in doc.paragraphs] == [f"Box {i}." for i in range(DEPTH)]
    assert {p.kind for p in doc.paragraphs} == {"boxed"}


@pytest.mark.parametrize("wrap", ["inline-formula", "disp-formula"])
def test_deep_mathml_keeps_the_formula_tokens(wrap, check_offsets):
    math = ("<mml:math>" + "<mml:mrow>" * DEPTH + "<mml:mi>x</mml:mi><mml:mo>=</mml:mo>"
            "<mml:mn>1</mml:mn>" + "</mml:mrow>" * DEPTH + "</mml:math>")
    doc = parse_jats(article(f"<p>Let <{wrap}>{math}</{wrap}> hold.</p>"), source="math.nxml")
    check_offsets(doc, one_line=True)
    assert "Let x=1 hold." in doc.text or "Let x = 1 hold." in doc.text


def test_deep_nested_paragraphs_keep_every_level(check_offsets):
    body = "".join(f"<p>Level {i}." for i in range(DEPTH)) + "</p>" * DEPTH
    doc = parse_jats(article(body), source="p.nxml")
    check_offsets(doc, one_line=True)
    assert [doc.text[p.start : p.end] for p in doc.paragraphs] == [f"Level {i}." for i in range(DEPTH)]


def test_a_deep_file_does_not_stop_the_corpus(tmp_path):
    (tmp_path / "a_deep.nxml").write_bytes(article("<p>" + "<bold>" * DEPTH + "x" + "</bold>" * DEPTH + "</p>"))
    (tmp_path / "b_good.txt").write_text("Title\n\nSome text here.\n", encoding="utf-8")
    result = load_corpus(tmp_path)
    assert [d.source for d in result.documents] == [str(tmp_path / "a_deep.nxml"), str(tmp_path / "b_good.txt")]
    assert result.skipped == []


def test_nesting_beyond_the_xml_parsers_limit_is_one_clear_error():
    body = "<p>" + "<bold>" * 3000 + "x" + "</bold>" * 3000 + "</p>"
    with pytest.raises(DocumentParseError, match="nested deeper than 2048 levels") as err:
        parse_jats(article(body), source="too_deep.nxml")
    assert "too_deep.nxml" in str(err.value) and "XML_PARSE_HUGE" not in str(err.value)


def test_entity_expansion_and_external_entities_are_refused_quickly():
    laughs = '<!ENTITY l0 "lol">' + "".join(f'<!ENTITY l{i} "{f"&l{i - 1};" * 10}">' for i in range(1, 10))
    bomb = f'<!DOCTYPE article [{laughs}]><article><body><p>&l9;</p></body></article>'.encode()
    start = time.perf_counter()
    with pytest.raises(DocumentParseError, match="bomb.nxml: .*entity expansion"):
        parse_jats(bomb, source="bomb.nxml")
    assert time.perf_counter() - start < 5
    secret = Path(__file__).read_text(encoding="utf-8").splitlines()[0]
    external = (f'<!DOCTYPE article [<!ENTITY e SYSTEM "file://{Path(__file__)}">]>'
                "<article><body><p>Here &e; ends.</p></body></article>").encode()
    doc = parse_jats(external, source="external.nxml")
    assert secret not in doc.text and "Here" in doc.text


# ----- JSON: deep nesting and wrong types -------------------------------------------------------
def deep_json() -> str:
    return "[" * JSON_DEPTH + "]" * JSON_DEPTH


def test_deep_json_in_a_squad_file_is_one_clear_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text('{"data": ' + deep_json() + "}", encoding="utf-8")
    with pytest.raises(ValueError, match="nested too deeply") as err:
        read_squad(path)
    assert str(path) in str(err.value)


def test_deep_json_in_a_question_file_is_one_clear_error(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q1", "text": "Why?", "gold_doc_id": "d1"}\n' + deep_json() + "\n",
                    encoding="utf-8")
    with pytest.raises(ValueError, match="nested too deeply") as err:
        read_jsonl(path)
    assert f"{path}:2" in str(err.value)


def test_deep_json_in_a_pubmedqa_file_is_one_clear_error(tmp_path):
    path = tmp_path / "ori_pqal.json"
    path.write_text(deep_json(), encoding="utf-8")
    with pytest.raises(ValueError, match="nested too deeply") as err:
        load_pqal(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("data, where", [
    ([{"paragraphs": 5}], "data[0].paragraphs"),
    ([{"paragraphs": [{"context": "Title\n\nText.", "qas": [1]}]}], "data[0].paragraphs[0].qas[0]"),
    ([{"paragraphs": [{"context": "Title\n\nText.", "qas": {"id": 1}}]}], "data[0].paragraphs[0].qas"),
])
def test_wrong_types_in_a_squad_file_name_the_entry(tmp_path, data, where):
    path = tmp_path / "set.json"
    path.write_text(json.dumps({"data": data}), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        squad_benchmark(path)
    assert f"{path} {where}" in str(err.value)


@pytest.mark.parametrize("entry, key", [
    ({"QUESTION": 5, "CONTEXTS": ["Text."], "LABELS": ["A"]}, "QUESTION"),
    ({"QUESTION": "Why?", "CONTEXTS": "abc", "LABELS": ["A", "B", "C"]}, "CONTEXTS"),  # read as 3
    ({"QUESTION": "Why?", "CONTEXTS": [["Text."]], "LABELS": ["A"]}, "CONTEXTS"),
])
def test_wrong_types_in_a_pubmedqa_entry_name_the_pmid_and_key(tmp_path, entry, key):
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps({"123": entry}), encoding="utf-8")
    with pytest.raises(ValueError) as err:
        load_pqal(path)
    assert "PMID 123" in str(err.value) and key in str(err.value)


# ----- invalid UTF-8 in a question --------------------------------------------------------------
def test_invalid_utf8_bytes_in_a_question_file_name_the_line_and_the_fix(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"id": "q1", "text": "Why?", "gold_doc_id": "d1"}\n'
                     b'{"id": "q2", "text": "caf\xe9 cough?", "gold_doc_id": "d1"}\n')
    with pytest.raises(ValueError) as err:
        read_jsonl(path)
    message = str(err.value)
    assert f"{path}:2" in message and "UTF-8" in message and "iconv" in message


def test_escaped_surrogates_in_a_question_file_are_replaced_with_a_warning(tmp_path, caplog):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q1", "text": "caf\\udcff cough?", "gold_doc_id": "d1"}\n', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        (q,) = read_jsonl(path)
    assert q.text == "caf\ufffd cough?" and q.text.encode("utf-8")
    assert f"{path}:1" in caplog.text and "U+FFFD" in caplog.text


def test_wrong_types_in_a_question_file_name_the_line_and_key(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "q1", "text": ["Why?"], "gold_doc_id": "d1"}\n', encoding="utf-8")
    with pytest.raises(ValueError) as err:
        read_jsonl(path)
    assert f"{path}:1" in str(err.value) and "'text'" in str(err.value)


def test_surrogates_in_squad_and_pubmedqa_questions_are_replaced(tmp_path, caplog):
    context = "Title\n\nFerrets coughed for four days."
    squad = tmp_path / "set.json"
    squad.write_text(json.dumps({"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "a", "question": "How long did ferrets cough\udcff?",
         "answers": [{"text": "four days", "answer_start": context.index("four days")}]}]}]}]}),
        encoding="utf-8")
    pqal = tmp_path / "ori_pqal.json"
    pqal.write_text(json.dumps({"123": {"QUESTION": "Is it caf\udce9?", "CONTEXTS": ["Text \ud800."],
                                        "LABELS": ["A"]}}), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        bench, data = squad_benchmark(squad), load_pqal(pqal)
    assert bench.questions[0].text == "How long did ferrets cough\ufffd?"
    assert data.questions[0].text == "Is it caf\ufffd?" and "\ud800" not in data.documents[0].text
    (span,) = bench.questions[0].evidence_spans  # same length: the answer offsets still hold
    assert bench.documents[0].text[span[0] : span[1]] == "four days"
    assert str(squad) in caplog.text and str(pqal) in caplog.text


def test_surrogates_in_plain_text_are_replaced_with_a_document_warning():
    doc, offsets = parse_plain_text("Title\n\nCaf\udce9 and \ud83d cough.", "x")
    assert "\ufffd and \ufffd cough." in doc.text and doc.text.encode("utf-8")
    assert any("U+FFFD" in w for w in doc.warnings)
    assert offsets.to_doc(len("Title\n\nCaf")) == doc.text.index("\ufffd")

def test_invalid_utf8_question_on_the_command_line_is_replaced_with_a_warning(small_index, capsys,
                                                                            caplog):
    from gralc import search as search_cli

    # a non-UTF-8 terminal: Python hands the byte 0xff of argv over as the surrogate '\udcff'
    with caplog.at_level(logging.WARNING):
        assert search_cli.main([str(small_index), "ferret\udcff cough", "-k", "1"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith(" 1.") and " a |" in out and "Traceback" not in err
    assert "the question argument" in caplog.text and "U+FFFD" in caplog.text


# ----- python -m gralc.documents ----------------------------------------------------------------
@pytest.mark.parametrize("how", ["main", pytest.param("process", marks=pytest.mark.slow)])
def test_documents_cli_exits_2_with_one_message_per_bad_file_and_goes_on(how, tmp_path, capsys):
    """``main``: the command's ``main(argv)`` in this process (fast); ``process``: ``python -m
    gralc.documents``, as a user runs it."""
    from gralc.documents.__main__ import main

    (tmp_path / "bad.nxml").write_bytes(b"<article><body><p>unclosed</body></article>")
    (tmp_path / "bad.txt").write_bytes(b"Title\n\ncaf\xe9\n")
    (tmp_path / "good.md").write_text("# Good title\n\nSome text.\n", encoding="utf-8")
    files = [str(tmp_path / n) for n in ("bad.nxml", "good.md", "bad.txt", "missing.nxml")]
    if how == "process":
        proc = subprocess.run([sys.executable, "-m", "gralc.documents", "inspect", *files],
                              capture_output=True, text=True, cwd=REPO, timeout=120)
    else:
        capsys.readouterr()
        rc = main(["inspect", *files])
        proc = subprocess.CompletedProcess([], rc, *capsys.readouterr())
    assert proc.returncode == 2, proc.stderr
    assert "Good title" in proc.stdout and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 3
    for name, line in zip(("bad.nxml", "bad.txt", "missing.nxml"), errors):
        assert name in line
