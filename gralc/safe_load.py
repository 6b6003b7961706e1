"""Load torch files without running code from them.

``torch.load(weights_only=True)`` only rebuilds tensors, plain containers and numbers (and the
GraLC record classes a caller allows by name); a crafted file that asks for any other Python
object is refused with an error naming it, instead of executing it.
"""

from __future__ import annotations

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
