"""What every GraLC command line shares: one grammar, one error boundary, offline by default.

**Grammar.** ``gralc <command> POSITIONALS [key=value ...] [--flag ...]``: a token that looks
like ``name.name=...`` is a setting wherever it stands (after ``--`` every token is a
positional), and no option takes more than one value. :class:`CommandParser` implements it on
:mod:`argparse`; its ``--help`` ends with the settings, generated from the config dataclasses
(:func:`settings_help`). **Error boundary.** A user's mistake (the ``FileNotFoundError`` /
``ValueError`` family, with a message) exits 2 with that one message; anything else keeps its
traceback (``--debug`` / ``GRALC_DEBUG=1``: user errors too). **Offline by default**
(:func:`offline_by_default`): ``HF_HUB_OFFLINE=1``, ``TRANSFORMERS_OFFLINE=1`` and
``WANDB_MODE=offline`` unless the user set them. In full: docs/architecture.md.

This module imports nothing of GraLC but :mod:`gralc.terminal` (which imports nothing; every
layer's command line may use it) and nothing heavy (``gralc <command> --help`` must answer at
once)."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import re
import sys
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gralc.terminal import for_terminal

#: a user's mistake or situation, not a bug (ConnectionError: a server we need cannot be reached)
USER_ERRORS = (FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError,
               PermissionError, ValueError, ConnectionError)

#: ``key=value``: a dotted name, ``=``, anything (``models=[a,b]``, ``+x.y=1``, ``data=squad``)
SETTING = re.compile(r"^\+?[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z0-9_\-]+)*=")

#: environment an entry point sets unless the user did (see the module docstring)
OFFLINE_DEFAULTS = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "WANDB_MODE": "offline",
                    "HF_HUB_DISABLE_TELEMETRY": "1"}


def offline_by_default() -> None:
    """Set :data:`OFFLINE_DEFAULTS` where the environment does not already say otherwise.

    Example: ``offline_by_default()`` -> ``os.environ["HF_HUB_OFFLINE"] == "1"`` unless the
    environment already set it.
    """
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)


def run(main: Callable[[list[str]], int], argv: Sequence[str] | None = None) -> int:
    """``main(argv)`` inside the boundary (module docstring); returns the exit code.

    ``main`` must let user errors propagate: one that catches them itself and prints them
    (``except ValueError: print(...); return 2``) hides their traceback from ``--debug``. A
    module whose ``main(argv)`` is also called from Python (tests expecting 2) defines it as
    ``return run(_main, argv)`` and ends with ``sys.exit(main())``, not ``run(main)`` (a
    second ``run`` would no longer see ``--debug``).

    Example: ``run(main, ["index", "missing/"])`` -> ``2`` with one ``error: ...`` line (the
    traceback with ``--debug``).
    """
    offline_by_default()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("GRALC_DEBUG") == "1"
    args = [a for a in args if a != "--debug"]
    try:
        return main(args)
    except SystemExit as exc:  # argparse's usage error (2) or --help (0): a code for callers too
        if isinstance(exc.code, int | None):
            return exc.code or 0
        raise
    except KeyboardInterrupt:  # Ctrl-C: what GraLC writes is atomic, so nothing half-written stays
        if debug:
            raise
        print("interrupted (nothing half-written is left: every output is written whole or not at "
              "all; run the command again)", file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        if debug:
            raise
        print(f"error: {for_terminal(disk_full(exc) or str(exc))}", file=sys.stderr)
        print("(the full traceback: add --debug or set GRALC_DEBUG=1)", file=sys.stderr)
        return 2
    except Exception as exc:
        why = disk_full(exc)
        if why is None or debug:
            raise
        print(f"error: {for_terminal(why)}", file=sys.stderr)
        print("(the full traceback: add --debug or set GRALC_DEBUG=1)", file=sys.stderr)
        return 2


#: errno values of a write that found no room: ENOSPC, EFBIG (a file-size limit), EDQUOT
_NO_ROOM = {28, 27, 122}
#: how libraries that do not raise OSError say the same (FAISS's "write error", safetensors)
_NO_ROOM_WORDS = re.compile(r"No space left|File too large|Disk quota exceeded|write error|"
                            r"os error (28|27|122)\b", re.I)


def disk_full(exc: BaseException) -> str | None:
    """One message for a write that ran out of room (a full disk, a quota, a file-size limit),
    from an ``OSError`` or from a library's own error (FAISS, safetensors) anywhere in the
    chain of causes; None for any other error.

    >>> disk_full(OSError(28, "No space left on device", "out/index.faiss"))
    'no room to write out/index.faiss (No space left on device): free space there, or write to another folder'
    """
    seen = 0
    while exc is not None and seen < 8:
        text = str(exc)
        if isinstance(exc, OSError) and exc.errno in _NO_ROOM or _NO_ROOM_WORDS.search(text):
            where = getattr(exc, "filename", None) or "the output"
            why = getattr(exc, "strerror", None) or text.strip().splitlines()[0][:200]
            return f"no room to write {where} ({why}): free space there, or write to another folder"
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def command_main(body: Callable[[list[str]], int]) -> Callable[..., int]:
    """A command's ``main(argv=None) -> int``: ``body(argv)`` inside :func:`run`'s boundary
    (``argv`` None reads ``sys.argv``; 0, or 2 after one message for a user's mistake;
    ``--debug`` / ``GRALC_DEBUG=1``: its traceback).

    Example, at the end of a command module::

        main = command_main(_main)   # gralc.index.main(["DOCS", "--out", "IDX"]) -> 0
    """

    def main(argv: Sequence[str] | None = None) -> int:
        return run(body, argv)

    main.__module__, main.__qualname__ = body.__module__, "main"
    main.__doc__ = ("The command line (``argv``: None reads ``sys.argv``) inside the error "
                    "boundary of :mod:`gralc.cli`: 0, or 2 after one message for a user's "
                    "mistake (``--debug`` / ``GRALC_DEBUG=1``: its traceback).")
    return main


def add_debug_flag(parser) -> None:
    """List ``--debug`` in an argparse parser's help (:func:`run` takes it off the command line
    before ``main`` parses it).

    >>> import argparse; p = argparse.ArgumentParser(); add_debug_flag(p)
    >>> "--debug" in p.format_help()
    True
    """
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error (also GRALC_DEBUG=1)")


def pipeline_overrides(items: Sequence[str]) -> list[str]:
    """``key=value`` pipeline settings from a command line, with or without the ``pipeline.``
    prefix (``gralc index``, ``gralc shard`` take them as ``gralc eval`` does).

    >>> pipeline_overrides(["pipeline.encoder.device=cpu", "encoder.batch_size=4"])
    ['encoder.device=cpu', 'encoder.batch_size=4']
    """
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
    # (gralc.artefacts, gralc.training.run_folder.check_run_dir) before Lightning sees it
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


#: a Python warning as the warnings module formats it: its message alone
_PY_WARNING = re.compile(r"^.*?:\d+: \w+: (.*?)\n(?:  .*\n?)?$", re.S)


class _ShortFormatter(logging.Formatter):
    """INFO lines as their message; warnings and errors prefixed ``warning:`` / ``error:``
    (as :func:`run` writes a user's mistake)."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == "py.warnings":  # "FILE:LINE: Category: message\n  source line"
            found = _PY_WARNING.match(record.getMessage())
            if found:
                record = logging.makeLogRecord({**record.__dict__, "msg": found.group(1), "args": ()})
        text = for_terminal(super().format(record))  # a corpus file name, a title: shown, never acted on
        return text if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {text}"


class _VerboseFormatter(logging.Formatter):
    """``-v``: level and logger name before each line, terminal controls escaped."""

    def format(self, record: logging.LogRecord) -> str:
        return for_terminal(super().format(record))


def add_verbose_flag(parser) -> None:
    """``-v`` / ``--verbose`` (count) in an argparse parser, for :func:`configure_output`.

    >>> import argparse; p = argparse.ArgumentParser(); add_verbose_flag(p)
    >>> p.parse_args(["-vv"]).verbose
    2
    """
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more output: -v every library's INFO lines and warnings, -vv "
                             "GraLC's DEBUG lines too")


