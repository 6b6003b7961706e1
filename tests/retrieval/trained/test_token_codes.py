"""Token vectors as FAISS IVF-PQ codes: per-chunk tables, the codec, MaxSim from codes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from gralc.model.late_interaction import maxsim
from gralc.retrieval.trained import token_store
from gralc.retrieval.trained.ragged import Ragged
from gralc.retrieval.trained.token_codec import (
    TokenCodec,
    TokenCodecConfig,
    load_codec_dir,
    save_codec_dir,
)
from gralc.retrieval.trained.token_store import TokenStore


@pytest.fixture(autouse=True)
def one_faiss_thread():
    """FAISS's OpenMP k-means with two threads on a loaded 2-core machine spins (measured: a
    30 s codec training, 2 s with one thread)."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


def clustered(n: int, dim: int = 64, centres: int = 40, seed: int = 0) -> np.ndarray:
    """Unit vectors around a few directions, as contextual token vectors are."""
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, dim))
    x = c[rng.integers(0, centres, n)] + 0.35 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@given(st.lists(st.integers(0, 5), min_size=1, max_size=30), st.data())
@settings(max_examples=60, deadline=None)
def test_ragged_gathers_exactly_the_rows_asked_for(counts, data):
    rows = [np.arange(c, dtype=np.float32) + 100 * i for i, c in enumerate(counts)]
    table = Ragged.from_rows(rows)
    ask = np.array(data.draw(st.lists(st.integers(0, len(counts) - 1), max_size=10)), dtype=np.int64)
    values, local = table.gather(ask)
    expected = [v for j, r in enumerate(ask) for v in rows[r]]
    assert values.tolist() == expected
    assert local.tolist() == [j for j, r in enumerate(ask) for _ in rows[r]]
    both = Ragged.concat([table, table])
    assert len(both) == 2 * len(counts) and both.row(len(counts)).tolist() == rows[0].tolist()


def test_ragged_refuses_offsets_that_do_not_fit(tmp_path):
    with pytest.raises(ValueError, match="offsets"):
        Ragged(np.zeros(3), np.array([0, 2, 1, 3]))
    with pytest.raises(ValueError, match="offsets"):
        Ragged(np.zeros(3), np.array([0, 2]))
    t = Ragged.from_rows([np.ones(2), np.ones(1)])
    t.save(tmp_path, "x")
    np.save(tmp_path / "x.offsets.npy", np.array([0, 5, 3]))
    with pytest.raises(ValueError, match=r"x\.offsets\.npy"):
        Ragged.load(tmp_path, "x")


def test_ivf_pq_codes_are_small_and_decode_close():
    x = clustered(12_000)
    codec = TokenCodec.train(x, TokenCodecConfig(pq_bytes=16, centroids=64))
    codes = codec.encode(x[:500])
    assert codes.shape == (500, codec.code_size) and codec.code_size == 1 + 16 * 10 // 8  # list id + PQ16x10
    decoded = codec.decode(codes)
    np.testing.assert_allclose(np.linalg.norm(decoded, axis=1), 1.0, rtol=1e-5)  # back on the sphere
    assert (decoded * x[:500]).sum(1).mean() > 0.9
    # the centroid id read from the code is the coarse quantiser's assignment
    import faiss

    _, assigned = faiss.extract_index_ivf(codec.index).quantizer.search(x[:500], 1)
    assert np.array_equal(codec.centroid_ids(codes), assigned.ravel())
    # float16 keeps vectors to float16 precision
    exact = TokenCodec.train(x, TokenCodecConfig(kind="float16"))
    assert np.array_equal(exact.decode(exact.encode(x[:50])), x[:50].astype(np.float16).astype(np.float32))
    assert exact.code_size == 2 * x.shape[1]


