"""Hierarchical communities of the corpus graph (GraphRAG / SemRAG): Leiden, level by level.

Level 0 partitions the whole weighted graph (Leiden, modularity with ``resolution``; every
isolated concept is its own community). Level ``l + 1`` re-partitions, inside its own
induced subgraph, every level-``l`` community larger than ``max_size``; smaller ones (and
ones Leiden does not split) carry over unchanged, so **every level is a full partition** of
the concepts and each community names its ``parent``. Deterministic for a ``seed``.

``backend``: ``leiden`` (``leidenalg`` + ``igraph``, the kept implementation of Traag et al.
2019), ``louvain`` (networkx's, the fallback when those are not installed) or ``auto``.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gralc.knowledge.corpus_graph import CorpusGraph, read_format
from gralc.runinfo import write_json_atomic

logger = logging.getLogger(__name__)
BACKENDS = ("auto", "leiden", "louvain")
FORMAT = "gralc-communities"


@dataclass
class CommunityConfig:
    """``levels``: how many levels (>= 1); ``resolution``: modularity resolution (higher:
    smaller communities); ``max_size``: communities larger than this are split at the next
    level; ``seed``; ``backend``: auto | leiden | louvain.

    >>> CommunityConfig(levels=1).max_size
    30
    """

    levels: int = 2
    resolution: float = 1.0
    max_size: int = 30
    seed: int = 0
    backend: str = "auto"

    def __post_init__(self) -> None:
        if self.levels < 1:
            raise ValueError(f"graph.communities.levels={self.levels}: must be >= 1")
        if self.resolution <= 0:
            raise ValueError(f"graph.communities.resolution={self.resolution}: must be > 0")
        if self.max_size < 2:
            raise ValueError(f"graph.communities.max_size={self.max_size}: must be >= 2")
        if self.backend not in BACKENDS:
            raise ValueError(f"graph.communities.backend={self.backend!r}: use one of {', '.join(BACKENDS)}")


@dataclass
class Community:
    """``id`` (``L<level>-<n>``, numbered by size then first node), its concept ids (sorted)
    and the id of the community it splits (None at level 0).

    >>> Community(id="L1-0", level=1, nodes=["D003924", "D008687"], parent="L0-0").parent
    'L0-0'
    """

    id: str
    level: int
    nodes: list[str]
    parent: str | None = None
    children: list[str] = field(default_factory=list)


def resolve_backend(backend: str) -> str:
    """The backend to run: ``leiden`` for ``auto`` / ``leiden`` when ``leidenalg`` and
    ``igraph`` import, else ``louvain`` (``auto`` logs a warning, ``leiden`` raises
    ImportError).

    >>> resolve_backend("louvain")
    'louvain'
    """
    if backend in ("auto", "leiden"):
        try:
            import igraph  # noqa: F401
            import leidenalg  # noqa: F401

            return "leiden"
        except ImportError:
            if backend == "leiden":
                raise ImportError("graph.communities.backend=leiden needs `pip install leidenalg igraph`"
                                  " (or use backend=louvain)") from None
            logger.warning("leidenalg / igraph not installed: communities by networkx's Louvain")
    return "louvain"


def _partition(nodes: list[str], edges: list[tuple[str, str, float]], cfg: CommunityConfig,
               backend: str) -> list[list[str]]:
    """Communities (lists of node ids) of the graph ``(nodes, edges)``, deterministic."""
    if len(nodes) <= 1 or not edges:
        return [[n] for n in nodes]
    if backend == "leiden":
        import igraph as ig
        import leidenalg

        index = {n: i for i, n in enumerate(nodes)}
        g = ig.Graph(n=len(nodes), edges=[(index[a], index[b]) for a, b, _ in edges])
        g.es["weight"] = [w for _, _, w in edges]
        part = leidenalg.find_partition(
            g, leidenalg.RBConfigurationVertexPartition, weights="weight",
            resolution_parameter=cfg.resolution, seed=cfg.seed, n_iterations=-1,
        )
        groups = [[nodes[i] for i in members] for members in part]
    else:
        import networkx as nx

        g = nx.Graph()
        g.add_nodes_from(nodes)
        g.add_weighted_edges_from(edges)
        groups = [list(c) for c in nx.community.louvain_communities(
            g, weight="weight", resolution=cfg.resolution, seed=cfg.seed)]
    return [sorted(c) for c in groups if c]


def detect_communities(graph: CorpusGraph, config: CommunityConfig | None = None) -> list[Community]:
    """Every level's partition, level 0 first (see the module docstring).

    Example: ``[c.id for c in detect_communities(graph, CommunityConfig(levels=1))]`` ->
    ``['L0-0', 'L0-1', ...]`` (level 0, largest first).
    """
    cfg = config or CommunityConfig()
    backend = resolve_backend(cfg.backend)
    nodes = sorted(graph.nodes)
    edges = graph.weighted_edges()
    out: list[Community] = []
    current = _number(_partition(nodes, edges, cfg, backend), 0, None)
    out.extend(current)
    for level in range(1, cfg.levels):
        nxt: list[Community] = []
        for parent in current:
            if len(parent.nodes) > cfg.max_size:
                members = set(parent.nodes)
                sub = [e for e in edges if e[0] in members and e[1] in members]
                groups = _partition(parent.nodes, sub, cfg, backend)
            else:
                groups = [parent.nodes]
            nxt.extend(_number(groups, level, parent.id, start=len(nxt)))
        by_id = {p.id: p for p in current}
        for c in nxt:
            by_id[c.parent].children.append(c.id)
        out.extend(nxt)
        current = nxt
    return out


def _number(groups: list[list[str]], level: int, parent: str | None, start: int = 0) -> list[Community]:
    groups = sorted(groups, key=lambda g: (-len(g), g[0]))
    return [Community(f"L{level}-{start + i}", level, g, parent) for i, g in enumerate(groups)]


def level_of(communities: list[Community], level: int) -> list[Community]:
    """The partition at ``level`` (the deepest one when ``level`` is beyond it).

    >>> level_of([Community("L0-0", 0, ["D1", "D2"]), Community("L1-0", 1, ["D1"], "L0-0")], 5)[0].id
    'L1-0'
    """
    deepest = max(c.level for c in communities)
    return [c for c in communities if c.level == min(level, deepest)]


def save_communities(communities: list[Community], path: str | Path,
                     config: CommunityConfig | None = None) -> Path:
    """``communities`` as JSON (with the ``config`` that found them, when given).

    >>> import tempfile
    >>> save_communities([Community("L0-0", 0, ["D1", "D2"])], tempfile.mkdtemp() + "/c.json").name
    'c.json'
    """
    write_json_atomic(path, {"format": FORMAT, "config": asdict(config) if config else None,
                             "communities": [asdict(c) for c in communities]})
    return Path(path)


def load_communities(path: str | Path) -> list[Community]:
    """The communities :func:`save_communities` wrote to ``path``; FileNotFoundError /
    ValueError otherwise.

    >>> import tempfile
    >>> path = save_communities([Community("L0-0", 0, ["D1", "D2"])], tempfile.mkdtemp() + "/c.json")
    >>> load_communities(path)[0].nodes
    ['D1', 'D2']
    """
    d = read_format(path, FORMAT, "communities")
    try:
        return [Community(str(c["id"]), int(c["level"]), list(c["nodes"]), c["parent"],
                          list(c["children"])) for c in d["communities"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed communities ({exc}); rebuild the graph") from exc


__all__ = ["Community", "CommunityConfig", "detect_communities", "level_of", "load_communities",
           "save_communities"]
