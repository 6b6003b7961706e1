"""``python -m gralc.index CORPUS [key=value ...] --out INDEX_DIR [--model DIR | --strategy NAME]``.

``key=value``: pipeline settings (``gralc.pipeline.PipelineConfig``), e.g.
``knowledge.vocabulary=data/mesh/mesh2024_thesaurus_terms.tsv knowledge.tree_file=...``
(``pipeline.`` prefix optional); a trained model keeps its own, only runtime keys may change.

Indexes a JATS / plain-text / Markdown file, a directory of them, or a PubMedQA JSON file.
``--searcher hybrid`` adds BM25 over the same chunks, fused with the dense ranking.
``--graph`` (implied by ``--searcher graph_local|graph_global``) grows SemRAG's corpus knowledge
graph with each indexed batch and saves it, with its communities and reports, in ``graph/``
(``python -m gralc.graph INDEX_DIR`` shows it).
"""

from __future__ import annotations

import argparse
import sys

from gralc.artefacts import check_output_dir, output_lock
from gralc.cli import add_debug_flag, add_verbose_flag, configure_output, pipeline_overrides, run
from gralc.config import load_config
from gralc.inference import SEARCHERS, Retriever
from gralc.retrieval.candidates import CandidateConfig
from gralc.retrieval.faiss_index import IndexConfig
from gralc.retrieval.fusion import FusionConfig
from gralc.retrieval.token_codec import load_codec_dir


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: None reads ``sys.argv``) inside the error boundary of
    :mod:`gralc.cli`: 0, or 2 after one message for a user's mistake (``--debug`` /
    ``GRALC_DEBUG=1``: its traceback)."""
    return run(_main, argv)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Build a GraLC search index.")
    parser.add_argument("corpus", help="JATS / .txt / .md file, a directory of them, ori_pqal.json, or a SQuAD-format JSON of articles")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="pipeline settings, e.g. knowledge.vocabulary=PATH")
    parser.add_argument("--out", required=True, help="index directory to write")
    parser.add_argument("--force", action="store_true",
                        help="--out holds other files: move them aside to OUT.replaced-<time>")
    parser.add_argument("--model", help="trained GraLC export dir or checkpoint")
    parser.add_argument("--strategy", default="structure_aware", help="baseline strategy when no --model")
    parser.add_argument("--index", default="flat", choices=["flat", "hnsw", "ivf"])
    parser.add_argument("--searcher", default="dense", choices=SEARCHERS,
                        help="hybrid: BM25 over the same chunks fused with the dense ranking; "
                             "graph_local / graph_global: SemRAG's search of the corpus graph")
    parser.add_argument("--graph", action="store_true",
                        help="build the corpus knowledge graph (communities, reports) into the index")
    parser.add_argument("--fusion", default="weighted", choices=["weighted", "rrf"])
    parser.add_argument("--lexical-weight", type=float, default=FusionConfig.lexical_weight,
                        help="weight of the normalised BM25 score in weighted fusion")
    parser.add_argument("--search", nargs="+", default=[], metavar="key=value",
                        help="with --model: its two-stage search settings stored with the index "
                             "(dense=100 lexical=100 phrase=20 concepts=20 units=20 exact=32; see "
                             "gralc.retrieval.candidates)")
    parser.add_argument("--codec", help="with --model: store token vectors with this trained codec "
                                        "(a folder of `python -m gralc.shard_index codec`) instead of "
                                        "training one on the corpus's first tokens")
    add_debug_flag(parser)
    add_verbose_flag(parser)
    args = parser.parse_intermixed_args(argv)  # key=value anywhere on the line
    configure_output(args.verbose)
    # a user's mistake (FileNotFoundError / ValueError, OutputDirError included) propagates to
    # the boundary of gralc.cli.run: one message and exit 2, or its traceback with --debug
    overrides = pipeline_overrides(args.overrides)
    inputs = [p for p in (args.corpus, args.model, args.codec, *override_paths(overrides)) if p]
    check_output_dir(args.out, "index", args.force, inputs)  # before any encoding
    with output_lock(args.out):  # held from before any encoding to the swap
        return _build(args, overrides, inputs)


def _build(args: argparse.Namespace, overrides: list[str], inputs: list[str]) -> int:
    if (args.search or args.codec) and not args.model:
        raise ValueError("--search and --codec set a trained model's index: add --model")
    fusion = FusionConfig(args.fusion, lexical_weight=args.lexical_weight)
    search = load_config(CandidateConfig, None, args.search) if args.search else None
    codec = load_codec_dir(args.codec) if args.codec else None
    retriever = Retriever.build(args.corpus, args.strategy, args.model,
                                index_config=IndexConfig(kind=args.index),
                                searcher=args.searcher, fusion=fusion,
                                overrides=overrides,
                                graph=True if args.graph else None, search=search,
                                token_codec=codec)
    out = retriever.save(args.out, force=args.force, inputs=inputs)
    print(f"indexed {len(retriever.index)} chunks ({retriever.spec.strategy}) into {out}")
    return 0


#: pipeline keys whose values are files or folders a build reads (or caches into)
PATH_KEYS = ("knowledge.vocabulary", "knowledge.tree_file", "knowledge.relations.", "encoder.cache_dir",
             "cache_dir", "encoder.model")


def override_paths(overrides: list[str]) -> list[str]:
    """The existing paths named by ``key=value`` overrides (the output may overlap none)."""
    from pathlib import Path

    out = []
    for item in overrides:
        key, _, value = item.partition("=")
        if key.startswith(PATH_KEYS) and value and Path(value).expanduser().exists():
            out.append(value)
    return out


if __name__ == "__main__":
    sys.exit(main())
