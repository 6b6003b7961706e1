"""One source of every setting: the boundary config is shared by baselines and the model, old
checkpoints load into it, ignored keys are errors, CLIs take key=value overrides, a trained
model keeps its own settings, and a real corpus without a vocabulary is warned about."""

from __future__ import annotations

import logging
from dataclasses import fields
from pathlib import Path

import pytest

from gralc import index as index_cli
from gralc.config import CONFIG_DIR, ConfigError, config_conflicts, load_config
from gralc.data.demo import DEMO_DIR
from gralc.knowledge import builtin
from gralc.model.gralc_model import ModelConfig
from gralc.model.persistence import _typed, upgrade_settings
from gralc.pipeline import PipelineConfig
from gralc.training.config import TrainConfig

REPO = Path(__file__).resolve().parents[1]


def test_old_checkpoint_settings_move_to_the_boundary_config():
    old_model = {"use_kg": True, "alpha_init": [0.4, 0.2, 0.9], "gamma_init": 0.6, "tau_init": 0.25,
                 "temperature": 0.1, "decoder": "dp", "min_tokens": 64, "max_tokens": 512,
                 "dp_target_tokens": 300, "dp_length_weight": 2.0, "dp_cohesion_weight": 0.5}
    model, pipe = upgrade_settings(old_model, {"chunking": {"boundary": {"window": 8}}})
    assert model == {"use_kg": True, "cut_temperature": 0.1, "use_lexical": False}  # none then
    b = _typed(PipelineConfig, pipe).chunking.boundary
    assert (b.alpha_struct, b.alpha_sem, b.alpha_entity, b.gamma, b.tau) == (0.4, 0.2, 0.9, 0.6, 0.25)
    assert (b.decoder, b.min_tokens, b.max_tokens, b.window, b.dp_target_tokens) == ("dp", 64, 512, 8, 300)
    assert _typed(ModelConfig, model).cut_temperature == 0.1
    assert upgrade_settings(model, pipe) == (model, pipe)  # today's layout: unchanged


def test_the_model_has_no_boundary_settings_of_its_own(caplog):
    """Old override names still work (translated, with a warning): nothing a user typed stops."""
    with caplog.at_level(logging.WARNING):
        cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml",
                          ["model.min_tokens=100", "model.alpha_init=[0.4,0.2,0.9]", "model.temperature=0.1"])
    b = cfg.pipeline.chunking.boundary
    assert (b.min_tokens, b.alpha_struct, b.alpha_sem, b.alpha_entity) == (100, 0.4, 0.2, 0.9)
    assert cfg.model.cut_temperature == 0.1 and not hasattr(cfg.model, "min_tokens")
    assert "model.min_tokens is now pipeline.chunking.boundary.min_tokens" in caplog.text
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [])
    assert (cfg.pipeline.chunking.boundary.min_tokens, cfg.pipeline.chunking.boundary.max_tokens) == (64, 512)
    assert TrainConfig().pipeline.chunking.boundary.min_tokens == 64  # code default = train.yaml


def test_training_has_no_chunking_keys_it_would_ignore():
    """A training run's ``pipeline.chunking`` is the model's boundary config alone: the
    baselines' sections are no training setting, so setting one is an unknown key."""
    with pytest.raises(ConfigError, match="pipeline.chunking.fixed.*valid keys here: boundary"):
        load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["pipeline.chunking.fixed.size=100"])
    assert [f.name for f in fields(TrainConfig().pipeline.chunking)] == ["boundary"]


def test_config_conflicts_name_both_values():
    a, b = PipelineConfig(), PipelineConfig()
    b.chunking.boundary.window = 8
    b.encoder.device = "cpu"
    assert config_conflicts(a, b, ("encoder.device",)) == ["chunking.boundary.window: saved=16, given=8"]


def test_index_cli_takes_pipeline_overrides_before_any_work(tmp_path, capsys):
    out = tmp_path / "index"
    corpus = str(DEMO_DIR / "articles")
    assert index_cli.main([corpus, "pipeline.knowledge.vocabulary=/nope/desc.xml", "--out", str(out),
                           "--strategy", "fixed"]) == 2
    assert "/nope/desc.xml" in capsys.readouterr().err and not out.exists()
    assert index_cli.main([corpus, "chunking.nosuch=1", "--out", str(out)]) == 2
    assert "unknown config key" in capsys.readouterr().err
    assert index_cli.main([corpus, "chunking.fixed.size=128", "--out", str(out),
                           "--strategy", "fixed"]) == 0
    import json

    spec = json.loads((out / "retriever.json").read_text())
    assert spec["pipeline"]["chunking"]["fixed"]["size"] == 128


def test_a_real_corpus_without_vocabulary_is_warned_about_once(tmp_path, caplog, monkeypatch):
    from gralc.inference import Retriever

    monkeypatch.setattr(builtin, "_warned", set())
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Ferret study\n\nFerrets coughed for four days.\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        Retriever.build(corpus, "fixed")
        Retriever.build(corpus, "fixed")
    assert caplog.text.count("NO MeSH VOCABULARY CONFIGURED") == 1
    assert builtin.DOWNLOAD in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        Retriever.build(DEMO_DIR / "articles" / "PMC9000001.nxml", "fixed")
    assert "NO MeSH VOCABULARY" not in caplog.text  # the demo corpus is linked with it on purpose
