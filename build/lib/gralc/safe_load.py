"""Load torch files without running code from them.

``torch.load(weights_only=True)`` only rebuilds tensors, plain containers and numbers (and the
GraLC record classes a caller allows by name); a crafted file that asks for any other Python
object is refused with an error naming it, instead of executing it.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch


def load_torch(path: str | Path, allowed: Sequence[type] = (), what: str = "file") -> Any:
    """``torch.load(path, map_location="cpu", weights_only=True)`` with ``allowed`` classes;
    FileNotFoundError / ValueError naming ``path`` and the fix otherwise."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        with torch.serialization.safe_globals(list(allowed)):
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if "Unsupported" in ln]
        reason = lines[0][:200] if lines else "objects other than weights"
        raise ValueError(
            f"refusing to load {path}: it asks for Python objects other than weights ({reason}); "
            f"GraLC never unpickles code from a file, pass a {what} written by GraLC"
        ) from None
    except (RuntimeError, EOFError, OSError) as exc:
        raise ValueError(f"{path}: not a readable torch {what} ({exc}); it may be truncated: "
                         "write it again") from None


# ----- JSON / YAML from files GraLC did not necessarily write -------------------------------
def _no_interpolation(value: Any, source: str, key: str = "") -> None:
    """Refuse OmegaConf interpolations (``${oc.env:API_KEY}``, ``${...}``) anywhere in data
    read from a file: resolving them would copy the environment or other keys into GraLC's
    outputs. Iterative, so any depth is fine."""
    stack = [(key, value)]
    while stack:
        at, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((f"{at}.{k}" if at else str(k), x) for k, x in v.items())
            stack.extend((f"{at} (a key)", k) for k in v if isinstance(k, str))
        elif isinstance(v, list):
            stack.extend((f"{at}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, str) and "${" in v:
            raise ValueError(f"{source}: {at or 'the value'} holds an interpolation ({v[:60]!r}); "
                             "GraLC never resolves ${...} in a file it reads (it could copy "
                             "environment variables out): write the plain value")


def _read_untrusted(path: str | Path, what: str, kind: str, parse, errors: tuple) -> Any:
    """``parse`` of ``path``'s UTF-8 text; a missing file, bytes that are not UTF-8, a syntax
    error (``errors``) or a nesting too deep is one error naming the file; interpolations are
    refused (:func:`_no_interpolation`)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        data = parse(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start}); write it again") from None
    except errors as exc:
        raise ValueError(f"{path}: not valid {kind} ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise ValueError(f"{path}: {kind} nested too deeply to be a GraLC file") from None
    _no_interpolation(data, str(path))
    return data


def read_json_untrusted(path: str | Path, what: str = "JSON file") -> Any:
    """JSON of ``path``, read as untrusted (:func:`_read_untrusted`)."""
    return _read_untrusted(path, what, "JSON", json.loads, (json.JSONDecodeError,))


def read_yaml_untrusted(path: str | Path, what: str = "YAML file") -> Any:
    """``yaml.safe_load`` of ``path`` (no Python tags), read as untrusted (:func:`_read_untrusted`)."""
    import yaml

    return _read_untrusted(path, what, "YAML", yaml.safe_load, (yaml.YAMLError,))


def path_inside(root: str | Path, rel: Any, source: str) -> Path:
    """``root / rel`` for a path ``rel`` read from the file ``source``, refused (ValueError
    naming both) unless it is a relative path that resolves inside ``root`` (no ``..``, no
    absolute path, no symbolic link leading out)."""
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise ValueError(f"{source}: {rel!r} is not a path (a relative path inside {root} is expected)")
    base = Path(root).resolve()
    target = (base / rel).resolve()
    if Path(rel).is_absolute() or (target != base and base not in target.parents):
        raise ValueError(f"{source}: the path {rel!r} leads outside {base}; a GraLC file may only "
                         "name files inside its own folder: rebuild it")
    return target
