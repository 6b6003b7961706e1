"""Semantic chunking (SemRAG): buffered sentence similarities, threshold / percentile cuts."""

from __future__ import annotations

import numpy as np
import pytest

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import registered
from gralc.chunking.semantic import SemanticChunker
from gralc.chunking.sentence_spans import sentence_token_spans, unit_char_spans


def test_registered():
    assert registered()["semantic"] is SemanticChunker


def test_buffered_similarities_encoded(small_prepared, encoder):
    """groups="encoded": SemRAG to the letter, each buffered group's text encoded alone."""
    doc = small_prepared.doc
    units = sentence_token_spans(doc, small_prepared.tokens)
    sims = SemanticChunker(encoder, buffer_size=1, groups="encoded").similarities(doc.text, units)
    assert sims.shape == (len(units) - 1,)
    # unit 3 with one neighbour each side vs unit 4 with its neighbours
    a = doc.text[units[2].char_start : units[4].char_end]
    b = doc.text[units[3].char_start : units[5].char_end]
    z = encoder.encode_texts([a, b], max_length=256).numpy()
    assert sims[3] == pytest.approx(float(z[0] @ z[1]), abs=1e-5)
    plain = SemanticChunker(encoder, buffer_size=0, groups="encoded").similarities(doc.text, units)
    z = encoder.encode_texts(
        [doc.text[u.char_start : u.char_end] for u in units[3:5]], max_length=256
    ).numpy()
    assert plain[3] == pytest.approx(float(z[0] @ z[1]), abs=1e-5)


def _unit_means(encoder, doc, units):
    """Each unit encoded alone, by hand: (mean over its positions, number of positions)."""
    means, counts = [], []
    for u in units:
        enc = encoder.tokenizer(doc.text[u.char_start : u.char_end], return_tensors="pt")
        hidden = encoder.model(**enc).last_hidden_state[0].detach().double().numpy()
        means.append(hidden.mean(0))
        counts.append(hidden.shape[0])
    return np.stack(means), np.array(counts, dtype=np.float64)


def test_buffered_similarities_pooled(small_prepared, encoder):
    """groups="pooled" (default): a buffered group's vector is the mean over the positions of
    its units, each unit encoded once on its own."""
    doc = small_prepared.doc
    units = sentence_token_spans(doc, small_prepared.tokens)
    sims = SemanticChunker(encoder, buffer_size=1).similarities(doc.text, units)
    means, counts = _unit_means(encoder, doc, units[2:6])

    def group(rows):
        v = (counts[rows, None] * means[rows]).sum(0) / counts[rows].sum()
        return v / np.linalg.norm(v)

    assert sims[3] == pytest.approx(float(group([0, 1, 2]) @ group([1, 2, 3])), abs=1e-4)
    plain = SemanticChunker(encoder, buffer_size=0).similarities(doc.text, units)
    assert plain[3] == pytest.approx(float(group([1]) @ group([2])), abs=1e-4)
    # buffering smooths: neighbouring groups share units, so they are more alike on average
    assert sims.mean() > plain.mean()


def test_pooled_chunk_vectors(small_prepared, encoder):
    """A pooled chunk vector is the count-weighted mean of its units' own means, and it
    points where the chunk's own encoding points."""
    doc = small_prepared.doc
    units = sentence_token_spans(doc, small_prepared.tokens)
    pooled = dict(chunk_vectors="pooled")
    chunks = SemanticChunker(encoder, threshold=1.01, buffer_size=0, **pooled).chunk(small_prepared)
    two = SemanticChunker(encoder, threshold=-1.0, **pooled).chunk(small_prepared)  # one chunk
    means, counts = _unit_means(encoder, doc, units)
    for c, m in zip(chunks, means):  # one chunk per unit
        np.testing.assert_allclose(c.embedding, m / np.linalg.norm(m), atol=1e-4)
    whole = (counts[:, None] * means).sum(0)
    np.testing.assert_allclose(two[0].embedding, whole / np.linalg.norm(whole), atol=1e-4)
    alone = encoder.encode_texts([c.text for c in chunks], max_length=512).numpy()
    assert np.einsum("kd,kd->k", np.stack([c.embedding for c in chunks]), alone).min() > 0.999


def test_pooled_sub_chunk_takes_its_share(small_prepared, encoder):
    """A sub-chunk of an over-long group weights a unit by the share of its tokens inside."""
    doc = small_prepared.doc
    units = sentence_token_spans(doc, small_prepared.tokens)
    chunks = SemanticChunker(
        encoder, threshold=-1.0, max_tokens=40, sub_overlap=10, chunk_vectors="pooled"
    ).chunk(small_prepared)
    means, counts = _unit_means(encoder, doc, units)
    for c in chunks[:4]:
        inside = np.array([
            max(0, min(u.tok_end, c.token_end) - max(u.tok_start, c.token_start)) for u in units
        ])
        w = counts * inside / np.array([u.tok_end - u.tok_start for u in units])
        v = w @ means
        np.testing.assert_allclose(c.embedding, v / np.linalg.norm(v), atol=1e-4)


