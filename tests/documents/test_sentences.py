"""Sentence splitter: abbreviations, decimals, initials, offsets."""

from __future__ import annotations

import pytest

from gralc.documents.sentences import split_sentences


def _split(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Cells grew. They died.", ["Cells grew.", "They died."]),
        ("As shown by Smith et al. (2005), p53 binds. Next one.",
         ["As shown by Smith et al. (2005), p53 binds.", "Next one."]),
        ("See Fig. 2 and Figs. 3-4. Then e.g. X and i.e. Y vs. controls. Done.",
         ["See Fig. 2 and Figs. 3-4.", "Then e.g. X and i.e. Y vs. controls.", "Done."]),
        ("The effect was significant (p < 0.05). A value of 0.5 mM was used.",
         ["The effect was significant (p < 0.05).", "A value of 0.5 mM was used."]),
        ("It was p < 0.05. Next.", ["It was p < 0.05.", "Next."]),
        ("Described by J. Smith and J.R. Tolkien. Streptomyces spp. Were isolated? Yes! OK.",
         ["Described by J. Smith and J.R. Tolkien.", "Streptomyces spp. Were isolated?", "Yes!", "OK."]),
        ("Approx. 5 mice (cf. Table 1) and ca. 10 rats. No. 3 was lost.",
         ["Approx. 5 mice (cf. Table 1) and ca. 10 rats.", "No. 3 was lost."]),
        ("Panel A shows cells. (B) Shows nuclei.", ["Panel A shows cells.", "(B) Shows nuclei."]),
        ("He said \"stop.\" Then left.", ["He said \"stop.\"", "Then left."]),
        ("mRNA rose. mRNA fell.", ["mRNA rose. mRNA fell."]),  # conservative: lower-case start
        ("In 2005. 30 mice died.", ["In 2005.", "30 mice died."]),
    ],
)  # fmt: skip
def test_split(text: str, expected: list[str]) -> None:
    assert _split(text) == expected


def test_offsets_are_absolute_trimmed_and_cover_all_text() -> None:
    text = "xx   First one.   Second one.  yy"
    spans = split_sentences(text, 2, 31)
    assert spans == [(5, 15), (18, 29)]
    assert [text[a:b] for a, b in spans] == ["First one.", "Second one."]


def test_empty_and_whitespace() -> None:
    assert split_sentences("") == []
    assert split_sentences("   ") == []
    assert split_sentences("No terminal punctuation") == [(0, 23)]
