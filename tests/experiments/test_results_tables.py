"""Every results table in docs/results/ (and its copies in README.md and docs/guarantees.md) is
what its result file produces (``python -m gralc.experiments.tables``), and every result file
carries its provenance: a table typed or edited by hand fails here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gralc.experiments.tables import RESULTS, TABLES, main, read_result, regenerate

REPO = Path(__file__).resolve().parents[2]


def test_every_table_and_copy_is_generated_from_its_result_file():
    assert regenerate(check=True) == [], "run: python -m gralc.experiments.tables"


@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_result_file_carries_its_provenance(name):
    saved = read_result(RESULTS / f"{name}.json")
    invocations = saved.get("invocations") or [saved]  # memory_per_strategy: one per command
    for inv in invocations:
        assert inv.get("git_hash") and inv.get("created"), f"{name}.json: no git hash / date"
    assert any(k in saved for k in ("args", "argv", "invocations", "sources")), f"{name}.json: no command"


def test_a_table_edited_by_hand_or_a_changed_result_is_caught(tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(RESULTS, results)
    for doc in ("README.md", "docs/guarantees.md", "docs/encoders.md"):
        (tmp_path / doc).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / doc, tmp_path / doc)
    assert main(["--check", "--results", str(results), "--repo", str(tmp_path)]) == 0
    md = results / "graph_cost.md"
    md.write_text(md.read_text().replace("| 1.", "| 2.", 1))
    readme = tmp_path / "README.md"
    readme.write_text(readme.read_text().replace("| BM25 over the same chunks | 0.", "| BM25 over the same chunks | 1.", 1))
    assert main(["--check", "--results", str(results), "--repo", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(md) in err and f"{readme} (its copy of headline.md)" in err
    assert main(["--results", str(results), "--repo", str(tmp_path)]) == 0  # regenerated
    assert main(["--check", "--results", str(results), "--repo", str(tmp_path)]) == 0
