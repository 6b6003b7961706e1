"""Evaluation reports: metrics.json / metrics.csv / per_query.jsonl / gains.json / config.yaml / tables.md.

The Markdown tables follow the paper's layout: Table 1 (PubMedQA* ranking), Table 4
(document-length conditions, ``pmc[<condition>]`` benchmarks), Table 5 (section coverage and
cross-section recall), Table 6 (generation, when ``gen_*`` metrics are present) and one
generic ranking table per benchmark, after the evidence-level tables and each row's paired gain
over a reference row (:mod:`gralc.evaluation.significance`). Every table carries the chunk count and mean chunk
length. With paper reference numbers (``paper``), each metric the paper reports gets a
``paper`` and a ``Δ`` (ours - paper) column. Only the numbers passed in are reported.
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gralc.atomic import atomic_write, write_json_atomic, write_text_atomic
from gralc.documents.conditions import CONDITIONS
from gralc.evaluation.significance import FoldPairs, SignificanceConfig, paired_gain

if TYPE_CHECKING:  # runner imports torch; the report only reads its records
    from gralc.evaluation.methods import MethodResult

PaperRef = Mapping[str, Mapping[str, float]]  # {method: {metric: value}}

#: the paper's rows by our row names (its "GraLC (KG)" is our gralc_cosine, "GraLC (+Graph)" gralc)
_METHODS = ("naive", "semantic", "late", "structure_aware", "gralc_cosine", "gralc")
_TABLE1 = {  # PubMedQA*: MRR, R@1, R@3, R@5, R@10 per method (paper Table 1)
    "keys": ("mrr", "recall@1", "recall@3", "recall@5", "recall@10"),
    "naive": (0.9787, 0.9690, 0.9880, 0.9900, 0.9960),
    "semantic": (0.9802, 0.9710, 0.9880, 0.9910, 0.9950),
    "late": (0.9768, 0.9660, 0.9860, 0.9920, 0.9960),
    "structure_aware": (0.9765, 0.9660, 0.9850, 0.9890, 0.9940),
    "gralc_cosine": (0.9687, 0.9520, 0.9830, 0.9880, 0.9930),
    "gralc": (0.9502, 0.9260, 0.9700, 0.9820, 0.9930),
}
_TABLE45 = {  # per condition, methods in _METHODS order: MRR, R@1, R@5 (Table 4), SecCov@5/@20 (Table 5)
    "keys": ("mrr", "recall@1", "recall@5", "seccov_pairs@5", "seccov_pairs@20"),
    "introduction": ((0.398, 0.327, 0.480, 1.00, 1.00), (0.488, 0.430, 0.553, 1.00, 1.00),
                     (0.379, 0.313, 0.465, 1.00, 1.00), (0.393, 0.324, 0.477, 2.32, 3.97),
                     (0.364, 0.290, 0.451, 2.33, 3.95), (0.347, 0.271, 0.436, 2.35, 3.95)),
    "partial": ((0.361, 0.288, 0.453, 1.00, 1.00), (0.555, 0.489, 0.637, 1.00, 1.00),
                (0.339, 0.267, 0.422, 1.00, 1.00), (0.387, 0.320, 0.469, 3.52, 10.08),
                (0.339, 0.266, 0.429, 3.74, 10.84), (0.358, 0.282, 0.454, 3.63, 10.84)),
    "full": ((0.344, 0.268, 0.435, 1.00, 1.00), (0.517, 0.448, 0.607, 1.00, 1.00),
             (0.326, 0.263, 0.395, 1.00, 1.00), (0.365, 0.296, 0.446, 4.26, 14.43),
             (0.323, 0.261, 0.397, 4.46, 15.57), (0.332, 0.269, 0.407, 4.36, 15.57)),
}


def _paper_reference() -> dict[str, dict[str, dict[str, float]]]:
    ref = {"pubmedqa": {m: dict(zip(_TABLE1["keys"], _TABLE1[m])) for m in _METHODS}}
    for cond in ("introduction", "partial", "full"):
        ref[f"pmc[{cond}]"] = {  # Table 5: CS Recall@20 is 0.000 everywhere
            m: {**dict(zip(_TABLE45["keys"], v)), "cross_section_recall@20": 0.0}
            for m, v in zip(_METHODS, _TABLE45[cond])
        }
    return ref


#: Reference numbers of the GraLC-RAG paper: {benchmark family or name: {our method id:
#: {metric: value}}} from Table 1 (PubMedQA*) and Tables 4/5 (PMC conditions). The paper's
#: SecCov@k is an unnormalised count of distinct sections, i.e. our ``seccov_pairs@k``. For the
#: tables' paper/Δ columns only, never for plots (reference pitfall 12).
PAPER_REFERENCE: dict[str, dict[str, dict[str, float]]] = _paper_reference()

TABLE1_COLUMNS = ["mrr", "recall@1", "recall@3", "recall@5", "recall@10", "ndcg@10"]
TABLE4_COLUMNS = ["mrr", "recall@1", "recall@5"]
TABLE5_COLUMNS = ["seccov_pairs@5", "seccov_pairs@20", "seccov_doc_frac@5", "seccov_doc_frac@20",
                  "cross_section_recall@5", "cross_section_recall@10", "cross_section_recall@20"]
GENERATION_COLUMNS = ["gen_f1", "gen_section_diversity@5"]
#: evidence-level columns first in every report (gralc.evaluation.evidence), document-level MRR
#: beside them for contrast
EVIDENCE_COLUMNS = ["ev_mrr", "ev_recall@1", "ev_recall@5", "ev_recall@20", "ev_recall@256wp",
                    "ev_recall@512wp", "ev_recall@1024wp", "ev_ndcg@10", "wa_ndcg@10", "mrr"]
BUDGET_BASES = ("ev_recall", "ev_precision", "ev_iou")
SIZE_COLUMNS = ["n_chunks", "tokens_mean", "pieces_mean"]  # beside every table
_LABELS = {"mrr": "doc MRR", "recall": "doc R", "ndcg": "doc nDCG", "ev_mrr": "ev MRR",
           "ev_recall": "ev R", "ev_ndcg": "ev nDCG", "ev_precision": "ev P", "ev_iou": "ev IoU",
           "wa_ndcg": "within-article nDCG", "pieces_mean": "mean word-pieces", "seccov_pairs": "SecCov pairs", "seccov_doc": "SecCov doc",
           "seccov_doc_frac": "SecCov doc frac", "cross_section_recall": "CS R", "gen_f1": "Gen F1",
           "gen_section_diversity": "SecDiv", "n_chunks": "chunks", "tokens_mean": "mean tokens",
           "n_questions": "questions", "ms_per_query": "ms/query"}
_COUNTS = ("seccov_pairs", "seccov_doc", "gen_section_diversity")  # averages of counts: 2 decimals
_UNRANKED = {"n_questions", "n_cross_section_questions", "n_generation_questions", "ms_per_query",
             "n_evidence_questions"}


# ----- lookup and formatting ---------------------------------------------------------------
def family(benchmark: str) -> str:
    """``pmc[full]`` -> ``pmc``; a name without brackets is its own family.

    >>> family("pmc[full]"), family("covidqa")
    ('pmc', 'covidqa')
    """
    return benchmark.split("[", 1)[0]


def condition(benchmark: str) -> str | None:
    """``pmc[full]`` -> ``full``; None without brackets.

    >>> condition("pmc[full]"), condition("covidqa")
    ('full', None)
    """
    m = re.search(r"\[(.+)\]$", benchmark)
    return m.group(1) if m else None


def paper_for(paper: Mapping[str, PaperRef] | None, benchmark: str) -> PaperRef | None:
    """Reference numbers for ``benchmark``: an exact key first, then its family.

    >>> paper_for({"pmc": {"bm25": {"mrr": 0.4}}}, "pmc[full]")
    {'bm25': {'mrr': 0.4}}
    """
    if not paper:
        return None
    return paper.get(benchmark) or paper.get(family(benchmark))


def value(result: MethodResult, key: str) -> float | None:
    """``key`` from the metrics, then the chunk statistics, then the timings (None if absent).

    >>> from gralc.evaluation.methods import MethodResult
    >>> value(MethodResult("bm25", "b", {"mrr": 0.5}, {"n_chunks": 27.0}, {}, []), "n_chunks")
    27.0
    """
    for source in (result.metrics, result.chunk_stats, result.timings):
        if key in source:
            return float(source[key])
    return None


def label(key: str) -> str:
    """Display name of a metric key: ``recall@5`` -> ``doc R@5``.

    >>> label("recall@5")
    'doc R@5'
    """
    base, _, k = key.partition("@")
    return _LABELS.get(base, base) + (f"@{k}" if k else "")


def fmt(key: str, v: float | None) -> str:
    """A cell: 4 decimals for rates, 2 for averaged counts, integers for chunk counts.

    >>> fmt("mrr", 0.51234), fmt("n_chunks", 27.0)
    ('0.5123', '27')
    """
    if v is None:
        return "–"
    if math.isnan(v):
        return "n/a"
    base = key.partition("@")[0]
    if base in ("n_chunks", "n_questions", "n_docs", "n_evidence_questions"):
        return f"{v:.0f}"
    if base in ("tokens_mean", "pieces_mean", "ms_per_query"):
        return f"{v:.1f}"
    return f"{v:.2f}" if base in _COUNTS else f"{v:.4f}"


def _ordered(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def benchmarks_of(results: Sequence[MethodResult]) -> list[str]:
    """Benchmark names in first-seen order.

    >>> from gralc.evaluation.methods import MethodResult
    >>> benchmarks_of([MethodResult("bm25", "b", {}, {}, {}, []), MethodResult("late", "a", {}, {}, {}, []),
    ...                MethodResult("late", "b", {}, {}, {}, [])])
    ['b', 'a']
    """
    return _ordered([r.benchmark for r in results])


# ----- tables ------------------------------------------------------------------------------
Cell = tuple[str, bool]  # (text, best in its column)


def table_cells(
    results: Sequence[MethodResult],
    benchmark: str | Sequence[str],
    columns: Sequence[str],
    paper: PaperRef | Mapping[str, PaperRef] | None = None,
) -> tuple[list[str], list[list[Cell]]]:
    """Header and rows of a method table over one benchmark or several (then a first
    ``benchmark`` column is added, and ``paper`` is keyed by benchmark/family). Metric columns
    absent from every row are dropped; the chunk count and mean tokens are appended; each
    metric with a paper value gets ``paper`` and ``Δ`` columns. ``best`` marks the highest
    value of a metric column within each benchmark.

    >>> from gralc.evaluation.methods import MethodResult
    >>> table_cells([MethodResult("bm25", "demo", {"mrr": 0.5}, {}, {}, [])], "demo", ["mrr"])
    (['method', 'doc MRR'], [[('bm25', False), ('0.5000', False)]])
    """
    multi = not isinstance(benchmark, str)
    benches = list(benchmark) if multi else [benchmark]
    rows_of = {b: [r for r in results if r.benchmark == b] for b in benches}
    if not any(rows_of.values()):
        raise ValueError(f"no results for benchmark(s) {benches}; have {benchmarks_of(results)}")
    refs = {b: (paper_for(paper, b) if multi else paper) or {} for b in benches}  # type: ignore[arg-type]
    present = [c for c in columns if any(value(r, c) is not None for rs in rows_of.values() for r in rs)]
    header = (["benchmark"] if multi else []) + ["method"]
    plan: list[tuple[str, str]] = []  # (kind, key)
    for c in present:
        plan.append(("ours", c))
        if any(c in refs[b].get(r.method, {}) for b in benches for r in rows_of[b]):
            plan += [("paper", c), ("delta", c)]
    plan += [("size", c) for c in SIZE_COLUMNS
             if any(value(r, c) is not None for rs in rows_of.values() for r in rs)]
    names = {"ours": "{}", "size": "{}", "paper": "{} paper", "delta": "Δ {}"}
    header += [names[kind].format(label(k)) for kind, k in plan]
    rows: list[list[Cell]] = []
    for b in benches:
        best = {}  # highest value of a quality metric, when the rows differ
        for c in present:
            vals = [v for r in rows_of[b] if (v := value(r, c)) is not None and not math.isnan(v)]
            if c not in _UNRANKED and len(set(vals)) > 1:
                best[c] = max(vals)
        for r in rows_of[b]:
            ref = refs[b].get(r.method, {})
            row: list[Cell] = ([(b, False)] if multi else []) + [(r.method, False)]
            for kind, k in plan:
                v = value(r, k)
                if kind == "paper":
                    row.append((fmt(k, ref.get(k)), False))
                elif kind == "delta":
                    d = None if v is None or k not in ref else v - ref[k]
                    row.append(("–" if d is None else f"{d:+.4f}", False))
                else:
                    row.append((fmt(k, v), kind == "ours" and v is not None and v == best.get(k)))
            rows.append(row)
    return header, rows


def format_table(
    results: Sequence[MethodResult],
    benchmark: str | Sequence[str],
    columns: Sequence[str],
    paper: PaperRef | Mapping[str, PaperRef] | None = None,
) -> str:
    """A Markdown table (see :func:`table_cells`); the best value per column is **bold**.

    >>> from gralc.evaluation.methods import MethodResult
    >>> print(format_table([MethodResult("bm25", "demo", {"mrr": 0.5}, {}, {}, [])], "demo", ["mrr"]))
    | method | doc MRR |
    |---|---|
    | bm25 | 0.5000 |
    """
    header, rows = table_cells(results, benchmark, columns, paper)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(f"**{t}**" if b else t for t, b in row) + " |" for row in rows]
    return "\n".join(lines)


def print_table(results: Sequence[MethodResult], benchmark: str | Sequence[str], columns: Sequence[str],
                paper: PaperRef | Mapping[str, PaperRef] | None = None, console: Any = None) -> None:
    """The same table on the terminal with rich (best values bold; the console is widened to
    fit the table unless one is given).

    Example: ``print_table(results, "covidqa", ["mrr", "recall@5"])`` prints :func:`format_table`'s
    table on the terminal, the best value of each column in bold.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    header, rows = table_cells(results, benchmark, columns, paper)
    table = Table(title=escape(benchmark) if isinstance(benchmark, str) else None)
    first = header.index("method")
    for i, h in enumerate(header):
        table.add_column(escape(h), justify="left" if i <= first else "right", no_wrap=True)
    for row in rows:
        table.add_row(*[f"[bold]{escape(t)}[/bold]" if b else escape(t) for t, b in row])
    if console is None:
        widths = [max(len(h), *(len(r[i][0]) for r in rows)) for i, h in enumerate(header)]
        console = Console(width=max(80, sum(widths) + 3 * len(widths) + 1))
    console.print(table)


