"""One error boundary for every command-line entry point.

A user's mistake (a missing file, a bad config key or value, a corrupt input: the
``FileNotFoundError`` / ``ValueError`` family our code raises with a message naming the file,
key or entry and the fix) ends with exit code 2 and that one message on stderr. Anything else
is a bug and keeps its traceback. ``--debug`` or ``GRALC_DEBUG=1`` shows the traceback of user
errors too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

USER_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, ValueError)


def run(main: Callable[[list[str]], int], argv: Sequence[str] | None = None) -> int:
    """``main(argv)`` inside the boundary (module docstring); returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("GRALC_DEBUG") == "1"
    args = [a for a in args if a != "--debug"]
    try:
        return main(args)
    except USER_ERRORS as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        print("(the full traceback: add --debug or set GRALC_DEBUG=1)", file=sys.stderr)
        return 2


def pipeline_overrides(items: Sequence[str]) -> list[str]:
    """``key=value`` pipeline settings from a command line, with or without the ``pipeline.``
    prefix (``gralc.index``, ``gralc.shard_index`` take them as ``eval.py`` does)."""
    return [i.removeprefix("pipeline.") for i in items]
