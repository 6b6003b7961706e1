"""The one question gate (issue 58, classes 6 and 7): every question passes
:func:`gralc.documents.question.clean_question_text`, which refuses a question without letters
or digits (blank, or made only of zero-width / format / control characters), removes those
characters from a real question, and cuts a question longer than MAX_QUESTION_CHARS before any
tokenizer sees it."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gralc.data.question_io import read_queries
from gralc.documents.question import MAX_QUESTION_CHARS, clean_question_text

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u202e", "\x07", "\x1b"]


@pytest.mark.parametrize("ch", INVISIBLE)
def test_a_question_of_invisible_characters_only_is_refused(ch):
    with pytest.raises(ValueError, match="no letters or digits"):
        clean_question_text(ch * 3 + " ", "q.txt:1")


def test_invisible_characters_are_removed_from_a_real_question():
    assert clean_question_text("fever\u200b in\u00ad mice\u202e?", "x") == "fever in mice?"
    assert clean_question_text("line\nbreak\tkept", "x") == "line\nbreak\tkept"


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=40))
def test_every_unicode_category_either_passes_with_a_letter_or_digit_or_is_refused(text):
    """Property over every category: the result keeps no control or format character and
    holds a letter or digit, or the gate refuses with its one message."""
    try:
        out = clean_question_text(text, "q")
    except ValueError as exc:
        assert "no letters or digits" in str(exc)
        assert not any(unicodedata.category(c)[0] in "LN" for c in text
                       if unicodedata.category(c) not in ("Cc", "Cf"))
        return
    assert any(unicodedata.category(c)[0] in "LN" for c in out)
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in out if c not in "\t\n\r\x0b\x0c\x85")


def test_a_huge_question_is_cut_before_any_tokenizer(caplog):
    out = clean_question_text("fever " * 2_000_000, "queries.txt:1")
    assert len(out) == MAX_QUESTION_CHARS
    assert "only its first 8192 are read" in caplog.text


def test_question_files_pass_the_gate(tmp_path):
    f = tmp_path / "q.jsonl"
    f.write_text(json.dumps({"id": "1", "text": "\u200b\u200d\ufeff"}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="q.jsonl:1: the question has no letters or digits"):
        read_queries(f)
    t = tmp_path / "q.txt"
    t.write_text("What limits adherence?\n\u2060\u2060\n", encoding="utf-8")
    with pytest.raises(ValueError, match="q.txt:2"):
        read_queries(t)


def test_the_search_command_refuses_an_invisible_question_before_loading_anything(tmp_path, capsys):
    from gralc import search

    assert search.main([str(tmp_path / "no-index"), "--", "\u200b\u200b"]) == 2
    assert "no letters or digits" in capsys.readouterr().err


def test_the_python_api_passes_the_gate_too():
    from gralc.inference import Retriever

    with pytest.raises(ValueError, match="question 2: the question has no letters"):
        Retriever.search_batch(None, ["fine question", "\ufeff"])  # checked before any index is used


def test_an_article_larger_than_the_bound_is_refused_before_it_is_read(tmp_path, monkeypatch, caplog):
    """Issue 58, class 7: one input may not take unbounded memory; a corpus walk skips the
    file with the reason, a single file is one error."""
    from gralc.documents.corpus import load_corpus, parse_document
    from gralc.documents.errors import DocumentParseError

    monkeypatch.setenv("GRALC_MAX_ARTICLE_MB", "0.01")
    big, small = tmp_path / "big.txt", tmp_path / "small.txt"
    big.write_text("# Title\n\n" + "Fever in mice. " * 2000, encoding="utf-8")
    small.write_text("# Title\n\nFever in mice.\n", encoding="utf-8")
    with pytest.raises(DocumentParseError, match="big.txt is 0.03.* MB, more than the 0.01 MB"):
        parse_document(big)
    loaded = load_corpus(tmp_path)
    assert [d.id for d in loaded.documents] == ["small"] and loaded.skipped[0][0] == big
    monkeypatch.setenv("GRALC_MAX_ARTICLE_MB", "lots")
    with pytest.raises(ValueError, match="GRALC_MAX_ARTICLE_MB='lots'"):
        parse_document(small)
