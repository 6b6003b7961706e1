"""FAISS chunk index: exactness, approximate recall, persistence, atomic save, merge."""

from __future__ import annotations

import json
from pathlib import Path

import faiss
import numpy as np
import pytest

from gralc.chunking.chunk import Chunk
from gralc.retrieval.indexes import dense
from gralc.retrieval.indexes.dense import ChunkIndex, IndexConfig


def make_chunks(vecs: np.ndarray, start: int = 0) -> list[Chunk]:
    return [
        Chunk(doc_id=f"d{(start + i) // 4:05d}", chunk_id=f"c{start + i:06d}", text=f"t{i}",
              char_start=0, char_end=2, section_ids=["s1"], imrad_types=["methods"],
              embedding=v)
        for i, v in enumerate(vecs)
    ]


def clustered(n: int, d: int, seed: int) -> np.ndarray:
    """Gaussian-mixture vectors: like text embeddings they cluster (structureless random
    vectors are the worst case for IVF: with nprobe=16 its recall there is about 0.5)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((100, d))
    return (centers[rng.integers(0, 100, n)] + 0.5 * rng.standard_normal((n, d))).astype(np.float32)


def ids(results: list[list[tuple[Chunk, float]]]) -> list[list[str]]:
    return [[c.chunk_id for c, _ in row] for row in results]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    x = clustered(5050, 64, seed=0)  # queries from the same distribution as the chunks
    return x[:5000], x[5000:]


def test_flat_equals_bruteforce_cosine(data) -> None:
    x, q = data
    ix = ChunkIndex(64)
    ix.add(make_chunks(x[:1000]))
    res = ix.search(q, 10)
    xn = x[:1000] / np.linalg.norm(x[:1000], axis=1, keepdims=True)
    cos = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ xn.T
    expected = np.argsort(-cos, axis=1, kind="stable")[:, :10]
    assert ids(res) == [[f"c{j:06d}" for j in row] for row in expected]
    got = np.array([[s for _, s in row] for row in res])
    np.testing.assert_allclose(got, np.take_along_axis(cos, expected, axis=1), atol=1e-5)


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_recall_vs_flat(data, kind: str) -> None:
    x, q = data
    chunks = make_chunks(x)
    flat, approx = ChunkIndex(64), ChunkIndex(64, IndexConfig(kind=kind))
    flat.add(chunks)
    approx.add(chunks)
    recall = np.mean([len(set(a) & set(b)) / 10
                      for a, b in zip(ids(flat.search(q, 10)), ids(approx.search(q, 10)))])
    assert recall >= 0.95


def test_ties_broken_by_ids_not_faiss_order() -> None:
    # 30 identical vectors: every score ties; the top-3 must be the 3 largest (doc, chunk) ids
    v = np.ones((30, 8), dtype=np.float32)
    ix = ChunkIndex(8)
    ix.add(make_chunks(v))
    assert ids(ix.search(v[:1], 3)) == [["c000029", "c000028", "c000027"]]


def test_add_errors_name_the_chunk() -> None:
    ix = ChunkIndex(4)
    bad = make_chunks(np.ones((2, 4), dtype=np.float32))
    bad[1].embedding = None
    with pytest.raises(ValueError, match="c000001.*no embedding"):
        ix.add(bad)
    with pytest.raises(ValueError, match=r"c000000.*shape \(3,\)"):
        ix.add(make_chunks(np.ones((1, 3), dtype=np.float32)))
    with pytest.raises(ValueError, match="zero or non-finite"):
        ix.add(make_chunks(np.zeros((1, 4), dtype=np.float32)))
    assert len(ix) == 0  # nothing half-added


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_save_load_round_trip(tmp_path: Path, data, kind: str) -> None:
    x, q = data
    ix = ChunkIndex(64, IndexConfig(kind=kind))
    ix.add(make_chunks(x[:2000]))
    ix.save(tmp_path / "ix", encoder_id="minilm", pipeline_config={"chunker": "late"})
    back = ChunkIndex.load(tmp_path / "ix")
    assert back.config == ix.config and len(back) == 2000
    assert [c.to_dict() for c in back.chunks] == [c.to_dict() for c in ix.chunks]
    assert [[(c.chunk_id, s) for c, s in row] for row in back.search(q, 10)] == [
        [(c.chunk_id, s) for c, s in row] for row in ix.search(q, 10)
    ]
    meta = json.loads((tmp_path / "ix" / "config.json").read_text())
    assert meta["encoder_id"] == "minilm" and meta["pipeline_config"] == {"chunker": "late"}
    assert meta["index"]["kind"] == kind and "gralc_version" in meta


def test_failed_save_leaves_old_index_intact(tmp_path: Path, monkeypatch) -> None:
    old = ChunkIndex(4)
    old.add(make_chunks(np.eye(4, dtype=np.float32)))
    old.save(tmp_path / "ix")
    before = {p.name: p.read_bytes() for p in (tmp_path / "ix").iterdir()}

    new = ChunkIndex(4)
    new.add(make_chunks(np.eye(4, dtype=np.float32)[:2], start=100))

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(dense, "write_chunks", boom)  # after vectors.npy, before config.json
    with pytest.raises(RuntimeError, match="disk full"):
        new.save(tmp_path / "ix")
    assert {p.name: p.read_bytes() for p in (tmp_path / "ix").iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["ix"]  # temp dir cleaned up
    assert len(ChunkIndex.load(tmp_path / "ix")) == 4


@pytest.mark.parametrize("name", ["index.faiss", "vectors.npy", "chunks.jsonl", "config.json"])
def test_missing_file_error_names_the_file(tmp_path: Path, name: str) -> None:
    ix = ChunkIndex(4, IndexConfig(kind="hnsw"))  # a flat index has no index.faiss
    ix.add(make_chunks(np.eye(4, dtype=np.float32)))
    ix.save(tmp_path / "ix")
    (tmp_path / "ix" / name).unlink()
    with pytest.raises(FileNotFoundError, match=name):
        ChunkIndex.load(tmp_path / "ix")


def test_corrupt_file_error_names_the_file(tmp_path: Path) -> None:
    ix = ChunkIndex(4, IndexConfig(kind="hnsw"))
    ix.add(make_chunks(np.eye(4, dtype=np.float32)))
    ix.save(tmp_path / "ix")
    (tmp_path / "ix" / "index.faiss").write_bytes(b"not an index")
    with pytest.raises(ValueError, match="index.faiss"):
        ChunkIndex.load(tmp_path / "ix")


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_joined_parts_equal_one_index(data, kind, tmp_path) -> None:
    """A merge's dense part, written streamed from the parts' folders (small blocks, so every
    part spans several): the chunk records, vectors and answers of one index over them all."""
    from gralc.artefacts import write_artefact

    x, q = data
    config = IndexConfig(kind=kind, ivf_nlist=16, nprobe=16)
    whole = ChunkIndex(64, config)
    whole.add(make_chunks(x[:3000]))
    for name, rows, start in (("a", x[:1200], 0), ("b", x[1200:3000], 1200)):
        part = ChunkIndex(64, config)
        part.add(make_chunks(rows, start=start))
        part.save(tmp_path / name)
    parts = [ChunkIndex.load(tmp_path / n, faiss_index=False) for n in "ab"]
    with write_artefact(tmp_path / "merged", "chunk_index") as tmp:
        assert ChunkIndex.write_joined(tmp, parts, block_rows=500) == 3000
    merged = ChunkIndex.load(tmp_path / "merged")
    assert [c.chunk_id for c in merged.chunks] == [c.chunk_id for c in whole.chunks]
    assert np.array_equal(np.asarray(merged.vectors), whole.vectors)
    same = np.mean([a == b for a, b in zip(ids(merged.search(q, 10)), ids(whole.search(q, 10)))])
    assert same == 1.0 if kind == "flat" else same >= 0.9  # hnsw / ivf: approximate either way
    with pytest.raises(ValueError, match="duplicate"):
        with write_artefact(tmp_path / "twice", "chunk_index") as tmp:
            ChunkIndex.write_joined(tmp, [parts[0], parts[0]])
    assert not (tmp_path / "twice").exists()


def test_training_and_lexical_search_never_load_faiss():
    """FAISS is imported where a dense index is built, searched or read, not with the training
    stack or BM25 (a GPU image or a training-only install need not carry it)."""
    import subprocess
    import sys

    code = ("import sys, gralc.training.run, gralc.retrieval.indexes.bm25; "
            "assert 'faiss' not in sys.modules, 'faiss loaded on import'; "
            "import numpy as np; from gralc.retrieval.indexes.dense import ChunkIndex; "
            "from gralc.chunking.chunk import Chunk; i = ChunkIndex(2); "
            "i.add([Chunk(doc_id='d', chunk_id='c', text='t', char_start=0, char_end=1, embedding=np.ones(2))]); "
            "assert 'faiss' in sys.modules and len(i.search(np.ones((1, 2)), 1)[0]) == 1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_a_flat_index_keeps_its_vectors_once_and_searches_as_faiss_flat(tmp_path: Path, data) -> None:
    """A flat index writes no index.faiss: it is searched over vectors.npy itself, with the
    answers of FAISS's IndexFlatIP over the same vectors (ids and scores)."""
    x, q = data
    ix = ChunkIndex(64)
    ix.add(make_chunks(x[:2000]))
    ix.save(tmp_path / "ix")
    assert not (tmp_path / "ix" / "index.faiss").exists()
    loaded = ChunkIndex.load(tmp_path / "ix")
    assert isinstance(loaded.vectors, np.memmap)
    flat = faiss.IndexFlatIP(64)
    flat.add(np.ascontiguousarray(loaded.vectors))
    want_scores, want_ids = flat.search(np.ascontiguousarray(q[:16] / np.linalg.norm(q[:16], axis=1, keepdims=True)), 10)
    got = loaded.search_rows(q[:16], 10)
    assert [sorted(r.tolist()) for r in got] == [sorted(r.tolist()) for r in want_ids]
    hits = loaded.search(q[:1], 10)[0]
    assert np.allclose(sorted((s for _, s in hits), reverse=True), want_scores[0], atol=1e-6)


