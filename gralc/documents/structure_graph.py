"""Document structure graph G_s (paper Sect. 3.1.2) as a ``torch_geometric`` HeteroData.

Node types: ``section`` (level 1), ``subsection`` (level >= 2), ``paragraph`` (every
``Document.paragraphs`` entry) and ``citation`` (one per distinct cited reference id); each
store has ``num_nodes``, ``node_ids`` and ``char_span`` (LongTensor (n, 2) in
``Document.text``), sections also ``title``, ``imrad_type`` and ``level``, paragraphs ``kind``.
Edge types (all in :data:`EDGE_TYPES`, always present, duplicates removed, so graphs batch
with ``Batch.from_data_list``): hierarchical ``contains``, sequential ``next``, citation
``(paragraph, cites, citation)`` and cross-reference ``(paragraph, refers_to, ...)`` to
sections or caption paragraphs. Edges are directed as listed; add reverse edges with
``torch_geometric.transforms.ToUndirected``. The node and edge rules in full: docs/data.md."""

from __future__ import annotations

from collections import defaultdict
from itertools import pairwise
from typing import TYPE_CHECKING

import networkx as nx
import torch

from gralc.documents.model import Document

if TYPE_CHECKING:  # torch_geometric is imported where a graph is built (~1 s to import)
    from torch_geometric.data import HeteroData

NODE_TYPES = ("section", "subsection", "paragraph", "citation")
#: (edge type, paper relation kind)
EDGE_KINDS: dict[tuple[str, str, str], str] = {
    ("section", "contains", "subsection"): "hierarchical",
    ("section", "contains", "paragraph"): "hierarchical",
    ("subsection", "contains", "subsection"): "hierarchical",
    ("subsection", "contains", "paragraph"): "hierarchical",
    ("paragraph", "next", "paragraph"): "sequential",
    ("section", "next", "section"): "sequential",
    ("subsection", "next", "subsection"): "sequential",
    ("paragraph", "cites", "citation"): "citation",
    ("paragraph", "refers_to", "section"): "xref",
    ("paragraph", "refers_to", "subsection"): "xref",
    ("paragraph", "refers_to", "paragraph"): "xref",
}
EDGE_TYPES = tuple(EDGE_KINDS)


def _sec_type(level: int) -> str:
    return "section" if level <= 1 else "subsection"


def build_structure_graph(doc: Document) -> HeteroData:
    """G_s of ``doc``. Raises ValueError when a paragraph names an unknown section.

    >>> from gralc.documents.plaintext import document_from_text
    >>> g = build_structure_graph(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1"))
    >>> g["section"].num_nodes, g["paragraph"].num_nodes
    (1, 1)
    """
    sections = list(doc.iter_sections())
    paragraphs = sorted(doc.paragraphs, key=lambda p: (p.start, p.end))
    ref_ids = list(dict.fromkeys(c.ref_id for c in doc.citations))  # first-mention order

    # node index per type: id -> position
    index: dict[str, dict[str, int]] = {t: {} for t in NODE_TYPES}
    for sec in sections:
        idx = index[_sec_type(sec.level)]
        idx[sec.id] = len(idx)
    index["paragraph"] = {p.id: i for i, p in enumerate(paragraphs)}
    index["citation"] = {r: i for i, r in enumerate(ref_ids)}
    sec_kind = {s.id: _sec_type(s.level) for s in sections}

    edges: dict[tuple[str, str, str], list[tuple[int, int]]] = defaultdict(list)

    def add(src_t: str, src: str, rel: str, dst_t: str, dst: str) -> None:
        edges[(src_t, rel, dst_t)].append((index[src_t][src], index[dst_t][dst]))

    # hierarchical + sequential between sibling sections
    for siblings in [doc.sections] + [s.subsections for s in sections]:
        for a, b in pairwise(siblings):
            if sec_kind[a.id] == sec_kind[b.id]:
                add(sec_kind[a.id], a.id, "next", sec_kind[b.id], b.id)
    for sec in sections:
        for sub in sec.subsections:
            add(sec_kind[sec.id], sec.id, "contains", "subsection", sub.id)
    for par in paragraphs:
        if par.section_id is None:
            continue
        if par.section_id not in sec_kind:
            raise ValueError(
                f"document {doc.id}: paragraph {par.id} names unknown section {par.section_id}"
            )
        add(sec_kind[par.section_id], par.section_id, "contains", "paragraph", par.id)
    for a, b in pairwise(paragraphs):
        add("paragraph", a.id, "next", "paragraph", b.id)

    # citations and cross-references
    for cit in doc.citations:
        if cit.paragraph_id in index["paragraph"]:
            add("paragraph", cit.paragraph_id, "cites", "citation", cit.ref_id)
    caption_par = {c.id: c.paragraph_id for c in doc.captions}
    for xref in doc.crossrefs:
        if xref.paragraph_id not in index["paragraph"]:
            continue
        if xref.ref_type == "sec" and xref.target_id in sec_kind:
            add(
                "paragraph",
                xref.paragraph_id,
                "refers_to",
                sec_kind[xref.target_id],
                xref.target_id,
            )
        elif (
            xref.ref_type in ("fig", "table")
            and caption_par.get(xref.target_id) in index["paragraph"]
        ):
            add(
                "paragraph",
                xref.paragraph_id,
                "refers_to",
                "paragraph",
                caption_par[xref.target_id],
            )

    from torch_geometric.data import HeteroData

    data = HeteroData()
    for ntype in ("section", "subsection"):
        secs = [s for s in sections if sec_kind[s.id] == ntype]
        _set_nodes(data, ntype, [s.id for s in secs], [(s.start, s.end) for s in secs])
        data[ntype].title = [s.title for s in secs]
        data[ntype].imrad_type = [s.imrad_type for s in secs]
        data[ntype].level = [s.level for s in secs]
    _set_nodes(
        data, "paragraph", [p.id for p in paragraphs], [(p.start, p.end) for p in paragraphs]
    )
    data["paragraph"].kind = [p.kind for p in paragraphs]
    first = {}
    for cit in doc.citations:
        first.setdefault(cit.ref_id, (cit.start, cit.end))
    _set_nodes(data, "citation", ref_ids, [first[r] for r in ref_ids])

    for etype in EDGE_TYPES:
        pairs = list(dict.fromkeys(edges.get(etype, [])))  # dedupe, keep order
        ei = torch.tensor(pairs, dtype=torch.long).t() if pairs else torch.empty(2, 0)
        data[etype].edge_index = ei.long().reshape(2, -1)
    return data


