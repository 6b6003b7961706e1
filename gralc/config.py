"""Typed configuration: dataclass schemas + OmegaConf YAML + ``key=value`` overrides.

``load_config(Schema, CONFIG_DIR / "train.yaml", ["trainer.max_epochs=3", "data=pubmedqa"])``
merges, in order: the schema's defaults, the YAML file, config-group selections
(``data=pubmedqa`` loads ``gralc/configs/data/pubmedqa.yaml`` into ``data``) and dotted overrides.
Every value is validated against the schema at load: an unknown key or a wrongly typed value
raises :class:`ConfigError` naming the key, where it came from, and the valid keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException, ValidationError

from gralc.safe_load import require_file

T = TypeVar("T")

#: the YAML configs shipped inside the package (``train.yaml``, ``eval.yaml`` and the groups
#: ``data/``, ``model/``, ``experiment/``, ``sweep/``), so every entry point works from any folder
#: and from a wheel install
CONFIG_DIR = Path(__file__).resolve().parent / "configs"


class ConfigError(ValueError):
    """A configuration problem, with the key and the fix in the message.

    Example: ``load_config(WandbConfig, overrides=["projekt=x"])`` -> ``ConfigError: unknown
    config key 'projekt' (a WandbConfig entry) in command-line overrides; valid keys here: ...``"""


@dataclass
class PathsConfig:
    """Where a run (``train.py``, ``eval.py``) writes. ``output_dir``: this run's folder
    (training: checkpoints, logs, resolved config, ``outputs/train`` unless set; evaluation:
    None means ``results/<run id>``). One run per folder: a folder holding another run or
    other files is refused before any work unless the run continues it (training's
    ``resume``, evaluation's ``resume``); ``force`` moves that content aside to
    ``<output_dir>.replaced-<time>`` instead (never deletes it); see
    :func:`gralc.training.run_folder.check_run_dir` and :mod:`gralc.artefacts`. ``cache_dir``:
    token embeddings and training features, reused across runs (evaluation: None means no
    cache; training needs one).

    >>> PathsConfig(output_dir="runs/a").cache_dir
    'data/cache'
    """

    output_dir: str | None = None
    cache_dir: str | None = "data/cache"
    force: bool = False


@dataclass
class WandbConfig:
    """Weights & Biases logging, off by default and offline unless ``offline=false``
    (CSV logs and result files are always written); ``name``: the W&B run name (None: W&B
    picks one).

    >>> WandbConfig().offline
    True
    """

    #: log to Weights & Biases
    enabled: bool = False
    #: the W&B project
    project: str = "gralc"
    #: the W&B entity (team or user; null: your default)
    entity: str | None = None
    #: log offline (wandb sync later); false: online
    offline: bool = True
    name: str | None = None


#: Override keys that moved (old dotted key -> new one): still accepted, with a warning.
#: The model's boundary settings live in the one BoundaryConfig since GraLC 0.2.
RENAMED = {
    **{f"model.{k}": f"pipeline.chunking.boundary.{k}" for k in (
        "decoder", "min_tokens", "max_tokens", "dp_target_tokens", "dp_length_weight",
        "dp_cohesion_weight")},
    "model.gamma_init": "pipeline.chunking.boundary.gamma",
    "model.tau_init": "pipeline.chunking.boundary.tau",
    "model.temperature": "model.cut_temperature",
    # "hybrid" means BM25 + dense fusion only since GraLC 0.2: the cos / kg_prox mix is kg_prox
    "model.use_hybrid": "model.use_kg_prox",
    # inference-only settings are the model's ScoringConfig since GraLC 0.3 (set at export)
    "model.late_interaction": "scoring.late_interaction",
    "model.kg_prox_idf": "scoring.kg_prox_idf",
    # train.py's W&B settings are spelled as eval.py's since GraLC 0.2
    **{f"logger.wandb.{k}": f"wandb.{k}" for k in ("enabled", "project", "entity", "offline", "name")},
}

#: top-level sections some commands do not take -> where they are set instead
MISPLACED = {
    "scoring": ("; scoring.* (late_interaction, kg_prox_idf, ...) is part of a trained model: "
                "set it at export (gralc export RUN --out DIR scoring.KEY=value) or in training "
                "(gralc train scoring.KEY=value), then evaluate that export with models=[DIR]"),
}


def _renamed(key: str, value: str) -> list[str]:
    """``key=value`` in today's names (``model.alpha_init=[a,b,c]`` gives three keys)."""
    import logging

    if key == "model.alpha_init":
        parts = [p.strip() for p in value.strip("[]() ").split(",")]
        if len(parts) != 3:
            raise ConfigError(f"model.alpha_init={value}: give three weights [struct,sem,entity]")
        new = [f"pipeline.chunking.boundary.alpha_{n}={v}" for n, v in
               zip(("struct", "sem", "entity"), parts)]
    elif key in RENAMED:
        new = [f"{RENAMED[key]}={value}"]
    else:
        return [f"{key}={value}"]
    logging.getLogger(__name__).warning("%s is now %s: the override was translated", key,
                                        " ".join(n.split("=")[0] for n in new))
    return new


def _pipeline_key(schema_obj: Any, key: str) -> str:
    """One spelling of pipeline settings across CLIs: in a config with a ``pipeline`` section
    (train.py, eval.py), ``knowledge.vocabulary=...`` means ``pipeline.knowledge.vocabulary``,
    as ``gralc.index`` spells it, unless the config has a section of that name itself."""
    head = key.split(".", 1)[0]
    pipeline = getattr(schema_obj, "pipeline", None)
    if "." in key and is_dataclass(pipeline) and not hasattr(schema_obj, head) and hasattr(pipeline, head):
        return f"pipeline.{key}"
    return key


def _valid_keys(schema: Any, dotted: str) -> list[str]:
    node = schema
    for part in [p for p in dotted.split(".")[:-1] if p]:
        node = getattr(node, part, None)
        if node is None:
            return []
    if is_dataclass(node):
        return sorted(f.name for f in fields(node))
    return []


def _merge(base: DictConfig, other: Any, source: str, schema_obj: Any) -> DictConfig:
    try:
        return OmegaConf.merge(base, other)
    except ConfigKeyError as exc:
        key = getattr(exc, "full_key", None) or str(exc)
        # the schema of the node holding the key (also inside a list: mix=[{...}])
        node = getattr(exc, "object_type", None)
        valid = (sorted(f.name for f in fields(node)) if isinstance(node, type) and is_dataclass(node)
                 else _valid_keys(schema_obj, str(key)))
        where = f" (a {node.__name__} entry)" if isinstance(node, type) and "." not in str(key) else ""
        hint = MISPLACED.get(str(key).split(".")[0], "")
        raise ConfigError(
            f"unknown config key {key!r}{where} in {source}; "
            + (f"valid keys here: {', '.join(valid)}" if valid else "check the spelling") + hint
        ) from None
    except ValidationError as exc:
        key = getattr(exc, "full_key", "?")
        raise ConfigError(f"invalid value for {key!r} in {source}: {exc.msg}") from None


def _group_file(schema_obj: Any, config_dir: str | Path | None, key: str,
                value: str) -> Path | None:
    """``config_dir/key/value.yaml`` when ``key=value`` selects a config group: ``key`` is
    ``experiment`` or a section of the schema (``data``, ``model``: a dataclass, not a plain
    value such as ``resume``, whose value may well be an absolute path) with a folder of YAML
    files in ``config_dir``. A name that is not there, or a path, is a ConfigError listing
    the names; None: an ordinary ``key=value`` override."""
    if config_dir is None or "." in key:
        return None
    if key != "experiment" and not is_dataclass(getattr(schema_obj, key, None)):
        return None
    folder = Path(config_dir) / key
    if not folder.is_dir():
        return None
    names = sorted(f.stem for f in folder.glob("*.yaml"))
    shown = _shown(folder)
    if Path(value).is_absolute() or value.startswith(("~", ".")) or "\\" in value:
        node = getattr(schema_obj, key, None)
        hint = (f"; a file or folder goes in {key}.path={value}" if hasattr(node, "path") else "")
        raise ConfigError(f"{key}={value}: {key}= takes the name of a config in {shown} "
                          f"(available: {', '.join(names)}), not a path{hint}")
    group_file = folder / f"{value}.yaml"
    if not group_file.is_file():
        raise ConfigError(f"{key}={value}: no config {shown / group_file.name}; available: "
                          f"{', '.join(names)}")
    return group_file


def _shown(path: Path) -> Path:
    """``path`` as a user should read it: ``gralc/configs/...`` for the shipped configs."""
    try:
        return Path("gralc/configs") / Path(path).resolve().relative_to(CONFIG_DIR)
    except ValueError:
        return Path(path)


def load_config(
    schema: type[T],
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    config_dir: str | Path | None = None,
    base: T | None = None,
) -> T:
    """Load and validate a config; returns the schema dataclass instance (typed).

    ``overrides`` are ``key=value`` strings (``a.b=3``), or ``group=name`` where
    ``config_dir/group/name.yaml`` exists (``experiment=name``: that file is merged at the
    root, so an experiment sets any keys: ``gralc/configs/experiment/*.yaml``). ``base``: start from this instance instead of the
    schema's defaults (e.g. the pipeline config saved with a trained model).

    >>> load_config(WandbConfig, overrides=["project=demo", "offline=false"])
    WandbConfig(enabled=False, project='demo', entity=None, offline=False, name=None)
    """
    schema_obj = schema()
    cfg = OmegaConf.structured(base if base is not None else schema_obj)
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"config file {path} not found; pass an existing YAML file")
        require_file(path, "config file")
        cfg = _merge(cfg, OmegaConf.load(path), str(path), schema_obj)
        config_dir = config_dir or path.parent
    dotted: list[str] = []
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} is not of the form key=value")
        key, value = item.split("=", 1)
        key = key.lstrip("+")
        group_file = _group_file(schema_obj, config_dir, key, value)
        if group_file is not None:
            loaded = OmegaConf.load(group_file)
            # an experiment sets keys anywhere (lightning-hydra-template's "@package _global_")
            cfg = _merge(cfg, loaded if key == "experiment" else {key: loaded}, str(group_file),
                         schema_obj)
        else:
            dotted.extend(_renamed(_pipeline_key(schema_obj, key), value))
    if dotted:
        try:
            cli = OmegaConf.from_dotlist(dotted)
        except OmegaConfBaseException as exc:
            raise ConfigError(f"cannot parse overrides {dotted}: {exc}") from None
        cfg = _merge(cfg, cli, "command-line overrides", schema_obj)
    try:
        return OmegaConf.to_object(cfg)  # type: ignore[return-value]
    except OmegaConfBaseException as exc:
        raise ConfigError(f"config incomplete or invalid: {exc}") from None


