"""PubMedQA loader: real PQA-L file (shared_data) and small hand-written fixtures."""

from __future__ import annotations

import json
import logging
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from gralc.documents.pubmedqa import (
    PubMedQA,
    convert_hf_record,
    label_to_imrad,
    load_hf_pubmedqa,
    load_pqal,
)

# ----- real data --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pqal_path(shared_data: Path) -> Path:
    return shared_data / "pubmedqa" / "ori_pqal.json"


@pytest.fixture(scope="module")
def pqa(pqal_path: Path) -> PubMedQA:
    return load_pqal(pqal_path)


def test_counts_and_splits(pqa: PubMedQA, pqal_path: Path):
    test_ids = set(json.loads((pqal_path.parent / "test_ground_truth.json").read_text()))
    assert len(pqa.questions) == len(pqa.documents) == 1000 and pqa.skipped == 0
    splits = {name: {q.id for q in pqa.split(name)} for name in ("train", "dev", "test")}
    assert splits["test"] == test_ids and len(test_ids) == 500
    assert len(splits["train"]) + len(splits["dev"]) == 500 and len(splits["dev"]) == 50
    assert not (splits["train"] | splits["dev"]) & test_ids
    again = load_pqal(pqal_path)
    assert {q.id for q in again.split("dev")} == splits["dev"]
    other_seed = load_pqal(pqal_path, seed=1)
    assert {q.id for q in other_seed.split("dev")} != splits["dev"]


def test_questions_and_mesh(pqa: PubMedQA):
    q = next(q for q in pqa.questions if q.id == "21645374")
    assert q.text.startswith("Do mitochondria play a role in remodelling lace plant leaves")
    assert q.gold_doc_id == "21645374" and q.decision == "yes" and q.long_answer
    assert q.gold_section_types == [] and q.gold_paragraph_ids == []
    assert "Apoptosis" in pqa.mesh_terms["21645374"]
    assert {q.decision for q in pqa.questions} == {"yes", "no", "maybe"}


def test_offsets_round_trip(pqa: PubMedQA, pqal_path: Path):
    raw = json.loads(pqal_path.read_text())
    for doc in pqa.documents:
        entry = raw[doc.id]
        assert doc.pmid == doc.id and doc.title == ""
        assert [doc.text[p.start : p.end] for p in doc.paragraphs] == [
            c.strip() for c in entry["CONTEXTS"]
        ]
        assert all(p.kind == "abstract" for p in doc.paragraphs)
        for sec in doc.sections:
            assert doc.text[sec.title_start : sec.title_end] == sec.title
            assert sec.title in entry["LABELS"] or sec.title == ""
            paras = [doc.paragraph(pid) for pid in sec.paragraph_ids]
            assert sec.start == sec.title_start and sec.end == paras[-1].end
            assert all(sec.start <= p.start and p.end <= sec.end for p in paras)
        for p in doc.paragraphs:
            assert p.sentences, doc.id
            assert p.sentences[0].start >= p.start and p.sentences[-1].end <= p.end
            assert all(s.paragraph_id == p.id and s.start < s.end for s in p.sentences)


def test_label_mapping_real(pqa: PubMedQA, pqal_path: Path):
    raw = json.loads(pqal_path.read_text())
    pmid = next(k for k, v in raw.items() if v["LABELS"] == ["BACKGROUND", "METHODS", "RESULTS"])
    doc = pqa.document(pmid)
    assert [s.title for s in doc.sections] == ["BACKGROUND", "METHODS", "RESULTS"]
    assert [s.imrad_type for s in doc.sections] == ["introduction", "methods", "results"]
    assert doc.text.startswith("BACKGROUND\n\n")
    # every frequent label (>= 5 uses) maps to a real IMRaD type
    counts: dict[str, int] = {}
    for v in raw.values():
        for label in v["LABELS"]:
            counts[label] = counts.get(label, 0) + 1
    frequent = {lab for lab, n in counts.items() if n >= 5} - {"UNLABELLED"}
    assert len(frequent) > 40
    assert not [lab for lab in frequent if label_to_imrad(lab) == "other"]
    # one entry repeats a label: those consecutive contexts share one section
    rep = next(k for k, v in raw.items() if any(a == b for a, b in pairwise(v["LABELS"])))
    assert len(pqa.document(rep).sections) < len(raw[rep]["LABELS"])


def test_hf_record_matches_json_path(pqa: PubMedQA, pqal_path: Path):
    raw = json.loads(pqal_path.read_text())
    pmid = "21645374"
    e = raw[pmid]
    record = {  # shape of a qiaojin/PubMedQA pqa_labeled row
        "pubid": int(pmid),
        "question": e["QUESTION"],
        "context": {
            "contexts": e["CONTEXTS"],
            "labels": e["LABELS"],
            "meshes": e["MESHES"],
            "reasoning_required_pred": ["y", "e", "s"],
            "reasoning_free_pred": ["y", "e", "s"],
        },
        "long_answer": e["LONG_ANSWER"],
        "final_decision": e["final_decision"],
    }
    q, doc, meshes = convert_hf_record(record)
    assert doc == pqa.document(pmid)
    ref_q = next(x for x in pqa.questions if x.id == pmid)
    assert (q.id, q.text, q.gold_doc_id, q.long_answer, q.decision) == (
        ref_q.id,
        ref_q.text,
        ref_q.gold_doc_id,
        ref_q.long_answer,
        ref_q.decision,
    )
    assert meshes == pqa.mesh_terms[pmid]


