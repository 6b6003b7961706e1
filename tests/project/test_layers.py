"""GraLC's layers import only downward (docs/architecture.md): a test that walks every
module's imports (module level, function level and TYPE_CHECKING alike) and fails on an
upward import, an import between peers of the top library layer, or an import cycle among
gralc modules. A package's ``__main__`` (``python -m gralc.<package>``) is part of its
package's layer: a command line that needs more lives at the top (``gralc/<verb>.py``)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "gralc"

#: package or module under gralc -> layer (higher imports lower, never the reverse)
LAYERS: dict[str, float] = {
    "terminal": -4,  # the one sanitiser of text printed for a person (imports nothing)
    "atomic": -3,  # the one atomic writer of files and folders (runinfo re-exports one)
    # loaders of untrusted files, run metadata; the error boundary every command line shares
    # (it imports nothing of gralc but terminal, so `python -m gralc.documents` may use it too)
    **dict.fromkeys(("safe_load", "runinfo", "cli"), -2),
    **dict.fromkeys(("artefacts", "config", "record_store"), -1),
    **dict.fromkeys(("documents", "knowledge", "encoding"), 0),
    "chunking": 1,
    "pipeline": 1.5,  # encoder + linker + chunkers, shared by everything above
    "model": 2,
    "retrieval": 3,
    "data": 4,
    **dict.fromkeys(("training", "evaluation", "inference"), 5),
    **dict.fromkeys(("chunk", "index", "search", "serve", "export", "shard_index", "shard", "sweep", "demo",
                     "graph", "train", "eval", "qrels", "soup", "commands", "__main__"), 6),
    "experiments": 7,  # research drivers on top of everything (the product never imports them)
}
CLI = 6

#: gralc.retrieval's rooms -> order (a room imports its own and lower rooms; peers of one order
#: never import each other): the shared parts (one Hit, the one tie-break, rank metrics, TREC
#: files), the baseline chunk indexes and the re-rankers over any ranking of hits, then two jobs
#: built on them (a trained search may re-rank its own hits)
ROOMS: dict[str, int] = {
    **dict.fromkeys(("hits", "ranking", "rank_metrics", "trec"), 0),
    "indexes": 1,  # dense (FAISS), BM25, fusion, the index folder
    "rerank": 1,  # section diversity, Chunk-Link, MAL-RAG: hits in, hits out
    **dict.fromkeys(("trained", "graph"), 2),  # serving stack, SemRAG
}


def _modules() -> dict[str, Path]:
    """Module name -> file, for every module under :data:`PACKAGE`."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(p for p in parts if p != "__init__")] = path
    return out


def _layer(module: str) -> tuple[str, float]:
    parts = module.split(".")
    if len(parts) == 1:
        return "gralc", -1
    top = parts[1]
    if top not in LAYERS:
        pytest.fail(f"gralc.{top} has no layer: add it to LAYERS in {__file__}")
    return top, LAYERS[top]


