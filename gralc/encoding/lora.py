"""LoRA adapters on the document encoder (peft), trained with gradient, merged for inference.

``LoraEncoder(DocumentEncoder(...), r, alpha, dropout, target_modules)`` injects LoRA
adapters into the encoder's transformer, IN PLACE. Only the adapter matrices are trainable
(B starts at zero, so an untrained LoraEncoder encodes exactly like its base model) and only
they are in its ``state_dict``. ``encode_document`` and ``encode_questions`` compute what
:class:`~gralc.encoding.encoder.DocumentEncoder` computes, differentiably w.r.t. the adapters
and without the on-disk cache.

:meth:`LoraEncoder.save_merged` folds the adapters into the weights and writes a plain Hugging
Face folder plus :data:`~gralc.encoding.models.LORA_MARKER`, which ``DocumentEncoder`` loads
like any model under the id ``<base id>+lora-<digest>``; :meth:`LoraEncoder.save_adapter`
writes the small peft adapter folder. ``layers=N`` adapts only the last N transformer layers:
the frozen layers below run once per encoder window and are kept (:class:`LowerStates`), so a
step costs the top N layers forward and backward. Details: docs/training.md ("Under the hood").
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import shutil
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from gralc.atomic import atomic_path
from gralc.encoding.encoder import IN_ORDER, DocumentEncoder, EncoderConfig
from gralc.encoding.models import (
    ENCODER_FORMAT,
    ENCODER_MARKER,
    LORA_MARKER,
    EncoderConventions,
    resolve_model,
)
from gralc.encoding.precision import resolve_precision
from gralc.encoding.windows import blend_windows, plan_windows


class LoraTargetError(ValueError):
    """The requested target module names match no module of the encoder.

    Example: ``LoraEncoder(encoder, target_modules=("qkv",))`` on MiniLM -> ``LoraTargetError``
    listing the names it has (``dense``, ``key``, ``query``, ``value``).
    """


def linear_module_names(model: nn.Module) -> list[str]:
    """Distinct last name parts of the model's ``nn.Linear`` modules (what ``target_modules``
    may name), e.g. ``['dense', 'key', 'query', 'value']`` for BERT.

    >>> linear_module_names(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    ['0']
    """
    return sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, nn.Linear)})


def adapter_digest(
    state: dict[str, torch.Tensor],
    base_model: str,
    r: int,
    alpha: float,
    target_modules: Sequence[str],
    layers: int | None = None,
) -> str:
    """Hex sha256 naming one adapted encoder: the adapter tensors (names, dtypes, shapes,
    values), the base model's name and the LoRA settings that change the merged weights
    (``layers``: only when set, so digests of adapters on every layer stay as they were).

    >>> len(adapter_digest({"a": torch.zeros(2)}, "all-MiniLM-L6-v2", 8, 16.0, ("query", "value")))
    64
    """
    digest = hashlib.sha256()
    header = {"base": base_model, "r": r, "alpha": alpha, "targets": sorted(target_modules)}
    if layers is not None:
        header["layers"] = int(layers)
    digest.update(json.dumps(header, sort_keys=True).encode())
    for name in sorted(state):
        t = state[name].detach().to("cpu").contiguous()
        digest.update(f"\0{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        digest.update(t.numpy().tobytes())
    return digest.hexdigest()


def transformer_layers(model: nn.Module) -> tuple[nn.Module, nn.ModuleList] | None:
    """``(embeddings, layer list)`` of a BERT-style Hugging Face encoder (BERT, RoBERTa,
    XLM-R, e5: ``model.embeddings`` and ``model.encoder.layer``), or None for another layout.

    >>> transformer_layers(nn.Linear(2, 2)) is None
    True
    """
    layers = getattr(getattr(model, "encoder", None), "layer", None)
    embeddings = getattr(model, "embeddings", None)
    if isinstance(layers, nn.ModuleList) and embeddings is not None:
        return embeddings, layers
    return None


class LowerStates:
    """The hidden states below the first adapted layer, per encoder window, computed once.

    Below the adapters nothing is trained and the frozen transformer runs without dropout
    (:meth:`LoraEncoder.train`), so a window's states at layer ``split`` never change during
    a run: :meth:`get` computes those of unseen windows (one padded no-grad pass of
    ``embeddings`` + ``layers[:split]``) and returns the kept ones of the rest. Keyed by the
    window's token ids (with its special tokens), so training and validation share them;
    at most ``max_bytes`` are kept (oldest dropped first). ``mask_fn(config, states,
    mask)``: the encoder's attention mask for the layers (transformers'
    ``create_bidirectional_mask``).

    Example: ``LowerStates(bert, 4).get([[101, 2054, 102]], 0)`` -> ``[tensor (3, 384)]``.
    """

    def __init__(self, model: nn.Module, split: int, max_bytes: int = 2 << 30) -> None:
        from transformers.masking_utils import create_bidirectional_mask

        found = transformer_layers(model)
        if found is None:
            raise ValueError(f"{type(model).__name__} has no embeddings + encoder.layer to split")
        self.model, (self.embeddings, self.layers) = model, found
        self.split, self.max_bytes = int(split), int(max_bytes)
        self.mask_fn = create_bidirectional_mask
        self.kept: OrderedDict[bytes, torch.Tensor] = OrderedDict()
        self.bytes = 0

    def attention_mask(self, states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor | None:
        """The layers' attention mask for ``states`` (B, L, d) with padding ``mask`` (B, L)."""
        return self.mask_fn(config=self.model.config, inputs_embeds=states, attention_mask=mask)

    def run(self, states: torch.Tensor, mask: torch.Tensor, layers) -> torch.Tensor:
        """``states`` through ``layers`` (a slice of the encoder's layer list)."""
        attention = self.attention_mask(states, mask)
        for layer in layers:
            states = layer(states, attention)
        return states

    @staticmethod
    def key(row: Sequence[int]) -> bytes:
        """The window's identity: a digest of its token ids."""
        return hashlib.blake2b(torch.tensor(row, dtype=torch.int64).numpy().tobytes(), digest_size=16).digest()

    @torch.no_grad()
    def get(self, rows: list[list[int]], pad_id: int, batch_size: int = 8) -> list[torch.Tensor]:
        """The states (len(row), d) at layer ``split`` of each token-id row, on the model's device."""
        keys = [self.key(r) for r in rows]
        todo = [i for i, k in enumerate(keys) if k not in self.kept]
        device = next(self.model.parameters()).device
        fresh: dict[bytes, torch.Tensor] = {}
        for b in range(0, len(todo), batch_size):
            part = [rows[i] for i in todo[b : b + batch_size]]
            ids, mask = padded(part, pad_id)
            ids, mask = ids.to(device), mask.to(device)
            states = self.run(self.embeddings(input_ids=ids), mask, self.layers[: self.split])
            for j, i in enumerate(todo[b : b + batch_size]):
                fresh[keys[i]] = states[j, : len(rows[i])].clone()
        out = [fresh.get(k, self.kept.get(k)) for k in keys]
        for k, t in fresh.items():
            self.kept[k] = t
            self.bytes += t.numel() * t.element_size()
        while self.bytes > self.max_bytes and len(self.kept) > 1:
            self.bytes -= (t := self.kept.popitem(last=False)[1]).numel() * t.element_size()
        return out  # type: ignore[return-value]


