"""Naive fixed-size chunking: word-piece windows, independent chunk embeddings."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import registered
from gralc.chunking.fixed import FixedSizeChunker


def test_registered():
    assert registered()["fixed"] is FixedSizeChunker


def test_windows_of_word_pieces_with_overlap(small_prepared, encoder, check, tiling):
    chunks = FixedSizeChunker(encoder, size=32, overlap=8).chunk(small_prepared)
    check(small_prepared, chunks, "fixed", encoder.dim)
    tiling(small_prepared, chunks, overlap=8)
    assert all(c.n_tokens == 32 for c in chunks[:-1]) and 0 < chunks[-1].n_tokens <= 32
    # word-pieces, not whitespace words: "hyperglycaemia", "gluconeogenesis" are several pieces
    assert any(len(c.text.split()) < c.n_tokens for c in chunks)
    n = len(encoder.tokenizer(small_prepared.doc.text, add_special_tokens=False)["input_ids"])
    assert chunks[-1].token_end == n


def test_tokenises_itself_without_token_embeddings(small_prepared, encoder):
    with_tokens = FixedSizeChunker(encoder, size=32, overlap=8).chunk(small_prepared)
    bare = FixedSizeChunker(encoder, size=32, overlap=8).chunk(PreparedDocument(small_prepared.doc))
    assert [(c.char_start, c.char_end, c.token_start, c.token_end) for c in bare] == [
        (c.char_start, c.char_end, c.token_start, c.token_end) for c in with_tokens
    ]


def test_chunks_are_embedded_independently(small_prepared, encoder):
    chunks = FixedSizeChunker(encoder, size=32, overlap=8).chunk(small_prepared)
    alone = encoder.encode_texts([c.text for c in chunks], max_length=512).numpy()
    np.testing.assert_allclose(np.stack([c.embedding for c in chunks]), alone, atol=1e-5)


def test_paper_defaults_on_long_document(long_prepared, encoder, check, tiling, caplog):
    with caplog.at_level(logging.WARNING, logger="gralc.chunking.fixed"):
        chunker = FixedSizeChunker(encoder)  # 256 tokens, 32 overlap
    assert "exceeds" not in caplog.text  # 256 word-pieces fit MiniLM's 512 positions
    chunks = chunker.chunk(long_prepared)
    check(long_prepared, chunks, "fixed", encoder.dim)
    tiling(long_prepared, chunks, overlap=32)
    assert len(chunks) >= 3 and all(c.n_tokens == 256 for c in chunks[:-1])
    # every one of the 256 tokens reaches the embedding (the model card's 256-piece query
    # limit would drop the last 2 content tokens: pitfall 10's silent truncation)
    full = encoder.encode_texts([chunks[0].text], max_length=512)[0].numpy()
    cut = encoder.encode_texts([chunks[0].text])[0].numpy()
    np.testing.assert_allclose(chunks[0].embedding, full, atol=1e-5)
    assert not np.allclose(chunks[0].embedding, cut, atol=1e-5)


def test_oversized_chunks_are_announced(encoder, caplog):
    with caplog.at_level(logging.WARNING, logger="gralc.chunking.fixed"):
        FixedSizeChunker(encoder, size=600, overlap=32)
    assert "exceeds" in caplog.text


@pytest.mark.parametrize("size,overlap", [(0, 0), (16, 16), (16, -1)])
def test_bad_parameters(encoder, size, overlap):
    with pytest.raises(ValueError, match="overlap < size"):
        FixedSizeChunker(encoder, size=size, overlap=overlap)
