"""Cloze training questions: well-formed, placed exactly, deterministic, read by the SQuAD loader."""

from __future__ import annotations

import json

import pytest

from gralc.data.benchmarks import squad_benchmark
from gralc.data.cloze_questions import (
    ClozeConfig,
    answer_spans,
    cloze_question,
    cloze_squad,
    main,
)
from gralc.data.demo import demo_articles
from gralc.documents.jats import parse_jats
from gralc.knowledge.builtin import builtin_vocabulary_path
from gralc.knowledge.linker import EntityLinker
from gralc.knowledge.vocabulary import load_vocabulary


def test_cloze_question_replaces_the_answer_and_keeps_a_window():
    s = "Mother-to-child transmission is the main cause of HIV-1 infection in children [12]."
    assert cloze_question(s, 0, 28, 10) == "What is the main cause of HIV-1 infection in children?"
    assert cloze_question(s, 0, 28, 3) == "What is the main?"
    s2 = "The incubation period was 5.2 days (Li et al., 2020), shorter than for SARS."
    start = s2.index("5.2 days")
    assert cloze_question(s2, start, start + 8, 10) == "The incubation period was what, shorter than for SARS?"


def test_answer_spans_are_whole_words_and_never_citation_numbers():
    s = "Knockouts of Tie-2 and mice from [35] show 40 % fewer cells in 3 of 7 litters."
    spans = {s[a:b] for a, b in answer_spans(s, [(s.index("mice"), s.index("mice") + 4)])}
    assert "mice" in spans and "40 %" in spans and "3" in spans and "7" in spans
    assert "2" not in spans and "35" not in spans  # glued to "Tie-", a citation


@pytest.fixture(scope="module")
def demo_docs():
    return [parse_jats(p) for p in demo_articles()]


@pytest.fixture(scope="module")
def linker():
    return EntityLinker(load_vocabulary(builtin_vocabulary_path()))


def test_demo_clozes_are_placed_exactly_and_deterministic(demo_docs, linker):
    config = ClozeConfig(per_article=15, seed=3)
    squad = cloze_squad(demo_docs, config, linker)
    assert squad == cloze_squad(demo_docs, config, linker)
    assert squad != cloze_squad(demo_docs, ClozeConfig(per_article=15, seed=4), linker)
    n = 0
    for art in squad["data"]:
        (para,) = art["paragraphs"]
        ctx = para["context"]
        assert len(para["qas"]) <= 15
        for qa in para["qas"]:
            (ans,) = qa["answers"]
            assert ctx[ans["answer_start"] : ans["answer_start"] + len(ans["text"])] == ans["text"]
            assert qa["question"].endswith("?") and " what" in f" {qa['question'].lower()}"
            assert len(qa["question"].split()) >= config.min_question_words
            assert qa["id"].startswith(para["document_id"] + "::cloze::")
            n += 1
    assert n >= 2 * len(squad["data"]) > 0


def test_cli_output_is_read_by_the_squad_loader_with_every_answer_mapped(tmp_path, linker):
    folder = demo_articles()[0].parent
    out = tmp_path / "cloze.json"
    vocab = str(builtin_vocabulary_path())
    assert main([str(folder), "--out", str(out), "--per-article", "10", "--vocabulary", vocab]) == 0
    raw = json.loads(out.read_text())
    bench = squad_benchmark(out)
    assert len(bench.documents) == len(raw["data"])
    assert bench.stats["n_unplaced_answers"] == bench.stats["n_unmapped_answers"] == 0
    assert bench.stats["n_repaired_answers"] == 0
    by_id = {d.id: d for d in bench.documents}
    answers = {qa["id"]: qa["answers"][0]["text"] for a in raw["data"] for qa in a["paragraphs"][0]["qas"]}
    for q in bench.questions:
        (span,) = q.evidence_spans
        assert by_id[q.gold_doc_id].text[span[0] : span[1]] == answers[q.id]
    with pytest.raises(SystemExit):
        main([str(folder), "--out", str(tmp_path / "cloze.jsonl")])
    assert not (tmp_path / "cloze.jsonl").exists()


def test_a_missing_corpus_folder_is_named_before_the_vocabulary_is_read(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main([str(tmp_path / "no-such-folder"), "--out", str(tmp_path / "c.json"),
              "--vocabulary", str(tmp_path / "no-such-vocabulary.tsv")])
    err = capsys.readouterr().err
    assert "no-such-folder does not exist" in err and "vocabulary" not in err.split("error:")[-1]


def test_an_unreadable_vocabulary_is_one_message_naming_it(tmp_path, capsys):
    folder = demo_articles()[0].parent
    with pytest.raises(SystemExit):
        main([str(folder), "--out", str(tmp_path / "c.json"), "--vocabulary", str(tmp_path / "v.tsv")])
    err = capsys.readouterr().err
    assert f"--vocabulary {tmp_path / 'v.tsv'}" in err and "not found" in err
    assert not (tmp_path / "c.json").exists()
