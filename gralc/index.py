"""``gralc index CORPUS --out INDEX [--model EXPORT | --strategy NAME] [key=value ...]``.

Indexes a JATS / plain-text / Markdown file, a folder of them, a BEIR folder, a PubMedQA JSON
or a SQuAD-format JSON of articles. ``--model``: a trained GraLC export (or a checkpoint or run
folder); without it, a baseline chunking ``--strategy``. ``key=value``: pipeline settings
(``knowledge.vocabulary=PATH``, ``encoder.model=...``; ``pipeline.`` prefix optional; a
trained model keeps its own, only runtime keys may change), ``search.*`` (a trained model's
two-stage search, stored with the index), ``fusion.*`` (``--searcher hybrid``), ``index.*``
(the FAISS index kind) and ``graph.*`` (``--graph``). ``--help`` lists them all with defaults.

``--searcher hybrid`` adds BM25 over the same chunks, fused with the dense ranking.
``--graph`` (implied by ``--searcher graph_local|graph_global``) grows SemRAG's corpus knowledge
graph with each indexed batch and saves it, with its communities and reports, in ``graph/``
(``gralc graph INDEX`` shows it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gralc.cli import CommandParser, Settings, command_main, route_settings

SECTIONS = ("search", "fusion", "index", "graph")
#: ``--searcher`` choices (gralc.inference.SEARCHERS; written out so --help imports nothing)
SEARCHER_CHOICES = ("dense", "hybrid", "graph_local", "graph_global")
RENAMED = {"--search": "search.KEY=value (e.g. search.exact=64)", "--index": "index.kind=flat|hnsw|ivf",
           "--fusion": "fusion.method=weighted|rrf", "--lexical-weight": "fusion.lexical_weight=W"}


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc index`` takes (for ``--help``)."""
    from gralc.pipeline import PipelineConfig
    from gralc.retrieval.graph.search import GraphConfig
    from gralc.retrieval.indexes.dense import IndexConfig
    from gralc.retrieval.indexes.fusion import FusionConfig
    from gralc.retrieval.trained.candidates import CandidateConfig

    return [Settings("pipeline (a trained model keeps its own: only runtime keys may change)",
                     PipelineConfig, optional_prefix="pipeline."),
            Settings("two-stage search of a trained model's index", CandidateConfig, "search."),
            Settings("hybrid fusion (--searcher hybrid)", FusionConfig, "fusion."),
            Settings("FAISS index of the chunk vectors", IndexConfig, "index."),
            Settings("corpus knowledge graph (--graph)", GraphConfig, "graph.")]


def parser() -> CommandParser:
    """The command line of ``gralc index``."""
    p = CommandParser("gralc index", description=__doc__.split("\n\n", 1)[1].split("\n\n")[0],
                      settings=settings, renamed=RENAMED)
    p.add_argument("corpus", help="a .nxml / .txt / .md file, a folder of them, a BEIR folder, "
                                  "ori_pqal.json, or a SQuAD-format JSON of articles")
    p.add_argument("--out", required=True, help="index folder to write")
    p.add_force()
    p.add_argument("--model", help="a trained GraLC export (or checkpoint, or run folder)")
    p.add_argument("--strategy", default="structure_aware",
                   help="baseline chunking without --model (`gralc chunk --list` lists them)")
    p.add_argument("--searcher", default="dense", choices=SEARCHER_CHOICES,
                   help="hybrid: BM25 over the same chunks fused with the dense ranking; "
                        "graph_local / graph_global: SemRAG's search of the corpus graph")
    p.add_argument("--graph", action="store_true",
                   help="build the corpus knowledge graph (communities, reports) into the index")
    p.add_argument("--bundle-model", action="store_true",
                   help="with --model: copy the export into the index (INDEX/model/), so the index "
                        "folder alone is enough to search anywhere (default: the index names the "
                        "export by its SHA-256 and its path relative to the index)")
    p.add_argument("--codec", help="with --model: store token vectors with this trained codec (a "
                                    "folder of `gralc shard codec`) instead of training one on the "
                                    "corpus's first tokens")
    return p



def _main(argv: list[str]) -> int:
    args = parser().start(argv)
    from gralc.artefacts import check_output_dir, output_lock
    from gralc.model.persistence import resolve_model

    # a user's mistake (FileNotFoundError / ValueError, OutputDirError included) propagates to
    # the boundary of gralc.cli.run: one message and exit 2, or its traceback with --debug
    keys = route_settings(args.settings, SECTIONS)
    if args.model:
        args.model = str(resolve_model(args.model))
    if args.bundle_model and not (args.model and Path(args.model).is_dir()):
        raise ValueError("--bundle-model copies a trained model's export into the index: add "
                         "--model EXPORT (a folder written by gralc export)")
    inputs = [p for p in (args.corpus, args.model, args.codec, *override_paths(keys[""])) if p]
    check_output_dir(args.out, "index", args.force, inputs)  # before any encoding
    with output_lock(args.out):  # held from before any encoding to the swap
        return _build(args, keys, inputs)


main = command_main(_main)


def _build(args: argparse.Namespace, keys: dict[str, list[str]], inputs: list[str]) -> int:
    from gralc.config import load_config
    from gralc.inference import Retriever
    from gralc.retrieval.graph.search import GraphConfig
    from gralc.retrieval.indexes.dense import IndexConfig
    from gralc.retrieval.indexes.fusion import FusionConfig
    from gralc.retrieval.trained.candidates import CandidateConfig
    from gralc.retrieval.trained.token_codec import load_codec_dir

    if (keys["search"] or args.codec) and not args.model:
        raise ValueError("search.* settings and --codec set a trained model's index: add --model")
    if keys["fusion"] and args.searcher != "hybrid":
        raise ValueError("fusion.* settings apply to --searcher hybrid")
    if keys["graph"] and not (args.graph or args.searcher.startswith("graph")):
        raise ValueError("graph.* settings apply to an index built with --graph")
    fusion = load_config(FusionConfig, None, keys["fusion"])
    search = load_config(CandidateConfig, None, keys["search"]) if keys["search"] else None
    index_config = load_config(IndexConfig, None, keys["index"])
    graph = load_config(GraphConfig, None, keys["graph"]) if args.graph or keys["graph"] else None
    codec = load_codec_dir(args.codec) if args.codec else None
    retriever = Retriever.build(args.corpus, args.strategy, args.model, index_config=index_config,
                                searcher=args.searcher, fusion=fusion, overrides=keys[""],
                                graph=graph, search=search, token_codec=codec)
    out = retriever.save(args.out, force=args.force, inputs=inputs, bundle_model=args.bundle_model)
    print(f"indexed {len(retriever.index)} chunks ({retriever.spec.strategy}) into {out}")
    return 0


#: pipeline keys whose values are files or folders a build reads (or caches into)
PATH_KEYS = ("knowledge.vocabulary", "knowledge.tree_file", "knowledge.relations.", "encoder.cache_dir",
             "cache_dir", "encoder.model")


def override_paths(overrides: list[str]) -> list[str]:
    """The existing paths named by ``key=value`` overrides (the output may overlap none)."""
    out = []
    for item in overrides:
        key, _, value = item.partition("=")
        if key.startswith(PATH_KEYS) and value and Path(value).expanduser().exists():
            out.append(value)
    return out


if __name__ == "__main__":
    sys.exit(main())
