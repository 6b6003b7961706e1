"""SemRAG's graph search over a corpus knowledge graph: *local* and *global* searchers.

:func:`build_graph_index` turns chunks of any strategy (with their documents' concept
mentions) into a :class:`GraphIndex`: the corpus graph
(:mod:`gralc.knowledge.corpus_graph`), its hierarchical communities
(:mod:`gralc.knowledge.communities`), one report per community
(:mod:`gralc.retrieval.graph.communities`), and unit vectors of concepts and reports.

:class:`GraphSearcher` ranks chunks for each question (the evaluation's ``Scorer``):
``graph_local`` (SemRAG eq. 4: the question's entities, their graph neighbours, the chunks
mentioning them, up to a word-piece ``budget``) or ``graph_global`` (eq. 5: the best community
reports' member chunks). The graph's chunks rank first; with ``fill`` the rest of the corpus
follows by cosine. Each hit carries ``components`` and ``path`` (the concepts or community
that brought it in). Details: docs/inference.md ("Under the hood: the serving stack").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gralc.atomic import atomic_path
from gralc.documents.model import Document
from gralc.encoding.budget import PieceCounter, budget_counter
from gralc.knowledge.communities import (
    Community,
    CommunityConfig,
    detect_communities,
    load_communities,
    save_communities,
)
from gralc.knowledge.concept_graph import KnowledgeBase
from gralc.knowledge.corpus_graph import (
    ChunkSpan,
    CorpusGraph,
    CorpusGraphConfig,
    build_corpus_graph,
)
from gralc.knowledge.mention import EntityMention
from gralc.knowledge.vocabulary import Concept, Vocabulary
from gralc.retrieval.graph.communities import (
    CommunityReport,
    ReportConfig,
    build_reports,
    load_reports,
    save_reports,
)
from gralc.retrieval.hits import Hit
from gralc.retrieval.ranking import rank_order

logger = logging.getLogger(__name__)
GRAPH_SEARCHERS = ("graph_local", "graph_global")
#: graph hits score this much above the cosine of the fill, so they always rank first
_TIER = 4.0


@dataclass
class GraphSearchConfig:
    """Local search: ``tau_e``, ``tau_d``, ``top_entities``, ``neighbours``, ``hop_decay``,
    ``entity_weight``, ``budget`` (L, word-pieces; 0: no cap). Global search:
    ``top_communities`` (K), ``level``, ``centrality_weight``. ``fill``: rank the rest of the
    corpus by cosine after the graph's chunks.

    >>> GraphSearchConfig(budget=0).top_communities
    3
    """

    tau_e: float = 0.5
    tau_d: float = 0.2
    top_entities: int = 10
    neighbours: int = 5
    hop_decay: float = 0.5
    entity_weight: float = 0.5
    budget: int = 1024
    top_communities: int = 3
    level: int = 1
    centrality_weight: float = 0.1
    fill: bool = True

    def __post_init__(self) -> None:
        for key in ("top_entities", "top_communities"):
            if getattr(self, key) < 1:
                raise ValueError(f"graph.search.{key}={getattr(self, key)}: must be >= 1")
        for key in ("neighbours", "budget", "level"):
            if getattr(self, key) < 0:
                raise ValueError(f"graph.search.{key}={getattr(self, key)}: must be >= 0")
        if not 0 <= self.hop_decay <= 1:
            raise ValueError(f"graph.search.hop_decay={self.hop_decay}: must lie in [0, 1]")


@dataclass
class GraphConfig:
    """Everything of SemRAG's graph: how it is built and how it is searched.
    ``concept_synonyms``: synonyms encoded with each concept's name for its vector (0: the
    name alone; each synonym adds one encoder call per concept to the build).

    >>> GraphConfig(concept_synonyms=2).search.budget
    1024
    """

    corpus: CorpusGraphConfig = field(default_factory=CorpusGraphConfig)
    communities: CommunityConfig = field(default_factory=CommunityConfig)
    reports: ReportConfig = field(default_factory=ReportConfig)
    search: GraphSearchConfig = field(default_factory=GraphSearchConfig)
    concept_synonyms: int = 0

    def __post_init__(self) -> None:
        if self.concept_synonyms < 0:
            raise ValueError(f"graph.concept_synonyms={self.concept_synonyms}: must be >= 0")


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


@dataclass
class GraphIndex:
    """A corpus graph with communities, reports, and unit vectors of its concepts
    (``node_vecs``, rows in ``node_ids`` order) and reports (``report_vecs``, (r, d)).

    Example: ``GraphIndex.load("index/graph").stats()`` -> the graph's ``graph_*`` counts plus its
    communities and reports (``GraphIndex.save(folder)`` wrote them).
    """

    graph: CorpusGraph
    communities: list[Community]
    reports: list[CommunityReport]
    node_ids: list[str]
    node_vecs: np.ndarray
    report_vecs: np.ndarray
    timings: dict[str, float] = field(default_factory=dict)

    def stats(self) -> dict[str, float]:
        """The corpus graph's :meth:`~gralc.knowledge.corpus_graph.CorpusGraph.stats`, plus the
        communities per level (all, and those of more than one concept) and the reports."""
        out = self.graph.stats()
        for level in sorted({c.level for c in self.communities}):
            at = [c for c in self.communities if c.level == level]
            out[f"graph_communities_l{level}"] = float(len(at))
            out[f"graph_communities_l{level}_multi"] = float(sum(len(c.nodes) > 1 for c in at))
        out["graph_reports"] = float(len(self.reports))
        return out

    def save(self, folder: str | Path) -> Path:
        """``graph.json``, ``communities.json``, ``reports.json`` and ``vectors.safetensors``
        (no pickles) in ``folder``."""
        from safetensors.numpy import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.graph.save(folder / "graph.json")
        save_communities(self.communities, folder / "communities.json")
        save_reports(self.reports, folder / "reports.json")
        with atomic_path(folder / "vectors.safetensors") as tmp:
            save_file({"nodes": np.ascontiguousarray(self.node_vecs, dtype=np.float32),
                       "reports": np.ascontiguousarray(self.report_vecs, dtype=np.float32)},
                      str(tmp), metadata={"node_ids": "\n".join(self.node_ids)})
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> GraphIndex:
        """The index :meth:`save` wrote to ``folder``, verified first
        (:func:`~gralc.artefacts.verify_artefact`); FileNotFoundError without ``graph.json``."""
        from safetensors import safe_open

        folder = Path(folder)
        if not (folder / "graph.json").is_file():
            raise FileNotFoundError(f"{folder}: no graph.json (build the index with --graph)")
        from gralc.artefacts import verify_artefact

        verify_artefact(folder)  # every file as written, before any answer
        graph = CorpusGraph.load(folder / "graph.json")
        communities = load_communities(folder / "communities.json")
        reports = load_reports(folder / "reports.json")
        with safe_open(str(folder / "vectors.safetensors"), framework="numpy") as f:
            meta = f.metadata() or {}
            node_ids = [i for i in meta.get("node_ids", "").split("\n") if i]
            node_vecs, report_vecs = f.get_tensor("nodes"), f.get_tensor("reports")
        if len(node_ids) != len(node_vecs) or len(report_vecs) != len(reports):
            raise ValueError(f"{folder}/vectors.safetensors does not match the graph; rebuild it")
        return cls(graph, communities, reports, node_ids, node_vecs, report_vecs)


def build_graph_index(
    documents: Sequence[tuple[Document, Sequence[EntityMention]]],
    chunks: Sequence[ChunkSpan],
    encode_texts: Callable[[list[str]], np.ndarray],
    config: GraphConfig | None = None,
    knowledge_base: KnowledgeBase | None = None,
    vocabulary: Vocabulary | None = None,
    summarize: Callable[[str], str] | None = None,
    concept_vectors: Callable[[list[Concept]], np.ndarray] | None = None,
) -> GraphIndex:
    """Graph, communities, reports and vectors for ``chunks`` of ``documents`` (see the module
    docstring). ``encode_texts``: texts -> (n, d) vectors (the reports);
    ``concept_vectors``: concepts -> (n, d) (default: ``encode_texts`` of their names;
    pass a cached :class:`~gralc.knowledge.concept_embeddings.ConceptEmbedder`'s ``embed``).

    Example: ``build_graph_index([(p.doc, p.mentions) for p in prepared], chunks, encode).stats()["graph_nodes"]``
    -> the number of concepts linked in the chunks (``encode``: texts -> (n, d) unit vectors).
    """
    cfg = config or GraphConfig()
    t0 = time.perf_counter()
    graph = build_corpus_graph(documents, chunks, knowledge_base, cfg.corpus)
    build_s = time.perf_counter() - t0
    return finish_graph_index(graph, documents, encode_texts, cfg, vocabulary, summarize,
                              concept_vectors, {"graph_build_s": build_s})


def finish_graph_index(
    graph: CorpusGraph,
    documents: Sequence[tuple[Document, Sequence[EntityMention]]],
    encode_texts: Callable[[list[str]], np.ndarray],
    config: GraphConfig | None = None,
    vocabulary: Vocabulary | None = None,
    summarize: Callable[[str], str] | None = None,
    concept_vectors: Callable[[list[Concept]], np.ndarray] | None = None,
    timings: dict[str, float] | None = None,
) -> GraphIndex:
    """Communities, reports and vectors of a built ``graph`` (e.g. one grown batch by batch
    while indexing) of ``documents``.

    Example: ``finish_graph_index(corpus_graph, linked, encode, GraphConfig()).communities`` -> the
    communities detected on a graph grown while indexing (:meth:`Retriever.build` with ``graph=True``).
    """
    cfg = config or GraphConfig()
    t = dict(timings or {})
    t0 = time.perf_counter()
    communities = detect_communities(graph, cfg.communities)
    t["graph_communities_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    reports = build_reports(graph, communities, documents, cfg.reports, summarize)
    t["graph_reports_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    node_ids = sorted(graph.nodes)
    concepts = [vocabulary[n] if vocabulary is not None and n in vocabulary
                else Concept(n, graph.nodes[n].name) for n in node_ids]
    embed = concept_vectors or (lambda cs: encode_texts([c.name for c in cs]))
    node_vecs = _unit(np.asarray(embed(concepts))) if concepts else np.zeros((0, 1), np.float32)
    report_vecs = (_unit(np.asarray(encode_texts([r.text for r in reports])))
                   if reports else np.zeros((0, node_vecs.shape[1]), np.float32))
    t["graph_embed_s"] = time.perf_counter() - t0
    t["graph_total_s"] = sum(t.values())
    return GraphIndex(graph, communities, reports, node_ids, node_vecs, report_vecs, t)


class GraphSearcher:
    """``kind`` (graph_local | graph_global) search over ``chunks``, whose unit vectors are
    ``vectors`` (n, d) (default: the chunks' ``embedding``). ``search`` / ``within`` rank the
    queries given by ``q_vecs`` (q, d) and the concept ids linked in each (``q_concepts``);
    :meth:`query` ranks one new question. ``pieces`` counts the budget's word-pieces
    (:func:`~gralc.encoding.budget.budget_counter`; None: the bundled MiniLM's).

    Example: ``GraphSearcher("graph_local", index.chunks, graph_index, vectors=index.vectors).query(q_vec, ["D008687"], 5)``
    -> up to 5 :class:`~gralc.retrieval.hits.Hit` with ``path`` the concepts that reached them.
    """

    def __init__(
        self,
        kind: str,
        chunks: Sequence,
        index: GraphIndex,
        q_vecs: np.ndarray | None = None,
        q_concepts: Sequence[Sequence[str]] = (),
        config: GraphSearchConfig | None = None,
        pieces: PieceCounter | None = None,
        vectors: np.ndarray | None = None,
    ) -> None:
        if kind not in GRAPH_SEARCHERS:
            raise ValueError(f"unknown graph searcher {kind!r}; use one of {', '.join(GRAPH_SEARCHERS)}")
        self.kind, self.chunks, self.index = kind, list(chunks), index
        self.cfg = config or GraphSearchConfig()
        self.vectors = _unit(np.stack([c.embedding for c in self.chunks]) if vectors is None else vectors)
        if len(self.vectors) != len(self.chunks):
            raise ValueError(f"{len(self.vectors)} vectors for {len(self.chunks)} chunks")
        q_vecs = np.zeros((0, self.vectors.shape[1]), np.float32) if q_vecs is None else q_vecs
        if len(q_concepts) != len(q_vecs):
            raise ValueError(f"{len(q_vecs)} query vectors but {len(q_concepts)} concept lists")
        self.q_vecs, self.q_concepts = _unit(q_vecs), [list(c) for c in q_concepts]
        self.row = {c.chunk_id: i for i, c in enumerate(self.chunks)}
        self.node_row = {n: i for i, n in enumerate(index.node_ids)}
        self.node_vecs = _unit(index.node_vecs)
        self.pieces = np.zeros(len(self.chunks), dtype=np.int64)  # each chunk's word-pieces
        if self.cfg.budget and kind == "graph_local":  # the one unit: MiniLM's, whatever the encoder
            count = pieces or budget_counter()
            count.prime(self.chunks)
            self.pieces[:] = [len(count(c)) for c in self.chunks]
        self.by_doc: dict[str, list[int]] = {}
        for i, c in enumerate(self.chunks):
            self.by_doc.setdefault(c.doc_id, []).append(i)
        deepest = max((r.level for r in index.reports), default=0)
        pos = {id(r): i for i, r in enumerate(index.reports)}
        self.reports = [r for r in index.reports if r.level == min(self.cfg.level, deepest)]
        self.report_vecs = (_unit(index.report_vecs[[pos[id(r)] for r in self.reports]])
                            if self.reports else np.zeros((0, self.vectors.shape[1]), np.float32))
        self._cache: dict[int, tuple[np.ndarray, dict[int, Hit]]] = {}

    # ----- one query -----------------------------------------------------------------------
    def _local(self, q: np.ndarray, concepts: Sequence[str], cos: np.ndarray) -> dict[int, Hit]:
        cfg, idx, graph = self.cfg, self.index, self.index.graph
        if not idx.node_ids:
            return {}
        sims = self.node_vecs @ q
        order = [i for i in np.argsort(-sims, kind="stable")[: cfg.top_entities] if sims[i] > cfg.tau_e]
        entity: dict[str, tuple[float, str]] = {}  # concept -> (weight, path)
        for i in order:
            entity[idx.node_ids[i]] = (float(sims[i]), idx.node_ids[i])
        for cid in concepts:  # concepts linked in the question are seeds whatever their cosine
            if cid in self.node_row:
                entity[cid] = (max(float(sims[self.node_row[cid]]), cfg.tau_e), cid)
        if cfg.neighbours and cfg.hop_decay > 0:
            for seed, (w, _) in list(entity.items()):
                nbrs = sorted(graph.neighbours(seed).items(), key=lambda kv: (-kv[1], kv[0]))
                for n, _ew in nbrs[: cfg.neighbours]:
                    wn = w * cfg.hop_decay
                    if wn > entity.get(n, (-1.0, ""))[0]:
                        entity[n] = (wn, f"{seed}>{n}")
        best: dict[int, tuple[float, str, float]] = {}  # chunk row -> (entity weight, path, score)
        for cid, (w, path) in entity.items():
            rows = [self.row[c] for c in graph.nodes[cid].chunks if c in self.row]
            if not rows:
                continue
            fit = self.vectors[rows] @ self.node_vecs[self.node_row[cid]]
            for r, f in zip(rows, fit):
                if f > cfg.tau_d and w > best.get(r, (-1.0, "", 0.0))[0]:
                    best[r] = (w, path, float(cos[r] + cfg.entity_weight * w))
        hits, used = {}, 0
        for r in sorted(best, key=lambda r: (-best[r][2], r)):
            if cfg.budget and used + self.pieces[r] > cfg.budget and hits:
                continue
            w, path, s = best[r]
            hits[r] = Hit(self.chunks[r], _TIER + s, {"cosine": float(cos[r]), "entity": w, "graph": 1.0},
                          path=tuple(path.split(">")))
            used += int(self.pieces[r])
        return hits

    def _global(self, q: np.ndarray, cos: np.ndarray) -> dict[int, Hit]:
        cfg = self.cfg
        if not self.reports:
            return {}
        score = self.report_vecs @ q + cfg.centrality_weight * np.array([r.centrality for r in self.reports])
        hits: dict[int, Hit] = {}
        for i in np.argsort(-score, kind="stable")[: cfg.top_communities]:
            report = self.reports[i]
            for c in report.chunk_ids:
                r = self.row.get(c)
                if r is None or r in hits:
                    continue
                hits[r] = Hit(self.chunks[r], _TIER + float(cos[r]),
                              {"cosine": float(cos[r]), "report": float(score[i]), "graph": 1.0},
                              path=(report.community_id,))
        return hits

    def score_query(self, q: np.ndarray, concepts: Sequence[str]) -> tuple[np.ndarray, dict[int, Hit]]:
        """Scores (n,) over every chunk (graph hits tiered above the cosine fill; -inf for
        the rest without ``fill``) and the graph hits by chunk row, for a unit query ``q``."""
        cos = self.vectors @ q
        hits = self._local(q, concepts, cos) if self.kind == "graph_local" else self._global(q, cos)
        scores = cos.astype(np.float64) if self.cfg.fill else np.full(len(cos), -np.inf)
        for r, h in hits.items():
            scores[r] = h.score
        return scores, hits

    def _ranked(self, scored: tuple[np.ndarray, dict[int, Hit]], rows: list[int],
                depth: int | None) -> list[Hit]:
        scores, hits = scored
        sub = scores[rows]
        keep = [j for j in rank_order([self.chunks[r] for r in rows], sub, depth) if np.isfinite(sub[j])]
        out = []
        for j in keep:
            r = rows[j]
            out.append(hits.get(r) or Hit(self.chunks[r], float(scores[r]),
                                           {"cosine": float(scores[r]), "graph": 0.0}, path=("dense",)))
        return out

    def query(self, q_vec: np.ndarray, concepts: Sequence[str], k: int) -> list[Hit]:
        """The top ``k`` chunks for one question (its vector and linked concept ids)."""
        q = _unit(np.asarray(q_vec, np.float32).reshape(1, -1))[0]
        return self._ranked(self.score_query(q, concepts), list(range(len(self.chunks))), k)

    # ----- the Scorer protocol -------------------------------------------------------------
    def _scored(self, qi: int) -> tuple[np.ndarray, dict[int, Hit]]:
        if qi not in self._cache:  # one query at a time: search, then within
            self._cache = {qi: self.score_query(self.q_vecs[qi], self.q_concepts[qi])}
        return self._cache[qi]

    def search(self, depth: int) -> list[list[Hit]]:
        """Per query its top ``depth`` hits over every chunk, best first."""
        rows = list(range(len(self.chunks)))
        return [self._ranked(self._scored(qi), rows, depth) for qi in range(len(self.q_vecs))]

    def within(self, qi: int, doc_id: str) -> list[Hit]:
        """Query ``qi``'s ranking of the chunks of ``doc_id`` only."""
        return self._ranked(self._scored(qi), self.by_doc.get(doc_id, []), None)


__all__ = [
    "GRAPH_SEARCHERS",
    "GraphConfig",
    "GraphIndex",
    "GraphSearchConfig",
    "GraphSearcher",
    "build_graph_index",
    "finish_graph_index",
]