def config_from_dict(schema: type[T], values: Any, source: str) -> T:
    """A validated ``schema`` instance from a plain dict (e.g. a config stored in an artefact);
    errors name ``source`` and the key, as :func:`load_config` does.

    >>> config_from_dict(WandbConfig, {"project": "demo"}, "run.json").project
    'demo'
    """
    schema_obj = schema()
    if not isinstance(values, dict | None):
        raise ConfigError(f"config in {source}: expected a mapping of settings, got "
                          f"{type(values).__name__}")
    try:
        cfg = _merge(OmegaConf.structured(schema_obj), OmegaConf.create(values or {}), source, schema_obj)
        return OmegaConf.to_object(cfg)  # type: ignore[return-value]
    except ConfigError:
        raise
    except (OmegaConfBaseException, TypeError, ValueError) as exc:  # a mapping where a list
        # belongs; a value the schema's own check refuses (its __post_init__): the file named
        raise ConfigError(f"config in {source} incomplete or invalid: {exc}") from None


def to_dict(cfg: Any) -> dict[str, Any]:
    """A resolved, JSON/YAML-ready dict of a config dataclass.

    >>> to_dict(WandbConfig())
    {'enabled': False, 'project': 'gralc', 'entity': None, 'offline': True, 'name': None}
    """
    return OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True)  # type: ignore[return-value]


