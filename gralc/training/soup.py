"""Model soups: one checkpoint whose weights are the weighted mean of several checkpoints
fine-tuned from the same initial weights (Wortsman et al., ICML 2022), e.g. a run selected on
a dev split and its refit on every document (``loader.dev_fraction=0``), or WiSE-FT's
interpolation between the untrained and the trained model (weights ``1 - t, t``).

    python -m gralc.training.soup RUN_A RUN_B --out outputs/soup.ckpt
    python -m gralc.export outputs/soup.ckpt --out DIR

An ingredient is a checkpoint (.ckpt) or a run folder (``paths.output_dir``), which stands for
the model its ``result.json`` selected (``best_checkpoint``: the best trained epoch on dev,
``initial.ckpt`` when none beat it, the last epoch of a refit).

Every floating tensor of the state dict is averaged (LoRA adapters and learned scalars
alike); averaging only means something between models that started from the same weights,
so checkpoints whose seed, LoRA settings or state-dict shapes differ are refused by name. The
result is a weights-only checkpoint (no optimiser state: it is not a point of any one run to
resume from) holding the last checkpoint's configuration, its own learned values and
``gralc.soup`` (the ingredients and weights); it is written atomically.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from gralc.safe_load import load_torch
from gralc.training.run import run_selected_checkpoint

#: train_config entries that decide a run's initial weights: the soup's ingredients must agree
INIT_KEYS = (("seed",), ("lora", "enabled"), ("lora", "r"), ("lora", "alpha"),
             ("lora", "target_modules"))
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
    uniform soup of three seeds' soups fell from 0.80 to 0.77 evidence recall)."""
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
    float64, stored in the tensor's dtype); other tensors (counters) as in the last state."""
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
    one. Raises ValueError naming the checkpoint that does not fit before anything is written."""
    paths = [run_selected_checkpoint(Path(p)) if Path(p).is_dir() else Path(p) for p in checkpoints]
    if len(paths) < 2:
        raise ValueError(f"a soup needs at least two checkpoints, got {len(paths)}")
    w = [1.0] * len(paths) if weights is None else [float(x) for x in weights]
    if len(w) != len(paths) or any(x < 0 for x in w) or sum(w) <= 0:
        raise ValueError(f"weights {list(w)}: one non-negative weight per checkpoint "
                         f"({len(paths)}), not all 0")
    w = [x / sum(w) for x in w]
    ckpts = [load_torch(p, what="training checkpoint (.ckpt)") for p in paths]  # weights only
    check_one_initialisation(paths, ckpts)
    base = ckpts[-1]
    result = {k: v for k, v in base.items() if k not in RUN_STATE}
    result["state_dict"] = average_state_dicts([c["state_dict"] for c in ckpts], w)
    result["gralc"] = {**base["gralc"], "soup": {"checkpoints": [str(p) for p in paths],
                                                 "weights": w}}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    torch.save(result, tmp)
    from gralc.model.persistence import load_model

    result["gralc"]["learned_values"] = load_model(tmp)[0].learned_values()  # the soup's own
    torch.save(result, tmp)
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkpoints", nargs="+",
                    help="training checkpoints (.ckpt) or run folders (their selected model) of "
                         "one initialisation")
    ap.add_argument("--weights", type=float, nargs="+", default=None,
                    help="one weight per checkpoint (default: uniform)")
    ap.add_argument("--out", required=True, help="the soup checkpoint (.ckpt) to write")
    args = ap.parse_args(argv)
    if Path(args.out).exists():
        ap.error(f"--out {args.out} exists; choose a new path (nothing is overwritten)")
    try:
        path = soup(args.checkpoints, args.out, args.weights)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
