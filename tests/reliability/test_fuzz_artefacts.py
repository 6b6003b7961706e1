"""Fuzzing the readers of artefact files (issue 58): manifests, ``retriever.json``,
``shard.json``, token tables and token-cache entries, as bytes and as structure.

Each input is written into a copy of a real artefact whose manifest is then written again to
match (a forger's re-signed copy: only the content is at fault). Every input must end in the
artefact loading, or in the project's own user error (``ValueError`` / ``FileNotFoundError``
family, e.g. ``ArtefactError``, ``ConfigError``); a cache entry in a miss. Anything else (a
``TypeError``, ``KeyError``, ``AttributeError``, a crash in a library) fails the test.

Inputs per test: ``GRALC_FUZZ_EXAMPLES`` scaled by :data:`SHARE` (default CI budget: 400 x
SHARE, about a minute for the file); ``GRALC_FUZZ_EXAMPLES=20000`` for a campaign
(docs/fuzzing.md).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gralc import index as index_cli
from gralc.artefacts import MARKER, _write_marker, verify_artefact
from gralc.data.demo import DEMO_DIR
from gralc.encoding.cache import EmbeddingCache
from gralc.inference import Retriever
from gralc.retrieval.trained.token_codec import TokenCodec, TokenCodecConfig
from gralc.retrieval.trained.token_store import TokenStore

#: this file's share of the readers' budget (its inputs are slower: each copies an artefact)
SHARE = 0.25
EXAMPLES = max(20, int(int(os.environ.get("GRALC_FUZZ_EXAMPLES", 400)) * SHARE))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
                suppress_health_check=list(HealthCheck))

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2 ** 70), 2 ** 70),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12))
json_any = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=15)


def is_user_error(exc: BaseException) -> bool:
    return isinstance(exc, ValueError | FileNotFoundError) and not isinstance(exc, UnicodeError)


def reseal(folder: Path, kind: str = "index") -> None:
    (folder / MARKER).unlink(missing_ok=True)
    _write_marker(folder, kind)


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fuzz") / "index"
    corpus = DEMO_DIR / "articles"
    assert index_cli.main([str(corpus), "--out", str(out), "--strategy", "late", "--searcher", "hybrid"]) == 0
    return out


@pytest.fixture(scope="module")
def tokens(tmp_path_factory) -> Path:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10_000, 32)).astype(np.float32)
    store = TokenStore(TokenCodec.train(x, TokenCodecConfig(pq_bytes=8, centroids=16)))
    store.add(x, np.sort(rng.integers(0, 20, len(x))), 20)
    out = tmp_path_factory.mktemp("fuzz") / "table"
    from gralc.artefacts import write_artefact

    with write_artefact(out, "index") as tmp:
        store.save(tmp / "tokens")
    return out


def _copy(src: Path, root: Path) -> Path:
    dst = root / "copy"
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def _try(load) -> None:
    try:
        load()
    except BaseException as exc:  # noqa: BLE001 - the assertion names what escaped
        assert is_user_error(exc), f"{type(exc).__name__}: {exc}"


def test_manifests(index, tmp_path):
    @FUZZ
    @given(st.one_of(json_any.map(lambda v: json.dumps(v).encode()), st.binary(max_size=200),
                     st.dictionaries(st.sampled_from(["kind", "files", "format"]), json_any).map(
                         lambda d: json.dumps({"kind": "index", **d}).encode())))
    def fuzz(raw: bytes) -> None:
        folder = _copy(index, tmp_path)
        (folder / MARKER).write_bytes(raw)
        _try(lambda: verify_artefact(folder, ("index",)))

    fuzz()


def test_retriever_json(index, tmp_path):
    spec = json.loads((index / "retriever.json").read_text())

    @FUZZ
    @given(st.one_of(json_any, st.dictionaries(st.sampled_from(sorted(spec)), json_any).map(
        lambda d: {**spec, **d})))
    def fuzz(value) -> None:
        folder = _copy(index, tmp_path)
        (folder / "retriever.json").write_text(json.dumps(value))
        reseal(folder)
        _try(lambda: Retriever.load(folder))

    fuzz()


def test_shard_json(index, tmp_path):
    from gralc.shard_index import _read_shard

    good = {"corpus": "/corpus", "shard": 0, "num_shards": 1, "files": ["a.txt"], "n_chunks": 1,
            "corpus_listing": {"n_files": 1, "sha256": "0" * 64}, "digests": {"a.txt": "0" * 64}}

    @FUZZ
    @given(st.one_of(json_any, st.dictionaries(st.sampled_from(sorted(good)), json_any).map(
        lambda d: {**good, **d})))
    def fuzz(value) -> None:
        folder = _copy(index, tmp_path)
        (folder / "shard.json").write_text(json.dumps(value))
        reseal(folder)
        _try(lambda: _read_shard(folder))

    fuzz()


def test_token_tables(tokens, tmp_path):
    meta = json.loads((tokens / "tokens" / "tokens.json").read_text())

    @FUZZ
    @given(st.one_of(
        st.tuples(st.just("tokens.json"), st.dictionaries(st.sampled_from(sorted(meta)), json_any).map(
            lambda d: json.dumps({**meta, **d}).encode())),
        st.tuples(st.sampled_from(["codes.values.npy", "codes.offsets.npy", "codec.faiss", "tokens.json"]),
                  st.binary(max_size=300))))
    def fuzz(change) -> None:
        name, raw = change
        folder = _copy(tokens, tmp_path)
        (folder / "tokens" / name).write_bytes(raw)
        reseal(folder)
        _try(lambda: TokenStore.load(folder / "tokens"))

    fuzz()


def test_token_cache_entries(tmp_path):
    from safetensors.torch import save_file

    from gralc.encoding.types import TokenEmbeddings

    cache = EmbeddingCache(tmp_path / "cache")
    te = TokenEmbeddings(torch.ones(3, 4), np.array([[0, 2], [3, 5], [6, 9]]), "m", [(0, 3)])
    key = "ab" + "0" * 62

    @FUZZ
    @given(st.one_of(
        st.binary(max_size=300).map(lambda b: ("bytes", b)),
        st.tuples(st.dictionaries(st.sampled_from(["model_id", "key", "sha256"]), st.text(max_size=70)),
                  st.sampled_from(["vectors", "offsets", "windows"]),
                  st.sampled_from([torch.zeros(0), torch.full((3, 4), float("nan")), -torch.ones(3, 4),
                                   torch.tensor([[5, 1]]), torch.zeros(2, 2, 2)])).map(lambda t: ("tensors", t))))
    def fuzz(change) -> None:
        cache.put(key, te)
        path = cache.path(key)
        if change[0] == "bytes":
            path.write_bytes(change[1])
        else:
            meta, name, tensor = change[1]
            save_file({"vectors": torch.ones(3, 4), "offsets": torch.tensor([[0, 2], [3, 5], [6, 9]]),
                       "windows": torch.tensor([[0, 3]]), name: tensor}, str(path),
                      metadata={"model_id": "m", **meta})
        got = cache.get(key, text_len=9)  # a miss, or an entry that passed every check
        assert got is None or (torch.isfinite(got.vectors).all() and len(got.vectors) == len(got.offsets))

    fuzz()