def test_codec_round_trips_and_refuses_a_changed_file(tmp_path):
    x = clustered(12_000)
    from gralc.artefacts import MARKER, _write_marker, write_artefact

    codec = TokenCodec.train(x, TokenCodecConfig(pq_bytes=8, centroids=32))
    folder = tmp_path / "codec"
    with write_artefact(folder, "token_codec") as tmp:  # as gralc.shard_index codec does
        save_codec_dir(codec, tmp)
    again = load_codec_dir(folder)
    assert np.array_equal(again.encode(x[:100]), codec.encode(x[:100]))
    other = TokenCodec.train(clustered(12_000, seed=1), TokenCodecConfig(pq_bytes=8, centroids=32))
    other.save(folder / "codec.faiss")  # a valid codec, but not the one codec.json records
    with pytest.raises(ValueError, match="codec.faiss was changed after GraLC wrote it"):
        load_codec_dir(folder)
    (folder / MARKER).unlink()
    _write_marker(folder, "token_codec")  # a manifest rewritten to match: the codec's own check
    with pytest.raises(ValueError, match="differs from the codec"):
        load_codec_dir(folder)
    (folder / "codec.faiss").write_bytes(b"not a faiss index")
    (folder / MARKER).unlink()
    _write_marker(folder, "token_codec")
    with pytest.raises(ValueError, match="corrupt token codec"):
        load_codec_dir(folder)
    with pytest.raises(ValueError, match="training tokens"):
        TokenCodec.train(x[:500], TokenCodecConfig(pq_bytes=8))
    with pytest.raises(ValueError, match="pq_bytes"):
        TokenCodec.train(x, TokenCodecConfig(pq_bytes=7))


def test_codec_training_prints_nothing_and_codes_as_with_faiss_defaults(monkeypatch, capfd):
    """FAISS's k-means writes "WARNING clustering N points to 512 centroids" on fd 2 once per
    sub-quantiser below 39 points a centroid; the codec lowers that threshold, which gates
    nothing but the warning: the codes are bit for bit those of FAISS's default (39)."""
    import faiss

    x = clustered(12_000)  # 12,000 < 39 x 512: FAISS's default warns for each sub-quantiser
    config = TokenCodecConfig(pq_bytes=8, pq_bits=9, centroids=64)
    capfd.readouterr()
    codes = TokenCodec.train(x, config).encode(x[:2000])
    out, err = capfd.readouterr()
    assert not err.strip() and not out.strip(), err
    with monkeypatch.context() as m:  # the threshold stays FAISS's 39: the warnings are back
        m.setattr(faiss.ClusteringParameters, "min_points_per_centroid",
                  property(lambda cp: 39, lambda cp, value: None))
        default = TokenCodec.train(x, config).encode(x[:2000])
    assert capfd.readouterr().err.count("WARNING clustering 12000 points to 512 centroids") == 8
    assert np.array_equal(codes, default)


