"""One error boundary for every command-line entry point.

A user's mistake (a missing file, a bad config key or value, a corrupt input: the
``FileNotFoundError`` / ``ValueError`` family our code raises with a message naming the file,
key or entry and the fix) ends with exit code 2 and that one message on stderr. Anything else
is a bug and keeps its traceback. ``--debug`` or ``GRALC_DEBUG=1`` shows the traceback of user
errors too.
"""

from __future__ import annotations

import logging
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


# ----- what a command prints -------------------------------------------------------------
#: third-party loggers that chatter at INFO (library loading, hardware found, tips, index
#: builds): WARNING unless ``-v``, which gives them back the level their library set
THIRD_PARTY_LOGGERS = (
    "faiss", "faiss.loader", "urllib3", "bm25s", "matplotlib", "PIL", "filelock", "numexpr",
    "httpx", "huggingface_hub", "transformers", "sentence_transformers",
    "pytorch_lightning", "lightning", "lightning.pytorch", "lightning.fabric", "lightning_fabric",
)

_LIGHTNING = r"(pytorch_lightning|lightning|lightning_fabric)(\.|$)"

#: third-party warnings that tell a user of the command nothing to act on, as
#: ``(category, message regex, module regex)`` (module: where the warning is attributed);
#: anything else still shows
KNOWN_WARNINGS: tuple[tuple[type[Warning], str, str], ...] = (
    # torch 2.13 deprecates LeafSpec; Lightning 2.6's _pytree still builds one per batch
    (FutureWarning, r"`isinstance\(treespec, LeafSpec\)` is deprecated", _LIGHTNING),
    # a resumed run's checkpoints: GraLC checks and claims its run folder itself
    # (gralc.artefacts, gralc.training.run.check_run_dir) before Lightning sees it
    (UserWarning, r"Checkpoint directory .* exists and is not empty", _LIGHTNING),
)

_added_filters: list[tuple] = []  # the warnings filters configure_output put in place
_library_levels: dict[str, int] = {}  # the levels of THIRD_PARTY_LOGGERS before it changed them


class _StderrHandler(logging.StreamHandler):
    """Writes to the ``sys.stderr`` of the moment (as :data:`logging.lastResort` does), so a
    replaced stream (pytest's capture, a redirect) is never written after it is closed."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):  # noqa: D102 - the StreamHandler attribute
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


class _ShortFormatter(logging.Formatter):
    """INFO lines as their message; warnings and errors prefixed ``warning:`` / ``error:``
    (as :func:`run` writes a user's mistake)."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return text if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {text}"


def add_verbose_flag(parser) -> None:
    """``-v`` / ``--verbose`` (count) in an argparse parser, for :func:`configure_output`."""
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more output: -v every library's INFO lines and warnings, -vv "
                             "GraLC's DEBUG lines too")


def pop_verbose(argv: Sequence[str]) -> tuple[int, list[str]]:
    """``(verbosity, the rest)`` of a ``key=value`` command line (train.py, eval.py): ``-v``,
    ``-vv``, ``--verbose`` anywhere count as :func:`add_verbose_flag`'s."""
    level, rest = 0, []
    for arg in argv:
        if arg == "--verbose" or (len(arg) > 1 and arg[0] == "-" and set(arg[1:]) == {"v"}):
            level += 1 if arg == "--verbose" else len(arg) - 1
        else:
            rest.append(arg)
    return level, rest


def configure_output(verbose: int = 0) -> None:
    """Set up what a command line prints on stderr (call it once, in ``main``, after parsing).

    ``verbose=0``: GraLC's INFO lines (a summary per command, one line per training epoch)
    as bare messages, warnings as ``warning: ...``; third-party loggers
    (:data:`THIRD_PARTY_LOGGERS`) at WARNING; the third-party warnings of
    :data:`KNOWN_WARNINGS` ignored. ``verbose=1`` (``-v``): every INFO line of every library
    and every warning, as ``LEVEL logger: message``; ``verbose>=2`` (``-vv``): GraLC's DEBUG
    lines too (one per encoded document, ...). Off a terminal (stderr not a TTY: a log
    file, SLURM) no library draws a progress bar. Like :func:`logging.basicConfig`, a logging
    set up by someone else (an application calling ``main``, pytest) is left alone; calling
    it again replaces what an earlier call set."""
    import warnings

    root = logging.getLogger()
    ours = [h for h in root.handlers if isinstance(h, _StderrHandler)]
    if len(ours) == len(root.handlers):  # nobody else configured logging
        for h in ours:
            root.removeHandler(h)
        handler = _StderrHandler()
        handler.setFormatter(_ShortFormatter("%(message)s") if verbose <= 0
                             else logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING if verbose <= 0 else logging.INFO)
        logging.getLogger("gralc").setLevel(logging.DEBUG if verbose >= 2 else logging.INFO)
        for name in THIRD_PARTY_LOGGERS:
            log = logging.getLogger(name)
            _library_levels.setdefault(name, log.level)
            log.setLevel(logging.WARNING if verbose <= 0 else _library_levels[name])
    for entry in _added_filters:
        if entry in warnings.filters:
            warnings.filters.remove(entry)
    _added_filters.clear()
    if verbose <= 0:
        for category, message, module in KNOWN_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=category, module=module)
            _added_filters.append(warnings.filters[0])
    if not sys.stderr.isatty():
        quiet_progress_bars()


def quiet_progress_bars() -> None:
    """No progress bar from Hugging Face libraries (transformers' "Loading weights" draws one
    even into a log file): before their import through ``HF_HUB_DISABLE_PROGRESS_BARS``,
    after it through their switches."""
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
