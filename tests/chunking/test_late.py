"""Late chunking with real sentence boundaries, and the sentence-unit helpers it relies on."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch.nn.functional as F

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import registered
from gralc.chunking.late import LateChunker, pack_units
from gralc.chunking.sentence_spans import (
    Unit,
    sentence_token_spans,
    token_windows,
    tokenize_offsets,
    unit_char_spans,
)


def unit_ends(doc) -> set[int]:
    return {e for _, e in unit_char_spans(doc)}


# ----- sentence units ---------------------------------------------------------------------
def test_units_tile_tokens_and_match_sentences(small_prepared):
    doc, tokens = small_prepared.doc, small_prepared.tokens
    units = sentence_token_spans(doc, tokens)
    # title + 2 section titles + 10 sentences
    assert len(units) == 1 + 2 + len(doc.sentences)
    assert units[0].tok_start == 0 and units[-1].tok_end == tokens.n_tokens
    assert all(a.tok_end == b.tok_start for a, b in zip(units, units[1:]))
    assert [(u.char_start, u.char_end) for u in units] == unit_char_spans(doc)
    methods_title = doc.sections[1]
    assert (methods_title.title_start, methods_title.title_end) in {
        (u.char_start, u.char_end) for u in units
    }


def test_units_accept_offsets_and_reject_foreign_tokens(small_prepared, encoder):
    doc = small_prepared.doc
    offsets = tokenize_offsets(encoder.tokenizer, doc.text)
    np.testing.assert_array_equal(offsets, small_prepared.tokens.offsets)
    assert sentence_token_spans(doc, offsets) == sentence_token_spans(doc, small_prepared.tokens)
    longer = tokenize_offsets(encoder.tokenizer, doc.text + " Extra trailing words here.")
    with pytest.raises(ValueError, match="different text"):
        sentence_token_spans(doc, longer)


def test_token_windows():
    assert token_windows(0, 10, 4, 1) == [(0, 4), (3, 7), (6, 10)]
    assert token_windows(5, 7, 4, 0) == [(5, 7)]
    with pytest.raises(ValueError):
        token_windows(0, 10, 4, 4)


def test_pack_units_greedy_and_forced():
    units = [Unit(0, 3, 0, 0), Unit(3, 6, 0, 0), Unit(6, 20, 0, 0), Unit(20, 22, 0, 0)]
    assert pack_units(units, 6) == [(0, 6, False), (6, 12, True), (12, 18, True),
                                    (18, 20, True), (20, 22, False)]
    assert pack_units(units, 30) == [(0, 22, False)]


# ----- late chunker -----------------------------------------------------------------------
def test_registered():
    assert registered()["late"] is LateChunker


def test_boundaries_at_sentence_ends(small_prepared, encoder, check, tiling):
    chunks = LateChunker(encoder, max_tokens=40).chunk(small_prepared)
    check(small_prepared, chunks, "late", encoder.dim)
    tiling(small_prepared, chunks)
    assert len(chunks) >= 4
    ends = unit_ends(small_prepared.doc)
    units = sentence_token_spans(small_prepared.doc, small_prepared.tokens)
    first_unit_len = {u.tok_start: u.tok_end - u.tok_start for u in units}
    for a, b in zip(chunks, chunks[1:]):
        assert a.boundary_scores == {"forced_split": 0.0}
        assert a.char_end in ends and a.n_tokens <= 40
        # greedy: the next chunk's first unit did not fit
        assert a.n_tokens + first_unit_len[b.token_start] > 40


def test_embedding_is_pooled_from_whole_document_tokens(small_prepared, encoder):
    chunks = LateChunker(encoder, max_tokens=40).chunk(small_prepared)
    vecs = small_prepared.tokens.vectors
    for c in chunks:
        expected = F.normalize(vecs[c.token_start : c.token_end].mean(0), dim=0).numpy()
        np.testing.assert_allclose(c.embedding, expected, atol=1e-5)
    # contextual: not the same as embedding the chunk on its own
    alone = encoder.encode_texts([chunks[1].text])[0].numpy()
    assert float(alone @ chunks[1].embedding) < 0.999


def test_over_long_sentence_is_split_and_recorded(small_prepared, encoder, caplog):
    with caplog.at_level(logging.INFO, logger="gralc.chunking.late"):
        chunks = LateChunker(encoder, max_tokens=8).chunk(small_prepared)
    forced = [c for c in chunks if c.boundary_scores["forced_split"] == 1.0]
    assert forced and "longer than 8 tokens" in caplog.text
    assert all(c.n_tokens <= 8 for c in chunks)
    ends = unit_ends(small_prepared.doc)
    assert all(c.char_end in ends for c in chunks if c.boundary_scores["forced_split"] == 0.0)


def test_encodes_document_when_tokens_missing(small_prepared, encoder):
    bare = LateChunker(encoder, max_tokens=40).chunk(PreparedDocument(small_prepared.doc))
    ref = LateChunker(encoder, max_tokens=40).chunk(small_prepared)
    assert [(c.token_start, c.token_end) for c in bare] == [(c.token_start, c.token_end) for c in ref]
    np.testing.assert_allclose(bare[0].embedding, ref[0].embedding, atol=1e-5)


def test_long_document_default(long_prepared, encoder, check, tiling):
    chunks = LateChunker(encoder).chunk(long_prepared)
    check(long_prepared, chunks, "late", encoder.dim)
    tiling(long_prepared, chunks)
    assert len(chunks) >= 3 and all(c.n_tokens <= 256 for c in chunks)
    assert all(c.char_end in unit_ends(long_prepared.doc) for c in chunks)
