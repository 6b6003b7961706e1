"""bench/ holds speed and memory benchmarks, thin drivers of the library: at most 1,700 lines (1,200 until the
speed benchmarks scale, retrieval_latency and graph_cost moved here from gralc/experiments),
no bench module imports another, and no test imports bench/ (what a test checks lives in
gralc/, where the product and the experiments share it)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIMIT = 1700


def _bench_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
    return [m for m in found if m == "bench" or m.startswith("bench.")]


def test_bench_stays_thin():
    lines = {p.name: len(p.read_text(encoding="utf-8").splitlines())
             for p in sorted((REPO / "bench").glob("*.py"))}
    assert sum(lines.values()) <= LIMIT, (
        f"bench/ has {sum(lines.values())} lines (limit {LIMIT}): {lines}; move what is shared "
        "into gralc/ (experiments into gralc/experiments/)")


def test_no_bench_module_imports_another():
    bad = {p.name: _bench_imports(p) for p in sorted((REPO / "bench").glob("*.py"))}
    assert not {k: v for k, v in bad.items() if v}


def test_no_test_and_no_library_module_imports_bench():
    files = [*sorted((REPO / "tests").rglob("*.py")), *sorted((REPO / "gralc").rglob("*.py"))]
    bad = {str(p.relative_to(REPO)): m for p in files if (m := _bench_imports(p))}
    assert not bad, f"import bench/ (move the code into gralc/): {bad}"
