"""Load a directory of articles (JATS ``.nxml``/``.xml``, plain-text ``.txt``, Markdown ``.md``),
skipping (and logging) the files that cannot be parsed."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gralc.documents.errors import DocumentParseError
from gralc.documents.jats import parse_jats
from gralc.documents.model import Document
from gralc.documents.plaintext import parse_text_file

log = logging.getLogger(__name__)

DEFAULT_PATTERN = "**/*.nxml|**/*.xml|**/*.txt|**/*.md"
TEXT_SUFFIXES = (".txt", ".md", ".markdown")


#: the largest article file read, in MB (``GRALC_MAX_ARTICLE_MB``): a 5 MB article peaks at
#: ~3 GB while it is encoded (docs/guarantees.md, Memory), so one huge file cannot take the
#: machine; a larger file is refused before it is read
MAX_ARTICLE_MB = 16.0


def max_article_bytes() -> int:
    """:data:`MAX_ARTICLE_MB` in bytes, or ``GRALC_MAX_ARTICLE_MB`` when set.

    >>> max_article_bytes() > 1_000_000
    True
    """
    from gralc.safe_load import env_megabytes

    return env_megabytes("GRALC_MAX_ARTICLE_MB", MAX_ARTICLE_MB)


def parse_document(path: str | Path) -> Document:
    """Parse one article file by suffix: ``.txt``/``.md`` -> :func:`parse_text_file`, anything
    else (``.nxml``/``.xml``) -> :func:`parse_jats`. Raises ``DocumentParseError``; a file
    larger than :func:`max_article_bytes` is refused before it is read.

    Example: ``parse_document("gralc/data/demo/articles/PMC9000001.nxml").id`` -> ``'PMC9000001'``.
    """
    size = Path(path).stat().st_size if Path(path).is_file() else 0  # a missing file: the reader says so
    limit = max_article_bytes()
    if size > limit:
        raise DocumentParseError(
            f"{path} is {size / 1e6:.3g} MB, more than the {limit / 1e6:g} MB an article may have "
            "(encoding it would take several times that in memory per MB); split it, or raise "
            "the limit with GRALC_MAX_ARTICLE_MB", path=Path(path))
    if Path(path).suffix.lower() in TEXT_SUFFIXES:
        return parse_text_file(path)
    return parse_jats(path)


@dataclass
class CorpusLoadResult:
    """Parsed documents (sorted by path) and the ``(path, reason)`` of every skipped file.

    Example: ``load_corpus("gralc/data/demo/articles")`` -> ``CorpusLoadResult(documents=[10
    Documents], skipped=[])``.
    """

    documents: list[Document] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)


def corpus_files(directory: str | Path, pattern: str = DEFAULT_PATTERN) -> list[Path]:
    """Files under ``directory`` matching any ``|``-separated glob, sorted, de-duplicated.

    Example: ``[p.name for p in corpus_files("gralc/data/demo/articles")][:2]`` ->
    ``['PMC9000001.nxml', 'PMC9000002.nxml']``.
    """
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"corpus directory {root} does not exist or is not a directory")
    files = {p for glob in pattern.split("|") for p in root.glob(glob.strip()) if p.is_file()}
    inside = {p for p in files if inside_corpus(root, p)}
    for p in sorted(files - inside):
        log.warning("skipping %s: a link to %s, outside the corpus folder %s (GraLC reads only "
                    "files that lie inside the folder it is given; copy the file in to index it)",
                    p, p.resolve(), root)
    return sorted(inside)


def inside_corpus(root: str | Path, path: str | Path) -> bool:
    """Whether ``path`` (a file under the corpus folder ``root``, perhaps a symbolic link or
    under one) really lies inside ``root``: the one rule of every corpus walker (indexing,
    graphs, shard builds and merges), so a link cannot bring a file from elsewhere in.

    >>> inside_corpus("gralc/data/demo/articles", "gralc/data/demo/articles/PMC9000001.nxml")
    True
    """
    real_root = Path(root).resolve()
    real = Path(path).resolve()
    return real == real_root or real_root in real.parents


def iter_corpus(
    directory: str | Path,
    pattern: str = DEFAULT_PATTERN,
    skipped: list[tuple[Path, str]] | None = None,
) -> Iterator[Document]:
    """Yield each parseable article in path order; unparseable files are logged and, when
    ``skipped`` is given, appended to it as ``(path, reason)``. Never aborts on one file.

    Example: ``next(iter_corpus("gralc/data/demo/articles")).id`` -> ``'PMC9000001'``.
    """
    for _, doc in _parsed(directory, pattern, skipped):
        yield doc


def _parsed(directory: str | Path, pattern: str, skipped: list[tuple[Path, str]] | None
            ) -> Iterator[tuple[Path, Document]]:
    files = corpus_files(directory, pattern)
    if not files:
        log.warning("no files matching %r under %s", pattern, directory)
    for path in files:
        try:
            yield path, parse_document(path)
        except Exception as exc:  # one bad file must not stop a corpus load
            reason = f"{type(exc).__name__}: {exc}"
            log.warning("skipping %s: %s", path, reason)
            if skipped is not None:
                skipped.append((path, reason))


def load_corpus(directory: str | Path, pattern: str = DEFAULT_PATTERN) -> CorpusLoadResult:
    """Parse every matching file under ``directory`` (see :func:`iter_corpus`).

    Example: ``len(load_corpus("gralc/data/demo/articles").documents)`` -> ``10``.
    """
    result = CorpusLoadResult()
    first: dict[str, Path] = {}
    for path, doc in _parsed(directory, pattern, result.skipped):
        if doc.id in first:  # refused here, before any encoding, naming both files
            raise ValueError(f"two files of {directory} are the document {doc.id!r}: {first[doc.id]} "
                             f"and {path}; a document's id is its PMC / PMID id or its file name "
                             "without the suffix: rename (or remove) one")
        first[doc.id] = path
        result.documents.append(doc)
    log.info("loaded %d documents from %s (%d skipped)", len(result.documents), directory,
             len(result.skipped))  # fmt: skip
    return result
