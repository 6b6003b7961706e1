"""Sharded indexing of a large corpus: build one index per shard, then merge them.

    python -m gralc.shard_index build --corpus DIR --shard I --num-shards N --out OUT/shard_I
        [--strategy NAME] [--index flat|hnsw|ivf] [--graph]
    python -m gralc.shard_index merge --shards OUT/shard_* --out OUT/merged

Shard ``I`` of ``N`` takes a contiguous block of the corpus's sorted files
(``files[I*F//N : (I+1)*F//N]``), so merging the shards in shard order gives exactly the
chunks, in the same order, of a single-process ``python -m gralc.index DIR`` (the test checks
it). Each shard directory is a normal :class:`~gralc.inference.Retriever` index plus
``shard.json``; the merged directory is a normal index (``Retriever.load`` / ``gralc.search``).
With ``--graph`` each shard grows its part of the corpus knowledge graph; the merge adds the
shards' graphs (nodes, edges, weights, chunk ids) and computes communities, reports and
vectors once over the whole (re-reading the shards' files, no encoding of documents).
On SLURM, ``slurm/index.sbatch`` runs one build per task (``--shard $SLURM_PROCID``) and the
merge once they have all finished.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gralc.artefacts import check_output_dir, write_artefact
from gralc.cli import pipeline_overrides
from gralc.documents.corpus import corpus_files
from gralc.inference import GRAPH_DIR, RETRIEVER_FILE, Retriever
from gralc.retrieval.faiss_index import CONFIG_FILE, ChunkIndex, IndexConfig, read_json

SHARD_FILE = "shard.json"
logger = logging.getLogger(__name__)


def shard_files(corpus: str | Path, shard: int, num_shards: int) -> list[Path]:
    """Shard ``shard``'s block of the sorted corpus files; errors if it would be empty."""
    if not 0 <= shard < num_shards:
        raise ValueError(f"--shard must be in [0, {num_shards}), got {shard}")
    files = corpus_files(corpus)
    if len(files) < num_shards:
        raise ValueError(
            f"{corpus}: {len(files)} corpus files cannot fill {num_shards} shards; "
            f"use --num-shards <= {len(files)}"
        )
    n = len(files)
    return files[shard * n // num_shards : (shard + 1) * n // num_shards]


def build_shard(
    corpus: str | Path,
    shard: int,
    num_shards: int,
    out: str | Path,
    strategy: str = "structure_aware",
    index_config: IndexConfig | None = None,
    force: bool = False,
    overrides: list[str] | tuple[str, ...] = (),
    graph: bool = False,
) -> Retriever:
    """Chunk, encode and index one shard of ``corpus`` into ``out`` (+ ``shard.json``);
    ``out`` holding other files needs ``force`` (:mod:`gralc.artefacts`); ``overrides``:
    ``key=value`` pipeline settings, as for ``gralc.index``."""
    check_output_dir(out, "index", force, [corpus])  # before any encoding
    files = shard_files(corpus, shard, num_shards)
    retriever = Retriever.build(corpus, strategy, index_config=index_config, files=files,
                                overrides=overrides, graph=True if graph else None)
    manifest = {
        "corpus": str(Path(corpus).resolve()),
        "shard": shard,
        "num_shards": num_shards,
        "files": [str(f.relative_to(corpus)) for f in files],
        "n_chunks": len(retriever.index),
    }
    retriever.save(out, force=force, inputs=[corpus], extra={SHARD_FILE: manifest})
    return retriever


def _read_shard(directory: Path) -> dict[str, Any]:
    manifest = read_json(directory / SHARD_FILE)
    manifest["spec"] = read_json(directory / RETRIEVER_FILE)
    manifest["encoder_id"] = read_json(directory / CONFIG_FILE).get("encoder_id")
    manifest["dir"] = directory
    return manifest


def merge_shards(shard_dirs: Sequence[str | Path], out: str | Path, force: bool = False) -> ChunkIndex:
    """Merge every shard of one sharded build (any argument order) into the index ``out``
    (holding other files needs ``force``; it may not overlap a shard)."""
    check_output_dir(out, "index", force, shard_dirs)
    if not shard_dirs:
        raise ValueError("merge needs shard directories (e.g. --shards OUT/shard_*)")
    shards = sorted((_read_shard(Path(d)) for d in shard_dirs), key=lambda m: m["shard"])
    first = shards[0]
    for m in shards:
        for key in ("corpus", "num_shards", "spec", "encoder_id"):
            if m[key] != first[key]:
                raise ValueError(
                    f"{m['dir']} and {first['dir']} differ in {key} ({m[key]!r} vs "
                    f"{first[key]!r}): they are not shards of one build"
                )
    got, want = [m["shard"] for m in shards], list(range(first["num_shards"]))
    if got != want:
        raise ValueError(
            f"shards {got} given, need exactly {want}: rebuild the missing ones "
            "(python -m gralc.shard_index build ... --shard I) or drop the duplicates"
        )
    if first["spec"].get("model") is not None:
        raise NotImplementedError("merging shards of a trained-model index is not supported")
    merged = ChunkIndex.merge([ChunkIndex.load(m["dir"]) for m in shards])
    graph = _merge_graphs(shards)
    meta = read_json(first["dir"] / CONFIG_FILE)
    with write_artefact(out, "index", force, shard_dirs) as tmp:
        merged.write_to(tmp, encoder_id=meta.get("encoder_id"), pipeline_config=meta.get("pipeline_config"))
        (tmp / RETRIEVER_FILE).write_text(json.dumps(first["spec"], indent=2))
        if graph is not None:
            graph.save(tmp / GRAPH_DIR)
    return merged


def _merge_graphs(shards: list[dict[str, Any]]):
    """The shards' corpus graphs added into one, with communities, reports and vectors
    computed over the whole; None when no shard has a graph."""
    has = [(m["dir"] / GRAPH_DIR).is_dir() for m in shards]
    if not any(has):
        return None
    if not all(has):
        missing = [str(m["dir"]) for m, h in zip(shards, has) if not h]
        raise ValueError(f"shards {missing} have no corpus graph but others do: rebuild them with --graph")
    from gralc.config import config_from_dict
    from gralc.inference import finish_index_graph, read_files
    from gralc.knowledge.corpus_graph import CorpusGraph
    from gralc.pipeline import Pipeline, PipelineConfig
    from gralc.retrieval.graph_search import GraphConfig

    graph = CorpusGraph.load(shards[0]["dir"] / GRAPH_DIR / "graph.json")
    for m in shards[1:]:
        graph.merge(CorpusGraph.load(m["dir"] / GRAPH_DIR / "graph.json"))
    spec = shards[0]["spec"]
    cfg = config_from_dict(GraphConfig, spec.get("graph") or {}, f"{shards[0]['dir']}/{RETRIEVER_FILE} (graph)")
    pipeline = Pipeline(config_from_dict(PipelineConfig, spec["pipeline"], f"{RETRIEVER_FILE} (pipeline)"))
    corpus = Path(shards[0]["corpus"])
    docs = read_files([corpus / f for m in shards for f in m["files"]])
    return finish_index_graph(graph, [(d, pipeline.linker.link(d.text)) for d in docs], pipeline, cfg)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gralc.shard_index", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="index one shard of a corpus directory")
    b.add_argument("--corpus", required=True, help="directory of JATS files")
    b.add_argument("overrides", nargs="*", metavar="key=value",
                   help="pipeline settings, e.g. knowledge.vocabulary=PATH (as gralc.index)")
    b.add_argument("--shard", type=int, required=True, help="this shard's index (e.g. $SLURM_PROCID)")
    b.add_argument("--num-shards", type=int, required=True, help="number of shards (e.g. $SLURM_NTASKS)")
    b.add_argument("--out", required=True, help="shard index directory to write")
    b.add_argument("--strategy", default="structure_aware", help="chunking strategy")
    b.add_argument("--index", default="flat", choices=["flat", "hnsw", "ivf"])
    b.add_argument("--force", action="store_true", help="--out holds other files: move them aside")
    b.add_argument("--graph", action="store_true", help="grow this shard's corpus knowledge graph")
    m = sub.add_parser("merge", help="merge shard indexes into one")
    m.add_argument("--shards", nargs="+", required=True, help="shard directories (any order)")
    m.add_argument("--out", required=True, help="merged index directory to write")
    m.add_argument("--force", action="store_true", help="--out holds other files: move them aside")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "build":
            r = build_shard(args.corpus, args.shard, args.num_shards, args.out, args.strategy,
                            IndexConfig(kind=args.index), force=args.force,
                            overrides=pipeline_overrides(args.overrides), graph=args.graph)
            print(f"shard {args.shard}/{args.num_shards}: {len(r.index)} chunks into {args.out}")
        else:
            merged = merge_shards(args.shards, args.out, force=args.force)
            print(f"merged {len(args.shards)} shards: {len(merged)} chunks into {args.out}")
    except (FileNotFoundError, ValueError, NotImplementedError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from gralc.cli import run

    sys.exit(run(main))
