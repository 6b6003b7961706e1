"""The article-level stage screen (issue 57): re-ranking by an article score, the metrics of
the model's own ranking reproduced from saved rankings, the cross-validated choice, and a
clear refusal of a folder without rankings. Demo benchmark, real evidence metrics."""

from __future__ import annotations

import pytest

from gralc.chunking.chunk import Chunk
from gralc.data.benchmarks import demo_benchmark
from gralc.encoding.budget import budget_counter
from gralc.evaluation.evidence import evidence_metrics, resolve_evidence
from gralc.evaluation.methods import RunSettings
from gralc.experiments.article_stage import BASE, choose, fold_metrics, main
from gralc.experiments.error_analysis import rankings_record


def _chunks(bench, size=400):
    return [Chunk(d.id, f"{d.id}::{i}", d.text[s:s + size], s, min(s + size, len(d.text)))
            for d in bench.documents for i, s in enumerate(range(0, len(d.text), size))]


def test_base_reproduces_the_ranking_and_the_stage_can_lift_the_gold_article():
    bench = demo_benchmark()
    chunks = _chunks(bench)
    settings = RunSettings((1, 5, 10, 20), pieces=budget_counter())
    # a ranking that puts every other article's chunks first, the gold article's last
    runs = [[(c, 1.0 if c.doc_id != q.gold_doc_id else 0.5) for c in chunks if c.doc_id != q.gold_doc_id]
            + [(c, 0.5) for c in chunks if c.doc_id == q.gold_doc_id] for q in bench.questions]
    rankings = rankings_record(chunks, [q.id for q in bench.questions], runs)
    rows = fold_metrics(bench, rankings, settings, {BASE: (None, 0.0), "bm25 w=1.0": ("bm25", 1.0)})
    docs = {d.id: d for d in bench.documents}
    asked = [(q, run) for q, run in zip(bench.questions, runs) if resolve_evidence(q, docs[q.gold_doc_id])]
    assert asked, "the demo lost its questions with evidence"
    expected = [evidence_metrics(run[:settings.depth], q.gold_doc_id, resolve_evidence(q, docs[q.gold_doc_id]),
                                 settings.ks, settings.evidence.budgets, settings.pieces)["ev_mrr"]
                for q, run in asked]
    assert rows[BASE]["questions"]["ev_mrr"] == pytest.approx(expected)
    # BM25 over whole articles names the gold article for most demo questions: MRR rises
    assert sum(rows["bm25 w=1.0"]["questions"]["ev_mrr"]) > sum(expected)


def _row(values):
    return {"questions": {"ev_recall@512wp": values, "ev_mrr": values}, "articles": ["a"] * len(values)}


def test_choice_is_made_on_the_other_folds():
    folds = [{BASE: _row([0.5]), "x": _row([1.0])}, {BASE: _row([0.5]), "x": _row([0.0])},
             {BASE: _row([0.5]), "x": _row([0.9])}]
    # held out 1: x wins on folds 0 and 2; held out 0: x averages 0.45 < 0.5 on folds 1, 2
    assert choose(folds, 1) == "x" and choose(folds, 0) == BASE
    assert choose([{BASE: _row([1.0]), "x": _row([1.0])}] * 2, 0) == BASE  # a tie keeps the base


def test_missing_rankings_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--rankings", str(tmp_path), "--out", str(tmp_path / "o")])
    assert exit_.value.code == 2 and "rankings_fold0.json" in capsys.readouterr().err


def test_synonym_expansion_scores_chunks_that_hold_what_the_question_does_not_say(tmp_path, capsys):
    from types import SimpleNamespace

    from gralc.experiments.query_expansion import expansion, synonym_terms
    from gralc.experiments.query_expansion import main as expansion_main
    from gralc.knowledge.linker import EntityLinker
    from gralc.knowledge.vocabulary import Concept, Vocabulary

    vocab = Vocabulary({"D1": Concept("D1", "Metformin", synonyms=["Glucophage", "metformin hydrochloride"])})
    assert expansion("Does metformin help?", [vocab["D1"].terms()]) == "Glucophage metformin hydrochloride"
    table = [Chunk("a", "a::0", "Glucophage was given daily.", 0, 27),
             Chunk("b", "b::0", "Insulin was given daily.", 0, 24)]
    test = SimpleNamespace(questions=[SimpleNamespace(text="Does metformin help?"),
                                      SimpleNamespace(text="Is insulin given?")])
    values = synonym_terms(EntityLinker(vocab), vocab)(test, table)
    assert values(0, [])["synonyms"].get("a::0") == 1.0 and not values(0, [])["synonyms"].get("b::0")
    assert values(1, [])["synonyms"] == {}  # nothing linked, nothing added
    # a thesaurus that is not there: exit 2 naming it (after the rankings are found)
    for k in range(5):
        (tmp_path / f"rankings_fold{k}.json").write_text('{"chunks": [], "questions": []}')
    (tmp_path / "error_analysis.json").write_text('{"folds": []}')
    with pytest.raises(SystemExit) as exit_:
        expansion_main(["--rankings", str(tmp_path), "--out", str(tmp_path / "o"),
                        "--vocabulary", str(tmp_path / "none.tsv")])
    assert exit_.value.code == 2 and "none.tsv" in capsys.readouterr().err
