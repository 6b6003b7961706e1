"""Sharded indexing: two shards built separately and merged equal a single-process index."""

import json

import numpy as np
import pytest

from gralc import index as index_cli
from gralc import shard as shard_cli
from gralc import shard_index
from gralc.data.demo import DEMO_DIR
from gralc.inference import Retriever

ARTICLES = DEMO_DIR / "articles"
QUESTIONS = [
    "How did slow titration of extended-release metformin change HbA1c?",
    "Which adverse events were reported?",
    "What was the primary outcome of the trial?",
]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    """(single-process index dir, merged index dir, shard dirs), strategy ``late``."""
    root = tmp_path_factory.mktemp("shards")
    single = root / "single"
    assert index_cli.main([str(ARTICLES), "--out", str(single), "--strategy", "late"]) == 0
    shards = [root / f"shard_{i}" for i in range(2)]
    for i, out in enumerate(shards):
        argv = ["build", str(ARTICLES), "--shard", str(i), "--num-shards", "2",
                "--out", str(out), "--strategy", "late"]
        assert shard_cli.main(argv) == 0
    merged = root / "merged"
    # shards given in reverse order: the merge orders them by shard.json
    assert shard_cli.main(["merge", *map(str, shards[::-1]), "--out", str(merged)]) == 0
    return single, merged, shards


def test_shards_split_the_sorted_files_into_disjoint_blocks(indexes):
    _, _, shards = indexes
    files = [json.loads((d / shard_index.SHARD_FILE).read_text())["files"] for d in shards]
    assert files[0] and files[1] and not set(files[0]) & set(files[1])
    assert files[0] + files[1] == sorted(p.name for p in ARTICLES.glob("*.nxml"))


def test_merged_index_equals_the_single_process_index(indexes):
    single, merged = (Retriever.load(d) for d in indexes[:2])
    ids = [(c.doc_id, c.chunk_id) for c in single.index.chunks]
    assert ids == [(c.doc_id, c.chunk_id) for c in merged.index.chunks]
    assert [c.text for c in single.index.chunks] == [c.text for c in merged.index.chunks]
    assert np.allclose(single.index.vectors, merged.index.vectors, atol=1e-5)
    assert merged.index.index.ntotal == len(ids)
    assert {**merged.spec.__dict__, "bound_files": None} == {**single.spec.__dict__, "bound_files": None}  # (each binds its own files)
    for q in QUESTIONS:
        a, b = single.search(q, k=5), merged.search(q, k=5)
        assert [(h.chunk.doc_id, h.chunk.chunk_id) for h in a] == [
            (h.chunk.doc_id, h.chunk.chunk_id) for h in b
        ]
        assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-5)


def test_bad_shard_sets_are_refused(indexes, tmp_path, capsys):
    _, _, shards = indexes
    assert shard_cli.main(["merge", str(shards[0]), "--out", str(tmp_path / "m")]) == 2
    assert "need exactly [0, 1]" in capsys.readouterr().err
    argv = ["build", str(ARTICLES), "--shard", "0", "--num-shards", "11", "--out", str(tmp_path / "s")]
    assert shard_cli.main(argv) == 2
    assert "use --num-shards <= 10" in capsys.readouterr().err
