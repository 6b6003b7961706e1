"""A trained GraLC model on disk: export a training checkpoint for inference, load either back.

:func:`export` (CLI: ``gralc export CKPT --out DIR``) writes ``DIR/inference.yaml``
(human-readable: learned values, decoder and chunk-size bounds, configs, encoder id, git hash),
``DIR/weights.safetensors`` (every parameter) and ``DIR/MODEL_CARD.md``
(:mod:`gralc.model.model_card`); a LoRA model also gets ``DIR/adapter/`` and ``DIR/encoder/``
(the adapters merged in). :func:`load_model` accepts the ``.ckpt`` or the export directory
and returns the same model (identical scores); a LoRA ``.ckpt``'s adapters are merged once
into ``<paths.cache_dir>/lora_encoders/<digest>``, so either way documents and questions are
encoded as in training under the encoder name ``<base>+lora-<digest>``. Details:
docs/training.md ("Under the hood").
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from gralc.artefacts import check_output_dir, verify_artefact, write_artefact
from gralc.atomic import atomic_path, atomic_write, write_text_atomic
from gralc.model.gralc_model import GraLCModel, ModelConfig
from gralc.model.model_card import MODEL_CARD, model_card
from gralc.model.scoring_config import ScoringConfig
from gralc.pipeline import PipelineConfig
from gralc.safe_load import (
    json_int,
    load_torch,
    path_inside,
    read_json_untrusted,
    read_yaml_untrusted,
)

INFERENCE_YAML = "inference.yaml"
WEIGHTS = "weights.safetensors"
ADAPTER_DIR = "adapter"
ENCODER_DIR = "encoder"
LORA_CACHE = "lora_encoders"  # under the training run's paths.cache_dir


@dataclass
class TrainedModel:
    """A trained model ready for inference. ``pipeline_config.encoder.model`` is the encoder it
    was trained with (LoRA: the merged encoder folder); ``concept_encoder`` is the encoder
    of the concept embeddings u when that is another one (LoRA: the base encoder, with which
    training embedded the concepts), else None."""

    model: GraLCModel
    pipeline_config: PipelineConfig
    concept_encoder: str | None = None


def _typed(schema: type, values: dict[str, Any]) -> Any:
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), values))


def _load_checkpoint(path: Path) -> dict[str, Any]:
    """A Lightning checkpoint written by train.py (weights only, never code)."""
    ckpt = load_torch(path, what="training checkpoint (.ckpt)")
    if ckpt.get("gralc") is None:
        raise ValueError(
            f"{path} is not a GraLC training checkpoint (no 'gralc' entry); "
            "pass a .ckpt written by train.py or an export directory"
        )
    return ckpt


def _read_checkpoint(
    path: Path, ckpt: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(the ``gralc`` entry, the model's state dict, the LoRA adapters' state dict (empty
    without LoRA)) of a Lightning checkpoint (``ckpt``: the one already loaded from ``path``)."""
    ckpt = _load_checkpoint(path) if ckpt is None else ckpt
    info = ckpt["gralc"]

    def part(prefix: str) -> dict[str, torch.Tensor]:
        return {
            k.removeprefix(prefix): v for k, v in ckpt["state_dict"].items() if k.startswith(prefix)
        }

    return info, part("model."), part("encoder.")


def _lora(info: dict[str, Any]) -> dict[str, Any] | None:
    """The ``lora`` training settings of a checkpoint's ``gralc`` entry when enabled."""
    lora = info["train_config"].get("lora")
    return lora if lora and lora.get("enabled") else None


def _lora_encoder(info: dict[str, Any], adapters: dict[str, torch.Tensor]):
    """The checkpoint's base encoder with its trained adapters, on CPU."""
    from gralc.encoding.lora import LoraEncoder

    lora, pipeline_cfg = _lora(info), _typed(PipelineConfig, info["train_config"]["pipeline"])
    settings = [*(lora[k] for k in ("r", "alpha", "dropout", "target_modules")), lora.get("layers")]
    enc = LoraEncoder.build(pipeline_cfg.encoder, *settings, device="cpu")
    enc.load_state_dict(adapters)
    return enc.eval()


#: ModelConfig keys of checkpoints written before the boundary settings moved to the one
#: BoundaryConfig (pipeline.chunking.boundary), and their names there.
_MOVED_TO_BOUNDARY = {
    "gamma_init": "gamma",
    "tau_init": "tau",
    "decoder": "decoder",
    "min_tokens": "min_tokens",
    "max_tokens": "max_tokens",
    "dp_target_tokens": "dp_target_tokens",
    "dp_length_weight": "dp_length_weight",
    "dp_cohesion_weight": "dp_cohesion_weight",
}


