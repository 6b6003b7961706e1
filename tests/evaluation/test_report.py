"""Report files and figures from hand-built MethodResults (no hard-coded numbers: pitfall 12)."""

from __future__ import annotations

import csv
import json
import math

import pytest
from omegaconf import OmegaConf

from gralc.evaluation.methods import MethodResult
from gralc.evaluation.plots import write_plots
from gralc.evaluation.report import PAPER_REFERENCE, format_table, markdown_tables, write_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
METHODS = ("naive", "semantic", "gralc_cosine")


def result(method: str, bench: str, base: float, with_sections: bool = True) -> MethodResult:
    metrics = {"mrr": base, "recall@1": base - 0.1, "recall@5": base + 0.01, "recall@10": base + 0.02,
               "ndcg@10": base + 0.005, "n_questions": 4.0}
    if with_sections:
        metrics |= {"seccov_pairs@5": 1.0 + 10 * base, "seccov_pairs@20": 2.0 + 20 * base,
                    "seccov_doc_frac@5": base / 2, "seccov_doc_frac@20": base / 1.5,
                    "cross_section_recall@5": 0.0, "cross_section_recall@20": base / 3,
                    "n_cross_section_questions": 2.0}
    return MethodResult(
        method, bench, metrics,
        chunk_stats={"n_chunks": 100 + 10 * len(method), "tokens_mean": 50.0 + base, "tokens_max": math.nan},
        timings={"chunk_s": 1.5, "search_s": 0.25, "ms_per_query": 62.5},
        per_query=[{"question_id": f"{bench}-q{i}", "top": ["c1", "c2"], "mrr": base} for i in range(2)],
    )


def results(shift: float = 0.0, benches=("pubmedqa[all]", "pmc[full]")) -> list[MethodResult]:
    return [result(m, b, 0.5 + 0.1 * i + 0.05 * j + shift, with_sections=b.startswith("pmc"))
            for j, b in enumerate(benches) for i, m in enumerate(METHODS)]


