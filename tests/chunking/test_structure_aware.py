"""Structure-aware late chunking and the DP sentence chunker on real MiniLM token vectors."""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from itertools import pairwise

import numpy as np
import pytest
import torch
from _struct_fixtures import (
    Sec,
    build_document,
    minilm_tokens,
    pubmedqa_like,
    three_section_doc,
)

from gralc.chunking.base import PreparedDocument
from gralc.chunking.boundaries import (
    BoundaryConfig,
    char_to_token_start,
    recommendation_evidence_pairs,
)
from gralc.chunking.chunk import registered
from gralc.chunking.quality import (
    entity_preservation_rate,
    recommendation_evidence_linking_rate,
)
from gralc.chunking.structure_aware import DPSentenceChunker, StructureAwareChunker
from gralc.knowledge.mention import EntityMention


@lru_cache(maxsize=8)
def _prepared(name: str, model_path) -> PreparedDocument:
    doc = {"three": three_section_doc, "pqa": pubmedqa_like}[name]()
    return PreparedDocument(doc, minilm_tokens(doc.text, model_path))


def _assert_tiles(chunks, prepared):
    tokens, text = prepared.tokens, prepared.doc.text
    assert chunks[0].token_start == 0 and chunks[-1].token_end == tokens.n_tokens
    for a, b in pairwise(chunks):
        assert a.token_end == b.token_start
        assert text[a.char_end : b.char_start].strip() == ""
    for c in chunks:
        assert text[c.char_start : c.char_end] == c.text
        assert tokens.char_to_token(c.char_start) == c.token_start
        assert tokens.char_to_token(c.char_end - 1) == c.token_end - 1


def _section_starts(prepared, level=1):
    doc = prepared.doc
    return {
        s.id: char_to_token_start(prepared.tokens.offsets, s.start)
        for s in doc.iter_sections()
        if s.level == level
    }


@pytest.mark.parametrize("decoder", ["peak", "dp"])
def test_three_sections_cut_at_section_starts(minilm_path, decoder):
    prepared = _prepared("three", minilm_path)
    cfg = BoundaryConfig(min_tokens=32, max_tokens=128, decoder=decoder, dp_target_tokens=80)
    chunks = StructureAwareChunker(config=cfg).chunk(prepared)
    _assert_tiles(chunks, prepared)
    assert all(32 <= c.n_tokens <= 128 for c in chunks)
    by_start = {c.token_start: c for c in chunks}
    doc = prepared.doc
    for sec_id, tok in _section_starts(prepared).items():
        if tok < 32:  # the title is shorter than min_tokens: it joins the first section
            continue
        chunk = by_start[tok]
        sec = doc.section(sec_id)
        assert chunk.section_ids == [sec_id] and chunk.section_path == [sec.title]
        assert chunk.imrad_types[0] == sec.imrad_type
        assert chunk.boundary_scores["struct"] == 1.0
        assert chunk.boundary_scores["score"] >= 0.5
    for c in chunks:
        assert c.strategy == "structure_aware" and c.embedding.shape == (384,)
        assert np.linalg.norm(c.embedding) == pytest.approx(1.0, abs=1e-5)


def test_pubmedqa_abstract_chunks_follow_labels_not_fixed_splits(minilm_path):
    """Pitfall 6: the labels are sections, so the abstract is cut at each label."""
    prepared = _prepared("pqa", minilm_path)
    n = prepared.tokens.n_tokens
    assert 300 <= n <= 512
    chunks = StructureAwareChunker(config=BoundaryConfig(min_tokens=32)).chunk(prepared)
    _assert_tiles(chunks, prepared)
    label_starts = sorted(_section_starts(prepared).values())
    assert [c.token_start for c in chunks] == label_starts
    assert [c.section_path for c in chunks] == [[s.title] for s in prepared.doc.sections]
    assert all(len(c.imrad_types) == 1 for c in chunks)
    fixed = [(s, min(s + 256, n)) for s in range(0, n, 256)]
    assert [(c.token_start, c.token_end) for c in chunks] != fixed
    # a fixed split mixes labels: its first chunk spans more than one section
    assert sum(1 for t in label_starts if 0 < t < 256) >= 2


