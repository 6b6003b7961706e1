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
    """``main(argv)`` inside the boundary (module docstring); returns the exit code.

    ``main`` must let user errors propagate: one that catches them itself and prints them
    (``except ValueError: print(...); return 2``) hides their traceback from ``--debug``. A
    module whose ``main(argv)`` is also called from Python (tests expecting 2) defines it as
    ``return run(_main, argv)`` and ends with ``sys.exit(main())``, not ``run(main)`` (a
    second ``run`` would no longer see ``--debug``)."""
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


def add_debug_flag(parser) -> None:
    """List ``--debug`` in an argparse parser's help (:func:`run` takes it off the command line
    before ``main`` parses it)."""
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error (also GRALC_DEBUG=1)")


def pipeline_overrides(items: Sequence[str]) -> list[str]:
    """``key=value`` pipeline settings from a command line, with or without the ``pipeline.``
    prefix (``gralc.index``, ``gralc.shard_index`` take them as ``eval.py`` does)."""
    return [i.removeprefix("pipeline.") for i in items]
