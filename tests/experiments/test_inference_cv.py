"""gralc.experiments.inference_cv: its gains table (trained over untrained, paired by held-out question,
pooled over runs, following each fold's selection) and its refusals of incomplete runs."""

import json

import pytest

from gralc.experiments.inference_cv import METRICS, main, print_gains


def _run(tmp_path, name, fold, trained, untrained, articles, selected="best-epoch=1-step=9.ckpt"):
    folder = tmp_path / name / f"fold{fold}"
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "checkpoints" / "best-epoch=1-step=9.ckpt").write_bytes(b"")
    (folder / "initial.ckpt").write_bytes(b"")
    (folder / "result.json").write_text(json.dumps({"selected": "trained", "best_checkpoint": selected}))

    def values(v):  # MRR half the recall, every other metric as recall
        return {m: [x / 2 for x in v] if m == "ev_mrr" else v for m in METRICS}

    def means(v):
        return {m: sum(x) / len(x) for m, x in values(v).items()}

    saved = {"args": {"train_folds": [fold]},
             "rows": {"untrained m=0": [means(untrained)], "trained m=0": [means(trained)]},
             "questions": {"untrained m=0": [values(untrained)], "trained m=0": [values(trained)]},
             "articles": [articles]}
    (tmp_path / name / "late_interaction.json").write_text(json.dumps(saved))
    return str(tmp_path / name)


def test_pooled_runs_report_the_paired_gain_with_an_interval(tmp_path, capsys):
    a = _run(tmp_path, "a", 0, trained=[1.0, 1.0, 0.0], untrained=[0.0, 1.0, 0.0], articles=["x", "x", "y"])
    b = _run(tmp_path, "b", 1, trained=[1.0, 0.0], untrained=[1.0, 0.0], articles=["z", "w"])
    assert main(["--pool", a, b]) == 0
    out = capsys.readouterr().out
    # fold 0: +1/3, fold 1: 0 -> +0.167 recall, +0.083 MRR
    assert "| m=0 | +0.167 [" in out and "| +0.083 [" in out


def test_a_fold_that_kept_its_initial_model_gains_nothing(tmp_path, capsys):
    a = _run(tmp_path, "a", 0, trained=[1.0, 1.0], untrained=[0.0, 0.0], articles=["x", "y"],
             selected="initial.ckpt")
    assert main(["--pool", a]) == 0
    assert "| m=0 | +0.000 [+0.000, +0.000] (1.0000)" in capsys.readouterr().out


def test_gains_pair_rows_of_the_same_m_only():
    q = {"trained m=0.8": [{"ev_recall@512wp": [1.0, 1.0], "ev_mrr": [1.0, 0.5]}],
         "untrained m=0.8": [{"ev_recall@512wp": [0.0, 1.0], "ev_mrr": [0.5, 0.5]}],
         "trained m=cv": [{"ev_recall@512wp": [1.0, 1.0], "ev_mrr": [1.0, 1.0]}]}
    got = print_gains(q, [["x", "y"]])
    assert list(got) == ["trained m=0.8"]  # no untrained m=cv row to pair with
    assert got["trained m=0.8"]["ev_recall@512wp"]["gain"] == pytest.approx(0.5)
    assert got["trained m=0.8"]["ev_mrr"]["gain"] == pytest.approx(0.25)


def test_seeds_are_averaged_question_by_question_before_the_gain(tmp_path, capsys):
    # seed a: +1/2 recall (question 1 hit only when trained); seed b: no gain
    a = _run(tmp_path, "a", 0, trained=[1.0, 1.0], untrained=[0.0, 1.0], articles=["x", "y"])
    b = _run(tmp_path, "b", 0, trained=[0.0, 1.0], untrained=[0.0, 1.0], articles=["x", "y"])
    assert main(["--seed-mean", a, b]) == 0
    out = capsys.readouterr().out
    assert "| trained m=0 | 0.750 ± 0.354 (1.000, 0.500) |" in out  # each seed's mean, then theirs
    assert "| m=0 | +0.250 [" in out and "| +0.125 [" in out  # recall and MRR, seed-averaged


def test_seeds_scored_on_other_folds_are_refused(tmp_path):
    a = _run(tmp_path, "a", 0, trained=[1.0], untrained=[0.0], articles=["x"])
    b = _run(tmp_path, "b", 0, trained=[1.0], untrained=[0.0], articles=["y"])
    with pytest.raises(SystemExit, match="other folds, questions or rows"):
        main(["--seed-mean", a, b])


