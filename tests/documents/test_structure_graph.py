"""Document structure graph G_s: exact nodes and edges on a hand-built document."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Batch

from gralc.documents.model import (
    Caption,
    Citation,
    CrossRef,
    Document,
    Paragraph,
    Section,
    TextBuilder,
)
from gralc.documents.structure_graph import (
    EDGE_TYPES,
    build_structure_graph,
    graph_stats,
    to_networkx,
)


def _span(text: str, par: Paragraph, needle: str) -> tuple[int, int]:
    start = text.index(needle, par.start, par.end)
    return start, start + len(needle)


def make_doc() -> Document:
    """Intro (p1, p2) | Methods (p3, Stats subsection (p4 = Figure 1 caption))."""
    b = TextBuilder()
    t = b.add("A title")
    s1_t = b.add("Introduction")
    p1 = Paragraph("p1", *b.add("Cells die [1], see Figure 1."), "s1")
    p2 = Paragraph("p2", *b.add("Known before [1]."), "s1")
    s2_t = b.add("Methods")
    p3 = Paragraph("p3", *b.add("As in the Introduction we used [2]."), "s2")
    s21_t = b.add("Stats")
    p4 = Paragraph("p4", *b.add("Figure 1. A caption."), "s2.1", kind="caption")
    sub = Section(
        "s2.1",
        "Stats",
        2,
        "methods",
        s21_t[0],
        p4.end,
        *s21_t,
        parent_id="s2",
        paragraph_ids=["p4"],
    )
    s1 = Section(
        "s1", "Introduction", 1, "introduction", s1_t[0], p2.end, *s1_t, paragraph_ids=["p1", "p2"]
    )
    s2 = Section(
        "s2",
        "Methods",
        1,
        "methods",
        s2_t[0],
        p4.end,
        *s2_t,
        paragraph_ids=["p3"],
        subsections=[sub],
    )
    text = b.text
    paras = [p1, p2, p3, p4]
    return Document(
        id="d1",
        text=text,
        title="A title",
        title_start=t[0],
        title_end=t[1],
        sections=[s1, s2],
        paragraphs=paras,
        citations=[
            Citation(*_span(text, p1, "[1]"), "r1", "p1"),
            Citation(*_span(text, p2, "[1]"), "r1", "p2"),
            Citation(*_span(text, p3, "[2]"), "r2", "p3"),
        ],
        crossrefs=[
            CrossRef(*_span(text, p3, "Introduction"), "sec", "s1", "p3"),
            CrossRef(*_span(text, p1, "Figure 1"), "fig", "f1", "p1"),
            CrossRef(*_span(text, p1, "Figure 1"), "fig", "missing-fig", "p1"),  # ignored
        ],
        captions=[Caption("f1", "fig", "Figure 1", "p4")],
    )


EXPECTED_EDGES = {
    ("section", "contains", "subsection"): [(1, 0)],
    ("section", "contains", "paragraph"): [(0, 0), (0, 1), (1, 2)],
    ("subsection", "contains", "subsection"): [],
    ("subsection", "contains", "paragraph"): [(0, 3)],
    ("paragraph", "next", "paragraph"): [(0, 1), (1, 2), (2, 3)],
    ("section", "next", "section"): [(0, 1)],
    ("subsection", "next", "subsection"): [],
    ("paragraph", "cites", "citation"): [(0, 0), (1, 0), (2, 1)],
    ("paragraph", "refers_to", "section"): [(2, 0)],
    ("paragraph", "refers_to", "subsection"): [],
    ("paragraph", "refers_to", "paragraph"): [(0, 3)],
}


def test_nodes_exact():
    doc = make_doc()
    g = build_structure_graph(doc)
    assert g["section"].node_ids == ["s1", "s2"]
    assert g["subsection"].node_ids == ["s2.1"]
    assert g["paragraph"].node_ids == ["p1", "p2", "p3", "p4"]
    assert g["citation"].node_ids == ["r1", "r2"]
    assert [g[t].num_nodes for t in ("section", "subsection", "paragraph", "citation")] == [
        2,
        1,
        4,
        2,
    ]
    assert g["section"].imrad_type == ["introduction", "methods"]
    assert g["section"].level == [1, 1] and g["subsection"].level == [2]
    assert g["paragraph"].char_span.dtype == torch.long
    assert g["paragraph"].char_span.shape == (4, 2)
    s, e = g["paragraph"].char_span[3].tolist()
    assert doc.text[s:e] == "Figure 1. A caption."
    s, e = g["citation"].char_span[0].tolist()  # first mention of r1, in p1
    assert doc.text[s:e] == "[1]" and s < doc.paragraphs[1].start


def test_edges_exact():
    g = build_structure_graph(make_doc())
    assert set(g.edge_types) == set(EDGE_TYPES)
    for etype, expected in EXPECTED_EDGES.items():
        ei = g[etype].edge_index
        assert ei.dtype == torch.long and ei.shape == (2, len(expected)), etype
        assert [tuple(p) for p in ei.t().tolist()] == expected, etype


def test_duplicate_citation_in_paragraph_gives_one_edge():
    doc = make_doc()
    first = doc.citations[0]
    doc.citations.append(Citation(first.start, first.end, "r1", "p1"))
    g = build_structure_graph(doc)
    assert g["paragraph", "cites", "citation"].edge_index.shape == (2, 3)


def test_unknown_section_is_an_error():
    doc = make_doc()
    doc.paragraphs[0].section_id = "nope"
    with pytest.raises(ValueError, match="p1.*nope"):
        build_structure_graph(doc)


def test_networkx_and_stats():
    doc = make_doc()
    nxg = to_networkx(doc)
    assert nxg.number_of_nodes() == 9
    assert nxg.number_of_edges() == 14
    assert nxg.nodes["section", "s2"]["title"] == "Methods"
    assert nxg.nodes["section", "s1"]["imrad_type"] == "introduction"
    rels = [d["relation"] for _, _, d in nxg.edges(data=True)]
    assert rels.count("contains") == 5 and rels.count("next") == 4
    assert rels.count("cites") == 3 and rels.count("refers_to") == 2
    assert nxg.has_edge(("paragraph", "p1"), ("paragraph", "p4"))
    stats = graph_stats(doc)
    assert stats["nodes/paragraph"] == 4 and stats["nodes/citation"] == 2
    assert stats["edges/paragraph-next-paragraph"] == 3
    assert (
        stats["edges/hierarchical"],
        stats["edges/sequential"],
        stats["edges/citation"],
        stats["edges/xref"],
    ) == (5, 4, 3, 2)
    assert graph_stats(build_structure_graph(doc)) == stats


def test_batching_two_graphs():
    g1 = build_structure_graph(make_doc())
    empty = Document(id="empty", text="")
    g2 = build_structure_graph(empty)
    assert g2["paragraph"].num_nodes == 0 and g2["paragraph"].char_span.shape == (0, 2)
    batch = Batch.from_data_list([g1, g1, g2])
    assert batch["paragraph"].num_nodes == 8
    ei = batch["paragraph", "next", "paragraph"].edge_index
    assert ei.t().tolist() == [[0, 1], [1, 2], [2, 3], [4, 5], [5, 6], [6, 7]]
    assert batch["paragraph"].batch.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_real_pmc_article(shared_data):
    from gralc.documents import jats

    path = sorted((shared_data / "pmc").rglob("*.nxml"))[0]
    doc = jats.parse_jats(path)
    g = build_structure_graph(doc)
    stats = graph_stats(g)
    assert stats["nodes/section"] == len(doc.sections) > 0
    assert stats["nodes/paragraph"] == len(doc.paragraphs) > 0
    assert stats["nodes/citation"] == len({c.ref_id for c in doc.citations})
    assert stats["edges/paragraph-next-paragraph"] == len(doc.paragraphs) - 1
    assert stats["edges/hierarchical"] >= sum(p.section_id is not None for p in doc.paragraphs)
    nxg = to_networkx(g)
    assert nxg.number_of_nodes() == sum(
        stats[f"nodes/{t}"] for t in ("section", "subsection", "paragraph", "citation")
    )
