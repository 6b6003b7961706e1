"""gralc.experiments.encoder_trial: encoders are compared on the same questions (paired by
question, clustered by article), trained runs only on the folds and questions both ran, and the
cost is measured on the encoders themselves."""

from __future__ import annotations

import json

import pytest

from gralc.documents.question import Question
from gralc.experiments.encoder_trial import (
    METRICS,
    encoding_cost,
    fold_means,
    fold_pairs,
    per_question,
    report,
    trained_runs,
    untrained_gains,
)


def _questions(n: int) -> list[Question]:
    return [Question(id=f"q{i}", text=f"question {i}?", gold_doc_id=f"a{i % 4}") for i in range(n)]


def _per_query(values: list[float]) -> list[dict]:
    rows = [{m: v for m in METRICS} for v in values]
    rows[-1] = {"mrr": 1.0}  # no resolved evidence: left out of every evidence metric
    return rows


def test_per_question_keeps_questions_with_evidence_and_their_folds():
    qs = _questions(8)
    fold_of = {"a0": 0, "a1": 0, "a2": 1, "a3": 1}
    rec = per_question(_per_query([1, 0, 1, 0, 1, 1, 0, 1]), qs, fold_of)
    assert rec["ids"] == [f"q{i}" for i in range(7)]
    assert rec["folds"] == [0, 0, 1, 1, 0, 0, 1]
    assert fold_means(rec, "ev_mrr") == [pytest.approx(3 / 4), pytest.approx(1 / 3)]


def test_a_better_encoder_gains_with_an_interval_above_zero_and_mismatched_questions_are_refused():
    qs = _questions(80)
    fold_of = {"a0": 0, "a1": 0, "a2": 1, "a3": 1}
    worse = per_question(_per_query([float(i % 3 == 0) for i in range(80)]), qs, fold_of)
    better = per_question(_per_query([float(i % 3 != 1) for i in range(80)]), qs, fold_of)
    gains = untrained_gains({"A": {"naive": worse}, "B": {"naive": better}}, ["A", "B"], 2000)
    g = gains["B"]["naive"]["ev_recall@512wp"]
    assert g["gain"] == pytest.approx(statistics_gain(better, worse))
    assert 0 < g["low"] <= g["gain"] <= g["high"]
    shuffled = dict(better, ids=list(reversed(better["ids"])))
    with pytest.raises(ValueError, match="different questions"):
        fold_pairs(shuffled, worse, "ev_mrr")


def statistics_gain(a: dict, b: dict) -> float:
    da, db = fold_means(a, "ev_recall@512wp"), fold_means(b, "ev_recall@512wp")
    return sum(x - y for x, y in zip(da, db)) / len(da)


def _two_stage(path, folds: list[int], value: float, articles=("a0", "a0", "a1")) -> str:
    row = {"questions": {m: [value, 1.0, 0.0] for m in METRICS}, "articles": list(articles),
           "ms_per_question": 5.0, "bytes_per_token": 48, "n_tokens": 1000, "n_chunks": 10}
    path.write_text(json.dumps({"git_hash": "x", "args": {"train_folds": folds},
                                "folds": [{"exhaustive, float16": row, "two-stage, codes": row} for _ in folds]}))
    return str(path)


def test_trained_runs_are_paired_on_the_folds_every_run_covers(tmp_path):
    ref = _two_stage(tmp_path / "a.json", [0, 1, 2], 0.0)
    other = _two_stage(tmp_path / "b.json", [0], 1.0)
    out = trained_runs([f"A={ref}", f"B={other}"], [], 500)
    assert out["encoders"]["B"]["folds"] == out["encoders"]["A"]["folds"] == [0]
    assert out["encoders"]["B"]["rows"]["exhaustive, float16"]["bytes_per_chunk"] == 4800
    assert out["gains"]["B"]["two-stage, codes"]["ev_mrr"]["gain"] == pytest.approx(1 / 3)
    bad = _two_stage(tmp_path / "c.json", [0], 1.0, articles=("a0", "a1", "a1"))
    with pytest.raises(ValueError, match="other questions"):
        trained_runs([f"A={ref}", f"B={bad}"], [], 10)
    with pytest.raises(SystemExit, match="ENCODER=PATH"):
        trained_runs([ref], [], 10)


