"""Plain-text / Markdown reader: CORD-19 layout, headings, offset map, files, corpus, CLI."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from gralc.documents.__main__ import main
from gralc.documents.corpus import load_corpus
from gralc.documents.errors import DocumentParseError
from gralc.documents.model import Document
from gralc.documents.plaintext import OffsetMap, parse_plain_text, parse_text_file

FIXTURES = Path(__file__).parent / "fixtures"

CORD19 = """Species-specific clinical characteristics of human coronavirus infection

https://www.ncbi.nlm.nih.gov/pmc/articles/PMC5820427/

SHA: edfe02a438fa9b667313da8f03614303fc2a4a14

Authors: Bouvier, Monique; Chen, Wei-Ju; Arnold, John C.
Date: 2018-02-02
DOI: 10.1111/irv.12538
License: cc-by

Abstract: Human coronavirus (HCoV) is a known cause of influenza-like illness. We studied 2 species.

Text: Clinical manifestations of HCoV infection range from mild to severe [1] . Fig. 1 shows it.

Highly virulent species caused SARS and MERS outbreaks.
A second line of the same block stays in the paragraph.

There was season-to-season variability in the leading causes of ILI.
"""

MARKDOWN = """# A Markdown Article

## Abstract

We summarise the study. It has two sentences.

## Introduction
Background text right under its heading.

## Materials and Methods

### Statistical analysis

We used R. Tests were two-sided.

```
# not a heading: inside a code fence
```

## Results

### Cohort

Patients were enrolled.

## Discussion

It worked.
"""

NUMBERED = """Numbered Headings in a Plain Text Article

1. Introduction

Influenza is common. It kills many people every year.

2. Materials and Methods

2.1 Statistical analysis

All tests were two-sided and p < 0.05 was significant.

2.2 Cohort, recruitment and follow-up

We recruited 300 patients from three hospitals.

3. Results

Risk of exposure:

The risk was low for most patients in the cohort during the study.

A Page Header Line

Most patients recovered within two weeks of the onset of symptoms.

A Page Header Line

This Line Looks Like A Heading But Is Followed By Another Candidate

CONCLUSIONS

This long sentence-like line ends with a period and has many more words than a heading.

30 March 2020 Imperial College Response Team