def test_write_report_files(tmp_path):
    res = results()
    cfg = {"seed": 3, "data": {"name": "pmc", "path": tmp_path / "articles"}, "ks": [1, 5, 10, 20]}
    path = write_report(res, tmp_path, cfg, timings={"total_s": 12.0}, paper=PAPER_REFERENCE)
    assert path == tmp_path / "metrics.json"
    data = json.loads(path.read_text())  # strict JSON: NaN became null
    assert set(data) == {"pubmedqa[all]", "pmc[full]", "run"}
    assert set(data["pmc[full]"]) == set(METHODS)
    sem = data["pmc[full]"]["semantic"]
    assert sem["mrr"] == pytest.approx(0.65) and sem["seccov_pairs@20"] == pytest.approx(15.0)
    assert sem["chunk_stats"] == {"n_chunks": 180, "tokens_mean": pytest.approx(50.65), "tokens_max": None}
    assert sem["timings"]["ms_per_query"] == 62.5
    assert "seccov_pairs@5" not in data["pubmedqa[all]"]["naive"]
    run = data["run"]
    assert run["config"]["seed"] == 3 and run["config"]["data"]["path"] == str(tmp_path / "articles")
    assert run["timings"] == {"total_s": 12.0} and "git_hash" in run

    with (tmp_path / "metrics.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6
    assert {"benchmark", "method", "mrr", "recall@1", "recall@5", "recall@10", "ndcg@10", "seccov_pairs@5",
            "seccov_doc_frac@20", "cross_section_recall@20", "n_questions", "chunks.n_chunks",
            "chunks.tokens_mean", "time.ms_per_query"} <= set(rows[0])
    kg_pmc = next(r for r in rows if r["benchmark"] == "pmc[full]" and r["method"] == "gralc_cosine")
    assert float(kg_pmc["mrr"]) == pytest.approx(0.75) and float(kg_pmc["chunks.n_chunks"]) == 220
    assert next(r for r in rows if r["benchmark"] == "pubmedqa[all]")["seccov_pairs@5"] == ""

    lines = (tmp_path / "per_query.jsonl").read_text().splitlines()
    assert len(lines) == 12
    first = json.loads(lines[0])
    assert first == {"benchmark": "pubmedqa[all]", "method": "naive", "question_id": "pubmedqa[all]-q0",
                     "top": ["c1", "c2"], "mrr": 0.5}

    cfg_back = OmegaConf.to_container(OmegaConf.load(tmp_path / "config.yaml"))
    assert cfg_back["ks"] == [1, 5, 10, 20] and cfg_back["data"]["name"] == "pmc"

    md = (tmp_path / "tables.md").read_text()
    for title in ("Table 1 style", "Table 4 style", "Table 5 style", "## pubmedqa[all]", "## pmc[full]"):
        assert title in md
    assert "Table 6 style" not in md  # no generation metrics given


def test_table1_paper_and_delta_columns():
    res = results()
    md = format_table(res, "pubmedqa[all]", ["mrr", "recall@3", "recall@5"], PAPER_REFERENCE["pubmedqa"])
    header, sep, *rows = md.splitlines()
    cols = [c.strip() for c in header.strip("|").split("|")]
    # recall@3 is absent from every result, so dropped; chunk size columns always appended
    assert cols == ["method", "doc MRR", "doc MRR paper", "Δ doc MRR", "doc R@5", "doc R@5 paper", "Δ doc R@5", "chunks", "mean tokens"]
    cells = {r.split("|")[1].strip(): [c.strip() for c in r.strip("|").split("|")] for r in rows}
    assert cells["naive"][1:4] == ["0.5000", "0.9787", "-0.4787"]
    assert cells["semantic"][1:4] == ["0.6000", "0.9802", "-0.3802"]
    assert cells["gralc_cosine"][1:4] == ["**0.7000**", "0.9687", "-0.2687"]  # best MRR in bold
    assert cells["semantic"][-2:] == ["180", "50.6"]


def test_table_without_paper_and_missing_method():
    res = results() + [result("late_custom", "pubmedqa[all]", 0.9, with_sections=False)]
    md = format_table(res, "pubmedqa[all]", ["mrr"], {"naive": {"mrr": 0.25}})
    row = next(r for r in md.splitlines() if r.startswith("| late_custom"))
    assert [c.strip() for c in row.strip("|").split("|")][1:4] == ["**0.9000**", "–", "–"]
    plain = format_table(res, "pubmedqa[all]", ["mrr"])
    assert "paper" not in plain and "Δ" not in plain
    with pytest.raises(ValueError, match="no results for benchmark"):
        format_table(res, "nope", ["mrr"])


def test_table4_and_table5_long_format():
    res = results(benches=("pmc[full]", "pmc[introduction]"))
    md = markdown_tables(res, PAPER_REFERENCE)
    t4 = md.split("## Table 4 style")[1].split("##")[0]
    # conditions in the paper's order: introduction rows before full rows
    assert t4.index("pmc[introduction]") < t4.index("pmc[full]")
    intro_sem = next(r for r in t4.splitlines() if r.startswith("| pmc[introduction] | semantic"))
    assert "| 0.6500 | 0.4880 | +0.1620 |" in intro_sem  # base 0.65, paper 0.488
    t5 = md.split("## Table 5 style")[1].split("##")[0]
    full_kg = next(r for r in t5.splitlines() if r.startswith("| pmc[full] | gralc_cosine"))
    # seccov pairs@5 = 1 + 10 * 0.7, paper 4.46; CS R@20 = 0.7 / 3
    assert "8.00" in full_kg and "4.46" in full_kg and "+3.5400" in full_kg and "0.2333" in full_kg


def test_generation_table_when_present():
    res = results()
    res[0].metrics |= {"gen_f1": 0.4321, "gen_section_diversity@5": 2.5}
    md = markdown_tables(res)
    assert "Table 6 style" in md and "0.4321" in md and "2.50" in md


def test_report_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="no results"):
        write_report([], tmp_path, {})
    dup = results() + [result("naive", "pmc[full]", 0.1)]
    with pytest.raises(ValueError, match="two results for method 'naive'"):
        write_report(dup, tmp_path, {})


def _png(path) -> bytes:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC, path
    return data


def test_plots_follow_the_inputs(tmp_path):
    benches = ("pmc[introduction]", "pmc[partial]", "pmc[full]")
    a = write_plots(results(benches=benches), tmp_path / "a")
    b = write_plots(results(shift=0.07, benches=benches), tmp_path / "b")
    again = write_plots(results(benches=benches), tmp_path / "a2")
    names = ["mrr_by_condition.png", "seccov_by_k.png", "precision_vs_breadth.png"]
    assert [p.name for p in a] == names and [p.name for p in b] == names
    for pa, pb, pc in zip(a, b, again):
        assert _png(pa) != _png(pb), f"{pa.name} does not change with the results"
        assert _png(pa) == _png(pc), f"{pa.name} is not deterministic"


