"""The experiment configs load and validate, and ``covidqa_trained`` is the configuration
the cross-validation chose: every setting of the variant that won the held-out folds
(``configs/experiment/cv/lora_lexical_small_late.yaml``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gralc.config import CONFIG_DIR, load_config
from gralc.experiments.crossval import VARIANTS
from gralc.training.config import TrainConfig, validate

REPO = Path(__file__).resolve().parents[2]


def _experiment(name: str, *overrides: str) -> TrainConfig:
    return load_config(TrainConfig, CONFIG_DIR / "train.yaml",
                       [f"experiment={name}", *overrides])


@pytest.mark.parametrize("name", ["covidqa", "covidqa_trained", "pubmedqa_tuned"])
def test_training_experiments_validate(name):
    validate(_experiment(name))


def test_covidqa_trained_is_the_cross_validated_variant():
    chosen = _experiment("covidqa_trained")
    variant = _experiment("covidqa_trained", *VARIANTS["lora_lexical_small_late"])
    assert chosen == variant  # the variant's overrides change nothing: it is this config
    assert chosen.optim.late_interaction == 0.6 and chosen.lora.enabled
    assert chosen.callbacks.checkpoint.monitor == "val/ev_mrr"


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_every_cross_validation_variant_is_a_config_that_validates(name):
    """The variants gralc.experiments.crossval trains are the files of configs/experiment/cv/."""
    assert VARIANTS[name] == [f"experiment=cv/{name}"]
    validate(_experiment(f"cv/{name}"))


def test_the_model_of_record_carries_its_export_settings():
    """The export of record is the experiment file's own ``scoring`` section (no recipe in a
    comment): W = 0.3, M = 0.8, g = 0.05, cuts at sentence starts."""
    scoring = _experiment("covidqa_trained").scoring
    assert scoring == {"sentence_evidence": 0.3, "late_interaction": 0.8,
                       "phrase_weight": 0.05, "cut_unit": "sentence"}


#: The effective settings of every shipped config and experiment as GraLC 0.2.0 (0d3f79d)
#: loaded them, as their difference from the schema's defaults ("Schema/file+group=name":
#: {key: value}); a refactor of the config must load each into the same settings.
SETTINGS_OF_RECORD = Path(__file__).with_name("experiment_settings.json")


def _effective(entry: str) -> dict:
    import json

    from gralc.config import flatten
    from gralc.evaluation.config import EvalConfig

    schema_name, rest = entry.split("/", 1)
    schema = {"TrainConfig": TrainConfig, "EvalConfig": EvalConfig}[schema_name]
    yaml, *groups = rest.split("+")
    cfg, defaults = flatten(load_config(schema, CONFIG_DIR / yaml, groups)), flatten(schema())
    if "scoring" in defaults:  # the experiment's export scoring: a mapping of the keys it sets
        defaults.pop("scoring")
        defaults.update({k: None for k in cfg if k.startswith("scoring.")})
        cfg.pop("scoring", None)
    assert set(cfg) == set(defaults)
    return json.loads(json.dumps({k: v for k, v in cfg.items() if v != defaults[k]}))


def test_every_shipped_config_loads_the_settings_of_record():
    import json

    record = json.loads(SETTINGS_OF_RECORD.read_text())
    assert len(record) == 39 and "TrainConfig/train.yaml+experiment=covidqa_trained" in record
    loaded = {entry: _effective(entry) for entry in record}
    changed = {entry: loaded[entry] for entry, settings in record.items() if loaded[entry] != settings}
    assert not changed, f"effective settings differ from {SETTINGS_OF_RECORD.name}: {changed}"