@pytest.mark.slow  # ~30 s: make test-all (CI)
def test_maxsim_from_codes_tracks_the_exact_maxsim(tmp_path, monkeypatch):
    """MaxSim over decoded codes is the exact MaxSim within the quantisation error; from the
    centroids alone it is coarser but still ranks the chunks; a store reloads (memory-mapped)
    to the same scores and two codecs never mix."""
    x = clustered(20_000)
    n_chunks = 200
    chunk_of = np.sort(np.random.default_rng(1).integers(0, n_chunks, len(x)))
    codec = TokenCodec.train(x, TokenCodecConfig(pq_bytes=16, centroids=512))
    store = TokenStore(codec)
    half = int(np.searchsorted(chunk_of, 100))
    store.add(x[:half], chunk_of[:half], 100)  # two batches, as an index is built
    store.add(x[half:], chunk_of[half:] - 100, 100)
    assert len(store) == n_chunks and store.n_tokens == len(x)
    # a question whose word-pieces resemble tokens of chunks 17 and 42
    picks = np.r_[np.flatnonzero(chunk_of == 17)[:6], np.flatnonzero(chunk_of == 42)[:6]]
    q = F.normalize(torch.from_numpy(x[picks]) + 0.02 * torch.randn(12, x.shape[1]), dim=-1)
    rows = np.arange(n_chunks)
    exact = maxsim(q[None], torch.ones(1, 12, dtype=torch.bool), torch.from_numpy(x),
                   torch.from_numpy(chunk_of), n_chunks)[0]
    decoded = store.maxsim(q, rows)
    coarse = store.centroid_maxsim(q, rows)
    assert (decoded - exact).abs().max() < 0.05
    assert (decoded - exact).abs().mean() < (coarse - exact).abs().mean()
    top = torch.topk(exact, 2).indices.tolist()
    assert sorted(top) == [17, 42]
    assert sorted(torch.topk(decoded, 2).indices.tolist()) == [17, 42]
    assert set(top) <= set(torch.topk(coarse, 10).indices.tolist())  # a cascade decoding 10 finds both
    some = np.array([5, 3, 150])  # any rows, in any order
    assert torch.allclose(store.maxsim(q, some), decoded[some])
    # a pass over many chunks decodes them in blocks of tokens, with the scores of one pass
    monkeypatch.setattr(token_store, "BLOCK_TOKENS", 700)
    assert len(store._blocks(rows)) > 20
    assert torch.allclose(store.maxsim(q, rows), decoded, atol=1e-6)
    assert torch.allclose(store.centroid_maxsim(q, rows), coarse, atol=1e-6)
    monkeypatch.undo()
    store.save(tmp_path / "tokens")
    loaded = TokenStore.load(tmp_path / "tokens")
    assert isinstance(loaded.codes.values, np.memmap)
    assert torch.equal(loaded.maxsim(q, rows), decoded)
    other = TokenStore(TokenCodec.train(x, TokenCodecConfig(pq_bytes=16, centroids=512, seed=1)))
    other.add(x[:10], np.zeros(10, np.int64), 1)
    with pytest.raises(ValueError, match="different codecs"):
        store.write_joined(tmp_path / "joined", [store, other])
    assert TokenStore.load(tmp_path / "tokens").codec is loaded.codec  # one codec object per file content
    store.write_joined(tmp_path / "joined", [loaded, store])  # one store of both, file by file
    joined = TokenStore.load(tmp_path / "joined")
    assert len(joined) == 2 * len(store) and np.array_equal(joined.codes.row(len(store)), store.codes.row(0))
    assert torch.equal(joined.maxsim(q, rows + len(store)), decoded)


def test_a_chunk_without_tokens_scores_minus_one():
    x = F.normalize(torch.randn(30, 8), dim=-1).numpy()
    store = TokenStore(TokenCodec.train(x, TokenCodecConfig(kind="float16")))
    store.add(x, np.array([0] * 10 + [2] * 20), 3)  # chunk 1 has no token
    got = store.maxsim(torch.randn(4, 8), np.array([0, 1, 2]))
    assert got[1] == -1.0 and got[0] > -1.0


def test_a_forged_token_table_is_refused_under_a_re_signed_manifest(tmp_path):
    """Issue 58, class 2: codes reversed, or the codec (and its tokens.json) of another table,
    with the manifest re-signed to match, decoded silently into a wrong MaxSim. The digests
    tokens.json records of its codes, and the codec's, are compared with the files read."""
    from gralc.artefacts import MARKER, _write_marker, write_artefact

    x = clustered(12_000)
    chunk_of = np.sort(np.random.default_rng(1).integers(0, 50, len(x)))

    def build(seed: int, out: Path) -> Path:
        store = TokenStore(TokenCodec.train(x, TokenCodecConfig(pq_bytes=8, centroids=32, seed=seed)))
        store.add(x, chunk_of, 50)
        with write_artefact(out, "index") as tmp:
            store.save(tmp / "tokens")
        return out / "tokens"

    def reseal(folder: Path) -> None:
        (folder.parent / MARKER).unlink()
        _write_marker(folder.parent, "index")

    mine, theirs = build(0, tmp_path / "a"), build(1, tmp_path / "b")
    TokenStore.load(mine)
    values = np.load(mine / "codes.values.npy")
    np.save(mine / "codes.values.npy", values[::-1].copy())  # same size, rows reversed
    reseal(mine)
    with pytest.raises(ValueError, match="codes.values.npy is not the file .*tokens.json records"):
        TokenStore.load(mine)
    np.save(mine / "codes.values.npy", values)
    for name in ("codec.faiss", "tokens.json"):  # another table's codec, self-consistent
        (mine / name).write_bytes((theirs / name).read_bytes())
    reseal(mine)
    with pytest.raises(ValueError, match="token table was altered"):
        TokenStore.load(mine)
