"""The parser, IMRaD filter and corpus loader on the 108 real PMC articles; the CLI."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pytest

from gralc.documents.__main__ import main
from gralc.documents.conditions import derive_condition
from gralc.documents.corpus import load_corpus
from gralc.documents.imrad import is_imrad

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def corpus(shared_data: Path):
    start = time.perf_counter()
    result = load_corpus(shared_data / "pmc")
    return result, time.perf_counter() - start


def test_every_real_article_parses(corpus) -> None:
    result, seconds = corpus
    assert result.skipped == [] and len(result.documents) == 108
    assert seconds < 30
    paths = [d.source for d in result.documents]
    assert paths == sorted(paths)


def test_imrad_count(corpus) -> None:
    docs = corpus[0].documents
    n = sum(is_imrad(d) for d in docs)
    assert n >= 90, f"only {n}/108 IMRaD"
    review = next(d for d in docs if d.article_type == "review-article")
    assert not is_imrad(review)


def test_offsets_round_trip_on_real_articles(corpus, check_offsets) -> None:
    for doc in corpus[0].documents:
        check_offsets(doc, one_line=True)
        assert doc.sections and doc.title and len(doc.sentences) > 20
        for para in doc.paragraphs:
            sec = doc.section(para.section_id)
            for s in para.sentences:
                assert sec.start <= s.start < s.end <= sec.end


def test_citations_resolve_to_references(corpus) -> None:
    total = resolved = 0
    for doc in corpus[0].documents:
        if not doc.references:
            continue
        ids = {r.id for r in doc.references}
        total += len(doc.citations)
        resolved += sum(c.ref_id in ids for c in doc.citations)
    assert total > 5000 and resolved / total >= 0.95, f"{resolved}/{total} citations resolve"


def test_conditions_on_real_articles(corpus, check_offsets) -> None:
    for doc in [d for d in corpus[0].documents if is_imrad(d)][:20]:
        parts = {c: derive_condition(doc, c) for c in ("introduction", "partial", "full")}
        words = {c: len(d.text.split()) for c, d in parts.items()}
        assert words["introduction"] < words["partial"] < words["full"]
        check_offsets(parts["partial"], one_line=True)


def test_load_corpus_skips_bad_files(tmp_path: Path, caplog) -> None:
    for name in ("full_article.nxml", "malformed.nxml", "not_article.xml"):
        shutil.copy(FIXTURES / name, tmp_path / name.replace("_", " "))  # names with spaces
    (tmp_path / "sub").mkdir()
    shutil.copy(FIXTURES / "leading_intro.nxml", tmp_path / "sub" / "lead.nxml")
    with caplog.at_level(logging.WARNING, logger="gralc.documents.corpus"):
        result = load_corpus(tmp_path)
    assert [d.id for d in result.documents] == ["PMC9999999", "10.1000/lead"]
    assert [p.name for p, _ in result.skipped] == ["malformed.nxml", "not article.xml"]
    assert "line 5" in result.skipped[0][1] and "<html>" in result.skipped[1][1]
    assert sum("skipping" in r.message for r in caplog.records) == 2
    with pytest.raises(FileNotFoundError):
        load_corpus(tmp_path / "nope")


def test_inspect_cli(capsys) -> None:
    assert main(["inspect", str(FIXTURES / "full_article.nxml")]) == 0
    out = capsys.readouterr().out
    assert (
        "- [methods] Materials & Methods" in out
        and "    - [methods] 2.1 Statistical analysis" in out
    )
    assert "citations 5" in out and "lists 2" in out and "captions 3" in out
    assert "IMRaD: no (only 86 body words (< 1000))" in out
    assert main(["inspect", str(FIXTURES / "malformed.nxml")]) == 2  # a bad input file: exit code 2 (issue 45)
    assert "line 5" in capsys.readouterr().err
