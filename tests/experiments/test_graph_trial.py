"""gralc.experiments.graph_trial ``--rows crosssection`` on the demo corpus: the trained model's
rows (as ``gralc eval`` scores them, and re-ranked by the ``*_diverse`` rows' re-ranker) beside
the untrained rows, on the same questions, paired over articles, and the report of them."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from gralc.data.benchmarks import demo_benchmark
from gralc.evaluation.evidence import budget_counter
from gralc.evaluation.methods import DIVERSE, RunSettings, diverse_reranker
from gralc.experiments.graph_trial import (
    CROSS_SECTION_BASELINES,
    PMC_METRICS,
    TRAINED,
    TRAINED_DIVERSE,
    TRAINED_TAIL,
    crosssection_comparisons,
    crosssection_rows,
    gains_of,
    main,
    per_question,
    report,
)
from gralc.pipeline import Pipeline, PipelineConfig


def same(a: dict, b: dict) -> bool:
    """Equal per-question values, NaN (a question without the metric) equal to NaN."""
    return json.dumps(a) == json.dumps(b)


DOCS = ("PMC9000001", "PMC9000002", "PMC9000003", "PMC9000004")


@pytest.fixture(scope="module")
def setup(make_cfg, datamodule, tmp_path_factory):
    """An untrained small model (its scores are arbitrary, its search is the product's), four
    demo articles and their questions, the PMC mode's settings."""
    from gralc.model.gralc_model import GraLCModel
    from gralc.retrieval.trained.scorer import TrainedScorer

    cfg = make_cfg(tmp_path_factory.mktemp("crosssection"), "model.use_lexical=true")
    torch.manual_seed(0)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim).eval()
    bench = demo_benchmark()
    bench.documents = [d for d in bench.documents if d.id in DOCS]
    bench.questions = [q for q in bench.questions if q.gold_doc_id in DOCS]
    # the evaluation's pipeline (every strategy's settings), the model's encoder and knowledge
    base = Pipeline(replace(PipelineConfig(), encoder=cfg.pipeline.encoder, knowledge=cfg.pipeline.knowledge))
    settings = RunSettings((1, 5, 10, 20), pieces=budget_counter(base.encoder))
    with torch.no_grad():
        rows = crosssection_rows(TrainedScorer(model, cfg.pipeline), base, bench, settings)
    return model, cfg, bench, base, settings, rows


def test_every_row_scores_the_same_questions(setup):
    *_, bench, _, _, rows = setup
    assert list(rows) == [*CROSS_SECTION_BASELINES, TRAINED, TRAINED_DIVERSE, TRAINED_TAIL]
    articles = rows[TRAINED]["articles"]
    assert len(articles) == len(bench.questions)  # every demo question has evidence
    cross = sum(len(set(q.gold_section_types)) >= 2 for q in bench.questions)
    assert cross >= 4
    for name, r in rows.items():
        assert r["articles"] == articles, name
        assert list(r["questions"]) == list(PMC_METRICS), name
        for m, values in r["questions"].items():
            known = [v for v in values if v == v]
            assert all(0.0 <= v <= 1.0 for v in known), (name, m)
            assert len(known) == (cross if m.startswith("cross_section") else len(articles)), (name, m)


def test_the_trained_rows_are_gralc_eval_s_and_the_diverse_one_re_ranks_its_candidates(setup):
    from gralc.evaluation.trained_rows import (
        evaluate_trained,
        own_pipeline,
        searchable,
        searched_rows,
    )
    from gralc.retrieval.trained.scorer import TrainedScorer

    model, cfg, bench, base, settings, rows = setup
    scorer = TrainedScorer(model, cfg.pipeline)
    prepared = base.prepare(bench.documents, progress=False)
    with torch.no_grad():
        product = next(r for r in evaluate_trained("", bench, prepared, base, settings, scorer)
                       if r.method == "gralc")
        assert same(per_question(product, PMC_METRICS), rows[TRAINED])
        pipe, own = own_pipeline(scorer, base, prepared)
        search = searchable(scorer, pipe, scorer.chunk(pipe, own), settings.search)
        plain, diverse = searched_rows(search, bench, settings, rows=("", "diverse"))
        ranked = search.search_encoded(search.encode([q.text for q in bench.questions]), settings.candidates)
    assert diverse.method == "gralc_diverse" and same(per_question(diverse, PMC_METRICS), rows[TRAINED_DIVERSE])
    rerank = diverse_reranker(settings.depth, DIVERSE)
    changed = 0
    for q, hits, p, d in zip(bench.questions, ranked, plain.per_query, diverse.per_query):
        assert p["top"] == [h.chunk.chunk_id for h in hits[:settings.depth]]
        assert d["top"] == [c.chunk_id for c, _ in rerank([(h.chunk, h.score) for h in hits], q.id)]
        changed += d["top"] != p["top"]
    assert changed  # the re-ranker moved something
    tail = searched_rows(search, bench, settings, rows=("diverse",), diverse="complete_tail")[0]
    assert same(per_question(tail, PMC_METRICS), rows[TRAINED_TAIL])
    keep = settings.depth - DIVERSE["complete_slots"]
    for p, t in zip(plain.per_query, tail.per_query):  # the head as ranked
        assert t["top"][:keep] == p["top"][:keep]


def test_each_trained_row_is_paired_with_each_diverse_row_and_reported(setup):
    *_, rows = setup
    comparisons = crosssection_comparisons()
    assert ("gralc", "section_diverse") in comparisons and ("gralc_diverse", "gralc") in comparisons
    assert ("gralc_complete_tail", "gralc") in comparisons
    assert ("multilevel_diverse", "multilevel") in comparisons
    gains = gains_of([rows], comparisons)
    assert list(gains) == [f"{a} vs {b}" for a, b in comparisons]
    for name, by_metric in gains.items():
        assert list(by_metric) == ["ev_recall@512wp", "ev_mrr", "cross_section_recall@5",
                                   "cross_section_recall@20"], name
        for g in by_metric.values():
            assert g["low"] <= g["gain"] <= g["high"], name
    a, b = rows[TRAINED]["questions"]["ev_mrr"], rows["section_diverse"]["questions"]["ev_mrr"]
    assert gains["gralc vs section_diverse"]["ev_mrr"]["gain"] == pytest.approx(sum(a) / len(a) - sum(b) / len(b))
    args = {"pmc": "gralc/data/demo/articles", "questions": "q.jsonl", "model": "export", "rows": "crosssection"}
    text = report({"args": args, "folds": [rows], "gains": gains, "git_hash": "abc", "candidates": 100})
    assert f"{len(rows[TRAINED]['articles'])} with evidence over {len(DOCS)} articles" in text
    for name in rows:
        assert f"| {name} | " in text
    assert "| gralc_diverse vs multilevel_diverse | " in text


def test_crosssection_rows_need_the_pmc_mode(tmp_path):
    with pytest.raises(SystemExit):
        main(["--rows", "crosssection", "--run", str(tmp_path), "--out", str(tmp_path)])
