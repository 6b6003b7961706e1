"""Fixtures of the reliability tests: a one-article corpus and the index built from it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ferret_corpus(tmp_path_factory) -> Path:
    """A folder of one plain-text article (a title, two sentences): the smallest corpus."""
    root = tmp_path_factory.mktemp("ferret") / "corpus"
    root.mkdir()
    (root / "a.txt").write_text("Ferret cough study\n\nFerrets coughed for four days after "
                                "infection. Mice did not.\n", encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def small_index(ferret_corpus, tmp_path_factory) -> Path:
    """``gralc index`` of :func:`ferret_corpus`, late chunking (read, never written, by tests)."""
    from gralc import index as index_cli

    out = tmp_path_factory.mktemp("small_index") / "index"
    assert index_cli.main([str(ferret_corpus), "--out", str(out), "--strategy", "late"]) == 0
    return out
