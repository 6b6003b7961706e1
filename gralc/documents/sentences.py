"""A fast rule-based sentence splitter for biomedical prose.

A sentence ends at ``.``, ``!`` or ``?`` (plus any closing quotes/brackets) that is followed by
whitespace and then by a character that can start a sentence (an upper-case letter, a digit
or an opening bracket/quote). A ``.`` does NOT end a sentence when the word it closes is a
known abbreviation (``et al.``, ``Fig.``, ``e.g.``, ``vs.``, ``spp.`` ...) or a single
upper-case initial (``J. Smith``). Decimals (``0.05``) never match because no whitespace
follows their dot; ``p < 0.05. Next`` does end a sentence.

CJK and fullwidth full stops (``。！？．``) end a sentence whatever follows (those scripts
put no space after them). The splitter is conservative: a sentence starting with a lower-case word (``mRNA levels``)
is merged into the previous one rather than risking splits inside abbreviations.
"""

from __future__ import annotations

import bisect
import re

#: Lower-cased words (with their final dot) after which a dot does not end a sentence.
ABBREVIATIONS = frozenset(
    """al. fig. figs. e.g. i.e. eg. ie. vs. v. approx. ca. c. no. nos. dr. drs. mr. mrs. ms.
    prof. sp. spp. ssp. subsp. var. cv. cf. eq. eqs. ref. refs. suppl. supp. vol. vols. pp.
    p. ed. eds. inc. ltd. co. corp. jr. sr. st. dept. univ. resp. esp. viz. chap. sect.
    tab. incl. conc. wt. aff. nov. gen. et. mol. biol. proc. natl. acad. sci. j. u.s. u.k.
    e.u. a.m. p.m.""".split()
)

#: possessive and anchored at the start of a run of ``.!?``: a run followed by no space
#: (``a.....x``, 200 000 dots) is one failed try, not one per dot (quadratic backtracking)
_CANDIDATE = re.compile(r"(?<![.!?])[.!?]++[\"'\u201d\u2019)\]]*+(?=\s)")
#: full stops of scripts written without spaces (CJK 。！？, fullwidth ．！？): a sentence ends
#: there whatever follows
_CJK_END = re.compile(r"[\u3002\uff01\uff1f\uff0e]+[\u300d\u300f\uff09\u201d\u2019]*")
_NEXT_START = re.compile(r"\s+(\S)")
_OPENERS = "([{\"'\u201c\u2018"


#: characters that end a word for the abbreviation check
_WORD_BREAK = re.compile("[ \n\t\u00a0]")


class _WordStarts:
    """Where the word ending at a position starts, for many positions of one text.

    ``text.rfind`` from each candidate dot scans back to the previous break, which is the whole
    text for a character the text lacks (a tab): quadratic over a long text. The breaks of
    ``[start, end)`` are found once; before ``start`` one ``rfind`` per range answers."""

    def __init__(self, text: str, start: int, end: int) -> None:
        self.text, self.start = text, start
        self.breaks = [m.start() for m in _WORD_BREAK.finditer(text, start, end)]
        self.before: int | None = None  # the last break before ``start`` (-1: none), lazily

    def __call__(self, dot: int) -> int:
        i = bisect.bisect_left(self.breaks, dot)
        if i:
            return self.breaks[i - 1] + 1
        if self.before is None:
            self.before = max(self.text.rfind(c, 0, self.start) for c in " \n\t\u00a0")
        return self.before + 1


def _is_abbreviation(text: str, dot: int, word_start: int | None = None) -> bool:
    """Whether the ``.`` at ``text[dot]`` closes an abbreviation or an initial.

    ``word_start``: where the word ending at ``dot`` starts, when the caller knows it."""
    if word_start is None:
        word_start = max(text.rfind(c, 0, dot) for c in " \n\t\u00a0") + 1
    word = text[word_start : dot + 1].lstrip(_OPENERS).lower()
    if word in ABBREVIATIONS:
        return True
    # a single letter initial ("J." in "J. Smith") or dotted initials ("J.R.")
    letters = word.replace(".", "")
    return (
        len(letters) <= 2
        and letters.isalpha()
        and word.count(".") == len(letters)
        and (text[dot - 1].isupper())
    )


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into sentences.

    Returns ``[(s, e), ...]``: absolute half-open offsets into ``text``, trimmed of
    whitespace, in order, together covering every non-space character of the range.

    >>> split_sentences("It took 8 weeks. HbA1c fell by 1.2%.")
    [(0, 16), (17, 36)]
    """
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    sent_start = start
    word_starts: _WordStarts | None = None
    # on a slice: a run of "." cut by ``start`` starts at ``start`` (the lookbehind of
    # _CANDIDATE would see the part before it)
    for m in _CANDIDATE.finditer(text[start:end] if start else text, 0, end - start):
        m_start, m_end = m.start() + start, m.end() + start
        nxt = _NEXT_START.match(text, m_end, end)
        if nxt is None:
            continue
        first = nxt.group(1)
        if not (first.isupper() or first.isdigit() or first in _OPENERS):
            continue
        if text[m_start] == "." and m_end - m_start == 1:
            word_starts = word_starts or _WordStarts(text, start, end)
            if _is_abbreviation(text, m_start, word_starts(m_start)):
                continue
        spans.append((sent_start, m_end))
        sent_start = nxt.start(1)
    spans.append((sent_start, end))
    spans = [(s, e) for s0, e0 in spans for s, e in _split_cjk(text, s0, e0)]
    return [t for s, e in spans if (t := _trim(text, s, e))[0] < t[1]]


def _split_cjk(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut after every CJK / fullwidth full stop."""
    out, s = [], start
    for m in _CJK_END.finditer(text, start, end):
        out.append((s, m.end()))
        s = m.end()
    out.append((s, end))
    return out


def _trim(text: str, s: int, e: int) -> tuple[int, int]:
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e
