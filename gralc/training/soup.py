"""Model soups: one checkpoint whose weights are the weighted mean of several checkpoints
fine-tuned from the same initial weights (Wortsman et al., ICML 2022), e.g. a run selected on
a dev split and its refit on every document, or WiSE-FT's interpolation (weights ``1 - t, t``).

    gralc soup RUN_A RUN_B --out outputs/soup.ckpt
    gralc export outputs/soup.ckpt --out DIR

An ingredient is a checkpoint (.ckpt) or a run folder (the model its ``result.json``
selected). Every floating tensor is averaged; checkpoints whose seed, LoRA settings or
state-dict shapes differ are refused by name. The result is a weights-only checkpoint holding
the last checkpoint's configuration, its own learned values and ``gralc.soup`` (ingredients
and weights), written atomically. A malformed ingredient is one error naming the file
(:mod:`gralc.training.checkpoints`; exit code 2 on the command line), and nothing is written.
The rules in full: docs/training.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from gralc.atomic import atomic_path
from gralc.safe_load import json_int
from gralc.training.checkpoints import (
    MalformedCheckpointError,
    check_finite,
    check_fits,
    read_checkpoint,
)
from gralc.training.run_folder import run_selected_checkpoint

#: train_config entries that decide a run's initial weights: the soup's ingredients must agree
INIT_KEYS = (("seed",), ("lora", "enabled"), ("lora", "r"), ("lora", "alpha"),
             ("lora", "target_modules"), ("lora", "layers"))
#: what a weights-only checkpoint drops (the training state of one run)
RUN_STATE = ("optimizer_states", "lr_schedulers", "loops", "callbacks")


def _init_settings(ckpt: dict[str, Any]) -> dict[str, Any]:
    cfg = ckpt.get("gralc", {}).get("train_config", {})
    out = {}
    for path in INIT_KEYS:
        v: Any = cfg
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        out[".".join(path)] = v
    return out


def check_one_initialisation(paths: Sequence[str | Path], ckpts: Sequence[dict[str, Any]]) -> None:
    """Raise ValueError naming the first of ``ckpts`` (loaded from ``paths``) that started from
    other initial weights than the first (seed, LoRA settings) or holds other weights: averaging
    models of two seeds averages unrelated LoRA factors and GAT heads (measured on COVID-QA: a
    uniform soup of three seeds' soups fell from 0.80 to 0.77 evidence recall).

    Example: ``check_one_initialisation(paths, [read_checkpoint(p) for p in paths])`` -> None for
    checkpoints of one seed; ValueError naming the first of another.
    """
    first = ckpts[0]
    for p, c in zip(paths[1:], ckpts[1:]):
        if _init_settings(c) != _init_settings(first):
            differ = {k: (v, _init_settings(c)[k]) for k, v in _init_settings(first).items()
                      if _init_settings(c)[k] != v}
            raise ValueError(f"{p}: started from other initial weights than {paths[0]} "
                             f"({differ}); a soup averages models of one initialisation")
        sa, sc = first["state_dict"], c["state_dict"]
        bad = sorted(set(sa) ^ set(sc)) or [k for k in sa if sa[k].shape != sc[k].shape]
        if bad:
            raise ValueError(f"{p}: its weights do not match {paths[0]}'s (first difference: "
                             f"{bad[0]}); a soup needs one model architecture")


def average_state_dicts(states: Sequence[dict[str, torch.Tensor]],
                        weights: Sequence[float]) -> dict[str, torch.Tensor]:
    """``sum_i weights[i] * states[i][k]`` for every floating tensor ``k`` (accumulated in
    float64, stored in the tensor's dtype); other tensors (counters) as in the last state.

    >>> average_state_dicts([{"w": torch.tensor([0.0])}, {"w": torch.tensor([1.0])}], [0.25, 0.75])
    {'w': tensor([0.7500])}
    """
    out = {}
    for k, v in states[-1].items():
        if v.is_floating_point():
            acc = torch.zeros_like(v, dtype=torch.float64)
            for x, s in zip(weights, states):
                acc += x * s[k].double()
            v = acc.to(v.dtype)
        out[k] = v
    return out


def soup(checkpoints: Sequence[str | Path], out: str | Path,
         weights: Sequence[float] | None = None) -> Path:
    """Write ``out``: the ``weights``-weighted mean (default uniform; normalised to sum 1) of
    the ``checkpoints``' floating weights, the rest (and the configuration) as in the last
    one. Raises ValueError naming the checkpoint that does not fit before anything is written.

    Example: ``soup(["runs/a/last.ckpt", "runs/b/last.ckpt"], "soup.ckpt")`` -> ``Path('soup.ckpt')``,
    the uniform mean of the two models' weights.
    """
    paths = [run_selected_checkpoint(Path(p)) if Path(p).is_dir() else Path(p) for p in checkpoints]
    if len(paths) < 2:
        raise ValueError(f"a soup needs at least two checkpoints, got {len(paths)}")
    w = [1.0] * len(paths) if weights is None else [float(x) for x in weights]
    if len(w) != len(paths) or any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"weights {list(w)}: one non-negative weight per checkpoint "
                         f"({len(paths)}), not all 0")
    w = [x / sum(w) for x in w]
    fix = "pass checkpoints written by train.py (a run's checkpoints/*.ckpt) or run folders"
    ckpts = []
    for p in paths:  # weights only, never code; each complete and finite before any averaging
        ckpt = read_checkpoint(p, ("state_dict", "gralc"), fix)
        check_finite(p, ckpt["state_dict"], fix)
        ckpts.append(ckpt)
    check_one_initialisation(paths, ckpts)
    check_model_fits(paths[-1], ckpts[-1], fix)  # one architecture: the others match it
    base = ckpts[-1]
    result = {k: v for k, v in base.items() if k not in RUN_STATE}
    result["state_dict"] = average_state_dicts([c["state_dict"] for c in ckpts], w)
    result["gralc"] = {**base["gralc"], "soup": {"checkpoints": [str(p) for p in paths],
                                                 "weights": w}}
    out = Path(out)
    with atomic_path(out) as tmp:
        torch.save(result, tmp)
        result["gralc"]["learned_values"] = _soup_model(tmp, paths[-1]).learned_values()  # its own
        torch.save(result, tmp)
    return out


def check_model_fits(path: Path, ckpt: dict[str, Any], fix: str) -> None:
    """Raise MalformedCheckpointError naming ``path`` when the model weights of ``ckpt`` do
    not fit the model its settings (``gralc.model_config``, ``train_config.pipeline``, token
    and concept dims) build, as :func:`gralc.model.persistence.load_model` builds it; settings
    that build no model are left to the load of the soup (:func:`_soup_model`).

    Example: ``check_model_fits(Path("a.ckpt"), read_checkpoint("a.ckpt"), "retrain it")`` -> None
    when its weights fit the model its settings build.
    """
    from omegaconf import OmegaConf

    from gralc.model.gralc_model import GraLCModel, ModelConfig
    from gralc.model.persistence import upgrade_settings
    from gralc.pipeline import PipelineConfig

    info = ckpt["gralc"]
    try:
        m, p = upgrade_settings(info["model_config"], info["train_config"]["pipeline"])
        model_cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ModelConfig), m))
        pipeline = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(PipelineConfig), p))
        model = GraLCModel(model_cfg, pipeline.chunking.boundary, json_int(info["token_dim"], "token_dim", 1),
                           json_int(info["concept_dim"], "concept_dim", 1))
    except Exception:  # noqa: BLE001 - named by the load of the soup, with its own message
        return
    state = {k: v for k, v in ckpt["state_dict"].items() if k.startswith("model.")}
    check_fits(path, state, {f"model.{k}": v for k, v in model.state_dict().items()}, fix)


#: what building a model from a checkpoint's settings and weights raises when they disagree
_MODEL_ERRORS = (KeyError, TypeError, AttributeError, IndexError, RuntimeError, ValueError)


def _soup_model(tmp: Path, base: Path):
    """The model of the soup written to ``tmp``; a checkpoint whose settings (those of
    ``base``, the last ingredient) describe another model than its weights is a
    MalformedCheckpointError naming ``base``."""
    from omegaconf.errors import OmegaConfBaseException

    from gralc.model.persistence import load_model

    try:
        return load_model(tmp)[0]
    except (*_MODEL_ERRORS, OmegaConfBaseException) as exc:
        what = str(exc).replace(str(tmp), "the soup").strip().splitlines()
        raise MalformedCheckpointError(
            f"{base}: the soup of its weights does not load as the model its settings "
            f"(gralc.model_config, gralc.train_config) describe ({type(exc).__name__}: "
            f"{' '.join(w.strip() for w in what[:3])[:400] or 'missing entry'}); pass checkpoints "
            "written by train.py") from None
