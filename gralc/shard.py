"""``gralc shard build|codec|merge``: index a large corpus in shards, then merge them.

    gralc shard codec DIR --model EXPORT --out OUT/codec               # late-interaction models
    gralc shard build DIR --shard I --num-shards N --out OUT/shard_I [--model EXPORT --codec OUT/codec]
    gralc shard merge OUT/shard_* --out OUT/merged

Shard ``I`` of ``N`` takes a contiguous block of the corpus's sorted files, so the merged index
holds exactly the chunks, in the same order, of a single ``gralc index DIR``
(:mod:`gralc.shard_index`). On SLURM, ``slurm/index.sbatch`` runs one build per task.
"""

from __future__ import annotations

import sys

from gralc.cli import CommandParser, Settings, command_main, configure_output, route_settings

RENAMED = {"--corpus": "a positional argument (gralc shard build DIR ...)",
           "--shards": "positional arguments (gralc shard merge OUT/shard_* --out ...)",
           "--index": "index.kind=flat|hnsw|ivf"}


def _settings() -> list[Settings]:
    from gralc.index import settings

    return [s for s in settings() if s.prefix in ("", "index.", "graph.")]


def _parsers() -> dict[str, CommandParser]:
    build = CommandParser("gralc shard build", description="Index one shard of a corpus folder.",
                          settings=_settings, renamed=RENAMED)
    build.add_argument("corpus", help="the corpus folder (every shard of a build gets the same)")
    build.add_argument("--shard", type=int, required=True, help="this shard's number (e.g. $SLURM_PROCID)")
    build.add_argument("--num-shards", type=int, required=True, help="number of shards (e.g. $SLURM_NTASKS)")
    build.add_argument("--out", required=True, help="shard index folder to write")
    build.add_argument("--strategy", default="structure_aware", help="chunking strategy")
    build.add_argument("--model", help="a trained GraLC model: an export, .ckpt or run folder (instead of --strategy)")
    build.add_argument("--codec", help="the build's token codec (gralc shard codec), for a model "
                                       "that scores with late interaction")
    build.add_argument("--graph", action="store_true", help="grow this shard's corpus knowledge graph")
    build.add_force()
    codec = CommandParser("gralc shard codec", description="Train the token codec every shard of a "
                          "trained model's build shares.", renamed=RENAMED, takes_settings=False)
    codec.add_argument("corpus", help="the corpus folder")
    codec.add_argument("--model", required=True, help="a trained GraLC model: an export, .ckpt or run folder")
    codec.add_argument("--out", required=True, help="codec folder to write")
    codec.add_force()
    merge = CommandParser("gralc shard merge", description="Merge the shard indexes of one build "
                          "(any order) into one index.", renamed=RENAMED, takes_settings=False)
    merge.add_argument("shards", nargs="+", help="shard folders")
    merge.add_argument("--out", required=True, help="merged index folder to write")
    merge.add_argument("--corpus", help="the corpus folder the shards were built from: a merge of "
                                        "corpus graphs re-reads its files (checked against the "
                                        "digests each shard recorded)")
    merge.add_force()
    return {"build": build, "codec": codec, "merge": merge}



def _main(argv: list[str]) -> int:
    parsers = _parsers()
    if not argv or argv[0] not in parsers:
        lines = [f"usage: gralc shard {{{','.join(parsers)}}} ...", "", __doc__.split("\n\n")[0],
                 "", "commands:"] + [f"  {n:6} {p.description}" for n, p in parsers.items()]
        print("\n".join(lines), file=sys.stdout if not argv or argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command = argv[0]
    args = parsers[command].parse(argv[1:])
    configure_output(args.verbose)
    from gralc import shard_index as lib

    if command == "build":
        from gralc.config import load_config
        from gralc.retrieval.indexes.dense import IndexConfig

        keys = route_settings(args.settings, ("index", "graph"))
        if keys["graph"]:
            raise ValueError("graph.* settings: build a corpus graph with gralc index --graph")
        r = lib.build_shard(args.corpus, args.shard, args.num_shards, args.out, args.strategy,
                            load_config(IndexConfig, None, keys["index"]), force=args.force,
                            overrides=keys[""], graph=args.graph, model=args.model, codec=args.codec)
        print(f"shard {args.shard}/{args.num_shards}: {len(r.index)} chunks into {args.out}")
    elif command == "codec":
        from gralc.retrieval.trained.scorer import TrainedScorer

        if not TrainedScorer.load(args.model).uses_tokens:  # nothing to write, nothing to share
            print(f"{args.model} stores no token vectors (scoring.late_interaction=0): no codec needed")
            return 0
        codec = lib.build_codec(args.corpus, args.model, args.out, force=args.force)
        print(f"token codec ({codec.code_size} bytes a token, {codec.n_centroids} centroids) "
              f"into {args.out}")
    else:
        merged = lib.merge_shards(args.shards, args.out, force=args.force, corpus=args.corpus)
        print(f"merged {len(args.shards)} shards: {len(merged)} chunks into {args.out}")
    return 0


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