def _imports(path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """``(line, module)`` of every gralc module ``path`` imports, anywhere in the file;
    ``from gralc.a import b`` names ``gralc.a.b`` when that is a module, else ``gralc.a``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            found.extend((node.lineno, s) for s in subs if s in modules)
            if not all(s in modules for s in subs):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom):
            pytest.fail(f"{path}:{node.lineno}: a relative import; GraLC imports absolutely")
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
    return [(n, m) for n, m in found if m == "gralc" or m.startswith("gralc.")]


def upward_imports() -> list[str]:
    bad = []
    modules = _modules()
    for module, path in modules.items():
        top, layer = _layer(module)
        for line, target in _imports(path, modules):
            if target == "gralc":
                continue
            ttop, tlayer = _layer(target)
            if ttop == top:
                continue
            peers = tlayer == layer and layer not in (0, CLI)
            if tlayer > layer or peers:
                bad.append(f"{module}:{line} imports {target} (layer {tlayer} from layer {layer})")
    return bad


def import_cycles() -> list[str]:
    """Every cycle of the gralc module import graph (one per strongly connected component,
    written ``a:LINE -> b:LINE -> a``: the line of each import on the way round). A package's
    ``__init__`` is a node where it is named (``from gralc.knowledge import EntityLinker``),
    not for every import of one of its modules."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        for line, target in _imports(path, modules):
            if target in modules and target != module:
                edges.setdefault(target, line)
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    cycles = []
    for component in sorted(components):
        members = set(component)
        # shortest way back to the first member (breadth-first inside the component)
        start = component[0]
        previous: dict[str, str] = {}
        frontier = [start]
        while start not in previous:
            nxt = []
            for node in frontier:
                for child in sorted(graph[node]):
                    if child in members and child not in previous:
                        previous[child] = node
                        nxt.append(child)
            frontier = nxt
        path = [start]
        while len(path) == 1 or path[-1] != start:
            path.append(previous[path[-1]])
        path.reverse()  # start -> ... -> start
        steps = [f"{a}:{graph[a][b]}" for a, b in zip(path, path[1:])]
        cycles.append(" -> ".join([*steps, start]))
    return cycles


def _room(module: str) -> tuple[str, int] | None:
    parts = module.split(".")
    if parts[:2] != ["gralc", "retrieval"] or len(parts) < 3:
        return None
    if parts[2] not in ROOMS:
        pytest.fail(f"{module} is in no room of gralc.retrieval: add it to ROOMS in {__file__}")
    return parts[2], ROOMS[parts[2]]


def room_crossings() -> list[str]:
    """Imports between gralc.retrieval's rooms that go up, or across between peers."""
    bad = []
    modules = _modules()
    for module, path in modules.items():
        if (here := _room(module)) is None:
            continue
        for line, target in _imports(path, modules):
            there = _room(target)
            if there is None or there[0] == here[0]:
                continue
            if there[1] > here[1] or (there[1] == here[1] and here[1] > 0):
                bad.append(f"{module}:{line} imports {target} (room {there[0]} from {here[0]})")
    return bad


def test_retrieval_rooms_import_downward():
    assert room_crossings() == []


def test_the_room_check_catches_a_crossing(tmp_path, monkeypatch):
    _fake_package(tmp_path, monkeypatch, {
        "retrieval/rerank/x.py": "from gralc.retrieval.trained.search import TrainedSearch\n",
        "retrieval/trained/search.py": "",
        "retrieval/indexes/y.py": "from gralc.retrieval.hits import Hit\n",
        "retrieval/hits.py": "",
    })  # fmt: skip
    assert room_crossings() == [
        "gralc.retrieval.rerank.x:1 imports gralc.retrieval.trained.search (room trained from rerank)"
    ]


def test_every_import_points_down():
    assert upward_imports() == []


def test_no_import_cycle():
    assert import_cycles() == []


def _fake_package(tmp_path, monkeypatch, files: dict[str, str]) -> None:
    fake = tmp_path / "gralc"
    for name, text in files.items():
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)


def test_the_check_catches_an_upward_import(tmp_path, monkeypatch):
    """The walker sees function-level imports (the kind that hid the old package cycle)."""
    _fake_package(tmp_path, monkeypatch, {"model/x.py": "def f():\n    from gralc.training.run import train\n"})
    assert upward_imports() == ["gralc.model.x:2 imports gralc.training.run (layer 5 from layer 2)"]


def test_a_package_main_is_in_its_package_layer(tmp_path, monkeypatch):
    """``python -m gralc.chunking`` is no licence to import the pipeline from layer 1."""
    _fake_package(tmp_path, monkeypatch, {
        "chunking/__main__.py": "from gralc.chunking import base\nfrom gralc.pipeline import P\n",
        "chunking/base.py": "",
        "documents/__main__.py": "from gralc.cli import run\n",
    })  # fmt: skip
    assert upward_imports() == [
        "gralc.chunking.__main__:2 imports gralc.pipeline (layer 1.5 from layer 1)"
    ]


def test_the_check_catches_a_cycle(tmp_path, monkeypatch):
    """Function-level and TYPE_CHECKING imports close a cycle too; ``from gralc.a import b``
    of a module ``b`` is an edge to ``b``."""
    _fake_package(tmp_path, monkeypatch, {
        "data/a.py": "def f():\n    from gralc.data import b\n",
        "data/b.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                     "    from gralc.data.a import f\n",
        "data/c.py": "from gralc.data.a import f\n",
    })  # fmt: skip
    assert import_cycles() == ["gralc.data.a:2 -> gralc.data.b:4 -> gralc.data.a"]
