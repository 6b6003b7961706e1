"""SemRAG's local and global graph search: a toy graph with hand-set vectors, then the real
demo corpus through eval's rows and the index round trip."""

from __future__ import annotations

import numpy as np
import pytest

from gralc.chunking.chunk import Chunk
from gralc.knowledge.communities import Community
from gralc.knowledge.corpus_graph import CorpusGraph, Edge, Node
from gralc.retrieval.graph.communities import CommunityReport
from gralc.retrieval.graph.search import GraphIndex, GraphSearchConfig, GraphSearcher

E = np.eye(4, dtype=np.float32)


def chunk(cid: str, doc: str, vec, n: int = 10) -> Chunk:
    return Chunk(doc, cid, "w " * n, 0, 2 * n, 0, n, embedding=np.asarray(vec, np.float32))


CHUNKS = [
    chunk("a:0", "a", E[0] + 0.2 * E[3]),  # about X, mentions X
    chunk("a:1", "a", E[1] + 0.3 * E[3]),  # mentions Y (X's neighbour)
    chunk("b:0", "b", E[2] + 0.5 * E[3]),  # mentions Z only, closest to the query by cosine
    chunk("b:1", "b", E[2]),               # no concept
]


def toy_index() -> GraphIndex:
    g = CorpusGraph()
    g.nodes = {"X": Node("x", 1, {"a:0"}), "Y": Node("y", 1, {"a:1"}), "Z": Node("z", 1, {"b:0"})}
    g.edges = {("X", "Y"): Edge(2.0, set(), {"a:0"}), ("Y", "Z"): Edge(0.5, set(), set())}
    g.chunk_docs = {c.chunk_id: c.doc_id for c in CHUNKS}
    comms = [Community("L0-0", 0, ["X", "Y"]), Community("L0-1", 0, ["Z"])]
    reports = [CommunityReport("L0-0", 0, "x", "x y", ["X", "Y"], ["a:0", "a:1"], 1.0),
               CommunityReport("L0-1", 0, "z", "z", ["Z"], ["b:0"], 0.5)]
    node_vecs = np.stack([E[0] + 0.1 * E[3], E[1], E[2]])
    return GraphIndex(g, comms, reports, ["X", "Y", "Z"], node_vecs, np.stack([E[0], E[2]]))


QUERY = np.asarray([[1.0, 0.0, 0.0, 1.0]], np.float32)  # close to X, and to every chunk via dim 3


def ids(hits):
    return [h.chunk.chunk_id for h in hits]


def test_local_search_follows_entities_then_neighbours_then_fills_by_cosine():
    cfg = GraphSearchConfig(tau_e=0.6, tau_d=0.5, top_entities=2, neighbours=1, budget=0)
    s = GraphSearcher("graph_local", CHUNKS, toy_index(), QUERY, [[]], cfg)
    hits = s.search(4)[0]
    assert ids(hits) == ["a:0", "a:1", "b:0", "b:1"]
    assert hits[0].path == ("X",) and hits[0].components["graph"] == 1.0
    assert hits[1].path == ("X", "Y") and hits[1].components["entity"] == pytest.approx(
        0.5 * hits[0].components["entity"])
    assert hits[2].path == ("dense",) and hits[2].components["graph"] == 0.0
    # without the graph, cosine alone puts b:0 before a:1
    cos = {c.chunk_id: float(c.embedding @ QUERY[0] / np.linalg.norm(c.embedding)) for c in CHUNKS}
    assert cos["b:0"] > cos["a:1"]


