"""Model selection against the untrained model, dev metrics, and document-level positives."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from pytorch_lightning.callbacks import Callback

from gralc.config import ConfigError
from gralc.model.gralc_model import GraLCModel
from gralc.model.persistence import load_model
from gralc.safe_load import load_torch
from gralc.training.config import validate
from gralc.training.datamodule import GraLCDataModule
from gralc.training.run import train
from gralc.training.selection import select_checkpoint


def _model(dm: GraLCDataModule, cfg) -> GraLCModel:
    torch.manual_seed(0)
    return GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, dm.token_dim, dm.concept_dim)


def _same_parameters(a: GraLCModel, b: GraLCModel) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


class Sabotage(Callback):
    """Scrambles every parameter after each training step: training can only hurt."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        g = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for p in pl_module.model.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 5.0)


def test_select_checkpoint_prefers_initial_only_when_strictly_better():
    assert select_checkpoint("b.ckpt", 0.8, "i.ckpt", 0.9) == ("i.ckpt", 0.9, "initial")
    assert select_checkpoint("b.ckpt", 0.9, "i.ckpt", 0.9) == ("b.ckpt", 0.9, "trained")
    assert select_checkpoint("b.ckpt", 0.95, "i.ckpt", 0.9) == ("b.ckpt", 0.95, "trained")
    assert select_checkpoint("b.ckpt", 0.5, "i.ckpt", 0.7, "min") == ("b.ckpt", 0.5, "trained")
    assert select_checkpoint("b.ckpt", 0.9, "i.ckpt", 0.7, "min") == ("i.ckpt", 0.7, "initial")
    assert select_checkpoint("", None, "i.ckpt", 0.7) == ("i.ckpt", 0.7, "initial")
    assert select_checkpoint("b.ckpt", 0.8, None, None) == ("b.ckpt", 0.8, "trained")


def test_training_that_only_hurts_returns_the_initial_model(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(tmp_path, "trainer.max_epochs=2", "callbacks.early_stopping.enabled=false")
    model = _model(datamodule, cfg)
    initial = _model(datamodule, cfg)  # same seed: the untrained parameters
    result = train(cfg, model=model, callbacks=[Sabotage()])
    assert result["selected"] == "initial"
    assert result["initial_score"] > result["trained_best_score"]
    assert Path(result["best_checkpoint"]).name == "initial.ckpt"
    assert result["best_val_mrr"] == result["initial_score"]
    loaded, _ = load_model(result["best_checkpoint"])
    assert _same_parameters(loaded, initial)
    assert result["learned_values"] == pytest.approx(initial.learned_values())
    assert not _same_parameters(loaded, model)  # the final, scrambled model was not exported
    # initial.ckpt holds the weights only (no optimiser existed yet) and loads without unpickling
    state = load_torch(result["best_checkpoint"], what="checkpoint")
    assert "state_dict" in state and "optimizer_states" not in state and "callbacks" not in state


def test_useless_training_keeps_the_initial_values(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(tmp_path, "trainer.max_epochs=1", "optim.lr=0.0")
    initial = _model(datamodule, cfg)
    result = train(cfg, model=_model(datamodule, cfg))
    assert result["initial_score"] == result["trained_best_score"]  # lr 0: same dev score
    loaded, _ = load_model(result["best_checkpoint"])
    assert _same_parameters(loaded, initial)
    info = json.loads((tmp_path / "initial.json").read_text())
    assert 0.0 < info["metrics"]["val/mrr"] <= 1.0
    assert math.isfinite(info["metrics"]["val/nll"]) and info["metrics"]["val/nll"] >= 0.0


def test_nll_monitor_selects_by_the_lowest_dev_nll(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(tmp_path, "trainer.max_epochs=1", "callbacks.checkpoint.monitor=val/nll",
                   "callbacks.checkpoint.mode=min", "callbacks.early_stopping.enabled=false")
    result = train(cfg, model=_model(datamodule, cfg), callbacks=[Sabotage()])
    assert result["monitor"] == "val/nll" and result["best_val_mrr"] is None
    assert result["selected"] == "initial"
    assert result["initial_score"] < result["trained_best_score"]


def test_document_positives_are_every_chunk_of_the_gold_document(make_cfg, tmp_path, datamodule):
    dm = GraLCDataModule(make_cfg(tmp_path, "pairs.positives=document"))
    dm.setup("fit")
    model = _model(dm, dm.cfg)
    evidence_differs = False
    for e, ev in zip(dm.data.train, datamodule.data.train):
        f = dm.data.features[e.doc_id]
        spans = model.hard_spans(f)
        assert e.positives.resolve(f, spans) == list(range(len(spans)))
        evidence_differs |= ev.positives.resolve(f, spans) != list(range(len(spans)))
    assert evidence_differs  # the default (evidence) positives are a strict subset somewhere


@pytest.mark.parametrize(
    "override", ["pairs.positives=all", "callbacks.checkpoint.monitor=val/loss",
                 "callbacks.checkpoint.mode=up"]
)
def test_bad_selection_settings_are_rejected(make_cfg, tmp_path, override):
    with pytest.raises(ConfigError, match=override.split("=")[0]):
        validate(make_cfg(tmp_path, override))


def test_a_refit_without_dev_split_trains_on_every_document_and_keeps_the_last_epoch(
        datamodule, make_cfg, tmp_path):
    """``loader.dev_fraction=0``: the dev documents train too, nothing is validated (no
    initial model, no val/ metrics), and the last epoch is the selected model."""
    cfg = make_cfg(tmp_path, "trainer.max_epochs=2", "loader.dev_fraction=0",
                   "callbacks.early_stopping.enabled=false")
    model = _model(datamodule, cfg)
    result = train(cfg, model=model)
    assert result["n_dev_questions"] == 0
    assert result["n_train_questions"] == len(datamodule.data.train) + len(datamodule.data.dev)
    assert result["selected"] == "last" and result["initial_score"] is None
    assert not (tmp_path / "initial.ckpt").exists()
    assert Path(result["best_checkpoint"]).name == f"best-epoch=1-step={result['global_step']}.ckpt"
    loaded, _ = load_model(result["best_checkpoint"])
    assert _same_parameters(loaded, model)  # the final, trained model
    assert not _same_parameters(loaded, _model(datamodule, cfg))
    logged = (next((tmp_path / "csv").rglob("metrics.csv"))).read_text()
    assert "train/loss" in logged and "val/" not in logged


def test_a_refit_refuses_early_stopping_before_loading_anything(make_cfg, tmp_path):
    with pytest.raises(ConfigError, match="callbacks.early_stopping.enabled=false"):
        validate(make_cfg(tmp_path, "loader.dev_fraction=0"))  # early stopping on, as train.yaml has it
    with pytest.raises(ConfigError, match="loader.dev_fraction must be in"):
        validate(make_cfg(tmp_path, "loader.dev_fraction=1.0"))
