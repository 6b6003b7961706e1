"""Errors raised while reading documents."""

from __future__ import annotations

from pathlib import Path


class DocumentParseError(ValueError):
    """A document could not be parsed.

    ``path`` is the offending file (or a label for in-memory input), ``line`` the 1-based line
    of the problem when known. The message names both and says what to do.

    >>> e = DocumentParseError("a.nxml:3: no <article> element; is it JATS?", "a.nxml", 3)
    >>> e.path, e.line
    ('a.nxml', 3)
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.path = str(path) if path is not None else None
        self.line = line


class ConditionUnavailableError(ValueError):
    """A document-length condition cannot be derived (e.g. no introduction section).

    Example: ``derive_condition(doc, "introduction")`` of an article without an introduction ->
    ``ConditionUnavailableError``.
    """
