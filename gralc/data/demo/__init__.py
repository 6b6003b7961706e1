"""The bundled demo corpus: 10 fictitious IMRaD articles, questions and a tiny MeSH subset.

The texts are original, written for GraLC (not real publications); see ``README.md`` here.
Everything is read from the installed package folder, so the quickstart works offline.
"""

from __future__ import annotations

from pathlib import Path

from gralc.knowledge.builtin import builtin_tree_path, builtin_vocabulary_path

#: Folder holding the demo files (inside the installed package).
DEMO_DIR = Path(__file__).parent


def demo_articles() -> list[Path]:
    """The 10 JATS articles (``articles/PMC90000NN.nxml``), sorted by file name.

    >>> [p.name for p in demo_articles()][:2]
    ['PMC9000001.nxml', 'PMC9000002.nxml']
    """
    paths = sorted((DEMO_DIR / "articles").glob("*.nxml"))
    if not paths:
        raise FileNotFoundError(
            f"no demo articles in {DEMO_DIR / 'articles'}: reinstall gralc with its package data"
        )
    return paths


def _demo_file(name: str) -> Path:
    path = DEMO_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"demo file {path} is missing: reinstall gralc with its package data"
        )
    return path


def demo_questions_path() -> Path:
    """``questions.jsonl``: one question per line with gold document and IMRaD section types.

    >>> demo_questions_path().name
    'questions.jsonl'
    """
    return _demo_file("questions.jsonl")


def demo_vocabulary_path() -> Path:
    """The built-in MeSH subset the demo corpus is linked with
    (:func:`gralc.knowledge.builtin.builtin_vocabulary_path`).

    >>> demo_vocabulary_path().name
    'mesh_vocabulary.tsv'
    """
    return builtin_vocabulary_path()


def demo_mesh_tree_path() -> Path:
    """Its tree file (:func:`gralc.knowledge.builtin.builtin_tree_path`).

    >>> demo_mesh_tree_path().name
    'mtrees_demo.bin'
    """
    return builtin_tree_path()


def is_demo_corpus(path: str | Path) -> bool:
    """``path`` is (inside) the bundled demo articles folder.

    >>> is_demo_corpus(demo_articles()[0]), is_demo_corpus("/tmp")
    (True, False)
    """
    try:
        return Path(path).resolve().is_relative_to(DEMO_DIR.resolve())
    except OSError:
        return False


def check_vocabulary(vocabulary: str | None, corpus: str | Path, demo: bool | None = None) -> None:
    """The one rule: a corpus other than the demo linked without a configured vocabulary
    (``vocabulary`` None: the built-in 438-term subset) gets one loud warning with the download
    command (:func:`gralc.knowledge.builtin.warn_builtin_vocabulary`). ``demo``: whether
    ``corpus`` is the demo corpus (None: decided from its path).

    >>> check_vocabulary(None, demo_articles()[0]) is None  # the demo corpus: no warning
    True
    """
    from gralc.knowledge.builtin import warn_builtin_vocabulary

    if vocabulary is None and not (is_demo_corpus(corpus) if demo is None else demo):
        warn_builtin_vocabulary(str(corpus))


__all__ = [
    "DEMO_DIR",
    "check_vocabulary",
    "is_demo_corpus",
    "demo_articles",
    "demo_mesh_tree_path",
    "demo_questions_path",
    "demo_vocabulary_path",
]