def test_the_cost_of_an_encoder_is_measured_on_it_and_the_report_renders():
    text = "Remdesivir inhibits the RNA polymerase of SARS-CoV-2 in Vero E6 cells. " * 20
    cost = encoding_cost(["all-MiniLM-L6-v2"], [text], repeats=1)
    c = cost["all-MiniLM-L6-v2"]
    assert c["ratio_to_first"] == 1.0 and c["own_tokens_per_minilm_piece"] == 1.0 and c["dim"] == 384
    assert c["seconds"] > 0 and c["minilm_pieces"] > 200
    qs = _questions(8)
    rec = per_question(_per_query([1, 0, 1, 0, 1, 1, 0, 1]), qs, {"a0": 0, "a1": 0, "a2": 1, "a3": 1})
    saved = {"encoders": ["all-MiniLM-L6-v2"], "n_questions": 7, "args": {"folds": 2, "rows": ["naive"]},
             "rows": {"all-MiniLM-L6-v2": {"naive": rec}}, "gains": {}, "cost": cost, "trained": None,
             "argv": ["x", "--out", "o"]}
    md = report(saved)
    assert "| naive | all-MiniLM-L6-v2 | 0.542 |" in md and "1.00x" in md


def test_trained_runs_without_a_common_fold_are_refused(tmp_path):
    a = _two_stage(tmp_path / "a.json", [1, 2], 0.0)
    b = _two_stage(tmp_path / "b.json", [0], 1.0)
    with pytest.raises(SystemExit, match="share no fold"):
        trained_runs([f"A={a}", f"B={b}"], [], 10)


def test_pubmedqa_runs_are_read_per_encoder_and_shown_on_common_strategies(tmp_path):
    from gralc.experiments.encoder_trial import pubmedqa_runs

    def run(path, rows):
        path.write_text(json.dumps({"n_test": 500, "run_metadata": {"git_hash": "x"}, "rows": {
            r: {"test/mrr": {"mean": v}, "test/recall@1": {"mean": v - 0.1}} for r, v in rows.items()}}))
        return str(path)

    out = pubmedqa_runs([f"A={run(tmp_path / 'a.json', {'naive': 0.97, 'semantic': 0.98})}",
                         f"B={run(tmp_path / 'b.json', {'naive': 0.99})}"])
    assert out["B"]["rows"]["naive"] == {"mrr": 0.99, "recall@1": pytest.approx(0.89)}
    qs = _questions(8)
    rec = per_question(_per_query([1, 0, 1, 0, 1, 1, 0, 1]), qs, {"a0": 0, "a1": 0, "a2": 1, "a3": 1})
    cost = {"A": {"texts": 1, "minilm_pieces": 10, "seconds_all": [1.0], "threads": 1, "precision": "fp32",
                  "s_per_1k_minilm_pieces": 1.0, "ratio_to_first": 1.0, "own_tokens_per_minilm_piece": 1.0,
                  "dim": 384}}
    md = report({"encoders": ["A"], "n_questions": 7, "args": {"folds": 2, "rows": ["naive"]},
                 "rows": {"A": {"naive": rec}}, "gains": {}, "cost": cost, "pubmedqa": out,
                 "argv": ["x"]})
    assert "| naive | 0.9700 / 0.870 | 0.9900 / 0.890 |" in md and "| semantic |" not in md


def test_a_run_file_of_the_wrong_kind_is_one_message_and_exit_2(tmp_path, capsys):
    from gralc.experiments.encoder_trial import main

    wrong = tmp_path / "cv.json"
    wrong.write_text(json.dumps({"rows": {}}))
    report = tmp_path / "r.json"
    report.write_text("{}")
    with pytest.raises(SystemExit) as e:
        main(["--report", str(report), "--trained", f"A={wrong}"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert str(wrong) in err and "args, folds" in err and "two_stage_cv" in err