def test_a_loaded_index_reads_chunk_records_when_asked(tmp_path: Path, data) -> None:
    """Opening an index parses no chunk record (8 bytes a chunk of line offsets); a search
    reads those it returns; a corrupt line is an error naming the file and line when read;
    adding to a loaded index still refuses duplicate ids."""
    from gralc.retrieval.indexes.folder import ChunkRecords

    x, q = data
    ix = ChunkIndex(64)
    ix.add(make_chunks(x[:300]))
    ix.save(tmp_path / "ix")
    loaded = ChunkIndex.load(tmp_path / "ix")
    assert isinstance(loaded.chunks, ChunkRecords) and len(loaded.chunks) == 300
    want = [[(c.chunk_id, s) for c, s in hits] for hits in ix.search(q[:5], 7)]
    assert [[(c.chunk_id, s) for c, s in hits] for hits in loaded.search(q[:5], 7)] == want
    assert [c.chunk_id for c in loaded.chunks[-2:]] == ["c000298", "c000299"]
    with pytest.raises(ValueError, match="duplicate chunk ids"):
        loaded.add(make_chunks(x[:1]))
    lines = (tmp_path / "ix" / "chunks.jsonl").read_bytes().split(b"\n")
    lines[41] = b'{"doc_id": "d", "chunk_id": '  # as cut short
    (tmp_path / "bad.jsonl").write_bytes(b"\n".join(lines))
    records = ChunkRecords(tmp_path / "bad.jsonl")
    assert records[40].chunk_id == "c000040"
    with pytest.raises(ValueError, match=r"bad.jsonl:42: not valid JSON"):
        records[41]


