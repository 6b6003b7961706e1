"""JATS parser on hand-written fixtures: tree, types, offsets, citations, lists, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from gralc.documents.errors import DocumentParseError
from gralc.documents.jats import parse_jats
from gralc.documents.model import Document

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def doc() -> Document:
    return parse_jats(FIXTURES / "full_article.nxml")


def _texts(doc: Document, kind: str) -> list[str]:
    return [doc.text[p.start : p.end] for p in doc.paragraphs if p.kind == kind]


def test_front_matter(doc: Document) -> None:
    assert (doc.id, doc.pmid, doc.pmcid, doc.doi) == (
        "PMC9999999",
        "12345678",
        "PMC9999999",
        "10.1000/test.1",
    )
    assert doc.title == "A test article on p53" and doc.article_type == "research-article"
    assert "LICENSETEXT" not in doc.text and "TOCTEXT" not in doc.text


def test_section_tree_and_types(doc: Document, check_offsets) -> None:
    tree = [(s.id, s.title, s.level, s.imrad_type) for s in doc.iter_sections()]
    assert tree == [
        ("abstract", "", 1, "abstract"),
        ("abstract.1", "Background", 2, "introduction"),
        ("abstract.2", "Methods", 2, "methods"),
        ("abstract.3", "Results", 2, "results"),
        ("abstract.4", "Conclusions", 2, "conclusion"),
        ("s0", "", 1, "other"),  # leading paragraph; an explicit introduction follows
        ("sec1", "1. Background", 1, "introduction"),
        ("s2_2", "Materials & Methods", 1, "methods"),  # "s2" is taken by DISCUSSION's @id
        ("s2_2.1", "2.1 Statistical analysis", 2, "methods"),
        ("s2_2.2", "", 2, "methods"),  # untitled subsection; the empty one is dropped
        ("s3", "Results", 1, "results"),
        ("s2", "DISCUSSION", 1, "discussion"),
        ("s2.1", "Conclusions", 2, "conclusion"),
    ]
    untitled = doc.section("s2_2.2")
    assert untitled.title_start == untitled.title_end == untitled.start
    assert doc.section("s2").end == doc.section("s2.1").end  # covers its subsection
    assert doc.top_level_type(doc.paragraph("p0022").section_id) == "discussion"
    check_offsets(doc, one_line=True)


def test_paragraph_kinds_and_text(doc: Document) -> None:
    assert _texts(doc, "abstract") == [
        "Background of the study.",
        "We did things.",
        "Things happened (p < 0.05).",
        "It works.",
    ]
    assert _texts(doc, "paragraph")[:2] == [
        "A leading paragraph cites [1,2].",
        "Protein p53 is a tumour suppressor [1]. It was studied by Smith et al. in 1999 "
        "(Fig. 1). A second sentence follows.",
    ]
    # MathML token text inline; TeX and annotations never reach the text
    assert "We set n=3 and found that y=x holds." in _texts(doc, "paragraph")
    assert _texts(doc, "formula") == ["[formula] (2)"]
    assert _texts(doc, "boxed") == ["Box 1. Key points", "Inner", "Boxed paragraph."]
    for junk in (
        "TEXSPAM",
        "documentclass",
        "CELLTEXT",
        "FOOTTEXT",
        "ACKTEXT",
        "FNTEXT",
        "FNINLINE",
    ):
        assert junk not in doc.text
    sents = [doc.text[s.start : s.end] for s in doc.paragraph("p0006").sentences]
    assert sents == [
        "Protein p53 is a tumour suppressor [1].",
        "It was studied by Smith et al. in 1999 (Fig. 1).",
        "A second sentence follows.",
    ]


def test_captions_follow_their_paragraph(doc: Document) -> None:
    caps = [(c.id, c.kind, c.label, doc.text[doc.paragraph(c.paragraph_id).start : doc.paragraph(c.paragraph_id).end])
            for c in doc.captions]  # fmt: skip
    assert caps == [
        ("F1", "fig", "Figure 1", "Figure 1 Overview. Cells [3]."),
        ("T1", "table", "Table 1", "Table 1 Counts per group."),
        ("S1", "supplementary", "File S1", "File S1 Raw data."),
    ]
    # the fig nested in a <p> comes right after that paragraph, in the same section
    assert doc.paragraph("p0007").kind == "caption" and doc.paragraph("p0007").section_id == "sec1"


def test_citations_and_crossrefs(doc: Document) -> None:
    cites = [(c.ref_id, doc.text[c.start : c.end], c.paragraph_id) for c in doc.citations]
    assert cites == [("B1", "[1,2]", "p0005"), ("B2", "[1,2]", "p0005"), ("B1", "[1]", "p0006"),
                     ("B3", "[3]", "p0007"), ("B3", "", "p0015")]  # fmt: skip
    empty = doc.citations[-1]
    assert doc.text[empty.start - 4 : empty.start] == "cite"
    xrefs = [(x.ref_type, x.target_id, doc.text[x.start : x.end]) for x in doc.crossrefs]
    assert xrefs == [("fig", "F1", "1"), ("table", "T1", "Table 1"), ("sec", "sec1", "Section 1"),
                     ("supplementary", "S1", "File S1")]  # fmt: skip


def test_lists(doc: Document) -> None:
    outer, inner = doc.lists
    assert (outer.list_type, inner.list_type) == ("bullet", "order")

    def items(lst):
        return [doc.text[doc.paragraph(i).start : doc.paragraph(i).end] for i in lst.item_ids]

    assert items(outer) == ["First item.", "b) Second item with sub-items:"]
    assert items(inner) == ["Nested one.", "Nested two."]
    assert outer.start <= inner.start and inner.end == outer.end  # nested list inside the outer
    assert all(doc.paragraph(i).list_id == inner.id for i in inner.item_ids)


def test_references(doc: Document) -> None:
    refs = {r.id: r for r in doc.references}
    assert set(refs) == {"B1", "B2", "B3"}
    assert (refs["B1"].pmid, refs["B1"].doi) == ("111", None)
    assert refs["B2"].doi == "10.1000/xyz" and refs["B2"].text.startswith("Doe A. Another paper.")
    assert refs["B3"].text == "Roe R. Third."


def test_leading_paragraphs_are_the_introduction(check_offsets) -> None:
    d = parse_jats(FIXTURES / "leading_intro.nxml")
    assert [(s.id, s.title, s.imrad_type) for s in d.sections] == [
        ("abstract", "", "abstract"), ("s0", "", "introduction"),
        ("s1", "II. Patients and methods", "methods"), ("s2", "Results and discussion", "results"),
        ("floats", "", "other"),  # <floats-group> figures
    ]  # fmt: skip
    assert len(d.section("s0").paragraph_ids) == 2 and d.captions[0].label == "Figure 9"
    assert "ACKTEXT" not in d.text
    check_offsets(d, one_line=True)


def test_abstract_only_article_warns(check_offsets) -> None:
    d = parse_jats(FIXTURES / "abstract_only.nxml")
    assert d.id == "424242" and [s.title for s in d.sections] == ["Abstract"]
    assert d.text == "Only an abstract\n\nAbstract\n\nThis article has no body. It has an abstract."
    assert any("no <body>" in w for w in d.warnings) and d.body_word_count() == 0
    check_offsets(d, one_line=True)


def test_wrapper_root_and_jats_namespace() -> None:
    d = parse_jats(FIXTURES / "articleset.xml")  # <pmc-articleset>: the first article is taken
    assert d.id == "PMC555" and d.title == "Wrapped and namespaced"
    assert d.text.endswith("Introduction\n\nInside a wrapper.")


def test_encodings_latin1_and_bom() -> None:
    d = parse_jats(FIXTURES / "latin1.nxml")
    assert d.title == "Café study" and "Naïve T cells at 37 °C." in d.text
    raw = (FIXTURES / "leading_intro.nxml").read_bytes()
    assert parse_jats(b"\xef\xbb\xbf" + raw, source="x").text == parse_jats(raw).text
    utf16 = raw.decode().replace("UTF-8", "UTF-16").encode("utf-16")  # BOM included
    assert parse_jats(utf16).title == "Leading paragraphs"


@pytest.mark.parametrize(
    "name, words",
    [("malformed.nxml", ["malformed.nxml", "line 5", "xmllint"]),
     ("not_article.xml", ["not_article.xml", "<html>", "JATS"]),
     ("no_text.nxml", ["no_text.nxml", "has no text"]),
     ("missing.nxml", ["missing.nxml", "cannot read"])],
)  # fmt: skip
def test_bad_input_raises_clear_error(name: str, words: list[str]) -> None:
    with pytest.raises(DocumentParseError) as info:
        parse_jats(FIXTURES / name)
    for w in words:
        assert w in str(info.value)
    assert info.value.path == str(FIXTURES / name)
    if name == "malformed.nxml":
        assert info.value.line == 5


def test_a_list_item_holding_only_a_nested_list_leaves_no_empty_list(check_offsets):
    """Found by the 20,000-input reader fuzz (issue 58): the outer list had no item of its own."""
    doc = parse_jats(b"<article><front><article-meta><title-group><article-title>T</article-title>"
                     b"</title-group></article-meta></front><body><list><list-item><list><list-item>"
                     b"Results</list-item></list></list-item></list></body></article>")
    check_offsets(doc, one_line=True)
    assert [len(lst.item_ids) for lst in doc.lists] == [1]
