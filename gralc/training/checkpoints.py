"""Checks of training checkpoints (``.ckpt``) that load but may not be what train.py wrote.

``torch.load(weights_only=True)`` (:func:`gralc.safe_load.load_torch`) refuses code and
truncated files; a file it reads may still be a list, lack the entries a resume or a soup
reads, hold something other than tensors, or weights of another shape than the model they are
loaded into. Each of these is one :class:`MalformedCheckpointError` (a ValueError, so the
command-line boundary :func:`gralc.cli.run` ends with it and exit code 2) naming the file and
what is wrong, raised before the checkpoint is used; never a KeyError or a size-mismatch
traceback from Lightning or ``load_state_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from gralc.safe_load import load_torch

WHAT = "training checkpoint (.ckpt)"
#: what Lightning reads to continue a run (a weights-only checkpoint, ``initial.ckpt`` or a
#: soup, has no optimiser or loop state)
RESUME_KEYS = ("state_dict", "optimizer_states", "lr_schedulers", "loops",
               "pytorch-lightning_version")
#: what a model is built from (:mod:`gralc.model.persistence`) besides its weights
GRALC_KEYS = ("model_config", "train_config", "token_dim", "concept_dim")


class MalformedCheckpointError(ValueError):
    """A checkpoint that loads but is not a complete GraLC training checkpoint.

    >>> check_checkpoint("a.ckpt", {"state_dict": {}})
    Traceback (most recent call last):
    ...
    gralc.training.checkpoints.MalformedCheckpointError: ...
    """


def read_checkpoint(path: str | Path, keys: Sequence[str] = ("state_dict",), fix: str = "") -> dict[str, Any]:
    """The checkpoint at ``path`` (weights only, never code) after :func:`check_checkpoint`.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "a.ckpt"; torch.save({"state_dict": {"w": torch.ones(1)}}, f)
    >>> read_checkpoint(f)["state_dict"]["w"]
    tensor([1.])
    """
    ckpt = load_torch(path, what=WHAT)
    check_checkpoint(path, ckpt, keys, fix)
    return ckpt


def _fix(fix: str) -> str:
    return f"; {fix}" if fix else "; pass a .ckpt written by gralc train"


def check_checkpoint(path: str | Path, ckpt: Any, keys: Sequence[str] = ("state_dict",),
                     fix: str = "") -> None:
    """Raise :class:`MalformedCheckpointError` naming ``path`` unless ``ckpt`` is a dict with
    every entry of ``keys``, a non-empty ``state_dict`` of named tensors and, when ``keys``
    holds ``gralc``, a ``gralc`` dict with :data:`GRALC_KEYS`.

    >>> check_checkpoint("a.ckpt", {"state_dict": {"w": torch.zeros(2)}}) is None
    True
    """
    _require_dict(ckpt, f"{path}: not a training checkpoint: it holds", "the dict of weights "
                  "and settings", fix)
    missing = [k for k in keys if k not in ckpt]
    if missing:
        weights_only = "state_dict" in ckpt and "optimizer_states" in missing
        raise MalformedCheckpointError(
            f"{path}: a training checkpoint without {', '.join(repr(k) for k in missing)}"
            f"{' (it holds weights only, like initial.ckpt or a soup)' if weights_only else ''}"
            f"{_fix(fix)}")
    state = ckpt.get("state_dict")
    if "state_dict" in keys:
        if not isinstance(state, dict) or not state:
            raise MalformedCheckpointError(
                f"{path}: its 'state_dict' is {'empty' if isinstance(state, dict) else 'a ' + type(state).__name__}, "
                f"not a mapping of weight names to tensors{_fix(fix)}")
        for k, v in state.items():
            if not isinstance(k, str) or not isinstance(v, torch.Tensor):
                raise MalformedCheckpointError(
                    f"{path}: state_dict entry {k!r} is a {type(v).__name__}, not a tensor{_fix(fix)}")
    if "gralc" in keys:
        info = ckpt["gralc"]
        _require_dict(info, f"{path}: its 'gralc' entry is", "the dict of settings", fix)
        absent = [k for k in GRALC_KEYS if k not in info]
        if absent:
            raise MalformedCheckpointError(
                f"{path}: its 'gralc' entry lacks {', '.join(repr(k) for k in absent)}{_fix(fix)}")
        for k in ("model_config", "train_config"):
            if not isinstance(info[k], dict):
                raise MalformedCheckpointError(
                    f"{path}: gralc.{k} is a {type(info[k]).__name__}, not a dict of settings{_fix(fix)}")



def _require_dict(value: Any, said: str, expected: str, fix: str) -> None:
    """MalformedCheckpointError "``said`` a TYPE, not ``expected`` gralc train writes" unless
    ``value`` is a dict."""
    if not isinstance(value, dict):
        raise MalformedCheckpointError(f"{said} a {type(value).__name__}, not {expected} gralc "
                                       f"train writes{_fix(fix)}")


def check_finite(path: str | Path, state: Mapping[str, torch.Tensor], fix: str = "") -> None:
    """Raise :class:`MalformedCheckpointError` naming ``path`` and the first floating tensor
    of ``state`` holding NaN or infinity.

    >>> check_finite("a.ckpt", {"w": torch.tensor([1.0, float("nan")])})
    Traceback (most recent call last):
    ...
    gralc.training.checkpoints.MalformedCheckpointError: ...
    """
    for k, v in state.items():
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise MalformedCheckpointError(f"{path}: weight {k} holds NaN or infinite values{_fix(fix)}")


def check_fits(path: str | Path, state: Mapping[str, torch.Tensor],
               expected: Mapping[str, torch.Tensor], fix: str = "") -> None:
    """Raise :class:`MalformedCheckpointError` naming ``path`` unless ``state`` holds exactly
    the weights of ``expected`` (a model's state dict), each of the same shape.

    >>> check_fits("a.ckpt", {"w": torch.zeros(2)}, {"w": torch.ones(2)}) is None
    True
    """
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    shapes = [k for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    problems = []
    if missing:
        problems.append(f"{len(missing)} weight(s) of the model missing (first: {missing[0]})")
    if unexpected:
        problems.append(f"{len(unexpected)} weight(s) the model does not have (first: {unexpected[0]})")
    if shapes:
        k = shapes[0]
        problems.append(f"{len(shapes)} weight(s) of another shape (first: {k} is "
                        f"{tuple(state[k].shape)} in the file, {tuple(expected[k].shape)} in the model)")
    if problems:
        raise MalformedCheckpointError(f"{path}: its weights do not fit the model: "
                                       f"{'; '.join(problems)}{_fix(fix)}")
