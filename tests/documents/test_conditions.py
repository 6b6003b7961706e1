"""Document-length conditions (paper Sect. 3.3): abstract / introduction / partial / full."""

from __future__ import annotations

from pathlib import Path

import pytest

from gralc.documents.conditions import CONDITIONS, available_conditions, derive_condition
from gralc.documents.errors import ConditionUnavailableError
from gralc.documents.jats import parse_jats
from gralc.documents.model import Document

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def doc() -> Document:
    return parse_jats(FIXTURES / "full_article.nxml")


def _types(d: Document) -> list[str]:
    return [s.imrad_type for s in d.sections]


def test_abstract_condition(doc: Document, check_offsets) -> None:
    d = derive_condition(doc, "abstract")
    assert d.id == "PMC9999999#abstract" and _types(d) == ["abstract"]
    assert d.text.startswith("A test article on p53\n\nBackground\n\nBackground of the study.")
    assert {p.kind for p in d.paragraphs} == {"abstract"} and d.citations == []
    check_offsets(d, one_line=True)


def test_introduction_condition_has_no_abstract_methods_results(doc: Document, check_offsets) -> None:
    d = derive_condition(doc, "introduction")
    assert _types(d) == ["introduction"] and [s.id for s in d.sections] == ["sec1"]
    assert d.text == (
        "A test article on p53\n\n1. Background\n\nProtein p53 is a tumour suppressor [1]. It was "
        "studied by Smith et al. in 1999 (Fig. 1). A second sentence follows.\n\n"
        "Figure 1 Overview. Cells [3]."
    )
    assert [c.ref_id for c in d.citations] == ["B1", "B3"]
    assert [doc.text[c.start : c.end] for c in doc.citations[2:4]] == [
        d.text[c.start : c.end] for c in d.citations
    ]
    assert [c.id for c in d.captions] == ["F1"] and d.crossrefs[0].target_id == "F1"
    check_offsets(d, one_line=True)


def test_partial_condition_keeps_ids_and_types(doc: Document, check_offsets) -> None:
    d = derive_condition(doc, "partial")
    assert _types(d) == ["introduction", "methods"]
    assert [s.id for s in d.iter_sections()] == ["sec1", "s2_2", "s2_2.1", "s2_2.2"]
    assert [ls.id for ls in d.lists] == ["l0001", "l0002"]
    assert d.paragraph("p0008").id == "p0008" and "Results" not in d.text
    for p in d.paragraphs:  # same paragraph text as in the source document
        src = doc.paragraph(p.id)
        assert d.text[p.start : p.end] == doc.text[src.start : src.end]
    check_offsets(d, one_line=True)


def test_full_condition_is_the_whole_article(doc: Document) -> None:
    d = derive_condition(doc, "full")
    assert d.text == doc.text and d.id == "PMC9999999#full"
    assert len(d.paragraphs) == len(doc.paragraphs) and d.citations == doc.citations
    assert d.sections is not doc.sections and d.sections[0] is not doc.sections[0]


def test_unavailable_and_unknown_conditions() -> None:
    abstract_only = parse_jats(FIXTURES / "abstract_only.nxml")
    assert available_conditions(abstract_only) == ["abstract", "full"]
    with pytest.raises(ConditionUnavailableError, match="introduction"):
        derive_condition(abstract_only, "introduction")
    with pytest.raises(ValueError, match="unknown condition"):
        derive_condition(abstract_only, "methods")
    lead = parse_jats(FIXTURES / "leading_intro.nxml")  # implicit intro counts
    assert available_conditions(lead) == list(CONDITIONS)
    assert derive_condition(lead, "introduction").text.count("Unheaded introduction") == 2
