"""Issue 58, class 7 (one input can take unbounded memory): every per-item input is bounded
before the work, with a message for what was cut or refused. A question is cut at
MAX_QUESTION_CHARS and an article file refused over GRALC_MAX_ARTICLE_MB
(test_question_gate.py); here: titles (copied into every chunk of their section as
``section_path``), files read whole (question files, JSON, qrels: GRALC_MAX_FILE_MB) and the
lines of a streamed BEIR corpus (one line is one document: the article bound)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gralc.documents.errors import DocumentParseError
from gralc.documents.model import MAX_TITLE_CHARS
from tests.conftest import check_document_offsets

LONG = "Remdesivir " * 1000  # 11,000 characters, a paragraph in the wrong place


def _jats(article_title: str, section_title: str) -> bytes:
    return (f'<article><front><article-meta><title-group><article-title>{article_title}'
            f'</article-title></title-group></article-meta></front><body><sec><title>{section_title}'
            f'</title><p>Remdesivir shortened recovery in adults.</p></sec></body></article>').encode()


def _titles(doc) -> list[str]:
    return [doc.title, *(s.title for s in doc.iter_sections())]


def test_jats_titles_are_cut_with_a_warning_and_offsets_still_hold():
    from gralc.documents.jats import parse_jats

    doc = parse_jats(_jats(LONG, LONG), source="long.nxml")
    check_document_offsets(doc, one_line=True)
    assert all(0 < len(t) <= MAX_TITLE_CHARS for t in _titles(doc))
    assert any(w.startswith("<article-title> of 10999 characters cut") for w in doc.warnings)
    assert any(w.startswith("a section title of 10999 characters cut") for w in doc.warnings)
    assert "Remdesivir shortened recovery" in doc.text  # the body is untouched


def test_a_chunks_section_path_stays_bounded():
    """What the bound protects: each chunk copies its section's titles."""
    from gralc.chunking.base import PreparedDocument, make_chunk
    from gralc.documents.jats import parse_jats

    doc = parse_jats(_jats("Trial", LONG), source="long.nxml")
    para = doc.paragraphs[0]
    chunk = make_chunk(PreparedDocument(doc), "fixed", 0, para.start, para.end)
    assert sum(map(len, chunk.section_path)) <= MAX_TITLE_CHARS


def test_plain_text_and_markdown_read_an_overlong_title_line_as_text():
    from gralc.documents.plaintext import parse_plain_text

    plain, _ = parse_plain_text(LONG.strip() + "\n\nRemdesivir shortened recovery.\n", "p")
    check_document_offsets(plain)
    assert plain.title == "" and plain.text.startswith("Remdesivir Remdesivir")
    assert any("no title: the first line has 10999 characters" in w for w in plain.warnings)
    md, _ = parse_plain_text(f"# {LONG}\n\n## {LONG}\n\nRemdesivir shortened recovery.\n", "m", fmt="markdown")
    check_document_offsets(md)
    assert all(len(t) <= MAX_TITLE_CHARS for t in _titles(md))
    assert sum("'#' line of" in w for w in md.warnings) == 2
    assert md.text.count("Remdesivir") >= 2000  # nothing dropped: both lines are body text


def test_a_title_given_apart_is_cut_beir_and_squad_entries_too(tmp_path):
    from gralc.documents.beir import read_beir_corpus

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps({"_id": "d1", "title": LONG, "text": "Remdesivir shortened recovery."}) + "\n")
    (doc,), _ = read_beir_corpus(corpus)
    check_document_offsets(doc)
    assert 0 < len(doc.title) <= MAX_TITLE_CHARS and doc.text.endswith("Remdesivir shortened recovery.")
    assert any(w.startswith("the title of 10999 characters cut") for w in doc.warnings)