def test_entity_crossing_a_cut_moves_it(minilm_path):
    """Pitfall 7: a mention over the METHODS boundary forbids and penalises that cut."""
    prepared = _prepared("pqa", minilm_path)
    offsets = prepared.tokens.offsets
    cfg = BoundaryConfig(min_tokens=32)
    t = _section_starts(prepared)[prepared.doc.sections[1].id]
    assert t in [c.token_start for c in StructureAwareChunker(config=cfg).chunk(prepared)]
    s, e = int(offsets[t - 2, 0]), int(offsets[t + 1, 1])
    mention = EntityMention(s, e, "C000001", prepared.doc.text[s:e], "crossing")
    with_mention = PreparedDocument(prepared.doc, prepared.tokens, [mention])
    chunks = StructureAwareChunker(config=cfg).chunk(with_mention)
    _assert_tiles(chunks, with_mention)
    starts = [c.token_start for c in chunks]
    assert not any(t - 1 <= x <= t + 1 for x in starts)  # no cut inside the mention
    assert sum("C000001" in c.entity_ids for c in chunks) == 1
    assert entity_preservation_rate(chunks, [mention]) == 1.0


def test_vectors_override_replaces_pooled_vectors(minilm_path):
    prepared = _prepared("pqa", minilm_path)
    chunker = StructureAwareChunker(config=BoundaryConfig(min_tokens=32))
    base = chunker.chunk(prepared)
    flipped = chunker.chunk(prepared, vectors_override=-prepared.tokens.vectors)
    assert [c.token_start for c in flipped] == [c.token_start for c in base]
    for a, b in zip(base, flipped, strict=True):
        assert np.allclose(a.embedding, -b.embedding, atol=1e-6)
    pooled = chunker.pool(prepared.tokens.vectors, [(0, 3)])
    assert torch.allclose(pooled[0], prepared.tokens.vectors[:3].mean(0))


def test_missing_tokens_and_encoder_is_a_clear_error():
    doc = pubmedqa_like()
    with pytest.raises(ValueError, match="encoder"):
        StructureAwareChunker().chunk(PreparedDocument(doc))


def test_strategies_are_registered():
    assert registered()["structure_aware"] is StructureAwareChunker
    assert registered()["dp_sentences"] is DPSentenceChunker


def _guideline():
    return build_document(
        "guide",
        "Gastric cancer guideline",
        [
            Sec(
                "1. Surgery",
                "other",
                [
                    "Gastric cancer is treated by resection in most patients. "
                    "D2 lymph node dissection is recommended for resectable gastric cancer. "
                    "Level of evidence: A. The extent of resection depends on tumour location. "
                    "Distal tumours allow subtotal gastrectomy in most cases.",
                    (
                        "list_item",
                        "1. Staging laparoscopy is performed first. It detects occult "
                        "peritoneal disease in one patient out of five.",
                    ),
                    (
                        "list_item",
                        "2. Frozen sections confirm clear margins. Re-resection follows "
                        "a positive margin whenever it is feasible.",
                    ),
                ],
            ),
            Sec(
                "2. Chemotherapy",
                "other",
                [
                    "Perioperative chemotherapy should be offered to fit patients with stage II "
                    "disease or higher. (Grade B) Regimens combine a fluoropyrimidine, oxaliplatin "
                    "and docetaxel. Toxicity is monitored every cycle with blood counts and "
                    "clinical review by the treating oncologist."
                ],
            ),
        ],
    )