We conclude that the intervention worked.
"""


def tree(doc: Document) -> list[tuple[int, str, str]]:
    return [(s.level, s.imrad_type, s.title) for s in doc.iter_sections()]


def test_cord19_layout(check_offsets) -> None:
    doc, omap = parse_plain_text(CORD19, "hcov", source="mem", fmt="cord19")
    check_offsets(doc)
    assert doc.title.startswith("Species-specific") and doc.text.startswith(doc.title + "\n\n")
    assert (doc.doi, doc.pmcid, doc.id, doc.source) == (
        "10.1111/irv.12538",
        "PMC5820427",
        "hcov",
        "mem",
    )
    for dropped in (
        "https://",
        "SHA:",
        "Authors:",
        "DOI:",
        "License",
        "2018-02-02",
        "Abstract:",
        "Text:",
    ):
        assert dropped not in doc.text
    abstract, body = doc.sections
    assert (abstract.id, abstract.imrad_type, abstract.title) == ("abstract", "abstract", "")
    assert [doc.paragraph(p).kind for p in abstract.paragraph_ids] == ["abstract"]
    assert doc.text[abstract.start : abstract.end].startswith("Human coronavirus (HCoV)")
    assert (body.id, body.imrad_type, body.title, body.title_start) == (
        "s0",
        "other",
        "",
        body.start,
    )
    paras = [doc.text[doc.paragraph(p).start : doc.paragraph(p).end] for p in body.paragraph_ids]
    assert len(paras) == 3 and paras[0].startswith("Clinical manifestations")
    assert (
        paras[1]
        == "Highly virulent species caused SARS and MERS outbreaks.\nA second line of the same block stays in the paragraph."
    )
    assert doc.body_word_count() == sum(len(p.split()) for p in paras)
    # the abstract placeholder "nan" of CORD-19 is dropped with a warning
    raw = CORD19.replace(
        CORD19[CORD19.index("Abstract:") : CORD19.index("\n\nText:")], "Abstract: nan"
    )
    nan_doc, _ = parse_plain_text(raw, "n")
    assert "nan" in nan_doc.warnings[0] and nan_doc.sections[0].id == "s0"


def test_markdown_headings_nesting_and_types(check_offsets) -> None:
    doc, _ = parse_plain_text(MARKDOWN, "md")
    check_offsets(doc)
    assert doc.title == "A Markdown Article" and "#" not in doc.text.split("```")[0]
    assert tree(doc) == [
        (1, "abstract", "Abstract"),
        (1, "introduction", "Introduction"),
        (1, "methods", "Materials and Methods"),
        (2, "methods", "Statistical analysis"),
        (1, "results", "Results"),
        (2, "results", "Cohort"),
        (1, "discussion", "Discussion"),
    ]
    assert [s.id for s in doc.iter_sections()] == [
        "abstract",
        "s1",
        "s2",
        "s2.1",
        "s3",
        "s3.1",
        "s4",
    ]
    assert [p.kind for p in doc.paragraphs][:2] == ["abstract", "paragraph"]
    stats = doc.section("s2.1")
    assert any("# not a heading" in doc.text[doc.paragraph(p).start : doc.paragraph(p).end]
               for p in stats.paragraph_ids)  # fmt: skip
    assert doc.top_level_type("s2.1") == "methods"
    # without "#" lines auto mode reads it as plain text; markdown mode can be forced
    plain, _ = parse_plain_text(MARKDOWN.replace("#", ""), "p")
    assert plain.sections[0].id == "abstract" and plain.sections[0].title == "Abstract"
    with pytest.raises(ValueError, match="fmt"):
        parse_plain_text(MARKDOWN, "x", fmt="html")


def test_numbered_and_guessed_headings(check_offsets) -> None:
    doc, _ = parse_plain_text(NUMBERED, "num", fmt="plain")
    check_offsets(doc)
    assert tree(doc) == [
        (1, "introduction", "1. Introduction"),
        (1, "methods", "2. Materials and Methods"),
        (2, "methods", "2.1 Statistical analysis"),
        (2, "methods", "2.2 Cohort, recruitment and follow-up"),
        (1, "results", "3. Results"),
        (1, "conclusion", "CONCLUSIONS"),
    ]
    results = doc.section("s3")
    texts = [doc.text[doc.paragraph(p).start : doc.paragraph(p).end] for p in results.paragraph_ids]
    assert "Risk of exposure:" in texts and texts.count("A Page Header Line") == 2
    assert "This Line Looks Like A Heading But Is Followed By Another Candidate" in texts
    last = [
        doc.text[doc.paragraph(p).start : doc.paragraph(p).end]
        for p in doc.section("s4").paragraph_ids
    ]
    assert last[1] == "30 March 2020 Imperial College Response Team"
    # a heading line at the top of a block; "8.2" after "7" is not its subsection
    web, _ = parse_plain_text("Page\n\nIntro text here.\n\nSituation in U.S.\nCases rose.\n\n"
                              "7 Funding\n\nNone.\n\n8.2 Infection model\n\nA model.", "w")  # fmt: skip
    check_offsets(web)
    assert tree(web) == [(1, "introduction", ""), (1, "other", "Situation in U.S."),
                         (1, "other", "7 Funding"), (1, "other", "8.2 Infection model")]  # fmt: skip
    assert web.text[web.paragraphs[1].start : web.paragraphs[1].end] == "Cases rose."


def test_body_without_headings_is_one_untitled_section(check_offsets) -> None:
    raw = "A Title\n\nFirst paragraph. It has two sentences.\n\nSecond paragraph, with a comma."
    doc, _ = parse_plain_text(raw, "t")
    check_offsets(doc)
    (sec,) = doc.sections
    assert (sec.id, sec.title, sec.imrad_type, sec.level, len(sec.paragraph_ids)) == (
        "s0",
        "",
        "other",
        1,
        2,
    )
    assert sec.title_start == sec.title_end == sec.start == doc.paragraphs[0].start
    assert sec.end == len(doc.text)
    assert [doc.text[s.start : s.end] for s in doc.paragraphs[0].sentences] == [
        "First paragraph.", "It has two sentences."]  # fmt: skip


def test_offset_map_round_trips_spans() -> None:
    rng = random.Random(0)
    for raw, fmt in ((CORD19, "cord19"), (MARKDOWN, "markdown"), (NUMBERED, "plain")):
        doc, omap = parse_plain_text(raw, "x", fmt=fmt)
        assert omap.segments == sorted(omap.segments)
        for raw_start, doc_start, n in omap.segments:
            assert doc.text[doc_start : doc_start + n] == raw[raw_start : raw_start + n]
            for _ in range(20):
                a = raw_start + rng.randrange(n + 1)
                b = a + rng.randrange(raw_start + n - a + 1)
                da, db = omap.span(a, b)
                assert doc.text[da:db] == raw[a:b]
            assert omap.span(raw_start, raw_start + n) == (doc_start, doc_start + n)
    doc, omap = parse_plain_text(CORD19, "x")
    for dropped in ("SHA: edfe", "License: cc-by", "Abstract: ", "PMC5820427"):
        i = CORD19.index(dropped)
        assert omap.to_doc(i + 1) is None and omap.span(i + 1, i + 5) is None
    a, b = CORD19.index("Human coronavirus"), CORD19.index("Highly virulent") + 6
    assert omap.span(a, b) == (omap.to_doc(a), omap.to_doc(b))  # crosses blocks
    assert doc.text[slice(*omap.span(a, b))].endswith("\n\nHighly")
    assert OffsetMap().to_doc(0) is None and OffsetMap([(10, 0, 5)]).span(12, 16) is None


def test_a_title_given_apart_from_the_text() -> None:
    """BEIR's corpus entries: the title is a field of its own; no line of the text is taken
    as the title (a passage is often one line), an empty title means none, and the offset
    map still maps the text's own offsets."""
    raw = "Only one line of passage text.\n\nA second paragraph."
    doc, omap = parse_plain_text(raw, "d", title="A title\nover two lines")
    assert doc.title == "A title over two lines" and doc.text.startswith("A title over two lines\n\n")
    assert [doc.text[p.start : p.end] for p in doc.paragraphs] == raw.split("\n\n")
    for raw_start, doc_start, n in omap.segments:
        assert doc.text[doc_start : doc_start + n] == raw[raw_start : raw_start + n]
    untitled, _ = parse_plain_text(raw, "d", title="")
    assert untitled.title == "" and untitled.text == raw and len(untitled.paragraphs) == 2
    labelled, _ = parse_plain_text("Body.", "d", title="Abstract: not a label here")
    assert labelled.title == "Abstract: not a label here" and labelled.paragraphs[0].section_id == "s0"
    assert parse_plain_text("", "d", title="Title only")[0].text == "Title only"
    with pytest.raises(DocumentParseError, match="no text"):
        parse_plain_text(" \n", "d", title=" ")