def test_threshold_extremes(small_prepared, encoder, tiling):
    units = sentence_token_spans(small_prepared.doc, small_prepared.tokens)
    one = SemanticChunker(encoder, threshold=-1.0).chunk(small_prepared)
    assert len(one) == 1 and (one[0].token_start, one[0].token_end) == (0, units[-1].tok_end)
    every = SemanticChunker(encoder, threshold=1.01).chunk(small_prepared)
    assert [(c.token_start, c.token_end) for c in every] == [(u.tok_start, u.tok_end) for u in units]
    tiling(small_prepared, every)


@pytest.fixture(scope="module")
def default_run(small_prepared, encoder):
    """Paper settings on the small document, run WITHOUT token embeddings (tokenises itself)."""
    chunker = SemanticChunker(encoder, threshold=0.75)
    doc = small_prepared.doc
    sims = chunker.similarities(doc.text, sentence_token_spans(doc, small_prepared.tokens))
    return sims, chunker.chunk(PreparedDocument(doc))


def test_cuts_where_similarity_below_threshold(small_prepared, default_run, encoder, check, tiling):
    sims, chunks = default_run
    assert len(chunks) == 1 + int((sims < 0.75).sum()) and len(chunks) >= 2
    check(small_prepared, chunks, "semantic", encoder.dim)
    tiling(small_prepared, chunks)
    ends = {e for _, e in unit_char_spans(small_prepared.doc)}
    for c in chunks:
        assert c.char_end in ends and c.boundary_scores["threshold"] == 0.75
        if c.token_start > 0:
            assert c.boundary_scores["similarity"] < 0.75


@pytest.mark.parametrize("groups", ["pooled", "encoded"])
def test_chunks_embedded_independently(small_prepared, encoder, groups):
    """chunk_vectors="encoded" (default): each chunk's text encoded on its own, cut to the
    model card's max_seq_length (256 word-pieces for MiniLM), as sentence-transformers does."""
    chunker = SemanticChunker(encoder, groups=groups)
    assert chunker.encode_max_length == encoder.query_max_length == 256
    chunks = chunker.chunk(PreparedDocument(small_prepared.doc))
    alone = encoder.encode_texts([c.text for c in chunks], max_length=256).numpy()
    np.testing.assert_allclose(np.stack([c.embedding for c in chunks]), alone, atol=1e-5)


def test_encode_max_length(small_prepared, encoder):
    """A chunk longer than encode_max_length is embedded from its first word-pieces only;
    512 (MiniLM's whole context) embeds more of it and gives a different vector."""
    doc = PreparedDocument(small_prepared.doc)
    short = SemanticChunker(encoder, threshold=-1.0, encode_max_length=64).chunk(doc)
    whole = SemanticChunker(encoder, threshold=-1.0, encode_max_length=512).chunk(doc)
    assert [c.text for c in short] == [c.text for c in whole]  # same boundaries
    long_chunk = max(range(len(short)), key=lambda k: short[k].n_tokens)
    text = short[long_chunk].text
    assert len(encoder.tokenizer(text)["input_ids"]) > 64
    np.testing.assert_allclose(
        short[long_chunk].embedding, encoder.encode_texts([text], max_length=64)[0], atol=1e-5
    )
    np.testing.assert_allclose(
        whole[long_chunk].embedding, encoder.encode_texts([text], max_length=512)[0], atol=1e-5
    )
    assert float(short[long_chunk].embedding @ whole[long_chunk].embedding) < 0.999


def test_percentile(small_prepared, default_run, encoder):
    sims = default_run[0]
    chunks = SemanticChunker(encoder, percentile=50).chunk(small_prepared)
    assert chunks[0].boundary_scores["threshold"] == pytest.approx(float(np.median(sims)), abs=1e-6)
    assert len(chunks) == 1 + int((sims < np.median(sims)).sum())


def test_long_group_split_with_overlap(small_prepared, encoder, check, tiling):
    chunks = SemanticChunker(encoder, threshold=-1.0, max_tokens=40, sub_overlap=10).chunk(
        small_prepared
    )
    assert len(chunks) >= 3 and all(c.n_tokens <= 40 for c in chunks)
    assert all(c.boundary_scores["sub_chunk"] == 1.0 for c in chunks)
    check(small_prepared, chunks, "semantic", encoder.dim)
    tiling(small_prepared, chunks, overlap=10)


def test_long_document_default(long_prepared, encoder, check, tiling):
    chunks = SemanticChunker(encoder).chunk(long_prepared)
    # few cuts on this templated text: no chunk need start in Methods itself
    check(long_prepared, chunks, "semantic", encoder.dim, require_methods=False)
    assert all(c.n_tokens <= 1024 for c in chunks)
    if all(c.boundary_scores["sub_chunk"] == 0.0 for c in chunks):
        tiling(long_prepared, chunks)


def test_bad_parameters(encoder):
    with pytest.raises(ValueError, match="percentile"):
        SemanticChunker(encoder, percentile=150)
    with pytest.raises(ValueError, match="sub_overlap"):
        SemanticChunker(encoder, max_tokens=10, sub_overlap=10)
    with pytest.raises(ValueError, match="groups must be 'pooled' or 'encoded'"):
        SemanticChunker(encoder, groups="mean")
    with pytest.raises(ValueError, match="chunk_vectors"):
        SemanticChunker(encoder, chunk_vectors="late")
    for bad in (2, 513):  # MiniLM: [CLS] + [SEP] + at least one piece, at most 512
        with pytest.raises(ValueError, match=r"encode_max_length must be in \(2, 512\]"):
            SemanticChunker(encoder, encode_max_length=bad)
