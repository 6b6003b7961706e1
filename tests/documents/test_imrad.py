"""IMRaD header classification and the paper's IMRaD filter."""

from __future__ import annotations

from pathlib import Path

import pytest

from gralc.documents.imrad import classify_section, imrad_report, is_imrad, normalize_title
from gralc.documents.jats import parse_jats
from gralc.documents.model import Document, Paragraph, Section

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    "title, expected",
    [
        ("Introduction", "introduction"), ("1. INTRODUCTION", "introduction"),
        ("Background", "introduction"), ("II. Background:", "introduction"),
        ("Materials and methods", "methods"), ("2 Materials & Methods", "methods"),
        ("Methods and materials", "methods"), ("Experimental procedures", "methods"),
        ("Patients and Methods", "methods"), ("Study design", "methods"),
        ("Experimental Section", "methods"), ("Statistical methods", "methods"),
        ("3.1. Results", "results"), ("Results and Discussion", "results"),
        ("Results/Discussion", "results"), ("Model and Results", "results"),
        ("Discussion", "discussion"), ("Discussion and conclusions", "discussion"),
        ("Conclusions", "conclusion"), ("Concluding remarks", "conclusion"),
        ("Summary", "conclusion"), ("Supplementary methods", "other"),
        ("Authors' contributions", "other"), ("Competing interests", "other"),
        ("Supporting Information", "other"), ("BRCA2 and DNA repair", "other"), ("", "other"),
    ],
)  # fmt: skip
def test_top_level_titles(title: str, expected: str) -> None:
    assert classify_section(title) == expected


def test_sec_type_takes_precedence() -> None:
    assert classify_section("Something else", "materials|methods") == "methods"
    assert classify_section("Overview", "intro") == "introduction"
    assert classify_section("Findings and comments", "results|discussion") == "results"
    assert classify_section("Conclusions", "conclusions") == "conclusion"
    assert classify_section("Supplementary Material", "supplementary-material") == "other"
    assert classify_section("Results", "unknown-type") == "results"  # unknown -> title


def test_subsections_inherit_unless_exact_header() -> None:
    assert classify_section("Statistical analysis", parent_type="methods") == "methods"
    assert classify_section("Results of the screen", parent_type="methods") == "methods"
    assert classify_section("Conclusions", parent_type="discussion") == "conclusion"
    assert classify_section("Objective", parent_type="abstract") == "abstract"


def test_normalize_title() -> None:
    assert normalize_title("  2.3. Materials & Methods: ") == "materials and methods"
    assert normalize_title("IV) RESULTS") == "results"


def _doc(sections: list[tuple[str, str]], words: int) -> Document:
    """A synthetic document: one paragraph of ``words`` words in the last section."""
    text = " ".join(["w"] * words)
    secs = [Section(f"s{i}", t, 1, ty, 0, len(text), 0, 0) for i, (t, ty) in enumerate(sections)]
    return Document("d", text, sections=secs,
                    paragraphs=[Paragraph("p1", 0, len(text), secs[-1].id)])  # fmt: skip


def test_filter_requires_headers_and_words() -> None:
    full = [("Introduction", "introduction"), ("Methods", "methods"), ("Results", "results"),
            ("Discussion", "discussion")]  # fmt: skip
    assert is_imrad(_doc(full, 1000))
    short = imrad_report(_doc(full, 999))
    assert not short.ok and short.words == 999 and "999 body words" in short.reason
    no_methods = imrad_report(_doc([full[0], full[2], full[3]], 2000))
    assert (
        not no_methods.ok and no_methods.missing == ["methods"] and "methods" in no_methods.reason
    )
    rd = [full[0], full[1], ("Results and discussion", "results")]
    assert is_imrad(_doc(rd, 1500))  # a combined header covers the discussion
    conclusion = [full[0], full[1], full[2], ("Conclusions", "conclusion")]
    assert is_imrad(_doc(conclusion, 1500))
    assert not is_imrad(_doc([full[0], full[1], full[2]], 1500))


def test_filter_on_fixtures() -> None:
    doc = parse_jats(FIXTURES / "full_article.nxml")
    assert is_imrad(doc, min_words=50) and not is_imrad(doc)
    assert imrad_report(doc).reason == f"only {doc.body_word_count()} body words (< 1000)"
    lead = parse_jats(FIXTURES / "leading_intro.nxml")  # implicit intro + results-and-discussion
    assert is_imrad(lead, min_words=10)
    abstract_only = imrad_report(parse_jats(FIXTURES / "abstract_only.nxml"))
    assert abstract_only.missing == ["introduction", "methods", "results", "discussion"]