def metric_keys(results: Sequence[MethodResult]) -> list[str]:
    """Every metric key of the results: ranking, coverage, cross-section, then the rest.

    >>> from gralc.evaluation.methods import MethodResult
    >>> metric_keys([MethodResult("bm25", "b", {"zeta": 1.0, "mrr": 0.5}, {}, {}, [])])
    ['mrr', 'zeta']
    """
    keys = _ordered([k for r in results for k in r.metrics])
    order = ["mrr", "recall", "ndcg", "seccov_pairs", "seccov_doc", "seccov_doc_frac", "cross_section_recall"]

    def rank(key: str) -> tuple[int, int, str]:
        base, _, k = key.partition("@")
        return (order.index(base) if base in order else len(order), int(k) if k.isdigit() else 0, key)

    return sorted(keys, key=rank)


def generic_columns(results: Sequence[MethodResult]) -> list[str]:
    """Ranking metrics of a generic table: MRR, every Recall@k, nDCG@10, questions, ms/query.

    >>> from gralc.evaluation.methods import MethodResult
    >>> generic_columns([MethodResult("bm25", "b", {"mrr": 0.5, "recall@5": 1.0}, {}, {}, [])])
    ['mrr', 'recall@5', 'n_questions', 'ms_per_query']
    """
    keys = [k for k in metric_keys(results) if k.partition("@")[0] in ("mrr", "ndcg", "recall")]
    return keys + ["n_questions", "ms_per_query"]


