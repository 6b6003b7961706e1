"""The corpus knowledge graph and its Leiden communities on a hand-made toy corpus."""

from __future__ import annotations

import pytest
from _toy_corpus import VOCAB, A, B, Span, doc_with, spans

from gralc.knowledge.communities import CommunityConfig, detect_communities, level_of
from gralc.knowledge.concept_graph import KnowledgeBase
from gralc.knowledge.corpus_graph import CorpusGraph, CorpusGraphConfig, build_corpus_graph


def test_nodes_edges_weights_and_provenance():
    chunks = [Span("a", "a:0", 0, len(A[0].text)), *spans(B[0], 1)]
    g = build_corpus_graph([A, B], chunks, KnowledgeBase(VOCAB), CorpusGraphConfig(chunk_weight=0.5))
    assert set(g.nodes) == {"D1", "D2", "D4", "D5"}
    assert g.nodes["D4"].chunks == {"a:0", "b:0"} and g.nodes["D4"].mentions == 2
    # same sentence: 1 + same chunk: 0.5; same chunk only: 0.5
    assert g.edges[("D1", "D2")].cooccurrence == 1.5
    assert g.edges[("D1", "D4")].cooccurrence == 0.5 and g.edges[("D1", "D4")].chunks == {"a:0"}
    assert g.edges[("D4", "D5")].cooccurrence == 1.5
    # D2 Breast Neoplasms is_a D3 Neoplasms, but D3 is not in the corpus: no edge
    assert not any(e.relations for e in g.edges.values())


def test_relations_join_corpus_concepts_and_weigh_once():
    c, m = doc_with("c", [[("neoplasms", "D3")]])
    chunks = [*spans(A[0], 1), *spans(c, 1)]
    g = build_corpus_graph([A, (c, m)], chunks, KnowledgeBase(VOCAB), CorpusGraphConfig(relation_weight=2.0))
    edge = g.edges[("D2", "D3")]
    assert edge.relations == {"is_a"} and edge.cooccurrence == 0 and g.weight(edge) == 2.0


def test_sentence_edges_reach_only_the_chunks_holding_the_sentence():
    doc, mentions = A
    cut = doc.sentences[1].start
    chunks = [Span("a", "a:0", 0, cut), Span("a", "a:1", cut, len(doc.text))]
    g = build_corpus_graph([A], chunks, config=CorpusGraphConfig(chunk_weight=0.0))
    assert g.edges[("D1", "D2")].chunks == {"a:0"}
    assert ("D1", "D4") not in g.edges  # different sentences, different chunks


def test_incremental_batches_and_shard_merge_equal_one_build(tmp_path):
    chunks = [*spans(A[0], 2), *spans(B[0], 1)]
    kb = KnowledgeBase(VOCAB)
    whole = build_corpus_graph([A, B], chunks, kb)
    one = CorpusGraph().add([A], chunks[:2], kb)
    two = CorpusGraph().add([B], chunks[2:], kb)
    merged = one.merge(two)
    assert merged.to_dict() == whole.to_dict()
    path = whole.save(tmp_path / "graph.json")
    assert CorpusGraph.load(path).to_dict() == whole.to_dict()


def test_a_foreign_or_broken_file_is_refused_with_its_name(tmp_path):
    bad = tmp_path / "g.json"
    bad.write_text('{"format": "something else"}')
    with pytest.raises(ValueError, match="g.json"):
        CorpusGraph.load(bad)
    d = build_corpus_graph([A], spans(A[0], 1)).to_dict()
    d["edges"][0]["a"] = "D999"
    with pytest.raises(ValueError, match="unknown node"):
        CorpusGraph.from_dict(d)


def two_cliques() -> CorpusGraph:
    """Two 6-cliques joined by one weak edge; names n0..n11."""
    g = CorpusGraph()
    from gralc.knowledge.corpus_graph import Edge, Node

    for i in range(12):
        g.nodes[f"n{i:02d}"] = Node(f"concept {i}", 1, {f"c{i}"})
    for block in (range(0, 6), range(6, 12)):
        for i in block:
            for j in block:
                if i < j:
                    g.edges[(f"n{i:02d}", f"n{j:02d}")] = Edge(3.0, set(), {f"c{i}"})
    g.edges[("n05", "n06")] = Edge(0.1, set(), set())
    return g


@pytest.mark.parametrize("backend", ["leiden", "louvain"])
def test_communities_find_the_cliques_deterministically(backend):
    cfg = CommunityConfig(levels=2, max_size=4, seed=3, backend=backend)
    comms = detect_communities(two_cliques(), cfg)
    top = level_of(comms, 0)
    assert sorted(len(c.nodes) for c in top) == [6, 6]
    assert {tuple(c.nodes) for c in top} == {tuple(f"n{i:02d}" for i in range(6)),
                                              tuple(f"n{i:02d}" for i in range(6, 12))}
    # level 1 is a full partition again, each community inside its parent
    nodes = [n for c in level_of(comms, 1) for n in c.nodes]
    assert sorted(nodes) == sorted(two_cliques().nodes)
    parents = {c.id: c for c in top}
    for c in level_of(comms, 1):
        assert set(c.nodes) <= set(parents[c.parent].nodes) and c.id in parents[c.parent].children
    assert [c.nodes for c in detect_communities(two_cliques(), cfg)] == [c.nodes for c in comms]


def test_isolated_concepts_are_their_own_communities_and_bad_config_is_named():
    g = CorpusGraph()
    from gralc.knowledge.corpus_graph import Node

    g.nodes["x"], g.nodes["y"] = Node("x"), Node("y")
    assert [c.nodes for c in detect_communities(g)] == [["x"], ["y"], ["x"], ["y"]]
    with pytest.raises(ValueError, match="graph.communities.resolution"):
        CommunityConfig(resolution=0)
    with pytest.raises(ValueError, match="backend"):
        CommunityConfig(backend="spectral")