@pytest.mark.slow  # ~40 s: make test-all (CI)
def test_a_join_holds_a_block_not_the_corpus(tmp_path) -> None:
    """Issue 59's bounded build: joining four parts of 320 MB of vectors in all (flat, as a
    merge writes them) raises the joining process's peak RSS by well under one part's vectors;
    a join that held the joined vectors (the merge before) would add all 320 MB."""
    import json
    import subprocess
    import sys

    rng = np.random.default_rng(0)
    n, dim = 52_000, 384
    for p in range(4):
        part = ChunkIndex(dim)
        part.add([Chunk(doc_id=f"d{p}-{i // 8}", chunk_id=f"c{i}", text="t", char_start=0, char_end=1,
                        embedding=v) for i, v in enumerate(rng.standard_normal((n, dim), dtype=np.float32))])
        part.save(tmp_path / f"part{p}")
        del part
    code = f"""
import json, pathlib
from gralc.artefacts import write_artefact
from gralc.experiments.search_cost import memory_mb
from gralc.retrieval.indexes.dense import ChunkIndex
root = pathlib.Path({str(tmp_path)!r})
parts = [ChunkIndex.load(root / f"part{{p}}", faiss_index=False) for p in range(4)]
base = memory_mb(field="VmHWM")
with write_artefact(root / "joined", "chunk_index") as tmp:
    n = ChunkIndex.write_joined(tmp, parts)
print(json.dumps({{"n": n, "growth_mb": memory_mb(field="VmHWM") - base}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    total_mb = 4 * n * dim * 4 / 2**20
    assert got["n"] == 4 * n and total_mb > 300
    assert got["growth_mb"] < total_mb / 4, got  # less than one part's vectors, whatever the total
    joined = ChunkIndex.load(tmp_path / "joined")
    assert len(joined) == 4 * n and joined.chunks[3 * n].doc_id == "d3-0"


def test_opened_chunk_records_hold_no_file_until_a_record_is_read(tmp_path) -> None:
    """A merge opens every part (hundreds at 1M chunks) and only streams their files: an open
    ChunkRecords holds no descriptor until a record is read (a process has ~1,024)."""
    import os

    from gralc.retrieval.indexes.folder import ChunkRecords, write_chunks

    f = tmp_path / "chunks.jsonl"
    write_chunks(f, [Chunk("d", f"c{i}", "x", 0, 1) for i in range(3)])
    before = len(os.listdir("/proc/self/fd"))
    opened = [ChunkRecords(f) for _ in range(50)]
    assert len(os.listdir("/proc/self/fd")) - before < 5
    assert [c.chunk_id for c in opened[0]] == ["c0", "c1", "c2"] and opened[1][2].chunk_id == "c2"
    assert len(os.listdir("/proc/self/fd")) - before < 5  # one opened, by the record read
