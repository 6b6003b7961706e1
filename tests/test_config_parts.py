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
    """Refused where the config is built (``TrainConfig.__post_init__``), and again by
    ``validate`` for a config changed afterwards."""
    with pytest.raises(ConfigError, match=f"paths.{key}"):
        load_config(TrainConfig, CONFIG_DIR / "train.yaml", [f"paths.{key}=null"])
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml")
    setattr(cfg.paths, key, "")
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


#: Shipped YAML keys that restate the value in force on purpose (file -> dotted keys), each
#: with its reason; everything else a shipped file sets must differ from it.
RESTATED_ON_PURPOSE: dict[str, set[str]] = {
    # the group's selection itself: `data=demo` switches back to the demo corpus
    "data/demo.yaml": {"name"},
    # the recipe of record names its encoder windows and precision, as docs/training.md
    # reports them (a change of the LoRA defaults must not change this documented run)
    "experiment/covidqa_trained.yaml": {"lora.windows_per_doc", "lora.precision"},
}


def _leaves(node, prefix=""):
    if isinstance(node, dict) and node:
        for k, v in node.items():
            yield from _leaves(v, f"{prefix}{k}.")
    else:
        yield prefix[:-1], node


def _restated(path, bases) -> set[str]:
    """The keys of the YAML file ``path`` whose value equals the value already in force in
    EVERY base it loads onto (``bases``: flattened settings it is merged into)."""
    from omegaconf import OmegaConf

    given = dict(_leaves(OmegaConf.to_container(OmegaConf.load(path)) or {}))
    return {k for k, v in given.items() if bases and all(k in b and b[k] == v for b in bases)}


def _shipped_bases():
    """(file, [flattened bases]) for every shipped config: train.yaml and eval.yaml onto their
    schema's defaults, a ``data/`` or ``model/`` group file onto that section, an experiment
    onto train.yaml or eval.yaml (whichever it loads into)."""
    from dataclasses import fields

    from gralc.config import flatten, to_dict

    train, ev = load_config(TrainConfig, CONFIG_DIR / "train.yaml"), load_config(EvalConfig, CONFIG_DIR / "eval.yaml")
    yield CONFIG_DIR / "train.yaml", [flatten(TrainConfig())]
    yield CONFIG_DIR / "eval.yaml", [flatten(EvalConfig())]
    for group in ("data", "model"):
        for f in sorted((CONFIG_DIR / group).glob("*.yaml")):
            bases = [flatten(to_dict(getattr(c, group))) for c in (train, ev)
                     if group in {x.name for x in fields(c)}]
            yield f, bases
    for f in sorted((CONFIG_DIR / "experiment").rglob("*.yaml")):
        name = str(f.relative_to(CONFIG_DIR / "experiment"))[:-5]
        bases = []
        for schema, yaml, base in ((TrainConfig, "train.yaml", train), (EvalConfig, "eval.yaml", ev)):
            try:
                load_config(schema, CONFIG_DIR / yaml, [f"experiment={name}"])
            except ConfigError:
                continue
            bases.append(flatten(base))
        yield f, bases


def test_shipped_yaml_files_hold_deltas_only():
    """A shipped config sets only what differs from the settings it is merged into (the
    dataclass defaults, or train.yaml / eval.yaml for a group file or an experiment): a
    restated default would have to be changed in two places."""
    found = {}
    for path, bases in _shipped_bases():
        rel = str(path.relative_to(CONFIG_DIR))
        extra = _restated(path, bases) - RESTATED_ON_PURPOSE.get(rel, set())
        if extra:
            found[rel] = sorted(extra)
    assert not found, f"keys set to the value already in force (drop them): {found}"


def test_the_delta_check_catches_a_restated_default(tmp_path):
    (tmp_path / "x.yaml").write_text("optim:\n  lr: 0.001\n  temperature: 0.2\n")
    assert _restated(tmp_path / "x.yaml", [flatten_train()]) == {"optim.lr"}


def flatten_train():
    from gralc.config import flatten

    return flatten(TrainConfig())
