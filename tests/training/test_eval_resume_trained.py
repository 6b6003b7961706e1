"""eval.py saves a trained model's rows and resumes them while the settings, data and the
model's weights are unchanged (issue 45, class 6: they used to rerun every time)."""

from __future__ import annotations

from pathlib import Path

from gralc.config import CONFIG_DIR, load_config
from gralc.evaluation import run as run_mod
from gralc.evaluation.config import EvalConfig
from gralc.training.run import train

REPO = Path(__file__).resolve().parents[2]


def test_trained_rows_are_kept_and_rerun_when_the_model_changes(make_cfg, tmp_path, monkeypatch):
    train(make_cfg(tmp_path / "run", "trainer.limit_train_batches=1", "trainer.max_epochs=1"))
    ckpt = tmp_path / "run" / "checkpoints" / "last.ckpt"
    monkeypatch.chdir(REPO)

    def cfg(*extra):
        return load_config(EvalConfig, CONFIG_DIR / "eval.yaml", [
            f"paths.output_dir={tmp_path / 'eval'}", "progress=false", "methods=[bm25]", "ks=[1,5]",
            "data.max_docs=6", f"models=[{ckpt}]", *extra])

    first, _ = run_mod.evaluate(cfg())
    import gralc.evaluation.trained_rows as trained_rows

    real, calls = trained_rows.evaluate_trained, []
    monkeypatch.setattr(trained_rows, "evaluate_trained", lambda *a, **k: calls.append(1) or real(*a, **k))
    again, _ = run_mod.evaluate(cfg("resume=true"))
    assert calls == []  # the model's rows were read back, not recomputed
    assert [(r.method, r.metrics) for r in again] == [(r.method, r.metrics) for r in first]
    import torch

    state = torch.load(ckpt, weights_only=True)  # other weights (a retrained model, same path)
    name = next(k for k in state["state_dict"] if k.startswith("model."))
    state["state_dict"][name] = state["state_dict"][name] + 0.01
    torch.save(state, ckpt)
    run_mod.evaluate(cfg("resume=true"))
    assert calls == [1]
