"""``gralc graph CORPUS_OR_INDEX [key=value ...] [--top N] [--png FILE] [--out DIR]``.

Shows SemRAG's corpus knowledge graph: its size, the communities per level and the top
community reports (by centrality), and with ``--png`` draws the largest communities.

* an index directory built with ``gralc index CORPUS --out DIR --graph``: its saved
  graph is read, nothing is encoded;
* a corpus (JATS / text file or directory, PubMedQA or SQuAD-format JSON): parsed, linked,
  chunked by ``--strategy`` (default ``semantic``, SemRAG's) and graphed; ``--out`` saves the
  graph folder. ``key=value``: pipeline settings (``knowledge.vocabulary=PATH``) and graph
  settings (``graph.communities.levels=3``, ``graph.reports.words=100``; see
  :class:`gralc.retrieval.graph.search.GraphConfig`).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from gralc.cli import CommandParser, Settings, command_main, route_settings

if TYPE_CHECKING:
    from gralc.retrieval.graph.search import GraphConfig, GraphIndex


def describe(index: GraphIndex, top: int = 5) -> str:
    """The graph's size, communities per level and the ``top`` reports, as text."""
    s = index.graph.stats()
    lines = [f"graph: {int(s['graph_nodes'])} concepts, {int(s['graph_edges'])} edges "
             f"({int(s['graph_relation_edges'])} from the knowledge base), {int(s['graph_chunks'])} chunks"]
    for level in sorted({c.level for c in index.communities}):
        at = [c for c in index.communities if c.level == level]
        sizes = sorted((len(c.nodes) for c in at), reverse=True)
        multi = sum(n > 1 for n in sizes)
        lines.append(f"level {level}: {len(at)} communities ({multi} with 2+ concepts), "
                     f"largest {sizes[:5]}")
    reports = sorted(index.reports, key=lambda r: (r.level, -r.centrality, r.community_id))
    lines.append(f"top {min(top, len(reports))} of {len(reports)} reports (level, centrality):")
    for r in reports[:top]:
        text = r.text if len(r.text) <= 300 else r.text[:297] + "..."
        lines.append(f"  [{r.community_id} c={r.centrality:.2f} {len(r.chunk_ids)} chunks] {text}")
    return "\n".join(lines)


def draw(index: GraphIndex, path: str | Path, communities: int = 4, per_community: int = 15) -> Path:
    """A PNG of the ``communities`` largest level-0 communities (their ``per_community`` most
    connected concepts each, coloured by community, labelled by name)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    g = index.graph.to_networkx()
    top = sorted((c for c in index.communities if c.level == 0), key=lambda c: (-len(c.nodes), c.id))
    keep, colour = [], {}
    for i, c in enumerate(top[:communities]):
        nodes = sorted(c.nodes, key=lambda n: (-g.degree(n, weight="weight"), n))[:per_community]
        keep += nodes
        colour.update(dict.fromkeys(nodes, i))
    sub = g.subgraph(keep)
    pos = nx.spring_layout(sub, seed=0, weight="weight")
    fig, ax = plt.subplots(figsize=(12, 9))
    nx.draw_networkx_edges(sub, pos, ax=ax, alpha=0.2)
    nx.draw_networkx_nodes(sub, pos, ax=ax, node_size=120, cmap="tab10", vmin=0, vmax=9,
                           node_color=[colour[n] for n in sub.nodes])
    nx.draw_networkx_labels(sub, pos, ax=ax, font_size=7,
                            labels={n: index.graph.nodes[n].name[:24] for n in sub.nodes})
    ax.set_title(f"{min(communities, len(top))} largest communities (level 0) of "
                 f"{len(index.graph.nodes)} concepts")
    ax.axis("off")
    path = Path(path)
    from gralc.atomic import atomic_write

    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path, "wb") as f:  # the format from the name, as savefig(path) takes it
        fig.savefig(f, format=path.suffix[1:] or None, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def from_corpus(corpus: str, strategy: str, overrides: list[str], graph_cfg: GraphConfig) -> GraphIndex:
    """The corpus graph of ``corpus``: its documents parsed, linked, chunked by ``strategy`` and
    graphed with ``graph_cfg``; ``overrides`` are pipeline ``key=value`` settings."""
    from gralc.config import load_config
    from gralc.data.demo import check_vocabulary
    from gralc.evaluation.methods import RunSettings, method_graph
    from gralc.pipeline import Pipeline, PipelineConfig, load_documents

    cfg = load_config(PipelineConfig, None, overrides)  # validated before any parsing
    check_vocabulary(cfg.knowledge.vocabulary, corpus)
    docs = load_documents(corpus)
    if not docs:
        raise ValueError(f"{corpus}: no documents could be read")
    pipeline = Pipeline(cfg)
    prepared = pipeline.prepare(docs, progress=False)
    t0 = time.perf_counter()
    chunks = [c for p in prepared for c in pipeline.chunker(strategy).chunk(p)]
    logging.getLogger(__name__).info("%d %s chunks in %.1f s", len(chunks), strategy, time.perf_counter() - t0)
    return method_graph(prepared, chunks, pipeline, RunSettings(graph=graph_cfg))


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc graph`` takes (for ``--help``)."""
    from gralc.pipeline import PipelineConfig
    from gralc.retrieval.graph.search import GraphConfig

    return [Settings("pipeline (a corpus only)", PipelineConfig, optional_prefix="pipeline."),
            Settings("corpus graph (a corpus only)", GraphConfig, "graph.")]


