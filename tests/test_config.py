from dataclasses import dataclass, field

import pytest

from gralc.config import CONFIG_DIR, ConfigError, load_config, save_config


@dataclass
class Inner:
    lr: float = 1e-3
    name: str = "x"


@dataclass
class Schema:
    seed: int = 0
    inner: Inner = field(default_factory=Inner)


def test_defaults_yaml_and_overrides(tmp_path):
    (tmp_path / "c.yaml").write_text("seed: 3\ninner:\n  lr: 0.5\n")
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "big.yaml").write_text("lr: 2.0\nname: big\n")
    cfg = load_config(Schema, tmp_path / "c.yaml", ["inner=big", "seed=7"])
    assert isinstance(cfg, Schema) and isinstance(cfg.inner, Inner)
    assert (cfg.seed, cfg.inner.lr, cfg.inner.name) == (7, 2.0, "big")


def test_unknown_key_names_key_and_valid_keys(tmp_path):
    (tmp_path / "c.yaml").write_text("inner:\n  lrr: 0.5\n")
    with pytest.raises(ConfigError) as exc:
        load_config(Schema, tmp_path / "c.yaml")
    msg = str(exc.value)
    assert "lrr" in msg and str(tmp_path / "c.yaml") in msg and "lr, name" in msg
    with pytest.raises(ConfigError, match="sed"):
        load_config(Schema, None, ["sed=1"])


def test_bad_type_and_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="seed"):
        load_config(Schema, None, ["seed=abc"])
    with pytest.raises(ConfigError, match="not found"):
        load_config(Schema, tmp_path / "nope.yaml")


def test_save_roundtrip(tmp_path):
    cfg = load_config(Schema, None, ["inner.lr=0.25"])
    save_config(cfg, tmp_path / "out.yaml")
    assert load_config(Schema, tmp_path / "out.yaml").inner.lr == 0.25


def test_a_scoring_key_given_to_eval_says_where_it_is_set():
    """eval scores a trained model as exported: scoring.* (or its 0.2 spelling model.*) is
    refused with where it belongs, not only as an unknown key."""
    from gralc.evaluation.config import EvalConfig

    for key in ("scoring.late_interaction=0.5", "model.late_interaction=0.5"):
        with pytest.raises(ConfigError, match=r"set it at export \(gralc export RUN --out DIR scoring"):
            load_config(EvalConfig, CONFIG_DIR / "eval.yaml", [key])


def test_a_stored_config_its_schema_refuses_names_the_file():
    """config_from_dict (a config stored in an artefact: an index's search settings, a run's
    config): a value the schema's own check refuses is one ConfigError naming the file and the
    key, as a wrong type is, never a bare ValueError from the dataclass."""
    from gralc.config import config_from_dict
    from gralc.retrieval.trained.candidates import CandidateConfig

    with pytest.raises(ConfigError, match=r"INDEX/retriever.json \(search\).*search.diverse"):
        config_from_dict(CandidateConfig, {"diverse": False}, "INDEX/retriever.json (search)")
    with pytest.raises(ConfigError, match=r"INDEX/retriever.json \(search\)"):
        config_from_dict(CandidateConfig, {"dense": "many"}, "INDEX/retriever.json (search)")
    assert config_from_dict(CandidateConfig, {"diverse": "complete_tail"}, "x").diverse == "complete_tail"