def padded(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention mask)`` (B, width) of token-id ``rows`` padded to the longest.

    >>> padded([[5, 6], [7]], 0)[1].tolist()
    [[1, 1], [1, 0]]
    """
    width = max(len(row) for row in rows)
    input_ids = torch.full((len(rows), width), pad_id)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for j, row in enumerate(rows):
        input_ids[j, : len(row)] = torch.tensor(row)
        mask[j, : len(row)] = 1
    return input_ids, mask


class LoraEncoder(nn.Module):
    """A DocumentEncoder with LoRA adapters on ``target_modules`` (peft); see module doc.

    ``r``: adapter rank; ``alpha``: scaling numerator (updates are scaled by alpha / r);
    ``dropout``: dropout on the adapter input during training; ``target_modules``: last name
    parts of the Linear layers to adapt (BERT attention: ``query``, ``value``); ``layers``:
    adapt only the last ``layers`` transformer layers (None: all), the states below them
    computed once per window (:class:`LowerStates`).

    Example: ``pooled, tokens, mask = LoraEncoder(DocumentEncoder(EncoderConfig()), r=8).encode_questions(["Why?"])``
    -> ``pooled`` (1, 384) through the adapted encoder (gradients flow into the adapters).
    """

    def __init__(
        self,
        encoder: DocumentEncoder,
        r: int = 8,
        alpha: float = 16,
        dropout: float = 0.1,
        target_modules: Sequence[str] = ("query", "value"),
        layers: int | None = None,
    ) -> None:
        super().__init__()
        from peft import LoraConfig, get_peft_model

        available = linear_module_names(encoder.model)
        missing = sorted(set(target_modules) - set(available))
        if not target_modules or missing:
            raise LoraTargetError(
                f"target modules {missing or list(target_modules)} match no Linear layer of "
                f"{encoder.model_id}; its Linear layers are named {available} (BERT-style "
                "encoders such as all-MiniLM-L6-v2: query, key, value, dense)"
            )
        self.encoder = encoder  # a plain attribute: its model is registered below, via peft
        self.r, self.alpha, self.dropout = int(r), float(alpha), float(dropout)
        self.target_modules = list(target_modules)
        found = transformer_layers(encoder.model)
        n_layers = len(found[1]) if found else None
        if layers is not None and (found is None or not 1 <= layers <= n_layers):
            raise LoraTargetError(
                f"layers={layers}: {encoder.model_id} has "
                f"{f'{n_layers} transformer layers' if found else 'no BERT-style layer list'}; "
                f"give 1..{n_layers or 'N'} or null (every layer)")
        self.layers = None if layers is None else int(layers)
        #: whether the frozen features a caller holds were encoded at this encoder's precision
        #: (set by :meth:`build`; a hand-made one claims nothing, see :meth:`identity`)
        self.matches_frozen = False
        config = LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=self.target_modules,
            **({} if self.layers is None else
               {"layers_to_transform": list(range(n_layers - self.layers, n_layers)), "layers_pattern": "layer"}),
        )
        self.peft = get_peft_model(encoder.model, config)
        split = 0 if self.layers is None else n_layers - self.layers
        self.lower = LowerStates(self.peft.get_base_model(), split) if split else None
        trainable = {n for n, p in self.named_parameters() if p.requires_grad}
        self._frozen = [k for k in self.state_dict() if k not in trainable]
        self.register_state_dict_post_hook(_drop_frozen)
        self.register_load_state_dict_pre_hook(_restore_frozen)

    @classmethod
    def build(cls, encoder_config: EncoderConfig, *adapters: Any, device: str | None = None,
              precision: str | None = None, **adapter_settings: Any) -> LoraEncoder:
        """A fresh base encoder from ``encoder_config`` (its on-disk cache switched off: the
        adapted vectors change at every step) with new adapters (``adapters`` /
        ``adapter_settings``: the constructor's ``r, alpha, dropout, target_modules, layers``);
        ``precision`` (``fp32``, ``bf16``, ``auto``) replaces the config's for the adapted
        passes.

        Example: ``LoraEncoder.build(EncoderConfig(), 8, 16, 0.0, ["query", "value"])``."""
        cfg = replace(encoder_config, cache_dir=None, device=device or encoder_config.device,
                      precision=precision or encoder_config.precision)
        base = DocumentEncoder(cfg)
        lora = cls(base, *adapters, **adapter_settings)
        # the frozen features (the feature cache) are encoded at the config's own precision
        lora.matches_frozen = (
            resolve_precision(encoder_config.precision, base.device) == base.precision)
        return lora

    def identity(self) -> bool:
        """True while every adapter's B matrix is zero (peft's initialisation, before the
        first optimiser step): the adapted passes then compute the frozen encoder's vectors, and
        a caller holding those (the feature cache) need not encode again."""
        return all(not p.any() for n, p in self.named_parameters() if "lora_B" in n)

    def train(self, mode: bool = True) -> LoraEncoder:
        """Only the adapters' dropout follows ``mode``: the frozen transformer always runs in
        eval mode (no dropout of its own), so training sees the token vectors inference sees,
        and a step is ~4x faster on CPU (5 windows of 512 tokens, forward + backward: 1.6 s
        instead of 7 s, mostly attention-probability dropout)."""
        super().train(False)
        for name, module in self.named_modules():
            if name.rsplit(".", 1)[-1] == "lora_dropout":
                module.train(mode)
        self.training = mode
        return self

    # ----- encoding with gradient ------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        """The device the adapted model's parameters are on."""
        return next(self.peft.parameters()).device

    def _autocast(self):
        if self.encoder.precision == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _hidden(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Last hidden states (B, L, d) float32 on this module's device."""
        with self._autocast():
            out = self.peft(
                input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device)
            ).last_hidden_state
        return out.float()

    def _upper(self, rows: list[list[int]], pad_id: int) -> torch.Tensor:
        """Last hidden states (B, L, d) float32 of token-id ``rows``: the kept states below
        the adapters (:class:`LowerStates`), then the adapted layers with gradient."""
        assert self.lower is not None
        with self._autocast():
            kept = self.lower.get(rows, pad_id, self.encoder.config.batch_size)
            _, mask = padded(rows, pad_id)
            states = torch.zeros((len(rows), mask.shape[1], kept[0].shape[-1]), dtype=kept[0].dtype,
                                 device=kept[0].device)
            for j, t in enumerate(kept):
                states[j, : len(t)] = t
            out = self.lower.run(states, mask.to(states.device), self.lower.layers[self.lower.split :])
        return out.float()

    def token_ids(self, text: str) -> list[int]:
        """The content-token ids of ``text`` (no special tokens), as the DocumentEncoder's."""
        ids = self.encoder.tokenizer(
            text, add_special_tokens=False, truncation=False, verbose=False
        )["input_ids"]
        if not ids:
            raise ValueError(
                f"the text yields no tokens for {self.encoder.model_id}: nothing to encode"
            )
        return ids

    def encode_windows(self, windows: list[list[int]]) -> list[torch.Tensor]:
        """Content-token vectors (len, d) float32 on CPU of each window of content-token ids,
        each run on its own with the encoder's special tokens (and passage prefix),
        ``batch_size`` windows per padded pass; differentiable w.r.t. the adapters."""
        enc = self.encoder
        # the DocumentEncoder's own special tokens ([CLS] + passage prefix ... [SEP]), so
        # both paths agree
        prefix, suffix = enc.special_ids
        pad = enc.tokenizer.pad_token_id or 0
        outputs: list[torch.Tensor] = []
        for b in range(0, len(windows), enc.config.batch_size):
            chunk = windows[b : b + enc.config.batch_size]
            rows = [prefix + w + suffix for w in chunk]
            if self.lower is None:
                hidden = self._hidden(*padded(rows, pad)).cpu()  # blend_windows works on CPU
            else:
                hidden = self._upper(rows, pad).cpu()
            for j, w in enumerate(chunk):
                outputs.append(hidden[j, len(prefix) : len(prefix) + len(w)])
        return outputs

    def plan(self, n_tokens: int) -> list[tuple[int, int]]:
        """The encoder's sliding windows over ``n_tokens`` content tokens."""
        return plan_windows(n_tokens, self.encoder.window, self.encoder.config.overlap)

    def encode_document(self, text: str) -> torch.Tensor:
        """Token vectors H (N, d) float32 on CPU of the whole ``text``: one row per word-piece,
        as ``DocumentEncoder.encode_document(text).vectors`` (windows of ``encoder.window``
        content tokens, ``overlap`` shared, blended), differentiable w.r.t. the adapters."""
        ids = self.token_ids(text)
        windows = self.plan(len(ids))
        outputs = self.encode_windows([ids[s:e] for s, e in windows])
        return blend_windows(outputs, windows, len(ids))

    def encode_questions(
        self, texts: list[str]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One adapted pass over the questions, with gradient: ``(pooled (Q, d), tokens (Q, L,
        d), mask (Q, L) bool)``, float32 on CPU, as ``DocumentEncoder.read_questions`` reads
        them (the one question path), in :data:`~gralc.encoding.encoder.IN_ORDER` padded
        passes of ``batch_size`` (equal to the one-at-a-time inference path up to float
        rounding). E.g. ``pooled, tokens, mask = lora.encode_questions(["What is ACE2?"])``."""
        return self.encoder.read_questions(texts, IN_ORDER, lambda ids, mask: self._hidden(ids, mask).cpu(),
                                           warn=False)

    # ----- saving ---------------------------------------------------------------------------
    def digest(self) -> str:
        """:func:`adapter_digest` of the current adapters."""
        return adapter_digest(
            self.state_dict(), self.encoder.model_id, self.r, self.alpha, self.target_modules,
            self.layers,
        )

    def save_adapter(self, folder: str | os.PathLike) -> Path:
        """peft's adapter folder (``adapter_config.json``, ``adapter_model.safetensors``)."""
        folder = Path(folder)
        with atomic_path(folder, folder=True) as tmp:
            self.peft.save_pretrained(str(tmp))
        return folder

    def save_merged(self, folder: str | os.PathLike) -> Path:
        """Write the encoder with the adapters merged into its weights as a plain Hugging Face
        folder that ``DocumentEncoder(EncoderConfig(model=folder))`` loads; this module is left
        unchanged. Written beside ``folder`` first, then renamed (replacing ``folder``)."""
        folder = Path(folder)
        merged = copy.deepcopy(self.peft).merge_and_unload()
        base_dir = Path(resolve_model(self.encoder.config.model))
        sentence_cfg = base_dir / "sentence_bert_config.json"
        marker = {
            "base_model": self.encoder.model_id,
            "adapter_sha256": self.digest(),
            "r": self.r,
            "alpha": self.alpha,
            "target_modules": self.target_modules,
            **({} if self.layers is None else {"layers": self.layers}),
        }
        with atomic_path(folder, folder=True) as tmp:
            merged.save_pretrained(str(tmp))
            self.encoder.tokenizer.save_pretrained(str(tmp))
            if sentence_cfg.is_file():  # the base model card's query length (256 for MiniLM)
                shutil.copy(sentence_cfg, tmp / sentence_cfg.name)
            else:
                (tmp / sentence_cfg.name).write_text(
                    json.dumps({"max_seq_length": self.encoder.query_max_length})
                )
            (tmp / LORA_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
            if replace(self.encoder.conventions, max_length=None) != EncoderConventions():
                # prefixes (e5's query: / passage:) go with the merged weights; MiniLM's folder
                # (no prefixes, its length in sentence_bert_config.json) stays as it was
                (tmp / ENCODER_MARKER).write_text(json.dumps(
                    {"format": ENCODER_FORMAT, "conventions": self.encoder.conventions.to_dict()},
                    indent=2) + "\n")
        return folder


def merged_encoder_folder(
    state: dict[str, torch.Tensor],
    encoder_config: EncoderConfig,
    cache_root: str | os.PathLike,
    r: int,
    alpha: float,
    dropout: float,
    target_modules: Sequence[str],
    layers: int | None = None,
) -> Path:
    """``cache_root/<digest[:16]>``: the merged encoder of the adapter ``state`` (LoraEncoder
    ``state_dict`` keys) on ``encoder_config.model``, written once and reused.

    Example: ``merged_encoder_folder(lit.state_dict(), EncoderConfig(), "cache/encoders", 8, 16, 0.1, ("query", "value"))``
    -> ``Path('cache/encoders/<digest[:16]>')``, a folder ``encoder.model=`` loads.
    """
    from gralc.encoding.models import model_name

    digest = adapter_digest(state, model_name(encoder_config.model), r, alpha, target_modules, layers)
    folder = Path(cache_root) / digest[:16]
    if not (folder / LORA_MARKER).is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        lora = LoraEncoder.build(encoder_config, r, alpha, dropout, target_modules, layers, device="cpu")
        lora.load_state_dict(state)
        lora.save_merged(folder)
    return folder


def _drop_frozen(module: LoraEncoder, state_dict, prefix: str, local_metadata) -> None:
    """state_dict post-hook: keep only the adapters (the base weights are the base model's)."""
    for key in module._frozen:
        state_dict.pop(prefix + key, None)


def _restore_frozen(
    module: LoraEncoder, state_dict, prefix, local_metadata, strict, missing, unexpected, errors
) -> None:
    """load_state_dict pre-hook: fill the frozen base weights in from the module itself."""
    current = dict(module.named_parameters()) | dict(module.named_buffers())
    for key in module._frozen:
        state_dict.setdefault(prefix + key, current[key].detach())


__all__ = ["LoraEncoder", "LoraTargetError", "LowerStates", "adapter_digest", "merged_encoder_folder",
           "padded", "transformer_layers"]