def test_a_run_without_fold_models_is_refused_by_name(tmp_path):
    """``--run`` pointing at a folder without trained fold models: one message naming the
    folder and what it must hold, before any data is read."""
    from gralc.experiments.inference_cv import selected_checkpoint

    (tmp_path / "fold0" / "checkpoints").mkdir(parents=True)
    with pytest.raises(SystemExit, match=r"fold0: no trained fold model .*gralc.experiments.crossval --train"):
        selected_checkpoint(tmp_path / "fold0")
    (tmp_path / "fold0" / "checkpoints" / "best-epoch=1.ckpt").write_bytes(b"")
    assert selected_checkpoint(tmp_path / "fold0").name == "best-epoch=1.ckpt"


def test_a_refit_run_takes_its_untrained_models_from_another_run(tmp_path, capsys):
    """A refit fold (``selected: "last"``, no initial.ckpt) is recognised, and without
    ``--untrained`` the missing untrained model is named before any data is read."""
    import json

    from gralc.experiments.inference_cv import is_refit, main

    fold = tmp_path / "refit" / "fold0"
    (fold / "checkpoints").mkdir(parents=True)
    (fold / "checkpoints" / "best-epoch=1-step=9.ckpt").write_bytes(b"")
    (fold / "result.json").write_text(json.dumps(
        {"selected": "last", "best_checkpoint": "/elsewhere/checkpoints/best-epoch=1-step=9.ckpt"}))
    assert is_refit(fold) and not is_refit(tmp_path)
    with pytest.raises(SystemExit):
        main(["--run", str(tmp_path / "refit"), "--train-folds", "0", "--weights", "0", "0.8"])
    assert f"{fold / 'initial.ckpt'}" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # an --untrained run without the fold's initial.ckpt
        main(["--run", str(tmp_path / "refit"), "--untrained", str(tmp_path / "other"),
              "--train-folds", "0", "--weights", "0", "0.8"])
    assert str(tmp_path / "other" / "fold0" / "initial.ckpt") in capsys.readouterr().err


@pytest.mark.slow  # ~40 s: make test-all (CI)
def test_rows_are_scored_by_the_one_trained_search(make_cfg, datamodule, tmp_path):
    """scored(): every question's score of every chunk comes from the trained search with every
    chunk a candidate (its late-interaction mix is checked inside), so the m=0 ranking is the
    ranking ``search.exhaustive=true`` gives."""

    import numpy as np
    import torch

    from gralc.data.benchmarks import demo_benchmark
    from gralc.evaluation.trained_rows import searchable
    from gralc.experiments.inference_cv import scored
    from gralc.model.gralc_model import GraLCModel
    from gralc.pipeline import Pipeline
    from gralc.retrieval.trained.candidates import CandidateConfig
    from gralc.retrieval.trained.scorer import TrainedScorer

    cfg = make_cfg(tmp_path, "model.use_lexical=true")
    torch.manual_seed(0)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim).eval()
    bench = demo_benchmark()
    bench.questions = bench.questions[:4]
    scorer = TrainedScorer(model, cfg.pipeline)
    chunks, graph, late, phrase = scored(scorer, bench, Pipeline(cfg.pipeline), 0.3, 0.05)
    assert graph.shape == late.shape == phrase.shape == (4, len(chunks))
    assert phrase.max() > 0 and np.abs(late).max() <= 1 + 1e-6
    assert scorer.model.scoring.late_interaction == 0 and scorer.model.config.sentence_evidence == 0.3
    alone = TrainedScorer(model, cfg.pipeline)  # the same model, searched as the product does
    alone.model.set_scoring({"late_interaction": 0.0, "phrase_weight": 0.0})
    pipe = Pipeline(cfg.pipeline)
    search = searchable(alone, pipe, alone.chunk(pipe, pipe.prepare(bench.documents, progress=False)),
                        CandidateConfig(exhaustive=True))
    ranked = search.search_encoded(search.encode([q.text for q in bench.questions]), len(chunks))
    for i, hits in enumerate(ranked):  # the questions encoded as one batch, as scored() does
        by_id = {c.chunk_id: float(graph[i, j]) for j, c in enumerate(chunks)}
        assert [h.score for h in hits] == [by_id[h.chunk.chunk_id] for h in hits]
