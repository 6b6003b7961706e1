"""MAL-RAG multi-level chunks: document, section, paragraph and sentence-group levels."""

from __future__ import annotations

import numpy as np
import pytest
import torch.nn.functional as F

from gralc.chunking.chunk import registered
from gralc.chunking.multilevel import LEVELS, MultiLevelChunker


@pytest.fixture(scope="module")
def small_result(small_prepared, encoder):
    return MultiLevelChunker(encoder, sentences_per_chunk=2, summary_sentences=2).chunk_with_summaries(
        small_prepared
    )


def by_level(chunks, level):
    return [c for c in chunks if c.level == level]


def test_registered():
    assert registered()["multilevel"] is MultiLevelChunker


def test_levels_and_spans(small_prepared, small_result, encoder, check):
    doc = small_prepared.doc
    chunks, _ = small_result
    assert {c.level for c in chunks} == set(LEVELS)
    check(small_prepared, chunks, "multilevel", encoder.dim)
    (whole,) = by_level(chunks, "document")
    assert (whole.char_start, whole.char_end) == (0, len(doc.text))
    assert whole.imrad_types == ["introduction", "methods"]
    sections = by_level(chunks, "section")
    assert [(c.char_start, c.char_end) for c in sections] == [
        (s.start, s.end) for s in doc.iter_sections()
    ]
    methods = sections[1]
    assert methods.section_path == ["Methods"] and methods.imrad_types == ["methods"]
    paragraphs = by_level(chunks, "paragraph")
    assert [(c.char_start, c.char_end) for c in paragraphs] == [(p.start, p.end) for p in doc.paragraphs]
    assert paragraphs[2].section_path == ["Methods"] and paragraphs[2].imrad_types == ["methods"]


def test_sentence_groups_tile_each_paragraph(small_prepared, small_result):
    doc = small_prepared.doc
    groups = by_level(small_result[0], "sentences")
    sentence_starts = {s.start for s in doc.sentences}
    sentence_ends = {s.end for s in doc.sentences}
    for p in doc.paragraphs:
        inside = [g for g in groups if p.start <= g.char_start < p.end]
        assert inside[0].char_start == p.start and inside[-1].char_end == p.end
        for g in inside:
            assert g.char_start in sentence_starts and g.char_end in sentence_ends
            n = sum(g.char_start <= s.start and s.end <= g.char_end for s in p.sentences)
            assert 1 <= n <= 2
    assert len(groups) == sum((len(p.sentences) + 1) // 2 for p in doc.paragraphs)


def test_lower_levels_are_late_pooled(small_prepared, small_result):
    vecs = small_prepared.tokens.vectors
    for c in small_result[0]:
        if c.level in ("paragraph", "sentences"):
            expected = F.normalize(vecs[c.token_start : c.token_end].mean(0), dim=0).numpy()
            np.testing.assert_allclose(c.embedding, expected, atol=1e-5)


def test_higher_levels_embed_extractive_summaries(small_prepared, small_result, encoder):
    doc = small_prepared.doc
    chunks, summaries = small_result
    high = [c for c in chunks if c.level in ("document", "section")]
    assert set(summaries) == {c.chunk_id for c in high}
    sentences = [doc.text[s.start : s.end] for s in doc.sentences]
    for c in high:
        summary = summaries[c.chunk_id]
        title = doc.title if c.level == "document" else c.section_path[-1]
        assert summary.startswith(title + "\n\n")
        picked = [s for s in sentences if s in summary]
        assert len(picked) == 2 and all(s in c.text for s in picked)
        # summary sentences keep document order
        assert summary.index(picked[0]) < summary.index(picked[1])
        np.testing.assert_allclose(c.embedding, encoder.encode_texts([summary])[0].numpy(), atol=1e-5)


def test_pluggable_summariser(small_prepared, encoder):
    chunker = MultiLevelChunker(encoder, summariser=lambda text: "SUMMARY " + text[:40])
    chunks, summaries = chunker.chunk_with_summaries(small_prepared)
    (whole,) = by_level(chunks, "document")
    assert summaries[whole.chunk_id] == "SUMMARY " + small_prepared.doc.text[:40]
    expected = encoder.encode_texts([summaries[whole.chunk_id]])[0].numpy()
    np.testing.assert_allclose(whole.embedding, expected, atol=1e-5)


def test_long_document_with_subsection(long_prepared, encoder, check):
    chunks = MultiLevelChunker(encoder).chunk(long_prepared)
    check(long_prepared, chunks, "multilevel", encoder.dim)
    sub = [c for c in by_level(chunks, "section") if c.section_path[-1] == "Statistical analysis"]
    assert len(sub) == 1
    assert sub[0].section_path == ["Methods", "Statistical analysis"]
    assert sub[0].imrad_types == ["methods"]
    assert len(by_level(chunks, "section")) == 5


def test_bad_parameters(encoder):
    with pytest.raises(ValueError, match="sentences_per_chunk"):
        MultiLevelChunker(encoder, sentences_per_chunk=0)