def save_config(cfg: Any, path: str | Path) -> None:
    """Write the resolved config as YAML (atomically: a reader never sees half of it).

    Example: ``save_config(PathsConfig(), "run/config.yaml")`` writes :func:`to_yaml`'s text
    (``output_dir: null``, ``cache_dir: data/cache``, ``force: false``)."""
    from gralc.atomic import atomic_write

    with atomic_write(path) as f:
        OmegaConf.save(OmegaConf.create(to_dict(cfg)), f)


def flatten(cfg: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a.b.c": value}`` of a config dataclass (or nested dict).

    >>> flatten({"a": {"b": 1}, "c": 2})
    {'a.b': 1, 'c': 2}
    """
    d = to_dict(cfg) if not isinstance(cfg, dict) else cfg
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def config_conflicts(saved: Any, given: Any, ignore: tuple[str, ...] = ()) -> list[str]:
    """``"key: saved=X, given=Y"`` for every setting where ``given`` differs from ``saved``
    (keys starting with an ``ignore`` prefix excepted).

    >>> config_conflicts(WandbConfig(), WandbConfig(project="x"))
    ["project: saved='gralc', given='x'"]
    """
    a, b = flatten(saved), flatten(given)
    return [
        f"{k}: saved={a.get(k)!r}, given={b.get(k)!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k) and not k.startswith(ignore)
    ]


def to_yaml(cfg: Any) -> str:
    """The resolved config as YAML text (``gralc train --print-config``).

    >>> print(to_yaml(PathsConfig()), end="")
    output_dir: null
    cache_dir: data/cache
    force: false
    """
    return OmegaConf.to_yaml(OmegaConf.create(to_dict(cfg)))
