"""PathsConfig and WandbConfig are defined once (gralc.config) and shared by the training and
the evaluation schema, each with its own default output folder."""

from __future__ import annotations

import pytest

from gralc.config import CONFIG_DIR, ConfigError, PathsConfig, WandbConfig, load_config
from gralc.evaluation.config import EvalConfig
from gralc.training.config import TrainConfig, validate


def test_one_class_each_for_both_schemas():
    train, ev = TrainConfig(), EvalConfig()
    assert type(train.paths) is type(ev.paths) is PathsConfig
    assert type(train.wandb) is type(ev.wandb) is WandbConfig
    assert train.paths.output_dir == "outputs/train" and ev.paths.output_dir is None
    assert train.paths.cache_dir == ev.paths.cache_dir == "data/cache"


def test_the_yaml_files_keep_their_values():
    train = load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["wandb.name=run-a"])
    ev = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", ["wandb.name=run-b"])
    assert (train.paths.output_dir, train.wandb.name) == ("outputs/train", "run-a")
    assert (ev.paths.output_dir, ev.wandb.name) == (None, "run-b")


def test_the_old_spelling_of_train_wandb_keys_still_works(caplog):
    """``logger.wandb.*`` (GraLC 0.1) is ``wandb.*`` as in eval: translated with a warning."""
    train = load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["logger.wandb.enabled=true"])
    assert train.wandb.enabled is True
    assert "logger.wandb.enabled is now wandb.enabled" in caplog.text


@pytest.mark.parametrize("key", ["output_dir", "cache_dir"])
def test_training_needs_its_folders(key):
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [f"paths.{key}=null"])
    with pytest.raises(ConfigError, match=f"paths.{key}"):
        validate(cfg)


def test_hybrid_means_fusion_only_the_kg_prox_switch_is_use_kg_prox(caplog):
    """0.1's ``model.use_hybrid`` (the cos / kg_prox mix) is ``model.use_kg_prox``: as an
    override it is translated with a warning, in a saved model's settings it is upgraded."""
    from gralc.model.persistence import upgrade_settings

    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["model.use_hybrid=false"])
    assert cfg.model.use_kg_prox is False
    assert "model.use_hybrid is now model.use_kg_prox" in caplog.text
    model, _ = upgrade_settings({"use_hybrid": False, "use_kg": True}, {})
    assert model["use_kg_prox"] is False and "use_hybrid" not in model
