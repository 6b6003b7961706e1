"""GraLC's layers import only downward (README "Repository layout"): a test that walks every
module's imports (module level, function level and TYPE_CHECKING alike) and fails on an
upward import or an import between peers of the top library layer."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gralc"

#: package or module under gralc -> layer (higher imports lower, never the reverse)
LAYERS: dict[str, float] = {
    "atomic": -3,  # the one atomic writer of files and folders (runinfo re-exports one)
    **dict.fromkeys(("safe_load", "runinfo"), -2),  # loaders of untrusted files, run metadata
    **dict.fromkeys(("artefacts", "config", "record_store"), -1),
    **dict.fromkeys(("documents", "knowledge", "encoding"), 0),
    "chunking": 1,
    "pipeline": 1.5,  # encoder + linker + chunkers, shared by everything above
    "model": 2,
    "retrieval": 3,
    "data": 4,
    **dict.fromkeys(("training", "evaluation", "inference"), 5),
    **dict.fromkeys(("cli", "index", "search", "export", "shard_index", "sweep", "demo", "graph"), 6),
}
CLI = 6


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out.append((".".join(p for p in parts if p != "__init__"), path))
    return out


def _layer(module: str) -> tuple[str, float]:
    parts = module.split(".")
    if len(parts) == 1:
        return "gralc", -1
    if parts[-1] == "__main__":
        return parts[1], CLI  # python -m gralc.<package>: a command line
    top = parts[1]
    if top not in LAYERS:
        pytest.fail(f"gralc.{top} has no layer: add it to LAYERS in {__file__}")
    return top, LAYERS[top]


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
    return [(n, m) for n, m in found if m == "gralc" or m.startswith("gralc.")]


def upward_imports() -> list[str]:
    bad = []
    for module, path in _modules():
        top, layer = _layer(module)
        for line, target in _imports(path):
            if target == "gralc":
                continue
            ttop, tlayer = _layer(target)
            if ttop == top:
                continue
            peers = tlayer == layer and layer not in (0, CLI)
            if tlayer > layer or peers:
                bad.append(f"{module}:{line} imports {target} (layer {tlayer} from layer {layer})")
    return bad


def test_every_import_points_down():
    assert upward_imports() == []


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The walker sees function-level imports (the kind that hid the old package cycle)."""
    fake = tmp_path / "gralc"
    (fake / "model").mkdir(parents=True)
    (fake / "model" / "x.py").write_text("def f():\n    from gralc.training.run import train\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert upward_imports() == ["gralc.model.x:2 imports gralc.training.run (layer 5 from layer 2)"]
