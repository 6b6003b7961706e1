"""Questions, strategies and index folders a user gets wrong are refused or reported, not
silently answered (gralc.search, gralc.index, the encoder, the sentence splitter)."""

from __future__ import annotations

import logging

import pytest

from gralc import index as index_cli
from gralc import search as search_cli
from gralc.documents.sentences import split_sentences
from gralc.inference import Retriever


@pytest.mark.parametrize("question", ["", "   \n\t"])
def test_blank_questions_are_refused(small_index, question, capsys):
    assert search_cli.main([str(small_index), question]) == 2
    assert "blank" in capsys.readouterr().err


def test_over_long_questions_are_embedded_with_a_warning(small_index, caplog):
    retriever = Retriever.load(small_index)
    with caplog.at_level(logging.WARNING):
        hits = retriever.search("ferret cough " * 400, k=1)
    assert hits and "longer than the 256 word-pieces the encoder reads" in caplog.text


def test_loading_an_index_writes_nothing_into_it(small_index):
    before = sorted(p.name for p in small_index.rglob("*"))
    Retriever.load(small_index).search("How long did ferrets cough?", k=1)
    assert sorted(p.name for p in small_index.rglob("*")) == before


def test_unknown_strategy_is_refused_before_any_encoding(tmp_path, capsys, monkeypatch):
    import gralc.inference

    monkeypatch.setattr(gralc.inference, "load_documents", lambda *a, **k: pytest.fail("read"))
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Title\n\nText.", encoding="utf-8")
    assert index_cli.main([str(corpus), "--out", str(tmp_path / "o"), "--strategy", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "unknown strategy 'nosuch'" in err and "structure_aware" in err
    assert not (tmp_path / "o").exists()


def test_cjk_full_stops_end_sentences():
    text = "新冠病毒的潜伏期为四天。患者出现发热！是否需要隔离？ Mice were fed. Cells grew."
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "新冠病毒的潜伏期为四天。", "患者出现发热！", "是否需要隔离？", "Mice were fed.", "Cells grew."]
    jp = "研究は終了した。結果は良好であった．"
    assert len(split_sentences(jp)) == 2