def test_plots_skip_absent_data(tmp_path, caplog):
    caplog.set_level("INFO", logger="gralc.evaluation.plots")
    written = write_plots(results(benches=("pubmedqa[all]",)), tmp_path)
    assert written == []
    assert "skip mrr_by_condition.png" in caplog.text and "skip seccov_by_k.png" in caplog.text
    one_pmc = write_plots(results(benches=("pmc[full]",)), tmp_path / "one")
    assert [p.name for p in one_pmc] == ["seccov_by_k.png", "precision_vs_breadth.png"]


def _scored(method: str, hits: list[float], docs: list[str]) -> MethodResult:
    per_query = [{"question_id": f"q{i}", "gold_doc_id": d, "mrr": h, "ev_mrr": h}
                 for i, (h, d) in enumerate(zip(hits, docs, strict=True))]
    per_query.append({"question_id": "q-no-evidence", "gold_doc_id": "z", "mrr": 1.0})  # no ev_mrr
    return MethodResult(method, "covidqa", {"mrr": 0.0}, {}, {}, per_query)


def test_gains_over_the_reference_are_paired_by_question(tmp_path):
    from gralc.evaluation.significance import SignificanceConfig

    docs = ["a", "a", "b", "c"]
    res = [_scored("bm25", [0.0, 1.0, 0.0, 1.0], docs), _scored("late", [1.0, 1.0, 1.0, 1.0], docs),
           _scored("naive", [0.0, 1.0, 0.0, 1.0], docs)]
    sig = SignificanceConfig(reference="bm25", metrics=["ev_mrr", "mrr"], resamples=2000)
    write_report(res, tmp_path, {}, significance=sig)
    gains = json.loads((tmp_path / "gains.json").read_text())
    assert gains["reference"] == "bm25" and set(gains["gains"]["covidqa"]) == {"late", "naive"}
    late = gains["gains"]["covidqa"]["late"]
    assert late["ev_mrr"]["gain"] == pytest.approx(0.5) and late["ev_mrr"]["questions"] == 4
    assert late["mrr"]["gain"] == pytest.approx(0.4) and late["mrr"]["questions"] == 5
    assert gains["gains"]["covidqa"]["naive"]["ev_mrr"]["gain"] == 0.0
    tables = (tmp_path / "tables.md").read_text()
    assert "## Gains over bm25: covidqa" in tables
    # late gains +1 on q0 (doc a) and q2 (doc b), 0 on q1 (a) and q3 (c): a resample of doc c
    # alone gains 0, so the interval reaches 0 and the cell is not bold
    assert "| late | +0.500 [+0.000, +1.000] |" in tables
    assert "| naive | +0.000 [+0.000, +0.000] | +0.000 [+0.000, +0.000] |" in tables
    # a row that gains on every question of every document: the interval excludes 0, bold
    write_report([_scored("bm25", [0.0] * 4, docs), _scored("sure", [1.0] * 4, docs)], tmp_path / "b", {},
                 significance=sig)
    assert "| sure | **+1.000 [+1.000, +1.000]** |" in (tmp_path / "b" / "tables.md").read_text()


def test_a_reference_that_is_no_row_is_refused_and_one_not_run_is_warned(caplog):
    from gralc.evaluation.config import EvalConfig
    from gralc.evaluation.run import check_reference
    from gralc.evaluation.significance import SignificanceConfig

    cfg = EvalConfig(methods=["naive", "late"], significance=SignificanceConfig(reference="bm2"))
    with pytest.raises(ValueError, match="significance.reference=bm2: no such row"):
        check_reference(cfg)
    cfg.significance.reference = "bm25"
    check_reference(cfg)
    assert "not among this run's rows" in caplog.text
    cfg.significance.reference = "gralc_graph"  # GraLC 0.1's name of the gralc row
    cfg.models = ["some/export"]
    check_reference(cfg)  # a trained row of the given model
    with pytest.raises(ValueError, match="significance.level=1.5"):
        SignificanceConfig(level=1.5)
