"""BM25 built in blocks (issue 59's bounded build): the folder :func:`write_bm25_blocks` writes
scores every question as bm25s's in-memory build of the same chunks, at any block size, for the
three BM25 fields an index holds (terms, term pairs, concept ids); nothing of bm25s's format is
missing (``BM25Index.load`` reads it, a wrong count is still refused)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gralc.artefacts import write_artefact
from gralc.chunking.chunk import Chunk
from gralc.data.demo import demo_articles
from gralc.documents.jats import parse_jats
from gralc.model.lexical import CONCEPT_BM25, PHRASE_BM25, BM25Config, concept_terms
from gralc.retrieval.indexes.bm25 import BM25Index
from gralc.retrieval.indexes.bm25_blocks import write_bm25_blocks


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    """The demo articles' paragraphs as chunks (real text), a few with concept ids, one of
    stopwords only and one empty: the rows a tokenizer turns into nothing."""
    out = []
    for path in demo_articles()[:4]:
        doc = parse_jats(path)
        for i, part in enumerate(p for p in doc.text.split("\n") if p.strip()):
            ids = [f"D{(i * 7 + k) % 13:06d}" for k in range(i % 4)]
            out.append(Chunk(doc.id, f"c{i}", part, 0, len(part), entity_ids=ids))
    return [*out, Chunk("x", "c0", "the of and", 0, 10), Chunk("x", "c1", "", 0, 0)]


QUESTIONS = ["What limits metformin adherence?", "insulin dosing in type 2 diabetes",
             "adverse events of the vaccine", "the of and", "zzzunknownword", "blood glucose levels"]


@pytest.mark.parametrize("config", [BM25Config(), PHRASE_BM25, CONCEPT_BM25, BM25Config(method="bm25+")],
                         ids=["terms", "pairs", "concepts", "bm25plus"])
@pytest.mark.parametrize("block", [1, 7, 100_000])
def test_blocks_score_as_the_in_memory_build(chunks, config, block, tmp_path):
    whole = BM25Index(config)
    whole.index(chunks)
    with write_artefact(tmp_path / "bm25", "bm25_index") as tmp:
        assert write_bm25_blocks(tmp, iter(chunks), config, block=block) == len(chunks)
    built = BM25Index.load(tmp_path / "bm25", records=False)
    assert len(built) == len(chunks) and built.config == config
    questions = QUESTIONS if config.field == "text" else [
        concept_terms(c.entity_ids) for c in chunks[:6]] + [concept_terms(["D999999"])]
    for q in questions:
        a, b = whole.scores(q), built.scores(q)
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-7), q
    assert any(whole.scores(q).max() > 0 for q in questions)  # the comparison compared something
    meta = json.loads((tmp_path / "bm25" / "config.json").read_text())
    assert meta["records"] is False and meta["built_in_blocks"] == -(-len(chunks) // block)


def test_a_block_build_needs_a_chunk_and_leaves_no_scratch(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (tmp_path / "out").mkdir()
    with pytest.raises(ValueError, match="at least one chunk"):
        write_bm25_blocks(tmp_path / "out", [], scratch=scratch)
    write_bm25_blocks(tmp_path / "out", [Chunk("d", "c0", "metformin", 0, 9)], scratch=scratch)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bm25", "config.json", "vocab.tokenizer.json"]
