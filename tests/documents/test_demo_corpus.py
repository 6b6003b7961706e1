"""The bundled demo corpus is well formed and self-consistent (articles, questions, MeSH)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from lxml import etree

from gralc.data.demo import (
    DEMO_DIR,
    demo_articles,
    demo_mesh_tree_path,
    demo_questions_path,
    demo_vocabulary_path,
)
from gralc.documents.jats import parse_jats

MML = "http://www.w3.org/1998/Math/MathML"
IMRAD = ("introduction", "methods", "results", "discussion", "conclusion")
VOCAB_HEADER = [
    "DescriptorUI",
    "DescriptorName",
    "ConceptUI",
    "TermUI",
    "TermName",
    "ConceptPreferredTermYN",
    "IsPermutedTermYN",
    "LexicalTag",
    "RecordPreferredTermYN",
]
ARTICLES = demo_articles()


def _root(path: Path) -> etree._Element:
    return etree.parse(str(path)).getroot()


def _imrad(title: str) -> str:
    t = title.lower()
    for key, kind in (
        ("introduction", "introduction"),
        ("background", "introduction"),
        ("method", "methods"),
        ("result", "results"),
        ("discussion", "discussion"),
        ("conclusion", "conclusion"),
    ):
        if key in t:
            return kind
    return "other"


def _pmc_ids() -> set[str]:
    return {_root(p).findtext(".//article-id[@pub-id-type='pmc']") for p in ARTICLES}


def test_ten_articles_with_unique_ids() -> None:
    assert len(ARTICLES) == 10
    ids = _pmc_ids()
    assert ids == {f"PMC{9000000 + n}" for n in range(1, 11)}
    for path in ARTICLES:
        root = _root(path)
        pmc = root.findtext(".//article-id[@pub-id-type='pmc']")
        n = int(pmc[3:]) - 9000000
        assert path.stem == pmc
        assert root.get("article-type") == "research-article"
        assert root.findtext(".//article-id[@pub-id-type='pmid']") == str(90000000 + n)
        assert root.findtext(".//article-id[@pub-id-type='doi']") == f"10.5555/gralc.demo.{n}"
        assert root.findtext(".//title-group/article-title").strip()
        assert " ".join(root.find(".//abstract").itertext()).split()


@pytest.mark.parametrize("path", ARTICLES, ids=lambda p: p.stem)
def test_article_structure(path: Path) -> None:
    root = _root(path)
    body = root.find("body")
    words = sum(len(" ".join(p.itertext()).split()) for p in body.iter("p"))
    assert words >= 1000, f"{path.name}: {words} body words"

    tops = [_imrad(sec.findtext("title")) for sec in body.findall("sec")]
    assert tops == list(IMRAD), f"{path.name}: {tops}"
    methods = body.findall("sec")[1]
    assert len(methods.findall("sec")) >= 2

    ids = {el.get("id") for el in root.iter() if el.get("id")}
    xrefs = list(root.iter("xref"))
    assert all(x.get("rid") in ids for x in xrefs), "every xref must resolve to an element id"
    refs = root.findall("back/ref-list/ref")
    assert 4 <= len(refs) <= 8
    assert all(r.findtext(".//pub-id[@pub-id-type='pmid']") for r in refs)
    ref_ids = {r.get("id") for r in refs}
    bibr = {x.get("rid") for x in xrefs if x.get("ref-type") == "bibr"}
    assert len([x for x in xrefs if x.get("ref-type") == "bibr"]) >= 4
    assert bibr <= ref_ids

    lists = body.findall(".//list")
    assert len(lists) >= 1
    for lst in lists:
        assert lst.get("list-type") in ("order", "bullet")
        assert 3 <= len(lst.findall("list-item/p")) <= 5
        preamble = " ".join(lst.getprevious().itertext()).strip()
        assert preamble.endswith(":"), f"{path.name}: list preamble {preamble!r}"

    figs = {f.get("id"): f for f in body.iter("fig")}
    fig_refs = [x.get("rid") for x in xrefs if x.get("ref-type") == "fig"]
    assert fig_refs and set(fig_refs) <= set(figs)
    for fig in figs.values():
        assert fig.findtext("label") and " ".join(fig.find("caption/p").itertext()).strip()
    assert root.find("back/ack/p") is not None


def test_corpus_covers_special_elements() -> None:
    roots = [_root(p) for p in ARTICLES]
    tables = [(r, t) for r in roots for t in r.iter("table-wrap")]
    assert tables
    for r, t in tables:
        assert t.find("caption/p") is not None and t.find(".//tbody/tr") is not None
        assert any(
            x.get("rid") == t.get("id") for x in r.iter("xref") if x.get("ref-type") == "table"
        )
    sec_refs = [(r, x) for r in roots for x in r.iter("xref") if x.get("ref-type") == "sec"]
    assert sec_refs
    for r, x in sec_refs:
        assert r.find(f".//sec[@id='{x.get('rid')}']") is not None
    assert any(r.find(f".//disp-formula/{{{MML}}}math") is not None for r in roots)
    assert any(r.find(".//boxed-text/p") is not None for r in roots)


def test_questions_reference_demo_articles() -> None:
    lines = demo_questions_path().read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    assert 30 <= len(questions) <= 40
    assert len({q["id"] for q in questions}) == len(questions)
    pmc_ids = _pmc_ids()
    kinds = {"single": 0, "cross_section": 0}
    for q in questions:
        assert q["gold_doc_id"] in pmc_ids, q["id"]
        types = q["gold_section_types"]
        assert set(types) <= set(IMRAD) and len(set(types)) == len(types), q["id"]
        assert len(types) == (1 if q["kind"] == "single" else 2), q["id"]
        assert isinstance(q["gold_paragraph_ids"], list), q["id"]
        assert q["question"].strip().endswith("?") and q["long_answer"].strip()
        kinds[q["kind"]] += 1
    assert min(kinds.values()) >= 0.4 * len(questions)
    assert {q["gold_doc_id"] for q in questions} == pmc_ids


def test_questions_have_gold_paragraphs() -> None:
    """Every question names the paragraphs holding its answer, inside its gold sections."""
    docs = {d.id: d for d in (parse_jats(p) for p in ARTICLES)}
    lines = demo_questions_path().read_text(encoding="utf-8").splitlines()
    for q in (json.loads(line) for line in lines if line.strip()):
        ids = q["gold_paragraph_ids"]
        assert ids and len(set(ids)) == len(ids), q["id"]
        doc = docs[q["gold_doc_id"]]
        known = {p.id for p in doc.paragraphs}
        assert set(ids) <= known, (q["id"], sorted(set(ids) - known))
        types = {doc.top_level_type(doc.paragraph(pid).section_id) for pid in ids}
        assert "abstract" not in types, q["id"]
        assert types <= set(q["gold_section_types"]), (q["id"], types)
        if q["kind"] == "cross_section":
            assert types == set(q["gold_section_types"]), (q["id"], types)


def _vocab_rows() -> list[dict[str, str]]:
    with demo_vocabulary_path().open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t")
        assert reader.fieldnames == VOCAB_HEADER
        return list(reader)


def test_vocabulary_and_tree_format() -> None:
    rows = _vocab_rows()
    assert len(rows) >= 100
    assert all(None not in r and all(r.values()) for r in rows), "every row has 9 filled columns"
    assert all(re.fullmatch(r"D\d{6,9}", r["DescriptorUI"]) for r in rows)
    preferred: dict[str, int] = {}
    for r in rows:
        preferred[r["DescriptorUI"]] = preferred.get(r["DescriptorUI"], 0) + (
            r["RecordPreferredTermYN"] == "Y"
        )
    assert set(preferred.values()) == {1}, "one record-preferred term per descriptor"

    tree = [line.rsplit(";", 1) for line in demo_mesh_tree_path().read_text().splitlines()]
    numbers = {tn for _, tn in tree}
    names = {r["DescriptorName"] for r in rows}
    assert names == {n for n, _ in tree}, "tree file and vocabulary name the same descriptors"
    edges = {(tn, tn.rsplit(".", 1)[0]) for tn in numbers if tn.rsplit(".", 1)[0] in numbers}
    linked = {tn for edge in edges for tn in edge}
    unlinked = {n for n, _ in tree} - {n for n, tn in tree if tn in linked}
    assert not unlinked, f"descriptors without a tree edge: {sorted(unlinked)}"


def test_demo_is_small() -> None:
    size = sum(
        p.stat().st_size
        for p in DEMO_DIR.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert size < 300_000, f"gralc/data/demo is {size} bytes"


def test_vocabulary_rows_are_real_mesh(shared_data: Path) -> None:
    """Apart from the marked local acronyms (TermUI TGRALC...), rows are verbatim MeSH 2024."""
    real_path = shared_data / "mesh" / "mesh2024_thesaurus_terms.tsv"
    assert real_path.is_file(), f"{real_path} missing from the shared data"
    with real_path.open(newline="", encoding="utf-8") as f:
        real = {tuple(r) for r in csv.reader(f, delimiter="\t")}
    rows = _vocab_rows()
    local = [r for r in rows if r["TermUI"].startswith("TGRALC")]
    assert len(local) == 11
    for r in rows:
        if r in local:
            continue
        assert tuple(r[c] for c in VOCAB_HEADER) in real, r
    tree_real = set((shared_data / "mesh" / "mtrees2024_style.bin").read_text().splitlines())
    assert set(demo_mesh_tree_path().read_text().splitlines()) <= tree_real
