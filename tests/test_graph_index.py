"""The corpus graph saved with an index: built while indexing, merged from shards, searched
through Retriever / gralc.search, shown by ``python -m gralc.graph``."""

import json

import pytest

from gralc import graph as graph_cli
from gralc import index as index_cli
from gralc import search as search_cli
from gralc import shard as shard_cli
from gralc.data.demo import DEMO_DIR
from gralc.inference import GRAPH_DIR, Retriever
from gralc.retrieval.graph.search import GraphIndex

ARTICLES = DEMO_DIR / "articles"
QUESTION = "How did slow titration of extended-release metformin change HbA1c?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("graph_index")
    single = root / "single"
    assert index_cli.main([str(ARTICLES), "--out", str(single), "--strategy", "late",
                           "--searcher", "graph_local"]) == 0
    shards = [root / f"shard_{i}" for i in range(2)]
    for i, out in enumerate(shards):
        assert shard_cli.main(["build", str(ARTICLES), "--shard", str(i), "--num-shards",
                                 "2", "--out", str(out), "--strategy", "late", "--graph"]) == 0
    merged = root / "merged"
    assert shard_cli.main(["merge", *map(str, shards), "--out", str(merged), "--corpus", str(ARTICLES)]) == 0
    return single, merged, shards


def test_graph_is_saved_and_searched_with_paths(built):
    single, _, _ = built
    retriever = Retriever.load(single)
    assert retriever.graph is not None and len(retriever.graph.graph.nodes) > 50
    hits = retriever.search(QUESTION, k=5)
    assert len(hits) == 5 and hits[0].chunk.doc_id == "PMC9000001"
    assert hits[0].components["graph"] == 1.0 and hits[0].path and hits[0].path != ("dense",)
    assert all(p in retriever.graph.graph.nodes for p in hits[0].path)
    again = Retriever.load(single).search(QUESTION, k=5)
    assert [h.chunk.chunk_id for h in again] == [h.chunk.chunk_id for h in hits]


def test_search_cli_runs_graph_search(built, capsys):
    single, _, _ = built
    assert search_cli.main([str(single), QUESTION, "-k", "3", "--format", "json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["rank"] for r in rows] == [1, 2, 3] and "graph" in rows[0]["components"]


def test_merged_shard_graphs_equal_the_single_build(built):
    single, merged, shards = built
    one, two = GraphIndex.load(single / GRAPH_DIR), GraphIndex.load(merged / GRAPH_DIR)
    assert two.graph.to_dict() == one.graph.to_dict()
    assert [c.nodes for c in two.communities] == [c.nodes for c in one.communities]
    assert [r.text for r in two.reports] == [r.text for r in one.reports]
    parts = [GraphIndex.load(s / GRAPH_DIR).graph for s in shards]
    assert sum(len(p.chunk_docs) for p in parts) == len(one.graph.chunk_docs)


def test_graph_cli_shows_and_draws_an_index(built, tmp_path, capsys):
    single, _, _ = built
    png = tmp_path / "communities.png"
    assert graph_cli.main([str(single), "--top", "2", "--png", str(png)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("graph: ") and "level 0:" in out and "level 1:" in out
    assert "top 2 of" in out and png.stat().st_size > 10_000


def test_png_names_a_picture_or_a_folder_and_says_where_it_drew(built, tmp_path, capsys):
    """Issue 58, class 10: ``--png DIR`` wrote DIR.png and said it drew DIR."""
    single, _, _ = built
    folder = tmp_path / "pictures"
    folder.mkdir()
    assert graph_cli.main([str(single), "--png", str(folder)]) == 0
    assert f"drawn: {folder / 'communities.png'}" in capsys.readouterr().out
    assert (folder / "communities.png").stat().st_size > 10_000
    assert graph_cli.main([str(single), "--png", str(tmp_path / "graph.txt")]) == 2
    assert "a picture file ends in .png" in capsys.readouterr().err
    assert not (tmp_path / "graph.txt").exists()


def test_an_index_without_a_graph_is_named(tmp_path, capsys):
    from gralc.cli import run

    plain = tmp_path / "plain"
    assert index_cli.main([str(ARTICLES / "PMC9000001.nxml"), "--out", str(plain), "--strategy", "late"]) == 0
    assert run(graph_cli.main, [str(plain)]) == 2
    assert "--graph" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--strategy"):
        Retriever.build(ARTICLES, model=str(tmp_path), searcher="graph_local")


def test_graph_cli_saves_a_corpus_graph_and_never_over_someone_s_files(tmp_path, capsys):
    from gralc.cli import run

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    assert run(graph_cli.main, [str(ARTICLES / "PMC9000001.nxml"), "--strategy", "late",
                                "--out", str(theirs)]) == 2
    assert "notes.txt" in capsys.readouterr().err and (theirs / "notes.txt").read_text() == "mine"
    out = tmp_path / "graph"
    assert graph_cli.main([str(ARTICLES / "PMC9000001.nxml"), "--strategy", "late", "--out", str(out)]) == 0
    assert GraphIndex.load(out).graph.nodes