def test_dp_sentences_respects_hard_constraints(minilm_path, caplog):
    doc = _guideline()
    tokens = minilm_tokens(doc.text, minilm_path)
    start = doc.text.index("lymph node")
    mention = EntityMention(
        start,
        start + len("lymph node dissection"),
        "D008197",
        "lymph node dissection",
        "Lymph Node Excision",
    )
    prepared = PreparedDocument(doc, tokens, [mention])
    tok = lambda pos: char_to_token_start(tokens.offsets, pos)  # noqa: E731
    cfg = BoundaryConfig(min_tokens=4, max_tokens=64, dp_target_tokens=12)
    with caplog.at_level(logging.WARNING):
        chunks = DPSentenceChunker(config=cfg).chunk(prepared)
    assert caplog.text == ""  # feasible: no constraint relaxed
    _assert_tiles(chunks, prepared)
    starts = {c.token_start for c in chunks}
    assert len(chunks) >= 5 and all(c.n_tokens <= 64 for c in chunks)
    unit_starts = {tok(s.start) for s in doc.sentences} | {
        tok(s.start) for s in doc.iter_sections()
    }
    assert starts - {0} <= unit_starts  # only at sentence / title starts
    for par in doc.paragraphs:
        if par.kind == "list_item":
            assert not any(tok(par.start) < x < tok(par.end) for x in starts)
    pairs = recommendation_evidence_pairs(doc)
    assert len(pairs) == 2
    assert recommendation_evidence_linking_rate(chunks, pairs) == 1.0
    for title_end in [doc.title_end] + [s.title_end for s in doc.iter_sections()]:
        assert tok(title_end) not in starts  # a title never ends a chunk
    assert entity_preservation_rate(chunks, [mention]) == 1.0
    assert all(c.strategy == "dp_sentences" for c in chunks)


def test_real_pubmedqa_abstracts_cut_only_at_labels(shared_data, minilm_path):
    data = json.loads((shared_data / "pubmedqa" / "ori_pqal.json").read_text())
    docs = []
    for pmid, entry in data.items():
        if len(entry["LABELS"]) >= 3:
            secs = [
                Sec(lab, "other", [ctx])
                for lab, ctx in zip(entry["LABELS"], entry["CONTEXTS"], strict=True)
            ]
            docs.append(build_document(pmid, "", secs))
        if len(docs) == 4:
            break
    chunker = StructureAwareChunker(config=BoundaryConfig(min_tokens=32))
    for doc in docs:
        prepared = PreparedDocument(doc, minilm_tokens(doc.text, minilm_path))
        chunks = chunker.chunk(prepared)
        _assert_tiles(chunks, prepared)
        label_starts = set(_section_starts(prepared).values())
        starts = [c.token_start for c in chunks]
        assert len(chunks) >= 2, doc.id
        assert set(starts[1:]) <= label_starts, doc.id


@pytest.mark.parametrize(
    "chunker",
    [
        StructureAwareChunker(config=BoundaryConfig(min_tokens=32, max_tokens=256)),
        StructureAwareChunker(config=BoundaryConfig(min_tokens=32, max_tokens=256, decoder="dp")),
        DPSentenceChunker(config=BoundaryConfig(min_tokens=32, max_tokens=256)),
    ],
    ids=["peak", "dp", "dp_sentences"],
)
def test_shared_strategy_invariants_with_document_encoder(long_prepared, check, tiling, chunker):
    """The invariants every strategy satisfies, on tokens from gralc's DocumentEncoder."""
    chunks = chunker.chunk(long_prepared)
    check(long_prepared, chunks, chunker.name, dim=384)
    tiling(long_prepared, chunks)
    assert all(32 <= c.n_tokens <= 256 for c in chunks)
    methods = next(s for s in long_prepared.doc.sections if s.title == "Methods")
    assert char_to_token_start(long_prepared.tokens.offsets, methods.start) in {
        c.token_start for c in chunks
    }


@pytest.mark.parametrize("decoder", ["peak", "dp"])
def test_sentence_cut_unit_never_ends_a_chunk_mid_sentence(minilm_path, decoder):
    """``cut_unit=sentence``: every chunk starts at a sentence (or title) start, where the
    word-level decoder, squeezed by the same small bounds, cuts inside sentences."""
    from gralc.chunking.sentence_spans import sentence_token_spans

    prepared = _prepared("three", minilm_path)
    starts = {u.tok_start for u in sentence_token_spans(prepared.doc, prepared.tokens)}
    bounds = dict(min_tokens=8, max_tokens=48, decoder=decoder, dp_target_tokens=24)
    word = StructureAwareChunker(config=BoundaryConfig(**bounds)).chunk(prepared)
    assert any(c.token_start not in starts for c in word)
    chunks = StructureAwareChunker(config=BoundaryConfig(**bounds, cut_unit="sentence")).chunk(prepared)
    _assert_tiles(chunks, prepared)
    assert {c.token_start for c in chunks} <= starts
    assert len(chunks) > 1