def _set_nodes(data: HeteroData, ntype: str, ids: list[str], spans: list[tuple[int, int]]):
    data[ntype].num_nodes = len(ids)
    data[ntype].node_ids = ids
    data[ntype].char_span = torch.tensor(spans, dtype=torch.long).reshape(-1, 2)


def _as_graph(graph_or_doc: HeteroData | Document) -> HeteroData:
    return (
        build_structure_graph(graph_or_doc) if isinstance(graph_or_doc, Document) else graph_or_doc
    )


def to_networkx(graph_or_doc: HeteroData | Document) -> nx.MultiDiGraph:
    """G_s as a MultiDiGraph for inspection. Nodes are ``(type, id)`` with attributes ``type``,
    ``id``, ``span`` (and ``title``, ``imrad_type``, ``level`` for sections); edges carry
    ``relation`` (``contains`` | ``next`` | ``cites`` | ``refers_to``) and ``kind``.

    >>> from gralc.documents.plaintext import document_from_text
    >>> sorted(to_networkx(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1")).nodes)
    [('paragraph', 'p0001'), ('section', 's1')]
    """
    g = _as_graph(graph_or_doc)
    out = nx.MultiDiGraph()
    for ntype in NODE_TYPES:
        store = g[ntype]
        for i, node_id in enumerate(store.node_ids):
            attrs = {"type": ntype, "id": node_id, "span": tuple(store.char_span[i].tolist())}
            if ntype in ("section", "subsection"):
                attrs.update(
                    title=store.title[i], imrad_type=store.imrad_type[i], level=store.level[i]
                )
            out.add_node((ntype, node_id), **attrs)
    for (src_t, rel, dst_t), kind in EDGE_KINDS.items():
        src_ids, dst_ids = g[src_t].node_ids, g[dst_t].node_ids
        for s, d in g[src_t, rel, dst_t].edge_index.t().tolist():
            out.add_edge((src_t, src_ids[s]), (dst_t, dst_ids[d]), relation=rel, kind=kind)
    return out


def graph_stats(doc_or_graph: HeteroData | Document) -> dict[str, int]:
    """Counts: ``nodes/<type>``, ``edges/<src>-<rel>-<dst>`` and ``edges/<kind>`` totals
    (hierarchical, sequential, citation, xref).

    >>> from gralc.documents.plaintext import document_from_text
    >>> graph_stats(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1"))["nodes/section"]
    1
    """
    g = _as_graph(doc_or_graph)
    stats = {f"nodes/{t}": int(g[t].num_nodes) for t in NODE_TYPES}
    totals = dict.fromkeys(("hierarchical", "sequential", "citation", "xref"), 0)
    for etype, kind in EDGE_KINDS.items():
        n = int(g[etype].edge_index.shape[1])
        stats["edges/" + "-".join(etype)] = n
        totals[kind] += n
    stats.update({f"edges/{k}": v for k, v in totals.items()})
    return stats
