"""Fixtures of the encoder tests."""

from __future__ import annotations

import numpy as np
import pytest


def _check_token_offsets(tokenizer, text: str, offsets: np.ndarray) -> None:
    """One offset row per word-piece of ``text``, each slicing exactly that piece (a WordPiece
    tokenizer: lower-cased, ``##`` continuation marks)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert len(pieces) == len(offsets)
    for piece, (start, end) in zip(pieces, offsets, strict=True):
        assert text[start:end].lower() == piece.removeprefix("##")


@pytest.fixture(scope="session")
def check_token_offsets():
    """:func:`_check_token_offsets`: ``(tokenizer, text, offsets)``."""
    return _check_token_offsets
