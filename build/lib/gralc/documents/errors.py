"""Errors raised while reading documents."""

from __future__ import annotations

from pathlib import Path


class DocumentParseError(ValueError):
    """A document could not be parsed.

    ``path`` is the offending file (or a label for in-memory input), ``line`` the 1-based line
    of the problem when known. The message names both and says what to do.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.path = str(path) if path is not None else None
        self.line = line


class ConditionUnavailableError(ValueError):
    """A document-length condition cannot be derived (e.g. no introduction section)."""
