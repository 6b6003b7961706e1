"""Export a trained GraLC checkpoint for inference, and load either form back.

    python -m gralc.export outputs/train/checkpoints/best-....ckpt --out exports/gralc

writes ``DIR/inference.yaml`` (human-readable: learned alpha / gamma / tau / beta / lambda,
decoder and chunk-size bounds, model and pipeline config, encoder id, git hash) and
``DIR/weights.safetensors`` (every parameter: GAT, fusion MLP, scalars). :func:`load_model`
accepts the ``.ckpt`` or the export directory and returns the same model (identical scores).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf

from gralc.model.gralc_model import GraLCModel, ModelConfig
from gralc.pipeline import PipelineConfig

INFERENCE_YAML = "inference.yaml"
WEIGHTS = "weights.safetensors"


def _typed(schema: type, values: dict[str, Any]) -> Any:
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), values))


def _read_checkpoint(path: Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """(the ``gralc`` entry, the model's state dict) of a Lightning checkpoint."""
    ckpt = torch.load(path, map_location="cpu", weights_only=False)  # our own trusted file
    info = ckpt.get("gralc")
    if info is None:
        raise ValueError(
            f"{path} is not a GraLC training checkpoint (no 'gralc' entry); "
            "pass a .ckpt written by train.py or an export directory"
        )
    state = {
        k.removeprefix("model."): v for k, v in ckpt["state_dict"].items() if k.startswith("model.")
    }
    return info, state


def _build(
    info: dict[str, Any], state: dict[str, torch.Tensor]
) -> tuple[GraLCModel, PipelineConfig]:
    model = GraLCModel(
        _typed(ModelConfig, info["model_config"]), int(info["token_dim"]), int(info["concept_dim"])
    )
    model.load_state_dict(state, strict=True)
    return model.eval(), _typed(PipelineConfig, info["pipeline_config"])


def load_model(path: str | Path) -> tuple[GraLCModel, PipelineConfig]:
    """``(model in eval mode, pipeline config)`` from a ``.ckpt`` or an export directory."""
    path = Path(path)
    if path.is_dir():
        from safetensors.torch import load_file

        yaml_path, weights = path / INFERENCE_YAML, path / WEIGHTS
        if not yaml_path.is_file() or not weights.is_file():
            raise FileNotFoundError(
                f"{path} is not a GraLC export: expected {INFERENCE_YAML} and {WEIGHTS}"
            )
        info = OmegaConf.to_container(OmegaConf.load(yaml_path), resolve=True)
        return _build(info, load_file(str(weights)))
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: pass a .ckpt file or an export directory")
    info, state = _read_checkpoint(path)
    info = {**info, "pipeline_config": info["train_config"]["pipeline"]}
    return _build(info, state)


def export(checkpoint: str | Path, out_dir: str | Path) -> Path:
    """Write ``inference.yaml`` and ``weights.safetensors`` for ``checkpoint`` into ``out_dir``."""
    from safetensors.torch import save_file

    checkpoint, out = Path(checkpoint), Path(out_dir)
    info, state = _read_checkpoint(checkpoint)
    model, pipeline_cfg = _build(
        {**info, "pipeline_config": info["train_config"]["pipeline"]}, state
    )
    mc = model.config
    doc = {
        "learned_values": model.learned_values(),
        "decoder": mc.decoder,
        "min_tokens": mc.min_tokens,
        "max_tokens": mc.max_tokens,
        "encoder_id": pipeline_cfg.encoder.model,
        "git_hash": info.get("run", {}).get("git_hash", "unknown"),
        "source_checkpoint": str(checkpoint.resolve()),
        "token_dim": model.token_dim,
        "concept_dim": model.concept_dim,
        "model_config": info["model_config"],
        "pipeline_config": info["train_config"]["pipeline"],
    }
    out.mkdir(parents=True, exist_ok=True)
    save_file(
        {k: v.detach().contiguous() for k, v in model.state_dict().items()}, str(out / WEIGHTS)
    )
    OmegaConf.save(OmegaConf.create(doc), out / INFERENCE_YAML)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Export a GraLC training checkpoint for inference")
    parser.add_argument("checkpoint", help="a .ckpt written by train.py")
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    out = export(args.checkpoint, args.out)
    print(OmegaConf.to_yaml(OmegaConf.load(out / INFERENCE_YAML).learned_values), end="")
    print(f"exported to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
