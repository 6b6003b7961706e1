"""The built-in MeSH subset: 438 entry terms of the 160 descriptors the demo corpus uses and
their direct tree parents (``builtin_mesh/``, shipped with the package so the quickstart runs
offline). It is the vocabulary when ``pipeline.knowledge.vocabulary`` is not set: right for the
demo corpus, nearly empty for any real one, so :func:`warn_builtin_vocabulary` says so, once."""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger(__name__)
BUILTIN_DIR = Path(__file__).parent / "builtin_mesh"
DOWNLOAD = "gralc mesh --year 2024 --out data/mesh"
_warned: set[str] = set()


def _builtin_file(name: str) -> Path:
    path = BUILTIN_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall gralc with its package data")
    return path


def builtin_vocabulary_path() -> Path:
    """``mesh_vocabulary.tsv``: MeSH 2024 entry terms in NLM's thesaurus-terms TSV format.

    >>> builtin_vocabulary_path().name
    'mesh_vocabulary.tsv'
    """
    return _builtin_file("mesh_vocabulary.tsv")


def builtin_tree_path() -> Path:
    """``mtrees_demo.bin``: ``Name;TreeNumber`` lines (NLM mtrees format) with direct parents.

    >>> builtin_tree_path().name
    'mtrees_demo.bin'
    """
    return _builtin_file("mtrees_demo.bin")


def warn_builtin_vocabulary(corpus: str) -> bool:
    """Warn (once per corpus and process) that ``corpus`` is linked with the built-in
    438-term subset; True when the warning was logged now.

    Example: ``warn_builtin_vocabulary("my_corpus/")`` -> ``True`` (one warning with the download
    command); a second call for ``my_corpus/`` -> ``False``.
    """
    if corpus in _warned:
        return False
    _warned.add(corpus)
    logger.warning(
        "\n%s\nNO MeSH VOCABULARY CONFIGURED for %s: concepts are linked with the built-in "
        "438-term demo subset, so KG-dependent results (entity boundaries, KG infusion, "
        "kg_prox) are not meaningful on a real corpus. Get MeSH 2024 with\n    %s\nand pass "
        "pipeline.knowledge.vocabulary=data/mesh/desc2024.xml "
        "pipeline.knowledge.tree_file=data/mesh/mtrees2024.bin\n%s",
        "!" * 78, corpus, DOWNLOAD, "!" * 78,
    )
    return True
