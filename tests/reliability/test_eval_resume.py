"""eval.py keeps every finished row on disk: a killed evaluation resumes where it stopped."""

from __future__ import annotations

import json

import pytest

from gralc.config import CONFIG_DIR, load_config
from gralc.evaluation import run as run_mod
from gralc.evaluation.config import EvalConfig

REPO_CFG = CONFIG_DIR / "eval.yaml"


def cfg_for(out, *extra):
    return load_config(EvalConfig, REPO_CFG, [f"paths.output_dir={out}", "progress=false",
                                              "methods=[late,bm25]", "ks=[1,5]", *extra])


@pytest.mark.slow  # three demo eval runs; rows kept / rerun in make test: the test below
def test_a_killed_run_keeps_its_rows_and_resumes(tmp_path, monkeypatch):
    monkeypatch.chdir(run_mod.Path(__file__).resolve().parents[2])
    out = tmp_path / "run"
    real = run_mod.evaluate_method
    calls = []

    def dies_on_bm25(spec, *args, **kwargs):
        calls.append(spec.name)
        if spec.name == "bm25":
            raise KeyboardInterrupt  # the job is killed during the second row
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(run_mod, "evaluate_method", dies_on_bm25)
    with pytest.raises(KeyboardInterrupt):
        run_mod.evaluate(cfg_for(out))
    assert [p.name for p in (out / "rows").iterdir()] == ["demo__late.json"]

    monkeypatch.setattr(run_mod, "evaluate_method", lambda spec, *a, **k: calls.append(spec.name) or real(spec, *a, **k))
    calls.clear()
    results, _ = run_mod.evaluate(cfg_for(out, "resume=true"))
    assert calls == ["bm25"]  # late was kept, not recomputed
    assert [r.method for r in results] == ["late", "bm25"]
    assert results[0].metrics["ev_recall@5"] >= 0 and (out / "metrics.json").is_file()
    gains = json.loads((out / "gains.json").read_text())  # late over the default reference, bm25
    assert set(gains["gains"]["demo"]["late"]) == {"ev_recall@512wp", "ev_mrr", "mrr"}
    assert "## Gains over bm25: demo" in (out / "tables.md").read_text()

    calls.clear()  # another gains report is no other row setting: every row kept
    run_mod.evaluate(cfg_for(out, "resume=true", "significance.level=0.9"))
    assert calls == []

    calls.clear()  # other settings: the kept rows do not apply
    run_mod.evaluate(cfg_for(out, "resume=true", "evidence.min_coverage=0.9"))
    assert calls == ["late", "bm25"]


def squad_file(path, fever: str = "fever") -> str:
    ctx = [f"Study {n}\n\nMethods\n\nMice had {fever} for {n} days after infection. Ferrets coughed."
           for n in ("two", "three")]
    data = {"data": [{"title": f"art{i}", "paragraphs": [{"context": c, "qas": [
        {"id": f"q{i}", "question": "How long did the mice have fever?",
         "answers": [{"text": "days", "answer_start": c.index("days")}]}]}]} for i, c in enumerate(ctx)]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_changed_corpus_reruns_its_rows(tmp_path, monkeypatch):
    """The resume digest covers the data a row read, not only the settings (issue 45, class 6)."""
    monkeypatch.chdir(run_mod.Path(__file__).resolve().parents[2])
    data = squad_file(tmp_path / "qa.json")
    out = tmp_path / "run"
    args = ("data=squad", f"data.path={data}", "methods=[bm25]")
    run_mod.evaluate(cfg_for(out, *args))
    real, calls = run_mod.evaluate_method, []
    monkeypatch.setattr(run_mod, "evaluate_method", lambda spec, *a, **k: calls.append(spec.name) or real(spec, *a, **k))
    run_mod.evaluate(cfg_for(out, *args, "resume=true"))
    assert calls == []  # same data, same settings: kept
    squad_file(tmp_path / "qa.json", fever="a high fever")  # the corpus changed in place
    run_mod.evaluate(cfg_for(out, *args, "resume=true"))
    assert calls == ["bm25"]
