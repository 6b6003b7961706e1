"""Fixtures of the knowledge tests: the full MeSH 2024 vocabulary of the shared data."""

from __future__ import annotations

import pytest

from gralc.knowledge.vocabulary import Vocabulary


@pytest.fixture(scope="session")
def mesh_vocab(shared_data) -> Vocabulary:
    """All MeSH 2024 entry terms (30,764 descriptors), read once; the tests only read it."""
    return Vocabulary.from_thesaurus_tsv(shared_data / "mesh" / "mesh2024_thesaurus_terms.tsv")
