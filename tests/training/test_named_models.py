"""Two models compared in one evaluation (issue 55): ``models={baseline: A, mine: B}`` gives
each its own rows (``NAME``: the product's search, ``NAME_cosine``, ``NAME_hybrid``,
``NAME_cosine_hybrid``); names are checked before any work; a list of one model keeps the
name ``gralc``; GraLC 0.1's row names still read as a reference."""

from __future__ import annotations

import json

import pytest

from gralc.config import CONFIG_DIR, load_config
from gralc.evaluation.config import EvalConfig
from gralc.evaluation.run import evaluate, named_models


@pytest.mark.slow  # trains two real models; the name checks below stay in make test
def test_two_named_models_get_their_own_rows(train_once, tmp_path):
    a = train_once(tmp_path / "run_a")
    b = train_once(tmp_path / "run_b", "seed=1")
    out = tmp_path / "eval"
    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", [
        "methods=[bm25]", f"models={{baseline: {a}, mine: {tmp_path / 'run_b'}}}",
        f"paths.output_dir={out}", "paths.cache_dir=null", "progress=false",
        "significance.reference=gralc_graph"])  # 0.1's name, and not a row of this run: a warning
    assert [n for n, _ in named_models(cfg)] == ["baseline", "mine"]
    results, _ = evaluate(cfg)
    rows = {r.method: r for r in results}
    assert set(rows) == {"bm25", "baseline", "baseline_cosine", "baseline_hybrid", "baseline_cosine_hybrid",
                         "mine", "mine_cosine", "mine_hybrid", "mine_cosine_hybrid"}
    assert rows["baseline"].metrics != rows["mine"].metrics  # two different models
    # the product row's ms/query is one question searched alone, not the batch's share
    assert rows["baseline"].timings["ms_per_query"] > 0 and "batch_ms_per_query" in rows["baseline"].timings
    metrics = json.loads((out / "metrics.json").read_text())
    assert {"baseline", "mine"} <= set(metrics["demo"])
    assert b  # run_b's folder stood for its selected checkpoint


@pytest.mark.parametrize("models, message", [
    ({"bm25": "x"}, "already the method bm25"),
    ({"a": "x", "a_hybrid": "y"}, "already a row of the model a"),
    ({"1st": "x"}, "must start with a letter"),
    (["same/path", "same/path"], "name the same model"),
])
def test_model_names_are_checked_before_any_work(models, message):
    with pytest.raises(ValueError, match=message):
        named_models(EvalConfig(methods=["bm25"], models=models))


def test_names_of_a_list():
    assert named_models(EvalConfig(models=["runs/x"])) == [("gralc", "runs/x")]
    assert named_models(EvalConfig(models=["runs/a/export", "runs/b/export"])) == \
        [("a_export", "runs/a/export"), ("b_export", "runs/b/export")]
