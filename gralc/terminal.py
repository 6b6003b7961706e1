"""Text for a terminal: the one sanitiser of what GraLC prints for a person (issue 58).

Corpus text, titles and file names reach a terminal only through :func:`for_terminal`, which
shows control sequences as escapes instead of letting the terminal act on them (clear the
screen, set the title, open a hyperlink, reorder text). JSON output is exact and never goes
through it. This module imports nothing, so the command-line boundary (:mod:`gralc.cli`) may
use it.
"""

from __future__ import annotations

import re

#: characters a terminal acts on instead of showing: C0 / C1 controls and DEL (ESC starts
#: colour, title, hyperlink and screen-clearing sequences), bidirectional overrides and
#: isolates (text shown in another order than it is), line / paragraph separators
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029"
                              "\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def for_terminal(text: str) -> str:
    """``text`` safe to print to a terminal: every control character, bidirectional override
    and unpaired surrogate shown as its escape (``\\x1b``, ``\\u202e``); newlines and tabs
    kept. The one sanitiser of what GraLC prints for a person (corpus text, titles, file
    names); JSON output is exact and never goes through it.

    >>> for_terminal("fever\\x1b[2J in mice\\u202e")
    'fever\\\\x1b[2J in mice\\\\u202e'
    """
    return _TERMINAL_UNSAFE.sub(_escape, text)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
