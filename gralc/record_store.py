"""Save and load trees of GraLC records as JSON + safetensors: nothing is ever unpickled.

A *record tree* is built from ``None``, ``bool``, ``int``, ``float``, ``str``, lists, tuples,
dicts with ``str`` keys, ``torch.Tensor`` and instances of dataclasses the caller allows by
class. :func:`save_records` writes it as a folder::

    DIR/records.json        the tree, tensors replaced by {"$tensor": name}
    DIR/tensors.safetensors every tensor, by name

(built in a temporary sibling folder, then renamed into place: a crash never leaves half of
it). :func:`load_records` rebuilds the tree; a record class that is not allowed, an unknown
field or a damaged file is a ``ValueError`` naming ``DIR``, never code execution.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from gralc.atomic import atomic_path
from gralc.safe_load import read_json_untrusted

FORMAT = "gralc-records"
VERSION = 2  # 2: records.json holds the SHA-256 of tensors.safetensors
RECORDS, TENSORS = "records.json", "tensors.safetensors"


class _Encoder:
    def __init__(self, allowed: dict[str, type]):
        self.allowed, self.tensors = allowed, {}
        self._storages: set[int] = set()

    def tensor(self, t: torch.Tensor) -> dict:
        name = f"t{len(self.tensors)}"
        t = t.detach().cpu()
        if not t.numel():
            self.tensors[name] = t.clone()
            return {"$tensor": name}
        ptr = t.untyped_storage().data_ptr()
        # safetensors refuses tensors that share memory: store views and repeats as copies
        if (
            ptr in self._storages
            or not t.is_contiguous()
            or t.untyped_storage().nbytes() != t.numel() * t.element_size()
        ):
            t = t.clone()
            ptr = t.untyped_storage().data_ptr()
        self._storages.add(ptr)
        self.tensors[name] = t.contiguous()
        return {"$tensor": name}

    def __call__(self, x: Any) -> Any:
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, torch.Tensor):
            return self.tensor(x)
        if isinstance(x, list):
            return [self(v) for v in x]
        if isinstance(x, tuple):
            return {"$tuple": [self(v) for v in x]}
        if isinstance(x, dict):
            bad = [k for k in x if not isinstance(k, str)]
            if bad:
                raise TypeError(f"record trees hold dicts with str keys only, not {bad[0]!r}")
            return {"$dict": {k: self(v) for k, v in x.items()}}
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            name = type(x).__name__
            if self.allowed.get(name) is not type(x):
                raise TypeError(f"{type(x).__qualname__} is not an allowed record type")
            return {
                "$record": name,
                "fields": {f.name: self(getattr(x, f.name)) for f in dataclasses.fields(x)},
            }
        raise TypeError(f"cannot store a {type(x).__qualname__} in a record tree")


def _decode(x: Any, allowed: dict[str, type], tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(x, list):
        return [_decode(v, allowed, tensors) for v in x]
    if not isinstance(x, dict):
        return x
    if "$tensor" in x:
        return tensors[x["$tensor"]]
    if "$tuple" in x:
        return tuple(_decode(v, allowed, tensors) for v in x["$tuple"])
    if "$dict" in x:
        return {k: _decode(v, allowed, tensors) for k, v in x["$dict"].items()}
    if "$record" in x:
        cls = allowed.get(x["$record"])
        if cls is None:
            raise ValueError(f"record type {x['$record']!r} is not allowed here")
        known = {f.name for f in dataclasses.fields(cls) if f.init}
        unknown = sorted(set(x["fields"]) - known)
        if unknown:
            raise ValueError(f"{x['$record']} has no field(s) {unknown}")
        return cls(**{k: _decode(v, allowed, tensors) for k, v in x["fields"].items()})
    raise ValueError(f"unknown node {sorted(x)[:3]}")


def _by_name(types: Iterable[type]) -> dict[str, type]:
    return {t.__name__: t for t in types}


def save_records(tree: Any, path: str | Path, types: Iterable[type] = ()) -> Path:
    """Write ``tree`` into the folder ``path`` (replacing an earlier one) atomically.

    >>> import tempfile
    >>> save_records({"a": [1, 2]}, Path(tempfile.mkdtemp()) / "records").name
    'records'
    """
    from safetensors.torch import save_file

    path = Path(path)
    enc = _Encoder(_by_name(types))
    root = enc(tree)
    from gralc.safe_load import file_sha256

    with atomic_path(path, folder=True) as tmp:  # an earlier folder is moved aside, then removed
        save_file(enc.tensors, str(tmp / TENSORS))
        # the tensors' own digest: a cache entry whose bytes changed since is a miss, not data
        (tmp / RECORDS).write_text(
            json.dumps({"format": FORMAT, "version": VERSION, "tensors_sha256": file_sha256(tmp / TENSORS),
                        "root": root}, ensure_ascii=False),
            encoding="utf-8",
        )
    return path


def load_records(path: str | Path, types: Iterable[type] = (), what: str = "record folder") -> Any:
    """Inverse of :func:`save_records` for the same ``types``; ``FileNotFoundError`` when
    ``path`` is not a folder, ``ValueError`` naming it when it is damaged or foreign.

    >>> import tempfile; d = Path(tempfile.mkdtemp()) / "records"
    >>> load_records(save_records({"a": [1, 2]}, d))
    {'a': [1, 2]}
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"{what} not found: {path}")
    try:
        head = read_json_untrusted((path / RECORDS), allow_interpolation=True)
        if not isinstance(head, dict) or head.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        if head.get("version") != VERSION:
            raise ValueError(f"format version {head.get('version')}, this GraLC reads {VERSION}")
        from gralc.safe_load import file_sha256

        if file_sha256(path / TENSORS) != head.get("tensors_sha256"):
            raise ValueError(f"{TENSORS} is not the file {RECORDS} records (SHA-256 differs): "
                             "changed since it was written")
        tensors = load_file(str(path / TENSORS))
        return _decode(head["root"], _by_name(types), tensors)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, SafetensorError) as exc:
        raise ValueError(f"{path}: not a readable {what} ({exc}); write it again") from None
