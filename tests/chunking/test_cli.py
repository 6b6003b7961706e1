"""``python -m gralc.chunk``: run in-process on a demo article and a PubMedQA-format file."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from gralc.chunk import main
from gralc.chunking import registered
from gralc.data.demo import demo_articles
from gralc.documents.jats import parse_jats

STRATEGIES = ("late", "structure_aware")


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    return code, out.getvalue()


@pytest.fixture(scope="module")
def article():
    path = demo_articles()[0]
    return path, parse_jats(path)


@pytest.fixture(scope="module")
def jsonl_runs(article) -> dict[str, list[dict]]:
    """Each strategy's JSONL output for the demo article (the model loads once per process)."""
    path, _ = article
    runs = {}
    for strategy in STRATEGIES:
        code, out = _run(
            [str(path), "--strategy", strategy, "--decoder", "dp", "--format", "jsonl"]
        )
        assert code == 0
        runs[strategy] = [json.loads(line) for line in out.splitlines()]
    return runs


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_jsonl_spans_round_trip(jsonl_runs, article, strategy):
    _, doc = article
    rows = jsonl_runs[strategy]
    assert len(rows) >= 3
    assert [r["chunk_id"] for r in rows] == [
        f"{doc.id}::{strategy}::chunk::{i}" for i in range(len(rows))
    ]
    for r in rows:
        assert r["strategy"] == strategy and r["doc_id"] == doc.id
        assert doc.text[r["char_start"] : r["char_end"]] == r["text"]
        assert r["token_end"] > r["token_start"] >= 0
        assert r["section_path"] and r["imrad_types"]
        assert r["embedding"] is None
    # chunks tile the text: consecutive, and together they cover everything but whitespace
    for a, b in zip(rows, rows[1:]):
        assert b["token_start"] == a["token_end"]
        assert doc.text[a["char_end"] : b["char_start"]].strip() == ""
    assert doc.text[: rows[0]["char_start"]].strip() == ""
    assert doc.text[rows[-1]["char_end"] :].strip() == ""
    top_ids = {s.id for s in doc.sections}
    assert {r["section_ids"][0] for r in rows} <= top_ids
    assert len({r["section_ids"][0] for r in rows}) >= 3
    assert all(len(r["section_ids"]) == len(r["section_path"]) for r in rows)


def test_structure_aware_has_boundary_scores_and_entities(jsonl_runs):
    rows = jsonl_runs["structure_aware"]
    assert set(rows[1]["boundary_scores"]) == {"score", "struct", "sem", "entity"}
    assert sum(len(r["entity_ids"]) for r in rows) > 0  # mentions came from the linker


def test_table_format_prints_chunks_and_metrics(pqal_file, capsys):
    assert main([str(pqal_file), "--pmid", "222", "--strategy", "structure_aware"]) == 0
    out = capsys.readouterr().out
    assert "222: 1 structure_aware chunks" in out and "METHODS" in out
    assert "semantic coherence (SCS): " in out and "entity preservation rate (EPR): " in out
    assert "recommendation-evidence linking rate (ERL): n/a" in out  # no level-of-evidence text


def test_strategy_list(capsys):
    assert main(["--strategy", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split("\t")[0] for line in lines]
    assert names == sorted(registered()) and len(names) == 6
    assert all(len(line.split("\t")[1]) > 10 for line in lines)


@pytest.fixture
def pqal_file(tmp_path):
    """A two-entry file in the ori_pqal.json format."""
    entries = {
        "111": {"QUESTION": "Q1?", "CONTEXTS": ["First abstract sentence about asthma."],
                "LABELS": ["BACKGROUND"], "final_decision": "yes"},
        "222": {"QUESTION": "Does metformin lower glucose?",
                "CONTEXTS": ["Metformin was given to 40 patients with diabetes.",
                             "Glucose fell by 20 percent after 12 weeks."],
                "LABELS": ["METHODS", "RESULTS"], "final_decision": "yes"},
    }  # fmt: skip
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps(entries))
    return path


def test_pubmedqa_entry_by_pmid(pqal_file, capsys):
    path = pqal_file
    assert main([str(path), "--pmid", "222", "--strategy", "late", "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["doc_id"] for r in rows} == {"222"}
    assert "Glucose fell by 20 percent" in " ".join(r["text"] for r in rows)
    assert rows[0]["section_path"] == ["METHODS"]

    assert main([str(path), "--strategy", "late", "--format", "jsonl"]) == 0  # first entry
    assert {json.loads(line)["doc_id"] for line in capsys.readouterr().out.splitlines()} == {"111"}

    assert main([str(path), "--pmid", "999", "--strategy", "late"]) == 2
    assert "999" in capsys.readouterr().err


def test_bad_input_exits_2(tmp_path, capsys):
    assert main([str(demo_articles()[0]), "--strategy", "nope"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and all(name in err for name in registered())
    missing = tmp_path / "missing.nxml"
    assert main([str(missing), "--strategy", "late"]) == 2
    assert str(missing) in capsys.readouterr().err


def test_key_value_overrides_reach_the_pipeline(article, capsys):
    path, _ = article
    code, out = _run([str(path), "chunking.boundary.max_tokens=200", "chunking.boundary.min_tokens=50",
                      "--strategy", "structure_aware", "--format", "jsonl"])
    assert code == 0
    sizes = [c["token_end"] - c["token_start"] for c in map(json.loads, out.splitlines())]
    assert sizes and max(sizes) <= 200
    code, _ = _run([str(path), "chunking.boundary.nosuch=1", "--strategy", "late"])
    assert code == 2 and "unknown config key" in capsys.readouterr().err