def test_a_pubmedqa_label_is_a_title_too():
    from gralc.documents.pubmedqa import convert_record

    _, doc = convert_record("123", "Does it work?", ["It works."], [LONG])
    check_document_offsets(doc)
    assert len(doc.sections[0].title) <= MAX_TITLE_CHARS and "cut to its first" in doc.warnings[0]


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 3 * MAX_TITLE_CHARS), word=st.sampled_from(["a", "Dose ", "x" * 700 + " ", "\u00e9"]))
def test_no_parser_keeps_a_title_over_the_bound(n, word):
    """Property over title lengths and word shapes, every parser that reads titles."""
    from gralc.documents.jats import parse_jats
    from gralc.documents.plaintext import parse_plain_text

    title = (word * (n // len(word) + 1))[:n].strip() or "T"
    docs = [parse_jats(_jats(title, title), source="t.nxml"),
            parse_plain_text(f"{title}\n\nFever in mice.\n", "p")[0],
            parse_plain_text(f"# {title}\n\n## {title}\n\nFever in mice.\n", "m", fmt="markdown")[0],
            parse_plain_text("Fever in mice.", "g", title=title)[0]]
    for doc in docs:
        check_document_offsets(doc)
        assert all(len(t) <= MAX_TITLE_CHARS for t in _titles(doc)), doc.id


def test_files_read_whole_are_refused_over_the_bound_before_they_are_read(tmp_path, monkeypatch):
    from gralc.data.question_io import read_jsonl, read_queries
    from gralc.retrieval.trec import read_trec_qrels as read_qrels
    from gralc.safe_load import read_json_untrusted

    questions = tmp_path / "questions.tsv"
    questions.write_text("".join(f"q{i}\tWhich dose of remdesivir {i}?\n" for i in range(2000)))
    records = tmp_path / "records.jsonl"
    records.write_text(json.dumps({"id": "q1", "text": "Which dose?", "gold_doc_id": "d1"}) + "\n" + " " * 30_000)
    config = tmp_path / "big.json"
    config.write_text(json.dumps({"k": "v" * 30_000}))
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(3000)))
    assert len(read_queries(questions)) == 2000  # within the default bound
    monkeypatch.setenv("GRALC_MAX_FILE_MB", "0.02")
    for read, path in ((read_queries, questions), (read_queries, tmp_path), (read_jsonl, records),
                       (read_json_untrusted, config), (read_qrels, qrels)):
        if path == tmp_path:  # a BEIR folder's queries.jsonl goes through the same bound
            (tmp_path / "queries.jsonl").write_text(
                "".join(json.dumps({"_id": str(i), "text": "Which dose?"}) + "\n" for i in range(1000)))
        with pytest.raises(ValueError, match=r"is 0\.0\d+ MB, more than the 0\.02 MB GraLC reads whole.*"
                                             "GRALC_MAX_FILE_MB") as got:
            read(path)
        assert str(path if path != tmp_path else tmp_path / "queries.jsonl") in str(got.value)
    monkeypatch.setenv("GRALC_MAX_FILE_MB", "much")
    with pytest.raises(ValueError, match="GRALC_MAX_FILE_MB='much': give a number"):
        read_queries(questions)


def test_a_streamed_beir_corpus_bounds_each_line_by_the_article_bound(tmp_path, monkeypatch):
    from gralc.data.beir import read_beir_qrels
    from gralc.documents.beir import read_beir_corpus

    corpus = tmp_path / "corpus.jsonl"
    ok = json.dumps({"_id": "d1", "title": "Remdesivir", "text": "It shortened recovery."})
    corpus.write_text(ok + "\n" + json.dumps({"_id": "d2", "text": "Fever in mice. " * 2000}) + "\n")
    assert len(read_beir_corpus(corpus)[0]) == 2
    monkeypatch.setenv("GRALC_MAX_ARTICLE_MB", "0.01")
    with pytest.raises(DocumentParseError, match=r"corpus.jsonl:2: a line longer than 0\.01 MB.*GRALC_MAX_ARTICLE_MB"):
        read_beir_corpus(corpus)
    qrels = tmp_path / "test.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\t" + "d" * 20_000 + "\t1\n")
    with pytest.raises(DocumentParseError, match="test.tsv:3: a line longer than"):
        read_beir_qrels(qrels)
    corpus.write_text(ok + "\n" + ok.replace("d1", "d3") + "\n")  # lines within the bound: unchanged
    assert [d.id for d in read_beir_corpus(corpus)[0]] == ["d1", "d3"]
