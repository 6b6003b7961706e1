"""The project's own papers: LICENSE, CITATION.cff and CHANGELOG.md agree with pyproject.toml
and with each other (a release bumps one version, and these tests name what else to touch)."""

from __future__ import annotations

import datetime
import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: keys CFF 1.2.0 requires of the file, and of each reference (preferred-citation included)
CFF_REQUIRED = ("cff-version", "message", "title", "authors")
REFERENCE_REQUIRED = ("type", "title", "authors")
SEED_TITLE = "Graph-Aware Late Chunking for Retrieval-Augmented Generation in Biomedical Literature"


def _authors_ok(authors) -> bool:
    """A non-empty list of persons (family-names) or entities (name)."""
    return isinstance(authors, list) and bool(authors) and all(
        isinstance(a, dict) and (a.get("family-names") or a.get("name")) for a in authors)


def test_the_license_is_the_mit_license_pyproject_names():
    assert PROJECT["license"] == "MIT"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 The GraLC authors" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND" in text


def test_citation_cff_is_valid_cff_and_agrees_with_pyproject():
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text(encoding="utf-8"))
    assert isinstance(cff, dict)
    missing = [k for k in CFF_REQUIRED if not cff.get(k)]
    assert missing == [], f"CITATION.cff lacks {missing}"
    assert str(cff["cff-version"]) == "1.2.0"
    assert cff.get("type", "software") == "software" and _authors_ok(cff["authors"])
    assert str(cff["version"]) == PROJECT["version"], "bump CITATION.cff's version with pyproject's"
    assert cff["license"] == PROJECT["license"]
    datetime.date.fromisoformat(str(cff["date-released"]))
    references = [cff["preferred-citation"], *cff.get("references", [])]
    for ref in references:
        assert [k for k in REFERENCE_REQUIRED if not ref.get(k)] == [], ref
        assert _authors_ok(ref["authors"])
    paper = cff["preferred-citation"]
    assert paper["title"] == SEED_TITLE
    assert [(a["given-names"], a["family-names"]) for a in paper["authors"]] == [
        ("Pouria", "Mortezaagha"), ("Arya", "Rahgozar")]


def test_the_changelog_has_unreleased_the_current_version_and_every_format():
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert versions[0] == "Unreleased", "Keep a Changelog: [Unreleased] comes first"
    assert PROJECT["version"] in versions, "pyproject's version needs its CHANGELOG.md section"
    assert "## Version bump policy" in text
    formats = {m for path in (REPO / "gralc").rglob("*.py")
               for m in re.findall(r"gralc\.[a-z0-9_]+/\d+", path.read_text(encoding="utf-8"))}
    assert formats, "the format versions moved: update this test"
    missing = sorted(f for f in formats if f"`{f}`" not in text)
    assert missing == [], f"name these format versions in CHANGELOG.md's bump policy: {missing}"


def test_the_package_says_the_version_pyproject_says():
    import gralc
    from gralc.commands import version

    assert gralc.__version__ == PROJECT["version"], "bump gralc/__init__.py's __version__ with pyproject's"
    assert version() in (PROJECT["version"], "unknown")  # the installed metadata (none from a bare tree)