def pop_verbose(argv: Sequence[str]) -> tuple[int, list[str]]:
    """``(verbosity, the rest)`` of a ``key=value`` command line (train.py, eval.py): ``-v``,
    ``-vv``, ``--verbose`` anywhere count as :func:`add_verbose_flag`'s.

    >>> pop_verbose(["-v", "data=demo"])
    (1, ['data=demo'])
    """
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
    it again replaces what an earlier call set.

    Example: ``configure_output(verbose=1)`` in a command's ``main`` -> every library's INFO lines
    on stderr as ``INFO logger: message``.
    """
    import warnings

    root = logging.getLogger()
    ours = [h for h in root.handlers if isinstance(h, _StderrHandler)]
    if len(ours) == len(root.handlers):  # nobody else configured logging
        for h in ours:
            root.removeHandler(h)
        handler = _StderrHandler()
        handler.setFormatter(_ShortFormatter("%(message)s") if verbose <= 0
                             else _VerboseFormatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.WARNING if verbose <= 0 else logging.INFO)
        logging.getLogger("gralc").setLevel(logging.DEBUG if verbose >= 2 else logging.INFO)
        # every Python warning (a library's, or a UserWarning of ours) through the same
        # logging, printed as ``warning: ...`` without its file, line and source line
        logging.captureWarnings(True)
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
    after it through their switches.

    Example: ``quiet_progress_bars()`` before loading an encoder -> transformers draws no
    "Loading weights" bar.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    if "huggingface_hub" in sys.modules:
        sys.modules["huggingface_hub"].utils.disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()


# ----- settings help, generated from the config dataclasses --------------------------------
@dataclasses.dataclass
class Settings:
    """One group of ``key=value`` settings a command takes: the keys of ``schema`` (a config
    dataclass) under ``prefix`` (``""``: at the top; ``"search."``: ``search.dense=200``),
    listed in ``--help`` under ``title``. ``optional_prefix``: the keys may also be written
    with it (``pipeline.encoder.model=`` = ``encoder.model=``).

    >>> from gralc.config import WandbConfig
    >>> Settings("W&B", WandbConfig, prefix="wandb.").prefix
    'wandb.'
    """

    title: str
    schema: type
    prefix: str = ""
    optional_prefix: str = ""
    skip: tuple[str, ...] = ()


def field_meanings(cls: type) -> dict[str, str]:
    """One line per field of a config dataclass: the ``#:`` comment above the field, else the
    sentence about ````name```` in the class docstring, else ``""``.

    >>> from gralc.config import WandbConfig
    >>> field_meanings(WandbConfig)["project"]
    'the W&B project'
    """
    import ast
    import inspect

    out: dict[str, str] = {}
    try:
        source = inspect.getsource(cls)
        lines = source.splitlines()
        tree = ast.parse(inspect.cleandoc("\n" + source) if source[:1].isspace() else source)
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node in body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                comment = []
                i = node.lineno - 2
                while i >= 0 and lines[i].strip().startswith("#:"):
                    comment.insert(0, lines[i].strip()[2:].strip())
                    i -= 1
                if comment:
                    out[node.target.id] = " ".join(comment)
                elif "  # " in lines[node.lineno - 1]:  # a comment at the end of the field's line
                    out[node.target.id] = lines[node.lineno - 1].split("  # ", 1)[1].strip()
    except (OSError, TypeError, SyntaxError, IndexError):
        pass
    doc = " ".join((cls.__doc__ or "").split())
    sentences = re.split(r"(?<=[.;])\s+(?=[A-Z`(])", doc)
    for f in dataclasses.fields(cls):
        if f.name in out:
            continue
        name = re.escape(f"``{f.name}``")
        # "``name``: meaning" (also in a list: "``a``, ``b``: ..."), else "``name`` is/are ...",
        # else the first sentence that names the field
        m = re.search(rf"{name}(?:\s*(?:,|/|and|or)\s*``\w+``)*(?:\s*\([^)]*\))?\s*:\s*(.*)", doc)
        if m:
            text = re.split(r"(?<=[.;])\s|\s``[a-z_]+``(?:\s*\([^)]*\))?\s*:", m.group(1), maxsplit=1)[0]
            out[f.name] = text.strip(" ;.")
            continue
        named = [t for t in sentences if f"``{f.name}``" in t]
        if named:
            out[f.name] = named[0].strip(" ;.")
    return {k: _short(v.replace("``", "")) for k, v in out.items()}


def _short(text: str, width: int = 96) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def _is_schema(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _field_type(cls: type, f: dataclasses.Field) -> Any:
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # a forward reference that cannot be resolved here: show it as written
        return f.type
    return hints.get(f.name, f.type)


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return "(required)"


def setting_rows(schema: type, prefix: str = "", skip: Iterable[str] = (),
                 default: Any = None) -> list[tuple[str, str, str]]:
    """``(key, default, meaning)`` of every leaf setting of ``schema``, nested dataclasses
    walked (``encoder.model``), in field order. ``default``: the instance whose values are the
    defaults (a section's ``default_factory`` may set other values than its class does, e.g.
    training's ``pipeline.chunking.boundary``); None: each field's own default.

    Example: ``setting_rows(PathsConfig, "paths.")[0]`` is ``("paths.output_dir", ..., meaning)``."""
    rows: list[tuple[str, str, str]] = []
    meanings = field_meanings(schema)
    for f in dataclasses.fields(schema):
        key = f"{prefix}{f.name}"
        if key in skip or f.name.startswith("_"):
            continue
        tp = _field_type(schema, f)
        value = getattr(default, f.name) if default is not None else _default(f)
        if _is_schema(tp) or dataclasses.is_dataclass(value):  # a section (or a union-typed one)
            section = tp if _is_schema(tp) else type(value)
            rows.extend(setting_rows(section, f"{key}.", skip,
                                     value if dataclasses.is_dataclass(value) else None))
            continue
        rows.append((key, _value_text(value), meanings.get(f.name, "")))
    return rows


def _value_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        text = "[" + ",".join(_value_text(v) for v in value) + "]"
        return text if len(text) <= 48 else f"{text[:40].rsplit(',', 1)[0]},...] ({len(value)} items)"
    if dataclasses.is_dataclass(value):
        return "{...}"
    return str(value)


def settings_help(groups: Sequence[Settings]) -> str:
    """The settings section of a command's ``--help``: per group its title, then one line per
    key: ``key=default  meaning``.

    >>> from gralc.config import WandbConfig
    >>> "project=gralc" in settings_help([Settings("W&B", WandbConfig, prefix="wandb.")])
    True
    """
    out = ["settings (key=value, anywhere on the line; lists as key=[a,b]):"]
    for group in groups:
        rows = setting_rows(group.schema, group.prefix, group.skip)
        if not rows:
            continue
        note = f" (also written {group.optional_prefix}KEY=...)" if group.optional_prefix else ""
        out.append(f"\n  {group.title}{note}:")
        width = min(44, max(len(f"{k}={v}") for k, v, _ in rows))
        for key, value, meaning in rows:
            left = f"{key}={value}"
            if len(left) > width:
                out.append(f"    {left}")
                if meaning:
                    out.append(f"    {'':{width}}  {meaning}")
            else:
                out.append(f"    {left:{width}}  {meaning}".rstrip())
    return "\n".join(out)


# ----- the parser --------------------------------------------------------------------------
class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=100)


class CommandParser(argparse.ArgumentParser):
    """An argparse parser with GraLC's grammar (module docstring).

    ``settings``: a callable returning the :class:`Settings` groups the command takes; called
    only to print ``--help`` (importing the schemas may import torch); ``help_extra``: more
    text for ``--help``, computed only then. ``renamed``: flags of an
    earlier release and how they are written now; using one is an error that says so.
    :meth:`parse` returns the namespace with ``settings``: the ``key=value`` tokens, in order.
    Every parser has ``-v/--verbose`` and ``--debug``.

    >>> p = CommandParser("gralc demo", "A demo command.")
    >>> _ = p.add_argument("--out"); args = p.parse(["--out", "x", "encoder.device=cpu"])
    >>> args.out, args.settings
    ('x', ['encoder.device=cpu'])
    """

    def __init__(self, prog: str, description: str | None = None, *,
                 settings: Callable[[], Sequence[Settings]] | None = None,
                 renamed: dict[str, str] | None = None, epilog: str | None = None,
                 takes_settings: bool = True, help_extra: Callable[[], str] | None = None,
                 **kwargs: Any) -> None:
        if description:
            description = description[:1].upper() + description[1:]
        super().__init__(prog=prog, description=description, epilog=epilog,
                         formatter_class=_HelpFormatter, allow_abbrev=False, **kwargs)
        self._settings = settings
        self._help_extra = help_extra
        self._renamed = dict(renamed or {})
        self._takes_settings = takes_settings
        add_verbose_flag(self)
        add_debug_flag(self)

    def format_help(self) -> str:
        """argparse's help, then ``help_extra`` and the settings (computed only now)."""
        text = super().format_help()
        if self._help_extra is not None:
            text = text.rstrip("\n") + "\n\n" + self._help_extra().rstrip("\n") + "\n"
        if self._settings is not None:
            text = text.rstrip("\n") + "\n\n" + settings_help(self._settings()) + "\n"
        return text

    def error(self, message: str) -> typing.NoReturn:
        """argparse's usage error (exit 2), naming how a flag of an earlier release is written now."""
        for old, new in self._renamed.items():
            if re.search(rf"(?<![\w-]){re.escape(old)}(?![\w-])", message):
                message += f" ({old} is now written {new})"
                break
        super().error(for_terminal(message))  # it may echo what was typed: escaped

    def split_settings(self, argv: Sequence[str]) -> tuple[list[str], list[str]]:
        """``(arguments for argparse, key=value settings)``: a token is a setting when it looks
        like one (:data:`SETTING`), is not the value of an option and comes before ``--``."""
        rest: list[str] = []
        settings: list[str] = []
        takes_value = False
        positional_only = False
        for token in argv:
            if positional_only:
                rest.append(token)
            elif takes_value:
                rest.append(token)
                takes_value = False
            elif token == "--":
                positional_only = True
                rest.append(token)
            elif token.startswith("-") and len(token) > 1 and not token[1:2].isdigit():
                rest.append(token)
                action = self._option_string_actions.get(token.split("=", 1)[0])
                takes_value = (action is not None and "=" not in token and action.nargs != 0
                               and not isinstance(action, argparse._CountAction))
            elif self._takes_settings and SETTING.match(token):
                settings.append(token)
            else:
                rest.append(token)
        return rest, settings

    def parse(self, argv: Sequence[str]) -> argparse.Namespace:
        """Parse ``argv`` with the grammar; ``namespace.settings`` holds the ``key=value``
        tokens (refused with a clear message by a command that takes none)."""
        rest, settings = self.split_settings(argv)
        args = self.parse_intermixed_args(rest)
        if settings and not self._takes_settings:
            self.error(f"takes no key=value settings: {' '.join(settings)}")
        args.settings = settings
        return args

    def start(self, argv: Sequence[str]) -> argparse.Namespace:
        """:meth:`parse`, then the output set up as ``-v`` asks (:func:`configure_output`):
        how every command begins (``args = parser().start(argv)``)."""
        args = self.parse(argv)
        configure_output(args.verbose)
        return args

    def add_force(self, help: str = "--out holds other files: move them aside to "
                  "OUT.replaced-<time>") -> None:
        """The ``--force`` flag of a command that writes ``--out`` (never deletes a user's
        files: they are moved aside)."""
        self.add_argument("--force", action="store_true", help=help)


def subcommand_parser(parent: CommandParser, name: str, description: str, **kwargs: Any) -> CommandParser:
    """A :class:`CommandParser` for ``PROG NAME`` (``gralc shard build``), for commands with
    sub-commands of their own.

    >>> subcommand_parser(CommandParser("gralc shard"), "build", "Build one shard.").prog
    'gralc shard build'
    """
    return CommandParser(f"{parent.prog} {name}", description, **kwargs)


def route_settings(settings: Sequence[str], sections: Sequence[str],
                   default_prefix: str = "pipeline.") -> dict[str, list[str]]:
    """``key=value`` settings by section: ``{"search": ["dense=200"], ...}`` for a key written
    ``search.dense=200`` (one of ``sections``), ``{"": [...]}`` for every other key, with
    ``default_prefix`` taken off (``pipeline.encoder.model=`` = ``encoder.model=``).

    >>> route_settings(["search.dense=200", "pipeline.encoder.device=cpu"], ["search"])
    {'': ['encoder.device=cpu'], 'search': ['dense=200']}
    """
    out: dict[str, list[str]] = {"": [], **{s: [] for s in sections}}
    for item in settings:
        head, _, rest = item.partition(".")
        if head in sections and rest:
            out[head].append(rest)
        else:
            out[""].append(item.removeprefix(default_prefix))
    return out