def parser() -> CommandParser:
    """The command line of ``gralc graph``."""
    p = CommandParser("gralc graph", description="Show (and draw) SemRAG's corpus knowledge graph "
                      "of an index built with --graph, or build one from a corpus.", settings=settings)
    p.add_argument("source", help="an index built with --graph, or a corpus to graph")
    p.add_argument("--strategy", default="semantic", help="chunking strategy for a corpus")
    p.add_argument("--top", type=int, default=5, help="reports to print")
    p.add_argument("--png", help="draw the largest communities into this PNG file")
    p.add_argument("--out", help="save the graph folder of a corpus here")
    p.add_force()
    return p



def _main(argv: list[str]) -> int:
    args = parser().start(argv)
    from gralc.artefacts import check_output_dir, output_lock, write_artefact
    from gralc.config import load_config
    from gralc.retrieval.graph.search import GraphConfig, GraphIndex

    source = Path(args.source)
    png = picture_path(args.png) if args.png else None  # checked before any work
    keys = route_settings(args.settings, ("graph",))
    graph_cfg = load_config(GraphConfig, None, keys["graph"])
    if (source / "retriever.json").is_file():
        if (source / "graph").is_dir():
            index = GraphIndex.load(source / "graph")
        else:
            raise FileNotFoundError(f"{source} holds no corpus graph: rebuild it with "
                                    f"`gralc index CORPUS --out {source} --graph --force`")
    else:
        from gralc.chunking import registered

        if args.strategy not in registered():
            raise ValueError(f"unknown strategy {args.strategy!r}; available: {', '.join(sorted(registered()))}")
        rest = keys[""]
        if args.out:  # validated and locked before any encoding
            check_output_dir(args.out, "corpus_graph", args.force, [source])
            with output_lock(args.out):
                index = from_corpus(str(source), args.strategy, rest, graph_cfg)
                with write_artefact(args.out, "corpus_graph", args.force, [source]) as tmp:
                    index.save(tmp)  # written whole into a temporary folder, then swapped in
            print(f"graph saved to {args.out}")
        else:
            index = from_corpus(str(source), args.strategy, rest, graph_cfg)
    from gralc.terminal import for_terminal

    print(for_terminal(describe(index, args.top)))  # community reports quote corpus text
    if png is not None:
        print(f"drawn: {draw(index, png)}")
    return 0


#: the picture formats --png takes (matplotlib's, by the file's suffix)
PICTURE_SUFFIXES = (".png", ".svg", ".pdf", ".jpg", ".jpeg")


def picture_path(value: str) -> Path:
    """Where ``--png VALUE`` draws: the file itself, or ``VALUE/communities.png`` when it names
    a folder (existing, or written with a trailing slash); another suffix is a ValueError
    naming the formats, before any work.

    >>> picture_path("out/graph.svg").name
    'graph.svg'
    >>> picture_path("out/").name
    'communities.png'
    """
    path = Path(value)
    if path.is_dir() or value.endswith(("/", "\\")):
        return path / "communities.png"
    if path.suffix.lower() not in PICTURE_SUFFIXES:
        raise ValueError(f"--png {value}: a picture file ends in {', '.join(PICTURE_SUFFIXES)} "
                         f"(e.g. --png {path.with_suffix('.png')}), or name a folder to draw "
                         "communities.png into")
    return path


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
