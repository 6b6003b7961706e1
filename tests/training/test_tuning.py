"""Settings that let training start at the baseline and earn every deviation: held-out dev
questions, the L2 anchor of the scalars, a fixed lambda, the selection margin, the dev MRR of
the cosine (KG) row."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from gralc.config import CONFIG_DIR, ConfigError, load_config
from gralc.model.gralc_model import GraLCModel
from gralc.training.config import TrainConfig, validate
from gralc.training.datamodule import GraLCDataModule, holdout_train_documents
from gralc.training.lit_module import GraLCLitModule
from gralc.training.run import train
from gralc.training.selection import select_checkpoint

REPO = Path(__file__).resolve().parents[2]


def _model(dm: GraLCDataModule, cfg) -> GraLCModel:
    torch.manual_seed(0)
    return GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, dm.token_dim, dm.concept_dim)


def test_holdout_moves_whole_training_documents_to_dev(datamodule):
    data = datamodule.data
    docs = sorted({e.doc_id for e in data.train})
    out = holdout_train_documents(data, 0.5, seed=0)
    held = {e.doc_id for e in out.dev[len(data.dev):]}
    assert len(held) == round(0.5 * len(docs)) >= 1
    assert out.dev[: len(data.dev)] == data.dev  # the original dev questions come first
    assert not held & {e.doc_id for e in out.train}
    assert not held & set(out.train_doc_ids)  # no extra negatives from held-out documents
    assert len(out.train) + len(out.dev) == len(data.train) + len(data.dev)
    assert sorted(e.question_id for e in out.train + out.dev[len(data.dev):]) == sorted(
        e.question_id for e in data.train
    )
    again = holdout_train_documents(data, 0.5, seed=0)
    assert [e.question_id for e in again.dev] == [e.question_id for e in out.dev]
    assert out.corpus_doc_ids == data.corpus_doc_ids
    assert holdout_train_documents(data, 0.0) is data


def test_datamodule_applies_the_holdout(make_cfg, tmp_path, datamodule):
    dm = GraLCDataModule(make_cfg(tmp_path, "loader.holdout_fraction=0.4"))
    dm.setup("fit")
    expected = holdout_train_documents(datamodule.data, 0.4, 0)
    assert [e.question_id for e in dm.data.dev] == [e.question_id for e in expected.dev]
    assert len(dm.data.dev) > len(datamodule.data.dev)
    assert len(dm.data.train) < len(datamodule.data.train)


def test_anchor_penalty_is_the_squared_distance_to_the_initial_scalars(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(tmp_path, "optim.scalar_anchor=2.0")
    model = _model(datamodule, cfg).eval()
    lit = GraLCLitModule(model, cfg.optim)
    assert float(lit.anchor_penalty().detach()) == 0.0
    batch = next(iter(datamodule.train_dataloader()))
    with torch.no_grad():
        model.hybrid.beta_logit += 0.5
        model.boundary.alpha[0] += 0.1
        model.fusion.lam -= 0.2
    assert float(lit.anchor_penalty().detach()) == pytest.approx(0.25 + 0.01 + 0.04, rel=1e-5)
    with torch.no_grad():
        anchored = lit.batch_loss(batch)[0]
        cfg.optim.scalar_anchor = 0.0
        plain = lit.batch_loss(batch)[0]
    assert float(anchored - plain) == pytest.approx(2.0 * 0.30, rel=1e-4)


def test_anchor_pulls_a_scalar_back(datamodule, make_cfg, tmp_path):
    """The anchor's gradient points back at the initial value."""
    cfg = make_cfg(tmp_path, "optim.scalar_anchor=1.0")
    model = _model(datamodule, cfg)
    lit = GraLCLitModule(model, cfg.optim)
    with torch.no_grad():
        model.hybrid.beta_logit += 0.3
    lit.anchor_penalty().backward()
    assert float(model.hybrid.beta_logit.grad) == pytest.approx(0.6, rel=1e-5)


def test_fixed_lambda_zero_keeps_the_token_vectors_and_trains_gat_and_beta(
    datamodule, make_cfg, tmp_path
):
    cfg = make_cfg(
        tmp_path,
        "model.lambda_init=0.0",
        "model.learn_lambda=false",
        "model.learn_alpha=false",
        "model.learn_gamma=false",
        "model.learn_tau=false",
        "model.beta_init=0.9",
        "optim.scalar_anchor=1.0",
        "trainer.max_epochs=2",
        "trainer.validate_before_fit=false",
        "callbacks.early_stopping.enabled=false",
    )
    model = _model(datamodule, cfg)
    assert not model.fusion.lam.requires_grad
    f = next(iter(datamodule.data.features.values()))
    assert torch.equal(model.enrich(f)[0], f.H)  # no fusion: H' = H
    lit = GraLCLitModule(model, cfg.optim)
    optimised = {id(p) for g in lit.configure_optimizers().param_groups for p in g["params"]}
    assert id(model.fusion.lam) not in optimised and id(model.boundary.alpha) not in optimised
    assert id(model.hybrid.beta_logit) in optimised
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(cfg, model=model)
    after = dict(model.named_parameters())
    for name in ("fusion.lam", "boundary.alpha", "boundary.gamma", "boundary.tau"):
        assert torch.equal(after[name], before[name]), name
    assert float(model.fusion.lam) == 0.0
    assert not torch.equal(after["hybrid.beta_logit"], before["hybrid.beta_logit"])
    gat = [n for n in after if n.startswith("gat.")]
    assert gat and any(not torch.equal(after[n], before[n]) for n in gat)