def evidence_columns(results: Sequence[MethodResult]) -> list[str]:
    """The evidence columns present in ``results`` ([] when no question carries evidence).

    >>> from gralc.evaluation.methods import MethodResult
    >>> evidence_columns([MethodResult("bm25", "b", {"mrr": 0.5}, {}, {}, [])])
    []
    """
    return [c for c in EVIDENCE_COLUMNS if any(c in r.metrics for r in results)] \
        if any(k.startswith("ev_") for r in results for k in r.metrics) else []


def budget_columns(results: Sequence[MethodResult]) -> list[str]:
    """Budgeted evidence recall, precision and IoU at every budget present.

    >>> from gralc.evaluation.methods import MethodResult
    >>> budget_columns([MethodResult("bm25", "b", {"ev_recall@512wp": 0.5}, {}, {}, [])])
    ['ev_recall@512wp']
    """
    pat = re.compile(r"^(ev_recall|ev_precision|ev_iou)@(\d+)wp$")
    found = {(m.group(1), int(m.group(2))) for r in results for k in r.metrics if (m := pat.match(k))}
    return [f"{b}@{n}wp" for b in BUDGET_BASES for n in sorted({n for _, n in found}) if (b, n) in found]


def gains_over_reference(results: Sequence[MethodResult], config: SignificanceConfig
                         ) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``{benchmark: {method: {metric: gain}}}``: each row's gain over ``config.reference`` on
    the questions both scored (:meth:`PairedGain.as_dict`, paired by question, the bootstrap
    resampling gold documents); benchmarks without the reference row are left out.

    Example: ``gains_over_reference(results, SignificanceConfig(reference="bm25"))["covidqa"]["late"]["mrr"]``
    -> ``{'gain': ..., 'low': ..., 'high': ..., ...}``: late's MRR gain over bm25 with its interval.
    """
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for b in benchmarks_of(results):
        rows = [r for r in results if r.benchmark == b]
        ref = next((r for r in rows if r.method == config.reference), None)
        if ref is None:
            continue
        base = {q["question_id"]: q for q in ref.per_query}
        for r in rows:
            if r is ref:
                continue
            for metric in config.metrics:
                pairs = [(q[metric], base[q["question_id"]][metric], q.get("gold_doc_id", q["question_id"]))
                         for q in r.per_query
                         if metric in q and metric in base.get(q["question_id"], {})]
                if pairs:
                    a, ref_values, docs = zip(*pairs, strict=True)
                    got = paired_gain([FoldPairs(a, ref_values, docs)], config.resamples, config.level, config.seed)
                    out.setdefault(b, {}).setdefault(r.method, {})[metric] = {**got.as_dict(), "questions": len(pairs)}
    return out


def gains_table(gains: Mapping[str, Mapping[str, Mapping[str, float]]], reference: str) -> str:
    """A Markdown table of one benchmark's gains: per row and metric, ``gain [low, high]``;
    a gain whose interval excludes 0 is **bold**.

    >>> print(gains_table({"late": {"mrr": {"gain": 0.1, "low": 0.02, "high": 0.2}}}, "bm25"))
    | method | doc MRR − bm25 |
    |---|---|
    | late | **+0.100 [+0.020, +0.200]** |
    """
    metrics = _ordered([m for by_metric in gains.values() for m in by_metric])
    lines = ["| method | " + " | ".join(f"{label(m)} − {reference}" for m in metrics) + " |",
             "|" + "|".join(["---"] * (len(metrics) + 1)) + "|"]
    for method, by_metric in gains.items():
        cells = []
        for m in metrics:
            g = by_metric.get(m)
            text = "" if g is None else f"{g['gain']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}]"
            cells.append(f"**{text}**" if g is not None and (g["low"] > 0 or g["high"] < 0) else text)
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_tables(results: Sequence[MethodResult], paper: Mapping[str, PaperRef] | None = None,
                    gains: Mapping[str, Any] | None = None, significance: SignificanceConfig | None = None) -> str:
    """All paper-shaped tables whose data is present (with paper/Δ columns when ``paper`` has
    numbers for them), then a generic ranking table per benchmark; with ``gains``
    (:func:`gains_over_reference` under ``significance``), each benchmark's gains table.

    Example: ``markdown_tables(results)`` -> the Markdown of ``tables.md``: the paper-shaped tables
    whose data is present, then one ranking table per benchmark.
    """
    benches = benchmarks_of(results)
    parts = ["# GraLC evaluation report", ""]
    for b in benches:  # evidence level first: does the right passage come back?
        rows = [r for r in results if r.benchmark == b]
        if evidence_columns(rows):
            n = max(value(r, "n_evidence_questions") or 0 for r in rows)
            parts += [f"## Evidence level: {b} ({n:.0f} questions with evidence)", "",
                      format_table(results, b, evidence_columns(rows)), "",
                      f"### Budgeted evidence recall, precision and IoU ({b})", "",
                      format_table(results, b, budget_columns(rows)), ""]
    for b in benches:  # then: is a row's lead over the reference more than noise?
        if gains and significance and gains.get(b):
            parts += [f"## Gains over {significance.reference}: {b}", "",
                      f"Each row minus {significance.reference} on the same questions, with a "
                      f"{significance.level:.0%} interval from a paired bootstrap over the gold "
                      f"documents ({significance.resamples} resamples); **bold**: the interval "
                      "excludes 0.", "", gains_table(gains[b], significance.reference), ""]
    pubmedqa = [b for b in benches if family(b) == "pubmedqa"]
    for b in pubmedqa:
        parts += [f"## Table 1 style: PubMedQA* retrieval ({b})", "",
                  format_table(results, b, TABLE1_COLUMNS, paper_for(paper, b)), ""]
    rank_cond = {c: i for i, c in enumerate(CONDITIONS)}
    pmc = sorted((b for b in benches if family(b) == "pmc"), key=lambda b: rank_cond.get(condition(b) or "", 99))
    if pmc:
        parts += ["## Table 4 style: document-length conditions", "",
                  format_table(results, pmc, TABLE4_COLUMNS, paper), ""]
    coverage = [b for b in (pmc + [b for b in benches if b not in pmc])
                if any(r.benchmark == b and value(r, c) is not None for r in results for c in TABLE5_COLUMNS)]
    if coverage:
        parts += ["## Table 5 style: section coverage and cross-section recall", "",
                  format_table(results, coverage, TABLE5_COLUMNS, paper), ""]
    generation = [b for b in benches if any(r.benchmark == b and "gen_f1" in r.metrics for r in results)]
    if generation:
        columns = GENERATION_COLUMNS + [k for k in metric_keys(results) if k.startswith("gen_") and k not in GENERATION_COLUMNS]
        parts += ["## Table 6 style: generation", "", format_table(results, generation, columns, paper), ""]
    for b in benches:
        parts += [f"## {b}", "", format_table(results, b, generic_columns(results)), ""]
    return "\n".join(parts)


# ----- files -------------------------------------------------------------------------------
def _clean(obj: Any) -> Any:
    """JSON-safe copy: NaN/inf -> None (strict JSON), paths -> str."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def config_dict(config: Any) -> dict[str, Any]:
    """A plain dict of a config given as dict, OmegaConf node or dataclass instance.

    >>> from gralc.config import WandbConfig
    >>> config_dict(WandbConfig())["project"]
    'gralc'
    """
    from omegaconf import DictConfig, OmegaConf

    if isinstance(config, DictConfig):
        return OmegaConf.to_container(config, resolve=True)  # type: ignore[return-value]
    if is_dataclass(config) and not isinstance(config, type):
        return OmegaConf.to_container(OmegaConf.structured(config), resolve=True)  # type: ignore[return-value]
    if isinstance(config, Mapping):
        return OmegaConf.to_container(OmegaConf.create(_clean(dict(config))), resolve=True)  # type: ignore[return-value]
    raise TypeError(f"config must be a dict, DictConfig or dataclass instance, got {type(config).__name__}")