def test_thresholds_budget_and_linked_query_concepts():
    index = toy_index()
    no_seed = GraphSearchConfig(tau_e=0.99, neighbours=0, budget=0)
    assert all(h.path == ("dense",) for h in GraphSearcher("graph_local", CHUNKS, index, QUERY, [[]], no_seed).search(4)[0])
    # a concept linked in the question is a seed whatever its similarity
    linked = GraphSearcher("graph_local", CHUNKS, index, QUERY, [["Z"]], no_seed).search(4)[0]
    assert linked[0].chunk.chunk_id == "b:0" and linked[0].path == ("Z",)
    # the window L: 10 word-pieces hold one chunk of the graph's
    small = GraphSearchConfig(tau_e=0.6, tau_d=0.5, neighbours=1, budget=10)
    hits = GraphSearcher("graph_local", CHUNKS, index, QUERY, [[]], small).search(4)[0]
    assert [h.components["graph"] for h in hits] == [1.0, 0.0, 0.0, 0.0]
    # tau_d: the chunk must resemble the entity that brings it in
    strict = GraphSearchConfig(tau_e=0.6, tau_d=0.99999, neighbours=1, budget=0)
    assert all(h.path == ("dense",) for h in GraphSearcher("graph_local", CHUNKS, index, QUERY, [[]], strict).search(4)[0])


def test_global_search_takes_the_top_communities_chunks_and_within_stays_in_one_document():
    cfg = GraphSearchConfig(top_communities=1, level=0, fill=False)
    s = GraphSearcher("graph_global", CHUNKS, toy_index(), QUERY, [[]], cfg)
    hits = s.search(4)[0]
    assert ids(hits) == ["a:0", "a:1"] and {h.path for h in hits} == {("L0-0",)}
    assert ids(s.within(0, "b")) == []  # no fill: only what the graph brought in
    filled = GraphSearcher("graph_global", CHUNKS, toy_index(), QUERY, [[]], GraphSearchConfig(top_communities=1, level=0))
    assert ids(filled.within(0, "b")) == ["b:0", "b:1"]
    with pytest.raises(ValueError, match="graph_nearby"):
        GraphSearcher("graph_nearby", CHUNKS, toy_index(), QUERY, [[]])


def test_index_round_trip_keeps_everything(tmp_path):
    from gralc.artefacts import write_artefact

    index = toy_index()
    with write_artefact(tmp_path / "graph", "corpus_graph") as tmp:  # as gralc.graph --out does
        index.save(tmp)
    back = GraphIndex.load(tmp_path / "graph")
    assert back.graph.to_dict() == index.graph.to_dict()
    assert back.node_ids == index.node_ids and np.allclose(back.node_vecs, index.node_vecs)
    assert [r.text for r in back.reports] == [r.text for r in index.reports]
    q = GraphSearcher("graph_local", CHUNKS, back, QUERY, [[]], GraphSearchConfig(tau_e=0.6, tau_d=0.5, budget=0))
    assert ids(q.search(4)[0]) == ["a:0", "a:1", "b:0", "b:1"]
    with pytest.raises(FileNotFoundError, match="--graph"):
        GraphIndex.load(tmp_path / "nothing")


@pytest.mark.slow  # ~30 s: make test-all (CI)
def test_demo_rows_build_a_graph_with_reports_and_rank_to_depth():
    from gralc.data.benchmarks import demo_benchmark
    from gralc.evaluation.evidence import PieceCounter
    from gralc.evaluation.methods import DEFAULT_METHODS, RunSettings, evaluate_method, method_graph
    from gralc.pipeline import Pipeline

    pipeline, bench = Pipeline(), demo_benchmark()
    prepared = pipeline.prepare(bench.documents, progress=False)
    spec = {m.name: m for m in DEFAULT_METHODS}
    settings = RunSettings((1, 5, 10), pieces=PieceCounter(pipeline.encoder.tokenizer))
    chunks = [c for p in prepared for c in pipeline.chunker("structure_aware").chunk(p)]
    index = method_graph(prepared, chunks, pipeline, settings)
    assert len(index.graph.nodes) > 50 and index.reports
    report = index.reports[0]
    assert report.text.startswith(report.title) and report.chunk_ids
    assert index.report_vecs.shape == (len(index.reports), pipeline.encoder.dim)
    for name in ("semantic_graph_local", "semantic_graph_global"):
        r = evaluate_method(spec[name], bench, prepared, pipeline, settings)
        assert {len(q["top"]) for q in r.per_query} == {10}
        assert r.chunk_stats["graph_nodes"] > 50 and r.timings["graph_total_s"] > 0
        assert 0 < r.metrics["ev_mrr"] <= 1
