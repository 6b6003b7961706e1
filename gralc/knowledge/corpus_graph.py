"""The corpus knowledge graph of SemRAG / GraphRAG over linked concepts (not per document).

Nodes are the concepts linked anywhere in the indexed corpus; an undirected edge joins two
concepts that

* co-occur in a sentence (``sentence_weight`` per sentence) or in a chunk
  (``chunk_weight`` per chunk; chunks with more than ``max_chunk_concepts`` distinct concepts
  add sentence edges only, so a long multi-level chunk does not make a clique of hundreds), or
* are related in the knowledge base (MeSH tree ``is_a`` / ``part_of``, pharmacological action,
  HSDN symptoms, UMLS MRREL: :class:`~gralc.knowledge.concept_graph.KnowledgeBase`),
  weighted ``relation_weight`` once, however many sources name the pair.

Every node and co-occurrence edge keeps the chunk ids it came from, so graph search can go
from concepts back to text. Built incrementally (:meth:`CorpusGraph.add` per indexed batch),
merged across shards (:meth:`CorpusGraph.merge`), saved as one JSON file (no pickles).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Protocol

from gralc.documents.model import Document
from gralc.knowledge.concept_graph import KnowledgeBase
from gralc.knowledge.mention import EntityMention
from gralc.runinfo import write_json_atomic
from gralc.safe_load import read_json_untrusted, require_file

FORMAT = "gralc-corpus-graph"
VERSION = 1


@dataclass
class CorpusGraphConfig:
    """Edge weights of the corpus graph (see the module docstring).

    >>> CorpusGraphConfig().chunk_weight
    0.5
    """

    #: edge weight per sentence two concepts share
    sentence_weight: float = 1.0
    #: edge weight per chunk two concepts share
    chunk_weight: float = 0.5
    #: edge weight of a pair the knowledge base relates (once, whatever the sources)
    relation_weight: float = 1.0
    #: chunks with more distinct concepts add no chunk edges
    max_chunk_concepts: int = 64

    def __post_init__(self) -> None:
        for key in ("sentence_weight", "chunk_weight", "relation_weight"):
            if getattr(self, key) < 0:
                raise ValueError(f"graph.corpus.{key}={getattr(self, key)}: must be >= 0")
        if self.max_chunk_concepts < 2:
            raise ValueError(f"graph.corpus.max_chunk_concepts={self.max_chunk_concepts}: must be >= 2")


class ChunkSpan(Protocol):
    """What the graph needs of a chunk (a :class:`gralc.chunking.chunk.Chunk` is one).

    Example: ``CorpusGraph().add([(doc, mentions)], [Chunk("d1", "c0", doc.text, 0, len(doc.text))])``
    (any object with these four attributes serves).
    """

    doc_id: str
    chunk_id: str
    char_start: int
    char_end: int


@dataclass
class Node:
    """A concept: preferred ``name``, ``mentions`` counted, the ``chunks`` mentioning it.

    >>> Node("Metformin", mentions=2, chunks={"c0"}).mentions
    2
    """

    name: str
    mentions: int = 0
    chunks: set[str] = field(default_factory=set)


@dataclass
class Edge:
    """``cooccurrence``: summed co-occurrence weight; ``relations``: knowledge-base relation
    names; ``chunks``: the chunks where the two concepts co-occur.

    >>> Edge(cooccurrence=1.5, chunks={"c0"}).relations
    set()
    """

    cooccurrence: float = 0.0
    relations: set[str] = field(default_factory=set)
    chunks: set[str] = field(default_factory=set)


class CorpusGraph:
    """Concept nodes by id and undirected edges keyed by the sorted id pair.

    >>> from gralc.documents.plaintext import document_from_text
    >>> from gralc.chunking.chunk import Chunk
    >>> doc = document_from_text("# T\\n\\nMetformin lowers HbA1c.", "d1")
    >>> ms = [EntityMention(3, 12, "D008687", "Metformin", "Metformin"), EntityMention(20, 25, "D006442", "HbA1c", "HbA1c")]
    >>> g = CorpusGraph().add([(doc, ms)], [Chunk("d1", "c0", doc.text, 0, len(doc.text))])
    >>> g.neighbours("D008687"), g.stats()["graph_edges"]
    ({'D006442': 1.5}, 1.0)
    """

    def __init__(self, config: CorpusGraphConfig | None = None) -> None:
        self.config = config or CorpusGraphConfig()
        self.nodes: dict[str, Node] = {}
        self.edges: dict[tuple[str, str], Edge] = {}
        self.chunk_docs: dict[str, str] = {}  # chunk id -> document id
        self._adjacency: dict[str, dict[str, float]] | None = None  # reset by every change

    # ----- building ------------------------------------------------------------------------
    def add(
        self,
        documents: Iterable[tuple[Document, Sequence[EntityMention]]],
        chunks: Iterable[ChunkSpan],
        knowledge_base: KnowledgeBase | None = None,
    ) -> CorpusGraph:
        """Add one batch: each ``(document, its mentions sorted by start)`` with its chunks,
        then (given a ``knowledge_base``) the relations among all nodes so far. Returns self."""
        self._adjacency = None
        by_doc: dict[str, list[ChunkSpan]] = {}
        for c in chunks:
            by_doc.setdefault(c.doc_id, []).append(c)
        cfg = self.config
        for doc, mentions in documents:
            doc_chunks = by_doc.get(doc.id, [])
            for m in mentions:
                node = self.nodes.setdefault(m.concept_id, Node(m.name))
                node.mentions += 1
            for c in doc_chunks:
                self.chunk_docs[c.chunk_id] = c.doc_id
                ids = sorted({m.concept_id for m in mentions
                              if m.start >= c.char_start and m.end <= c.char_end})
                for cid in ids:
                    self.nodes[cid].chunks.add(c.chunk_id)
                if cfg.chunk_weight > 0 and 2 <= len(ids) <= cfg.max_chunk_concepts:
                    for a, b in combinations(ids, 2):
                        edge = self.edges.setdefault((a, b), Edge())
                        edge.cooccurrence += cfg.chunk_weight
                        edge.chunks.add(c.chunk_id)
            if cfg.sentence_weight > 0:
                self._sentence_edges(doc, mentions, doc_chunks)
        if knowledge_base is not None:
            self.add_relations(knowledge_base)
        return self

    def _sentence_edges(self, doc: Document, mentions: Sequence[EntityMention],
                        doc_chunks: list[ChunkSpan]) -> None:
        for s, ids in sentence_concepts(doc, mentions):
            if len(ids) < 2:
                continue
            holders = [c.chunk_id for c in doc_chunks if c.char_start <= s.start and s.end <= c.char_end]
            for a, b in combinations(sorted(ids), 2):
                edge = self.edges.setdefault((a, b), Edge())
                edge.cooccurrence += self.config.sentence_weight
                edge.chunks.update(holders)

    def add_relations(self, knowledge_base: KnowledgeBase) -> None:
        """Typed edges between nodes related in ``knowledge_base`` (idempotent)."""
        self._adjacency = None
        for name, table in knowledge_base.relations.items():
            for a in self.nodes:
                for b in table.get(a, ()):
                    if b in self.nodes and b != a:
                        self.edges.setdefault(_key(a, b), Edge()).relations.add(name)

    def merge(self, other: CorpusGraph) -> CorpusGraph:
        """Add ``other`` (a shard's graph) into this one; returns ``self``."""
        self._adjacency = None
        for cid, node in other.nodes.items():
            mine = self.nodes.setdefault(cid, Node(node.name))
            mine.mentions += node.mentions
            mine.chunks |= node.chunks
        for key, edge in other.edges.items():
            mine = self.edges.setdefault(key, Edge())
            mine.cooccurrence += edge.cooccurrence
            mine.relations |= edge.relations
            mine.chunks |= edge.chunks
        self.chunk_docs.update(other.chunk_docs)
        return self

    # ----- reading -------------------------------------------------------------------------
    def weight(self, edge: Edge) -> float:
        """An edge's weight: its co-occurrence weight, plus ``relation_weight`` when the knowledge
        base relates the pair."""
        return edge.cooccurrence + (self.config.relation_weight if edge.relations else 0.0)

    def weighted_edges(self) -> list[tuple[str, str, float]]:
        """``(a, b, weight)`` for edges of positive weight, in sorted key order."""
        out = [(a, b, self.weight(e)) for (a, b), e in sorted(self.edges.items())]
        return [t for t in out if t[2] > 0]

    def neighbours(self, concept_id: str) -> dict[str, float]:
        """Neighbour id -> edge weight."""
        if self._adjacency is None:
            adj: dict[str, dict[str, float]] = {}
            for a, b, w in self.weighted_edges():
                adj.setdefault(a, {})[b] = w
                adj.setdefault(b, {})[a] = w
            self._adjacency = adj
        return self._adjacency.get(concept_id, {})

    def stats(self) -> dict[str, float]:
        """Node, edge, relation-edge and chunk counts (``graph_*`` keys, as floats)."""
        typed = sum(1 for e in self.edges.values() if e.relations)
        return {
            "graph_nodes": float(len(self.nodes)),
            "graph_edges": float(len(self.edges)),
            "graph_relation_edges": float(typed),
            "graph_chunks": float(len(self.chunk_docs)),
        }

    def to_networkx(self):
        """An undirected ``networkx.Graph`` with ``name`` on nodes and ``weight`` on edges."""
        import networkx as nx

        g = nx.Graph()
        for cid in sorted(self.nodes):
            g.add_node(cid, name=self.nodes[cid].name)
        g.add_weighted_edges_from(self.weighted_edges())
        return g

    # ----- persistence ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The JSON-ready graph: format, version, config, then nodes, edges and chunk -> document,
        each sorted by id."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "config": asdict(self.config),
            "nodes": [
                {"id": cid, "name": n.name, "mentions": n.mentions, "chunks": sorted(n.chunks)}
                for cid, n in sorted(self.nodes.items())
            ],
            "edges": [
                {"a": a, "b": b, "cooccurrence": e.cooccurrence, "relations": sorted(e.relations),
                 "chunks": sorted(e.chunks)}
                for (a, b), e in sorted(self.edges.items())
            ],
            "chunk_docs": dict(sorted(self.chunk_docs.items())),
        }

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` to ``path`` as JSON (atomically); returns the path."""
        write_json_atomic(path, self.to_dict())
        return Path(path)

    @classmethod
    def from_dict(cls, d: dict, where: str = "corpus graph") -> CorpusGraph:
        """The graph a :meth:`to_dict` dict describes; ValueError naming ``where`` for another
        format or version, or a malformed one."""
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise ValueError(f"{where}: not a GraLC corpus graph (format != {FORMAT!r})")
        if d.get("version") != VERSION:
            raise ValueError(f"{where}: version {d.get('version')!r}, this GraLC reads {VERSION}; rebuild it")
        try:
            graph = cls(CorpusGraphConfig(**d["config"]))
            for n in d["nodes"]:
                graph.nodes[str(n["id"])] = Node(str(n["name"]), int(n["mentions"]), set(map(str, n["chunks"])))
            for e in d["edges"]:
                a, b = str(e["a"]), str(e["b"])
                if a not in graph.nodes or b not in graph.nodes:
                    raise ValueError(f"edge ({a}, {b}) names an unknown node")
                graph.edges[_key(a, b)] = Edge(float(e["cooccurrence"]), set(e["relations"]), set(e["chunks"]))
            graph.chunk_docs = {str(k): str(v) for k, v in d["chunk_docs"].items()}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: malformed ({exc}); rebuild it") from exc
        return graph

    @classmethod
    def load(cls, path: str | Path) -> CorpusGraph:
        """The graph :meth:`save` wrote to ``path``; FileNotFoundError / ValueError naming the
        file otherwise."""
        return cls.from_dict(read_format(path, FORMAT, "corpus graph"), str(path))


def sentence_concepts(doc: Document, mentions: Sequence[EntityMention]):
    """``(sentence, concept ids mentioned wholly inside it)`` for each sentence of ``doc`` that
    mentions any, in text order; ``mentions`` sorted by start.

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\nMetformin lowers HbA1c. It helps.", "d1")
    >>> [(s.start, sorted(ids)) for s, ids in sentence_concepts(doc, [EntityMention(3, 12, "D008687", "Metformin", "Metformin")])]
    [(3, ['D008687'])]
    """
    i = 0
    for s in sorted(doc.sentences, key=lambda s: s.start):
        while i < len(mentions) and mentions[i].start < s.start:
            i += 1
        j, ids = i, set()
        while j < len(mentions) and mentions[j].start < s.end:
            if mentions[j].end <= s.end:
                ids.add(mentions[j].concept_id)
            j += 1
        if ids:
            yield s, frozenset(ids)


def read_format(path: str | Path, fmt: str, what: str) -> dict:
    """The JSON object of ``path`` whose ``format`` is ``fmt`` (a GraLC graph artefact);
    FileNotFoundError / ValueError naming the file and the fix otherwise.

    Example: ``read_format("index/graph/graph.json", "gralc-corpus-graph", "corpus graph")``
    -> the graph's JSON object (a file of another ``format``: ValueError naming it).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {path}")
    require_file(path, what)
    try:
        d = read_json_untrusted(path, allow_interpolation=True)
    except ValueError as exc:  # names the file and the line
        raise ValueError(f"{exc}; rebuild the graph") from None
    if not isinstance(d, dict) or d.get("format") != fmt:
        raise ValueError(f"{path}: not GraLC {what} (format != {fmt!r}); rebuild the graph")
    return d


def _key(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def build_corpus_graph(
    documents: Sequence[tuple[Document, Sequence[EntityMention]]],
    chunks: Sequence[ChunkSpan],
    knowledge_base: KnowledgeBase | None = None,
    config: CorpusGraphConfig | None = None,
    batch_size: int = 64,
) -> CorpusGraph:
    """The graph of ``chunks`` over ``(document, mentions)`` pairs, added ``batch_size``
    documents at a time (as an index grows), relations added once at the end.

    Example: ``build_corpus_graph([(p.doc, p.mentions) for p in prepared], chunks, pipeline.knowledge_base).stats()``
    -> ``{'graph_nodes': ..., 'graph_edges': ..., 'graph_relation_edges': ..., 'graph_chunks': ...}``.
    """
    graph = CorpusGraph(config)
    by_doc: dict[str, list[ChunkSpan]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    for i in range(0, len(documents), batch_size):
        batch = documents[i : i + batch_size]
        graph.add(batch, [c for doc, _ in batch for c in by_doc.get(doc.id, [])])
    if knowledge_base is not None:
        graph.add_relations(knowledge_base)
    return graph


__all__ = ["ChunkSpan", "CorpusGraph", "CorpusGraphConfig", "Edge", "Node", "build_corpus_graph"]
