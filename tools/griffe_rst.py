"""Griffe extension for the API reference (mkdocs.yml): our docstrings are reStructuredText
prose (``:class:`X```, ``>>>`` examples, ``text::`` before a literal block), rendered by
mkdocstrings as Markdown. Rewriting the docstrings was not worth it; this turns the three rst
idioms into their Markdown equivalents as griffe loads each docstring:

- a role ``:class:`~gralc.x.Y``` becomes the code span ``Y`` (the full path without ``~``);
- a run of ``>>>`` lines with their output becomes a fenced ``pycon`` block (Markdown would
  read ``>>>`` as nested quotes and ``[...]`` output as links), ``# doctest:`` flags dropped;
- ``text::`` ending a paragraph becomes ``text:`` (the indented block after it is already a
  Markdown code block).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`]+)`")
DOCTEST_FLAGS = re.compile(r"\s*#\s*doctest:.*$")


def _role(m: re.Match[str]) -> str:
    target = m[2].strip()
    return f"`{target.rsplit('.', 1)[-1] if m[1] else target}`"


def _doctests(text: str) -> str:
    out: list[str] = []
    lines = text.split("\n")
    i, fenced = 0, False
    while i < len(lines):
        line = lines[i]
        indent = line[: len(line) - len(line.lstrip())]
        fenced ^= line.lstrip().startswith("```")
        if fenced or not line.lstrip().startswith(">>>"):
            out.append(line)
            i += 1
            continue
        block = []
        while i < len(lines) and lines[i].strip():  # the example and its output: up to a blank line
            block.append(DOCTEST_FLAGS.sub("", lines[i][len(indent):]))
            i += 1
        out += [f"{indent}```pycon", *(indent + b for b in block), f"{indent}```"]
    return "\n".join(out)


def rst_to_markdown(text: str) -> str:
    text = ROLE.sub(_role, text)
    text = re.sub(r"(\S)::$", r"\1:", text, flags=re.MULTILINE)
    return _doctests(text)


class RstProse(griffe.Extension):
    """Rewrites every docstring (the package's and each member's) once griffe has loaded it."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self.on_object(obj=pkg)

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
