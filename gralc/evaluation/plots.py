"""Figures of an evaluation run, drawn ONLY from the results passed in (reference pitfall 12).

* ``mrr_by_condition.png``: MRR per method across the document-length conditions (paper
  Fig. 6), when more than one ``pmc[<condition>]`` benchmark is present.
* ``seccov_by_k.png``: section coverage ``seccov_pairs@k`` against k, one line per method,
  one panel per benchmark (paper Fig. 7 / Table 5).
* ``precision_vs_breadth.png``: MRR against SecCov pairs@20 (the largest k when 20 is
  absent), a labelled point per method, one panel per benchmark (paper Sect. 5.1).

* ``evidence_vs_budget_<benchmark>.png``: budgeted evidence recall against the word-pieces of
  retrieved text, one line per method, one figure per benchmark with evidence metrics.

A figure whose data is absent is skipped with a log message.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib
from matplotlib.figure import Figure  # object API, no pyplot state: nothing to close

from gralc.documents.conditions import CONDITIONS
from gralc.evaluation.report import benchmarks_of, condition, family

if TYPE_CHECKING:  # runner imports torch; the report only reads its records
    from gralc.evaluation.methods import MethodResult

logger = logging.getLogger(__name__)
_PNG_META = {"Software": None}  # no version string: same inputs give the same bytes


def _ks(results: Sequence[MethodResult], base: str) -> list[int]:
    """The k of every ``<base>@k`` metric present, ascending."""
    pat = re.compile(rf"^{re.escape(base)}@(\d+)$")
    return sorted({int(m.group(1)) for r in results for key in r.metrics if (m := pat.match(key))})


def _methods(results: Sequence[MethodResult]) -> list[str]:
    return list(dict.fromkeys(r.method for r in results))


def _save(fig: Figure, path: Path) -> Path:
    from gralc.atomic import atomic_write

    fig.tight_layout()
    with atomic_write(path, "wb") as f:  # the format from the name, as savefig(path) takes it
        fig.savefig(f, format=Path(path).suffix[1:] or None, dpi=120, metadata=_PNG_META)
    return path


def plot_mrr_by_condition(results: Sequence[MethodResult], path: Path) -> Path | None:
    """MRR of each method per pmc condition (conditions in the paper's order).

    Example: ``plot_mrr_by_condition(results, Path("results/run/mrr_by_condition.png"))`` -> that
    path (None without ``pmc[...]`` rows).
    """
    order = {c: i for i, c in enumerate(CONDITIONS)}
    benches = sorted((b for b in benchmarks_of(results) if family(b) == "pmc"),
                     key=lambda b: order.get(condition(b) or "", len(order)))
    if len(benches) < 2:
        logger.info("skip %s: needs results on more than one pmc condition, have %s", path.name, benches)
        return None
    fig = Figure(figsize=(6.5, 4))
    ax = fig.add_subplot()
    x = range(len(benches))
    for method in _methods(results):
        by_bench = {r.benchmark: r.metrics.get("mrr") for r in results if r.method == method}
        ys = [by_bench.get(b) for b in benches]
        pts = [(i, y) for i, y in zip(x, ys) if y is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=method)
    ax.set_xticks(list(x), [condition(b) or b for b in benches])
    ax.set_xlabel("document-length condition")
    ax.set_ylabel("MRR")
    ax.set_title("Retrieval MRR by document-length condition")
    ax.legend(fontsize="small")
    return _save(fig, path)


def plot_seccov_by_k(results: Sequence[MethodResult], path: Path) -> Path | None:
    """SecCov pairs@k against k: one panel per benchmark with the metric, a line per method.

    Example: ``plot_seccov_by_k(results, Path("results/run/seccov_by_k.png"))`` -> that path (None
    without SecCov metrics).
    """
    benches = [b for b in benchmarks_of(results) if _ks([r for r in results if r.benchmark == b], "seccov_pairs")]
    if not benches:
        logger.info("skip %s: no seccov_pairs@k metric in the results", path.name)
        return None
    fig = Figure(figsize=(4.5 * len(benches), 4))
    axes = fig.subplots(1, len(benches), squeeze=False)[0]
    for ax, bench in zip(axes, benches):
        rows = [r for r in results if r.benchmark == bench]
        ks = _ks(rows, "seccov_pairs")
        for r in rows:
            pts = [(k, r.metrics[f"seccov_pairs@{k}"]) for k in ks if f"seccov_pairs@{k}" in r.metrics]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=r.method)
        ax.set_xticks(ks)
        ax.set_xlabel("k")
        ax.set_ylabel("distinct (doc, section) pairs in top-k")
        ax.set_title(f"Section coverage: {bench}")
        ax.legend(fontsize="small")
    return _save(fig, path)


def plot_precision_vs_breadth(results: Sequence[MethodResult], path: Path) -> Path | None:
    """MRR (precision) against SecCov pairs@20 (breadth): a panel per benchmark, a labelled
    point per method.

    Example: ``plot_precision_vs_breadth(results, Path("results/run/precision_breadth.png"))`` -> that
    path (None without MRR and SecCov pairs@20).
    """
    ks = _ks(results, "seccov_pairs")
    if not ks:
        logger.info("skip %s: no seccov_pairs@k metric in the results", path.name)
        return None
    k = 20 if 20 in ks else ks[-1]
    if k != 20:
        logger.info("%s: no seccov_pairs@20, plotting seccov_pairs@%d", path.name, k)
    key = f"seccov_pairs@{k}"
    pts = [r for r in results if key in r.metrics and "mrr" in r.metrics]
    if not pts:
        logger.info("skip %s: no result has both mrr and %s", path.name, key)
        return None
    benches = benchmarks_of(pts)
    fig = Figure(figsize=(4.5 * len(benches), 4))
    axes = fig.subplots(1, len(benches), squeeze=False)[0]
    for ax, bench in zip(axes, benches):
        rows = [r for r in pts if r.benchmark == bench]
        ax.scatter([r.metrics[key] for r in rows], [r.metrics["mrr"] for r in rows])
        for r in rows:
            ax.annotate(r.method, (r.metrics[key], r.metrics["mrr"]), fontsize=7,
                        textcoords="offset points", xytext=(4, 3))
        ax.set_xlabel(f"SecCov pairs@{k} (breadth)")
        ax.set_ylabel("MRR (precision)")
        ax.set_title(f"Precision vs breadth: {bench}")
        ax.margins(0.15)
    return _save(fig, path)


def plot_evidence_vs_budget(results: Sequence[MethodResult], bench: str, path: Path) -> Path | None:
    """``ev_recall@Bwp`` against B (log scale) for every method on ``bench``.

    Example: ``plot_evidence_vs_budget(results, "covidqa", Path("results/run/ev_budget.png"))`` ->
    that path (None when no row has budgeted evidence metrics).
    """
    pat = re.compile(r"^ev_recall@(\d+)wp$")
    rows = [r for r in results if r.benchmark == bench]
    budgets = sorted({int(m.group(1)) for r in rows for k in r.metrics if (m := pat.match(k))})
    if not budgets:
        logger.info("skip %s: no budgeted evidence recall on %s", path.name, bench)
        return None
    fig = Figure(figsize=(9, 5))
    ax = fig.add_subplot()
    # one colour per chunking (a row and its _hybrid / _diverse / _bm25 variants share it);
    # line style per searcher: dense solid, hybrid dotted, BM25 dashed, re-ranked dash-dot
    bases = list(dict.fromkeys(re.sub(r"_(hybrid|diverse|bm25)$", "", r.method) for r in rows))
    palette = matplotlib.colormaps["tab20"].colors
    for r in rows:
        pts = [(b, r.metrics[f"ev_recall@{b}wp"]) for b in budgets if f"ev_recall@{b}wp" in r.metrics]
        m = r.method
        style = ":" if m.endswith("_hybrid") else "--" if "bm25" in m else "-." if m.endswith("_diverse") else "-"
        color = palette[2 * bases.index(re.sub(r"_(hybrid|diverse|bm25)$", "", m)) % len(palette)]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o", ms=4, color=color, label=m)
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_xlabel("retrieved text (word-pieces, top chunks in rank order)")
    ax.set_ylabel("evidence recall")
    ax.set_title(f"Evidence recall vs retrieved text: {bench}")
    ax.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, path)


def _file_name(bench: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", bench).strip("_")


def write_plots(results: Sequence[MethodResult], out_dir: str | Path) -> list[Path]:
    """Draw every figure whose data is present into ``out_dir``; returns the paths written.

    Example: ``write_plots(results, "results/run")`` -> the PNG paths drawn (``[]`` when no figure's
    data is present).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [
        plot_mrr_by_condition(results, out / "mrr_by_condition.png"),
        plot_seccov_by_k(results, out / "seccov_by_k.png"),
        plot_precision_vs_breadth(results, out / "precision_vs_breadth.png"),
        *(plot_evidence_vs_budget(results, b, out / f"evidence_vs_budget_{_file_name(b)}.png")
          for b in benchmarks_of(results)),
    ]
    return [p for p in written if p is not None]
