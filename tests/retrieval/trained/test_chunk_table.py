"""The chunk table's storage (gralc.retrieval.trained.chunk_table): a concept's vector stored once
per batch however many chunks and units mention it, float16 within its rounding of what the model
made, unit vectors int8 within half a step, the same after a save and a load and after a merge of
tables, unit texts cut from the chunks, and a table whose ids point outside its concepts refused
naming the file."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gralc.artefacts import write_artefact
from gralc.chunking.chunk import Chunk
from gralc.model.chunk_set import ChunkSet
from gralc.retrieval.trained.chunk_table import CONCEPTS_FILE, TABLE_FILE, ChunkTable, write_joined


def _made(seed: int, n_chunks: int = 6, n_concepts: int = 4, dim: int = 8) -> tuple[ChunkSet, list[Chunk]]:
    """A batch as the model makes it: each chunk and unit mentions some of one document's
    ``n_concepts`` concepts (the same u' wherever it is mentioned)."""
    g = torch.Generator().manual_seed(seed)
    concepts = torch.randn(n_concepts, dim, generator=g)
    per_chunk = torch.randint(0, 4, (n_chunks,), generator=g)
    entity_chunk = torch.repeat_interleave(torch.arange(n_chunks), per_chunk)
    which = torch.randint(0, n_concepts, (len(entity_chunk),), generator=g)
    n_units = 2 * n_chunks
    unit_entity_chunk = torch.repeat_interleave(torch.arange(n_units), torch.randint(0, 3, (n_units,), generator=g))
    unit_which = torch.randint(0, n_concepts, (len(unit_entity_chunk),), generator=g)
    made = ChunkSet(torch.randn(n_chunks, dim, generator=g), concepts[which], entity_chunk)
    made.units = ChunkSet(torch.randn(n_units, dim, generator=g), concepts[unit_which], unit_entity_chunk)
    made.unit_pairs = torch.stack([torch.arange(n_units) // 2, torch.arange(n_units)])
    records = [Chunk(doc_id=f"d{seed}", chunk_id=f"u{i}", text=f"unit {i} of batch {seed}",
                     char_start=0, char_end=10) for i in range(n_units)]
    return made, records


def _table(batches) -> ChunkTable:
    table = ChunkTable()
    for made, records in batches:
        table.add(made, records)
    return table.finish()


def _saved(table: ChunkTable, folder):
    """``folder`` holding ``table`` under a manifest, as an index writes it."""
    with write_artefact(folder, "index") as tmp:
        table.save(tmp)
    return folder


def _gathered(table: ChunkTable, n_chunks: int, dim: int = 8):
    got, _ = table.gather(np.zeros((n_chunks, dim), np.float32))
    return got


def test_concepts_are_stored_once_and_gather_as_the_model_made_them(tmp_path):
    batches = [_made(0), _made(1)]
    table = _table(batches)
    mentions = sum(len(m.entity_vectors) + len(m.units.entity_vectors) for m, _ in batches)
    assert table.concepts.dtype == np.float16 and len(table.concepts) <= 8 < mentions
    assert table.units.vectors.codes.dtype == np.int8 and table.units.vectors.scales.dtype == np.float16
    got = _gathered(table, 12)
    want = torch.cat([F.normalize(m.entity_vectors, dim=-1) for m, _ in batches])
    assert torch.allclose(got.entity_vectors, want, atol=1e-3)  # float16's rounding
    assert torch.equal(got.entity_chunk, torch.cat([m.entity_chunk + 6 * b for b, (m, _) in enumerate(batches)]))
    want_units = torch.cat([F.normalize(m.units.entity_vectors, dim=-1) for m, _ in batches])
    assert torch.allclose(got.units.entity_vectors, want_units, atol=1e-3)
    want_vectors = torch.cat([F.normalize(m.units.vectors, dim=-1) for m, _ in batches])
    step = want_vectors.abs().amax(dim=1, keepdim=True) / 127  # int8: within half a step (+ float16's scale)
    assert ((got.units.vectors - want_vectors).abs() <= 0.51 * step + 1e-3 * want_vectors.abs()).all()
    # a save and a load give the same; two tables merged give the one table of both batches
    loaded = ChunkTable.load(_saved(table, tmp_path / "t"), 12)
    again = _gathered(loaded, 12)
    assert torch.equal(again.units.vectors, got.units.vectors)
    for name in ("entity_vectors", "entity_chunk"):
        assert torch.equal(getattr(again, name), getattr(got, name))
        assert torch.equal(getattr(again.units, name), getattr(got.units, name))
    # joined file by file from the two saved one-batch tables (as a shard merge writes them)
    parts = []
    for b, batch in enumerate(batches):
        folder = _saved(_table([batch]), tmp_path / f"part{b}")
        parts.append((folder, ChunkTable.load(folder, 6)))
    records = [[Chunk(f"d{b}", f"c{i}", "chunk text", 0, 10) for i in range(6)] for b in range(2)]
    with write_artefact(tmp_path / "joined", "index") as tmp:
        assert write_joined(tmp, parts, records)["n_units"] == 24
    joined = ChunkTable.load(tmp_path / "joined", 12)
    merged = _gathered(joined, 12)
    for q in ("unit 3 of batch 1", "batch 0"):
        assert np.allclose(joined.units.bm25.scores(q), table.units.bm25.scores(q))
    assert torch.equal(merged.entity_vectors, got.entity_vectors)
    assert torch.equal(merged.units.entity_vectors, got.units.entity_vectors)
    assert torch.equal(merged.unit_pairs, got.unit_pairs)
    assert torch.equal(merged.units.vectors, got.units.vectors)


@pytest.mark.parametrize("edit", ["past the table", "negative", "floats", "old format"])
def test_a_table_whose_concept_ids_do_not_fit_is_refused_naming_the_file(tmp_path, edit):
    tmp_path = _saved(_table([_made(0)]), tmp_path / "t")
    ids_file = tmp_path / "entities.values.npy"
    ids = np.load(ids_file)
    named = ids_file.name
    if edit == "past the table":
        ids[-1] = len(np.load(tmp_path / CONCEPTS_FILE))
    elif edit == "negative":
        ids[0] = -1
    elif edit == "floats":
        ids = ids.astype(np.float32)
    if edit == "old format":
        meta = json.loads((tmp_path / TABLE_FILE).read_text())
        meta["format"] = "gralc.chunk_table/2"
        (tmp_path / TABLE_FILE).write_text(json.dumps(meta))
        named = "rebuild the index"
    else:
        np.save(ids_file, ids)
    with pytest.raises(ValueError, match=named):
        ChunkTable.load(tmp_path, 6)


def test_unit_texts_are_cut_from_the_chunks_and_kept_only_where_the_chunks_lack_them(tmp_path):
    """An index stores a unit's span, not its text: the text is cut from the index's chunk
    texts when a merge reads it back; a unit running across the whitespace between two chunks
    (which no chunk holds) keeps its text."""
    text = "Aa bb. Cc dd.\n\nEe ff. Gg."
    chunks = [Chunk("d", "d::c0", text[0:13], 0, 13), Chunk("d", "d::c1", text[15:25], 15, 25)]
    spans = [(0, 6), (7, 13), (7, 21), (15, 21), (22, 25)]
    pairs = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 1, 2, 2, 3, 4]])
    g = torch.Generator().manual_seed(0)
    made = ChunkSet(torch.randn(2, 8, generator=g), torch.zeros(0, 8), torch.zeros(0, dtype=torch.long))
    made.units = ChunkSet(torch.randn(5, 8, generator=g), torch.zeros(0, 8), torch.zeros(0, dtype=torch.long))
    made.unit_pairs = pairs
    records = [Chunk("d", f"d::u{i}", text[s:e], s, e, level="sentences") for i, (s, e) in enumerate(spans)]
    table = ChunkTable()
    table.add(made, records)
    with write_artefact(tmp_path / "t", "index") as tmp:
        table.save(tmp, chunks)
    kept = json.loads((tmp_path / "t" / "units" / "texts.json").read_text())["units"]
    assert kept == {"2": {"doc_id": "d", "text": "Cc dd.\n\nEe ff."}}  # the one across the gap
    assert not (tmp_path / "t" / "units" / "bm25" / "chunks.jsonl").exists()
    back = ChunkTable.load(tmp_path / "t", 2, chunks=chunks).unit_chunks
    assert [(u.doc_id, u.text, u.char_start, u.char_end) for u in back] == [
        ("d", text[s:e], s, e) for s, e in spans]
    # a search reads no records; a span file of the wrong shape is refused naming it
    assert ChunkTable.load(tmp_path / "t", 2).unit_chunks == []
    for bad in (np.zeros((4, 2), np.int64), np.array(spans[::-1], np.int64)[:, ::-1], np.zeros((5, 2)) - 1):
        np.save(tmp_path / "t" / "units" / "spans.npy", bad)
        with pytest.raises(ValueError, match="spans.npy"):
            ChunkTable.load(tmp_path / "t", 2, chunks=chunks)