# ----- hand-written fixtures --------------------------------------------------------------


def _entry(contexts: list[str], labels: list[str], decision: str = "yes") -> dict:
    return {
        "QUESTION": "Is it?",
        "CONTEXTS": contexts,
        "LABELS": labels,
        "MESHES": ["Humans"],
        "YEAR": "2001",
        "reasoning_required_pred": "yes",
        "reasoning_free_pred": "yes",
        "final_decision": decision,
        "LONG_ANSWER": "It is.",
    }


@pytest.fixture
def small(tmp_path: Path) -> Path:
    data = {
        "1": _entry(
            ["Why. Really.", "We did it.", "It worked."], ["OBJECTIVE", "METHODS", "RESULTS"]
        ),
        "2": _entry(
            ["Some text.", "More methods.", "Even more."],
            ["UNLABELLED", "METHODS", "METHODS"],
            "no",
        ),
        "3": _entry([], []),
        "4": _entry(["A.", "B."], ["TRIAL REGISTRATION", "MEASUREMENTS AND MAIN RESULTS"]),
    }
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps(data))
    (tmp_path / "test_ground_truth.json").write_text(json.dumps({"1": "yes"}))
    return path


def test_small_fixture(small: Path, caplog):
    with caplog.at_level(logging.WARNING):
        pqa = load_pqal(small, dev_fraction=0.5)
    assert pqa.skipped == 1 and "PMID 3 has no CONTEXTS" in caplog.text
    assert [q.id for q in pqa.questions] == ["1", "2", "4"]
    assert {q.id: q.split for q in pqa.questions}["1"] == "test"
    assert sorted(q.split for q in pqa.questions) == ["dev", "test", "train"]
    d1 = pqa.document("1")
    assert d1.text == "OBJECTIVE\n\nWhy. Really.\n\nMETHODS\n\nWe did it.\n\nRESULTS\n\nIt worked."
    assert [len(p.sentences) for p in d1.paragraphs] == [2, 1, 1]
    d2 = pqa.document("2")
    assert d2.text == "Some text.\n\nMETHODS\n\nMore methods.\n\nEven more."
    untitled, methods = d2.sections
    assert (untitled.title, untitled.imrad_type, untitled.start, untitled.end) == (
        "",
        "other",
        0,
        10,
    )
    assert methods.paragraph_ids == ["p2", "p3"] and methods.end == len(d2.text)
    assert [s.imrad_type for s in pqa.document("4").sections] == ["other", "results"]


def test_explicit_ground_truth_and_none(small: Path, tmp_path: Path):
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps({"2": "no"}))
    assert [q.id for q in load_pqal(small, test_ground_truth=gt).split("test")] == ["2"]
    (tmp_path / "test_ground_truth.json").unlink()
    assert load_pqal(small).split("test") == []


def test_missing_file_message(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=r"nope\.json.*github\.com/pubmedqa/pubmedqa"):
        load_pqal(tmp_path / "nope.json")


def test_malformed_json_names_file(tmp_path: Path):
    bad = tmp_path / "broken_pqal.json"
    bad.write_text('{"1": {"QUESTION": ')
    with pytest.raises(ValueError, match="broken_pqal.json"):
        load_pqal(bad)


def test_label_count_mismatch_names_pmid(tmp_path: Path):
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps({"77": _entry(["a", "b"], ["METHODS"])}))
    with pytest.raises(ValueError, match="77"):
        load_pqal(path)


def test_hf_unlabeled_record():
    record = {
        "pubid": 5,
        "question": "Q?",
        "long_answer": "L.",
        "context": {
            "contexts": ["Bg.", "Res."],
            "labels": ["BACKGROUND", "RESULTS"],
            "meshes": ["Mice"],
        },
    }
    q, doc, meshes = convert_hf_record(record)
    assert (q.id, q.decision, q.long_answer, meshes) == ("5", "", "L.", ["Mice"])
    assert doc.id == doc.pmid == "5" and doc.text == "BACKGROUND\n\nBg.\n\nRESULTS\n\nRes."


def test_hf_loader_without_datasets(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # as if not installed: import fails
    with pytest.raises(ImportError, match="pip install datasets"):
        load_hf_pubmedqa()


@pytest.mark.parametrize(
    "label,expected",
    [
        ("BACKGROUND", "introduction"),
        ("OBJECTIVES", "introduction"),
        ("AIMS", "introduction"),
        ("PURPOSE", "introduction"),
        ("MATERIALS AND METHODS", "methods"),
        ("SETTING", "methods"),
        ("MAIN OUTCOME MEASURES", "methods"),
        ("DESIGN, SETTING, AND PARTICIPANTS", "methods"),
        ("RESULTS", "results"),
        ("FINDINGS", "results"),
        ("MEASUREMENTS AND MAIN RESULTS", "results"),
        ("CONCLUSIONS", "conclusion"),
        ("INTERPRETATION", "conclusion"),
        ("DISCUSSION", "discussion"),
        ("UNLABELLED", "other"),
        ("ICU LOS", "other"),
        ("", "other"),
    ],
)
def test_label_to_imrad(label: str, expected: str):
    assert label_to_imrad(label) == expected