def test_select_checkpoint_with_a_margin_keeps_the_initial_model_on_ties():
    assert select_checkpoint("b.ckpt", 0.9, "i.ckpt", 0.9, "max", 0.0) == ("i.ckpt", 0.9, "initial")
    assert select_checkpoint("b.ckpt", 0.901, "i.ckpt", 0.9, "max", 0.002)[2] == "initial"
    assert select_checkpoint("b.ckpt", 0.903, "i.ckpt", 0.9, "max", 0.002) == (
        "b.ckpt", 0.903, "trained"
    )
    assert select_checkpoint("b.ckpt", 0.5, "i.ckpt", 0.6, "min", 0.05) == ("b.ckpt", 0.5, "trained")
    assert select_checkpoint("b.ckpt", 0.58, "i.ckpt", 0.6, "min", 0.05)[2] == "initial"
    assert select_checkpoint("", None, "i.ckpt", 0.6, "max", 0.0)[2] == "initial"


def test_dev_metrics_rank_by_hybrid_and_by_cosine(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(tmp_path)
    model = _model(datamodule, cfg).eval()
    lit = GraLCLitModule(model, cfg.optim)
    batch = datamodule.val_batch()
    m = lit.retrieval_metrics(batch)
    assert set(m) == {"mrr", "mrr_cos", "mrr_min", "nll", "ev_mrr"}
    assert m["mrr_min"] == min(m["mrr"], m["mrr_cos"])
    scores, doc_of, cos = lit.retrieval_scores(batch, with_cosine=True)
    assert m["mrr_cos"] == pytest.approx(lit.mean_reciprocal_rank(cos, doc_of, batch.examples))
    # beta -> 1: the hybrid ranks as the cosine does
    with torch.no_grad():
        model.hybrid.beta_logit.fill_(30.0)
    m1 = lit.retrieval_metrics(batch)
    assert m1["mrr"] == pytest.approx(m1["mrr_cos"]) and m1["mrr_cos"] == pytest.approx(m["mrr_cos"])


def test_selection_on_the_cosine_monitor_runs(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(
        tmp_path,
        "trainer.max_epochs=1",
        "callbacks.checkpoint.monitor=val/mrr_min",
        "callbacks.checkpoint.min_improvement=0.0",
        "callbacks.early_stopping.monitor=val/mrr_cos",
        "optim.lr=0.0",
    )
    result = train(cfg, model=_model(datamodule, cfg))
    assert result["monitor"] == "val/mrr_min"
    assert result["selected"] == "initial"  # lr 0: a tie, which the margin gives the initial model
    assert 0.0 < result["best_score"] <= 1.0


@pytest.mark.parametrize(
    "override",
    [
        "loader.holdout_fraction=1.0",
        "loader.holdout_fraction=-0.1",
        "optim.scalar_anchor=-1",
        "callbacks.checkpoint.min_improvement=-0.01",
    ],
)
def test_bad_tuning_settings_are_rejected(make_cfg, tmp_path, override):
    with pytest.raises(ConfigError, match=override.split("=")[0].split(".")[-1]):
        validate(make_cfg(tmp_path, override))


def test_bench_fixed_rows_keep_the_paper_initial_values():
    from gralc.experiments.pubmedqa import EXPERIMENT, paper_model
    from gralc.model.gralc_model import ModelConfig

    tuned = ModelConfig(lambda_init=0.0, beta_init=0.9, learn_lambda=False)
    paper = paper_model(tuned)
    assert (paper.lambda_init, paper.beta_init) == (0.1, 0.7)
    assert paper.learn_lambda is False  # only the initial values
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [EXPERIMENT, "data.path=x"])
    b = cfg.pipeline.chunking.boundary
    assert cfg.loader.holdout_fraction == 0.3 and cfg.model.beta_init == 0.9
    assert (b.min_tokens, b.max_tokens, b.alpha_struct, b.gamma, b.tau) == (128, 1024, 0.5, 0.5, 0.3)