def write_report(
    results: Sequence[MethodResult],
    out_dir: str | Path,
    config: Any,
    timings: Mapping[str, float] | None = None,
    paper: Mapping[str, PaperRef] | None = None,
    significance: SignificanceConfig | None = None,
) -> Path:
    """Write every report file into ``out_dir`` and return ``out_dir/metrics.json``.

    metrics.json: ``{benchmark: {method: {metric: value, "chunk_stats": {...}, "timings":
    {...}}}, "run": run_metadata + config + timings}``. metrics.csv: one row per
    (benchmark, method), every metric, chunk statistic (``chunks.*``) and timing
    (``time.*``) as a column. per_query.jsonl: one line per (benchmark, method, question).
    config.yaml: the resolved config. tables.md: :func:`markdown_tables`. ``paper``: reference
    numbers keyed by benchmark or family (e.g. :data:`PAPER_REFERENCE`), or None.
    gains.json: with ``significance`` (its ``reference`` set), :func:`gains_over_reference`.

    Example: ``write_report(results, "results/run", cfg)`` -> ``Path('results/run/metrics.json')``,
    with metrics.csv, per_query.jsonl, config.yaml and tables.md beside it.
    """
    if not results:
        raise ValueError("write_report: no results to report")
    seen: set[tuple[str, str]] = set()
    for r in results:
        if r.benchmark == "run":
            raise ValueError("a benchmark may not be named 'run' (reserved for run metadata in metrics.json)")
        if (r.benchmark, r.method) in seen:
            raise ValueError(f"two results for method {r.method!r} on benchmark {r.benchmark!r}: names must be unique")
        seen.add((r.benchmark, r.method))
    from gralc.runinfo import run_metadata  # imports torch (version info)

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = config_dict(config)

    payload: dict[str, Any] = {}
    for r in results:
        payload.setdefault(r.benchmark, {})[r.method] = {**r.metrics, "chunk_stats": r.chunk_stats, "timings": r.timings}
    payload["run"] = meta = run_metadata({"config": cfg, "timings": dict(timings or {})})
    path = out / "metrics.json"
    write_json_atomic(path, _clean(payload))

    metrics = metric_keys(results)
    stats = _ordered([k for r in results for k in r.chunk_stats])
    times = _ordered([k for r in results for k in r.timings])
    with atomic_write(out / "metrics.csv", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["benchmark", "method", *metrics, *(f"chunks.{k}" for k in stats), *(f"time.{k}" for k in times)])
        for r in results:
            writer.writerow([r.benchmark, r.method, *(r.metrics.get(k, "") for k in metrics),
                             *(r.chunk_stats.get(k, "") for k in stats), *(r.timings.get(k, "") for k in times)])

    with atomic_write(out / "per_query.jsonl") as fh:
        for r in results:
            for row in r.per_query:
                fh.write(json.dumps(_clean({"benchmark": r.benchmark, "method": r.method, **row})) + "\n")

    gains = None
    if significance is not None and significance.reference:
        gains = gains_over_reference(results, significance)
        write_json_atomic(out / "gains.json", _clean({"reference": significance.reference,
                                                      "level": significance.level, "gains": gains}))
    from omegaconf import OmegaConf

    write_text_atomic(out / "config.yaml", OmegaConf.to_yaml(OmegaConf.create(cfg)))
    stamp = f"\n\nRun {meta['created']}, code {meta['git_hash']}, gralc {meta['gralc_version']}.\n"
    write_text_atomic(out / "tables.md",
                      markdown_tables(results, paper, gains, significance).replace("\n", stamp, 1))
    return path