#: ModelConfig keys of models saved by GraLC 0.2.0 that are ScoringConfig fields now
MOVED_TO_SCORING = ("late_interaction", "kg_prox_idf")


def upgrade_settings(
    model_config: dict[str, Any], pipeline_config: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Saved ``(model_config, pipeline_config)`` in today's layout: the boundary settings an
    older model kept in its ModelConfig (alpha_init, gamma_init, tau_init, decoder, chunk
    bounds, DP terms) move to ``pipeline_config.chunking.boundary``, ``temperature`` becomes
    ``cut_temperature``, no ``use_lexical`` means none, the inference-only settings of 0.2.0
    (:data:`MOVED_TO_SCORING`) leave it (:func:`saved_scoring` reads them); a current one
    comes back unchanged (copies).

    >>> upgrade_settings({"temperature": 0.1, "late_interaction": 0.8}, {})
    ({'cut_temperature': 0.1, 'use_lexical': False}, {'chunking': {'boundary': {}}})
    """
    m, p = copy.deepcopy(dict(model_config)), copy.deepcopy(dict(pipeline_config))
    for key in MOVED_TO_SCORING:
        m.pop(key, None)
    boundary = p.setdefault("chunking", {}).setdefault("boundary", {})
    if "alpha_init" in m:
        boundary.update(zip(("alpha_struct", "alpha_sem", "alpha_entity"), m.pop("alpha_init")))
    for old, new in _MOVED_TO_BOUNDARY.items():
        if old in m:
            boundary[new] = m.pop(old)
    if "temperature" in m:
        m["cut_temperature"] = m.pop("temperature")
    if "use_hybrid" in m:  # GraLC 0.1's name of use_kg_prox
        m["use_kg_prox"] = m.pop("use_hybrid")
    m.setdefault("use_lexical", False)  # saved before the lexical term existed: none
    return m, p


def saved_scoring(info: dict[str, Any]) -> ScoringConfig:
    """The inference-only scoring a checkpoint's ``gralc`` entry or an export's
    ``inference.yaml`` saved: its ``scoring`` section, else (GraLC 0.2.0) the
    :data:`MOVED_TO_SCORING` keys of its ``model_config``; neither: off.

    >>> saved_scoring({"model_config": {"late_interaction": 0.8, "kg_prox_idf": False}})
    ScoringConfig(late_interaction=0.8, kg_prox_idf=False, overrides={})
    """
    old = {k: v for k, v in (info.get("model_config") or {}).items() if k in MOVED_TO_SCORING}
    return ScoringConfig.from_dict({**old, **dict(info.get("scoring") or {})})


def _build(
    info: dict[str, Any], state: dict[str, torch.Tensor]
) -> tuple[GraLCModel, PipelineConfig]:
    model_cfg, pipeline_cfg = upgrade_settings(info["model_config"], info["pipeline_config"])
    pipeline = _typed(PipelineConfig, pipeline_cfg)
    model = GraLCModel(
        _typed(ModelConfig, model_cfg),
        pipeline.chunking.boundary,
        json_int(info["token_dim"], "token_dim", 1),
        json_int(info["concept_dim"], "concept_dim", 1),
        saved_scoring(info),
    )
    model.load_state_dict(state, strict=True)
    return model.eval(), pipeline


#: what a loadable but malformed checkpoint or export raises while its content is read
_MALFORMED = (KeyError, TypeError, AttributeError, IndexError, RuntimeError)


def _malformed(path: Path, exc: BaseException, fix: str) -> ValueError:
    from omegaconf.errors import OmegaConfBaseException

    what = "a setting is invalid" if isinstance(exc, OmegaConfBaseException) else \
        f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else 'missing entry'}"
    return ValueError(f"{path} is not a complete GraLC model ({what}); {fix}")


RESULT_JSON = "result.json"  # a finished training run's record (train.py)


def resolve_model(path: str | Path) -> Path:
    """What ``--model PATH`` / ``models=[PATH]`` names, as a file or folder :func:`load_trained`
    reads: an export folder (``inference.yaml``) or a ``.ckpt`` as they are; a finished
    training run folder (``paths.output_dir``, with ``result.json``) stands for the checkpoint
    its run selected (``best_checkpoint``: the best epoch on dev, ``initial.ckpt`` when none
    beat it, the last epoch of a refit), looked up by file name under the folder so a moved
    run still resolves. Anything else is an error naming the three forms.

    >>> resolve_model("outputs/demo_train")          # doctest: +SKIP
    PosixPath('outputs/demo_train/checkpoints/best-epoch=0-step=8.ckpt')
    """

    path = Path(path)
    forms = ("pass a trained model: an export folder (gralc export), a .ckpt written by "
             "gralc train, or a finished run folder (paths.output_dir)")
    if path.is_file() or (path / INFERENCE_YAML).is_file():
        return path
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist; {forms}")
    result = path / RESULT_JSON
    if not result.is_file():
        raise ValueError(f"{path}: a folder with neither {INFERENCE_YAML} nor {RESULT_JSON}; {forms}")
    try:
        name = Path(read_json_untrusted(result, allow_interpolation=True)["best_checkpoint"]).name
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{result}: no readable best_checkpoint ({exc!r}); pass the .ckpt file") from None
    for candidate in (path / "checkpoints" / name, path / name):
        if candidate.is_file():
            return candidate
    raise ValueError(f"{result}: its best_checkpoint {name} is neither in {path / 'checkpoints'} "
                     f"nor in {path}; pass the .ckpt file")


def load_trained(path: str | Path) -> TrainedModel:
    """The model in eval mode, its pipeline config and concept encoder, from a ``.ckpt``, an
    export directory or a finished run folder (:func:`resolve_model`; see
    :class:`TrainedModel` and the module docstring for LoRA). A file that loads but lacks
    entries or has tensors of other shapes is a ValueError naming it."""
    from omegaconf.errors import OmegaConfBaseException

    path = resolve_model(path)
    try:
        return _load_trained(path)
    except (*_MALFORMED, OmegaConfBaseException) as exc:
        raise _malformed(path, exc, "pass a .ckpt written by train.py or an export written by "
                         "gralc.export (re-export it)") from None


def _load_trained(path: Path) -> TrainedModel:
    if path.is_dir():
        from safetensors.torch import load_file

        yaml_path, weights = path / INFERENCE_YAML, path / WEIGHTS
        if not yaml_path.is_file() or not weights.is_file():
            raise FileNotFoundError(
                f"{path} is not a GraLC export: expected {INFERENCE_YAML} and {WEIGHTS}"
            )
        verify_artefact(path, ("export",))  # every file as exported, before any answer
        info = read_yaml_untrusted(yaml_path, "export settings")  # no ${...} interpolation
        if not isinstance(info, dict):
            raise ValueError(f"{yaml_path}: expected a mapping of export settings; re-export the model")
        model, pipeline_cfg = _build(info, load_file(str(weights)))
        lora = info.get("lora")
        if not lora:
            return TrainedModel(model, pipeline_cfg)
        encoder = path_inside(path, lora.get("merged_encoder"), f"{yaml_path} (lora.merged_encoder)")
        if not encoder.is_dir():
            raise FileNotFoundError(f"{encoder} missing: re-export {path} with gralc.export")
        pipeline_cfg.encoder.model = str(encoder.resolve())
        return TrainedModel(model, pipeline_cfg, lora["base_model"])
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: pass a .ckpt file or an export directory")
    info, state, adapters = _read_checkpoint(path)
    model, pipeline_cfg = _build({**info, "pipeline_config": info["train_config"]["pipeline"]}, state)
    lora = _lora(info)
    if lora is None:
        return TrainedModel(model, pipeline_cfg)
    from gralc.encoding.lora import merged_encoder_folder

    base = pipeline_cfg.encoder.model
    cache = Path(info["train_config"]["paths"]["cache_dir"]) / LORA_CACHE
    settings = [*(lora[k] for k in ("r", "alpha", "dropout", "target_modules")), lora.get("layers")]
    folder = merged_encoder_folder(adapters, pipeline_cfg.encoder, cache, *settings)
    pipeline_cfg.encoder.model = str(folder.resolve())
    return TrainedModel(model, pipeline_cfg, base)


def load_model(path: str | Path) -> tuple[GraLCModel, PipelineConfig]:
    """``(model in eval mode, pipeline config)`` from a ``.ckpt`` or an export directory
    (:func:`load_trained` without the concept encoder)."""
    trained = load_trained(path)
    return trained.model, trained.pipeline_config


def export(checkpoint: str | Path, out_dir: str | Path, force: bool = False,
           settings: dict[str, Any] | ScoringConfig | None = None) -> Path:
    """Write ``inference.yaml``, ``weights.safetensors`` and ``MODEL_CARD.md``
    (:mod:`gralc.model.model_card`) for ``checkpoint`` into ``out_dir`` (with LoRA also
    ``adapter/`` and the merged ``encoder/``), all at once (:mod:`gralc.artefacts`: a folder
    holding other files, or a file of the user's named like one of these, needs ``force``,
    which moves it aside). The export-time
    scoring (:class:`~gralc.model.scoring_config.ScoringConfig`: the inference-only settings
    and the trained score terms it overrides) is the experiment's own ``scoring`` section
    recorded in the checkpoint's train config, each key of ``settings`` (flat
    ``{key: value}``, :func:`~gralc.model.scoring_config.scoring_keys`, validated first;
    a ScoringConfig: every key it holds) replacing it; a key neither sets stays as trained. ``checkpoint``: a ``.ckpt`` or a
    finished run folder (the checkpoint its run selected, :func:`resolve_model`).

    >>> export("outputs/demo_train", "exports/demo", settings={"late_interaction": 0.8})  # doctest: +SKIP
    PosixPath('exports/demo')
    """
    checkpoint = resolve_model(checkpoint)
    if checkpoint.is_dir():
        raise ValueError(f"{checkpoint} is already an export; pass the .ckpt or run folder it "
                         "came from to export it again with other settings")
    if isinstance(settings, ScoringConfig):
        settings = settings.settings()
    settings = dict(settings or {})
    ScoringConfig.from_dict(settings)  # a bad key or value fails here, before any file
    check_output_dir(out_dir, "export", force, [checkpoint])
    from omegaconf.errors import OmegaConfBaseException

    with write_artefact(out_dir, "export", force, [checkpoint]) as tmp:
        try:
            _write_export(checkpoint, tmp, settings)
        except (*_MALFORMED, OmegaConfBaseException) as exc:
            raise _malformed(checkpoint, exc, "pass a .ckpt written by train.py") from None
    return Path(out_dir)


def _write_export(checkpoint: Path, out: Path, explicit: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    ckpt = _load_checkpoint(checkpoint)
    info, state, adapters = _read_checkpoint(checkpoint, ckpt)
    recorded = info["train_config"].get("scoring")  # the experiment's
    scoring = saved_scoring(info).updated(recorded).updated(explicit)
    pipe = copy.deepcopy(info["train_config"]["pipeline"])
    boundary = pipe.setdefault("chunking", {}).setdefault("boundary", {})
    model_config, pipe["chunking"]["boundary"] = scoring.apply(info["model_config"], boundary)
    info = {**info, "model_config": model_config, "scoring": scoring.own().settings(),
            "train_config": {**info["train_config"], "pipeline": pipe}}
    model, pipeline_cfg = _build(
        {**info, "pipeline_config": info["train_config"]["pipeline"]}, state
    )
    bc = model.boundary_config
    model_config, pipeline_config = upgrade_settings(
        info["model_config"], info["train_config"]["pipeline"]
    )
    doc = {
        "learned_values": model.learned_values(),
        "decoder": bc.decoder,
        "min_tokens": bc.min_tokens,
        "max_tokens": bc.max_tokens,
        "encoder_id": pipeline_cfg.encoder.model,
        "git_hash": info.get("run", {}).get("git_hash", "unknown"),
        "source_checkpoint": str(checkpoint.resolve()),
        "token_dim": model.token_dim,
        "concept_dim": model.concept_dim,
        "model_config": model_config,
        "scoring": model.scoring.settings(),
        "pipeline_config": pipeline_config,
    }
    lora = _lora(info)
    if lora is not None:
        from gralc.encoding.models import model_name

        enc = _lora_encoder(info, adapters)
        enc.save_adapter(out / ADAPTER_DIR)
        enc.save_merged(out / ENCODER_DIR)
        doc["lora"] = {
            "base_model": pipeline_cfg.encoder.model,  # also the concept embeddings' encoder
            "r": lora["r"],
            "alpha": lora["alpha"],
            "dropout": lora["dropout"],
            "target_modules": list(lora["target_modules"]),
            **({} if lora.get("layers") is None else {"layers": lora["layers"]}),
            "adapter": ADAPTER_DIR,
            "merged_encoder": ENCODER_DIR,
            "adapter_sha256": enc.digest(),
        }
        doc["encoder_id"] = model_name(str(out / ENCODER_DIR))
        doc["pipeline_config"]["encoder"]["model"] = ENCODER_DIR  # relative to the export
    with atomic_path(out / WEIGHTS) as tmp:
        save_file({k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(tmp))
    with atomic_write(out / INFERENCE_YAML) as f:
        OmegaConf.save(OmegaConf.create(doc), f)
    write_text_atomic(out / MODEL_CARD, model_card(doc, ckpt))