def test_parse_text_file_errors_and_encodings(tmp_path: Path) -> None:
    bad = tmp_path / "latin.txt"
    bad.write_bytes("Title\n\nCaf\u00e9 au lait.".encode("latin-1"))
    with pytest.raises(DocumentParseError) as err:
        parse_text_file(bad)
    msg = str(err.value)
    assert str(bad) in msg and "byte offset 10" in msg and "iconv -f latin1 -t utf-8" in msg
    assert err.value.path == str(bad) and err.value.line == 3
    for name, content in (("empty.txt", b""), ("blank.md", b"  \n\t\n")):
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DocumentParseError, match=str(tmp_path / name)):
            parse_text_file(tmp_path / name)
    with pytest.raises(DocumentParseError, match="cannot read"):
        parse_text_file(tmp_path / "missing.txt")
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfTitle\r\n\r\nBody text.\r\n")
    doc = parse_text_file(bom)
    assert (doc.id, doc.title, doc.text, doc.source) == (
        "bom",
        "Title",
        "Title\n\nBody text.",
        str(bom),
    )
    md = tmp_path / "paper.md"
    md.write_text("# Paper\n\n## Results\n\n1. first item\n", encoding="utf-8")
    assert tree(parse_text_file(md)) == [(1, "results", "Results")]
    assert parse_text_file(md, fmt="plain").title == "# Paper"


def test_load_corpus_mixes_text_and_jats(tmp_path: Path, capsys) -> None:
    shutil.copy(FIXTURES / "full_article.nxml", tmp_path / "a.nxml")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text(CORD19, encoding="utf-8")
    (tmp_path / "c.md").write_text(MARKDOWN, encoding="utf-8")
    (tmp_path / "empty.txt").write_text("\n", encoding="utf-8")
    result = load_corpus(tmp_path)
    assert [d.id for d in result.documents] == ["PMC9999999", "c", "b"]
    assert [p.name for p, _ in result.skipped] == ["empty.txt"]
    assert main(["inspect", str(tmp_path / "sub" / "b.txt"), str(tmp_path / "c.md")]) == 0
    out = capsys.readouterr().out
    assert (
        "title: Species-specific" in out
        and "- [abstract] (untitled)  (abstract: 1 paragraphs" in out
    )
    assert "    - [methods] Statistical analysis" in out
    assert main(["inspect", str(tmp_path / "empty.txt")]) == 2  # a bad input file: exit code 2 (issue 45)
    assert "empty.txt is empty" in capsys.readouterr().err


def test_load_documents_from_a_text_file(tmp_path: Path) -> None:
    from gralc.pipeline import load_documents

    (tmp_path / "one.txt").write_text(CORD19, encoding="utf-8")
    (doc,) = load_documents(tmp_path / "one.txt")
    assert doc.id == "one" and doc.doi == "10.1111/irv.12538"


def test_covidqa_answers_map_through_the_offset_map(shared_data: Path, check_offsets) -> None:
    data = json.loads((shared_data / "covidqa" / "covidqa_dev.json").read_text(encoding="utf-8"))
    total, unmapped = 0, []
    for article in data["data"]:
        for para in article["paragraphs"]:
            raw = para["context"]
            doc, omap = parse_plain_text(raw, "covidqa", fmt="cord19")
            check_offsets(doc)
            for qa in para["qas"]:
                for ans in qa["answers"]:
                    total += 1
                    text, start = ans["text"], ans["answer_start"]
                    stripped = text.strip()
                    # 90 answers carry a leading space yet answer_start points past it
                    start = next((s for s in (start + len(text) - len(text.lstrip()), start)
                                  if raw.startswith(stripped, s)), start)  # fmt: skip
                    span = omap.span(start, start + len(stripped))
                    if span is None or doc.text[span[0] : span[1]] != stripped:
                        unmapped.append((qa["id"], stripped[:60]))
    print(f"COVID-QA: {total - len(unmapped)}/{total} answers map; unmapped: {unmapped}")
    assert total == 633 and len(unmapped) <= 0.01 * total, unmapped
