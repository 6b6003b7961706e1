"""Sharded indexing of a large corpus: build one index per shard, then merge them.

    gralc shard codec DIR --model EXPORT --out OUT/codec     # only a model with token codes
    gralc shard build DIR --shard I --num-shards N --out OUT/shard_I
        [--strategy NAME | --model EXPORT [--codec OUT/codec]] [index.kind=flat|hnsw|ivf] [--graph]
    gralc shard merge OUT/shard_* --out OUT/merged

Shard ``I`` of ``N`` takes a contiguous block of the corpus's sorted files, so merging the
shards in shard order gives exactly the chunks, in order, of one ``gralc index DIR``. Each
shard is a normal :class:`~gralc.inference.Retriever` index plus ``shard.json``, and so is the
merge; a trained model's merge joins the chunk tables and rebuilds the BM25 indexes over all
chunks, a ``--graph`` merge adds the shards' graphs and computes communities, reports and
vectors once. The shards of a model that stores token codes share one codec. On SLURM:
``slurm/index.sbatch``. In full: docs/inference.md."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gralc.artefacts import check_output_dir, file_sha256, output_lock, write_artefact
from gralc.documents.corpus import corpus_files, inside_corpus
from gralc.inference import (
    CONCEPTS_DIR,
    GRAPH_DIR,
    LEXICAL_DIR,
    PHRASE_DIR,
    RETRIEVER_FILE,
    Retriever,
    train_token_codec,
    write_spec,
)
from gralc.retrieval.indexes.dense import CONFIG_FILE, ChunkIndex, IndexConfig
from gralc.retrieval.indexes.folder import read_json
from gralc.retrieval.trained.scorer import TABLE_DIR
from gralc.retrieval.trained.token_codec import (
    TokenCodec,
    TokenCodecConfig,
    load_codec_dir,
    save_codec_dir,
)

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
    model: str | Path | None = None,
    codec: str | Path | None = None,
) -> Retriever:
    """Chunk, encode and index one shard of ``corpus`` into ``out`` (+ ``shard.json``);
    ``out`` holding other files needs ``force`` (:mod:`gralc.artefacts`); ``overrides``:
    ``key=value`` pipeline settings, as for ``gralc.index``; ``model``: a trained model's
    index, its token codes written with ``codec`` (a folder of :func:`build_codec`; required
    when the model scores with late interaction)."""
    inputs = [corpus, *(p for p in (model, codec) if p is not None)]
    check_output_dir(out, "index", force, inputs)  # before any encoding
    with output_lock(out):  # held from before any encoding to the swap
        files = shard_files(corpus, shard, num_shards)
        token_codec = None
        if model is not None:
            from gralc.retrieval.trained.scorer import TrainedScorer

            if codec is None and TrainedScorer.load(model).uses_tokens:
                raise ValueError(f"{model} scores with late interaction: every shard must store its token "
                                 "vectors with one codec; train it once with `gralc shard "
                                 "codec CORPUS --model ... --out OUT/codec` and pass --codec OUT/codec")
            token_codec = None if codec is None else load_codec_dir(codec)
        retriever = Retriever.build(corpus, strategy, model=model, index_config=index_config, files=files,
                                    overrides=overrides, graph=True if graph else None,
                                    token_codec=token_codec)
        manifest = {
            "corpus": str(Path(corpus).resolve()),  # informative: a merge reads the corpus it is given
            "shard": shard,
            "num_shards": num_shards,
            "files": [str(f.relative_to(corpus)) for f in files],
            "n_chunks": len(retriever.index),
            # the corpus as this shard saw it (every file's name and size) and its own files'
            # digests: a merge refuses shards that saw different corpora, and files that
            # changed since
            "corpus_listing": corpus_listing(corpus),
            "digests": {str(f.relative_to(corpus)): file_sha256(f) for f in files},
        }
        retriever.save(out, force=force, inputs=inputs, extra={SHARD_FILE: manifest})
    return retriever


def corpus_listing(corpus: str | Path) -> dict[str, Any]:
    """What a shard records of the whole corpus it was cut from: how many files and a SHA-256
    over every file's relative name and size (:func:`gralc.documents.corpus.corpus_files`,
    the one corpus walker).

    Example: ``corpus_listing("gralc/data/demo/articles")["n_files"]`` -> ``10``.
    """
    import hashlib

    files = corpus_files(corpus)
    digest = hashlib.sha256("".join(f"{f.relative_to(corpus).as_posix()}\t{f.stat().st_size}\n"
                                    for f in files).encode()).hexdigest()
    return {"n_files": len(files), "sha256": digest}


def build_codec(corpus: str | Path, model: str | Path, out: str | Path, force: bool = False,
                config: TokenCodecConfig | None = None,
                overrides: list[str] | tuple[str, ...] = ()) -> TokenCodec:
    """Train the token codec of a sharded build of ``corpus`` with ``model`` (the one a single
    build would train: on the corpus's first tokens) and write it to ``out``."""
    check_output_dir(out, "token_codec", force, [corpus, model])
    with output_lock(out):
        codec = train_token_codec(corpus, model, config, overrides=overrides)
        with write_artefact(out, "token_codec", force, [corpus, model]) as tmp:
            save_codec_dir(codec, tmp)
    return codec


#: shard.json's fields and their types (checked before a merge reads anything else)
SHARD_FIELDS = {"corpus": str, "shard": int, "num_shards": int, "files": list, "n_chunks": int,
                "corpus_listing": dict, "digests": dict}


def _read_shard(directory: Path) -> dict[str, Any]:
    """A shard's ``shard.json`` (verified with the whole shard index, fields typed, every file
    inside the shard's corpus) with its spec, encoder id and folder."""
    from gralc.artefacts import verify_artefact
    from gralc.safe_load import path_inside

    verify_artefact(directory, ("index",))
    manifest = read_json(directory / SHARD_FILE)
    source = directory / SHARD_FILE
    for key, kind in SHARD_FIELDS.items():
        if not isinstance(manifest.get(key), kind) or isinstance(manifest.get(key), bool):
            raise ValueError(f"{source}: {key!r} must be {kind.__name__}, found "
                             f"{type(manifest.get(key)).__name__}: rebuild the shard")
    if not 0 <= manifest["shard"] < manifest["num_shards"]:
        raise ValueError(f"{source}: shard {manifest['shard']} outside [0, {manifest['num_shards']}): "
                         "rebuild the shard")
    for f in manifest["files"]:  # names inside any corpus folder (no '..', no absolute path)
        if not isinstance(f, str):
            raise ValueError(f"{source}: 'files' holds {f!r}, not a file name: rebuild the shard")
        path_inside(Path("/corpus"), f, f"{source} (files)")
    bad = [f for f in manifest["files"] if not isinstance(manifest["digests"].get(f), str)]
    if bad:
        raise ValueError(f"{source}: file {bad[0]!r} has no recorded digest: rebuild the shard")
    spec = read_json(directory / RETRIEVER_FILE)
    if isinstance(spec, dict):  # the shard's own files bound together; compared without them
        from gralc.inference import RetrieverSpec, check_bound_files

        try:
            bound = RetrieverSpec(bound_files=spec.get("bound_files"))
        except TypeError as exc:
            raise ValueError(f"{directory / RETRIEVER_FILE}: {exc}; rebuild the shard") from None
        check_bound_files(directory, bound)
        spec = {k: v for k, v in spec.items() if k != "bound_files"}
    manifest["spec"] = spec
    if isinstance(spec, dict) and spec.get("model") is not None:
        # each shard names its model relative to itself: compare and merge where it is
        from gralc.inference import RetrieverSpec, find_model

        try:
            where = find_model(directory, RetrieverSpec(**spec))
        except TypeError as exc:
            raise ValueError(f"{directory / RETRIEVER_FILE}: unexpected content ({exc}); rebuild the shard") from None
        manifest["spec"] = {**spec, "model": str(where), "model_origin": None}
    manifest["encoder_id"] = read_json(directory / CONFIG_FILE).get("encoder_id")
    manifest["dir"] = directory
    return manifest


def merge_shards(shard_dirs: Sequence[str | Path], out: str | Path, force: bool = False,
                 corpus: str | Path | None = None) -> ChunkIndex:
    """Merge every shard of one sharded build (any argument order) into the index ``out``
    (holding other files needs ``force``; it may not overlap a shard). ``corpus``: the folder
    the shards were built from, declared by the caller (never taken from a shard's
    ``shard.json``); needed when the shards carry corpus graphs, whose merge re-reads the
    files, each checked against the digest its shard recorded. Shards that saw different
    corpora (a file added, removed or resized between two shard builds) are refused."""
    if not shard_dirs:
        raise ValueError("merge needs shard directories (e.g. gralc shard merge OUT/shard_* --out OUT/merged)")
    check_output_dir(out, "index", force, [*shard_dirs, corpus])
    with output_lock(out):
        return _merge_locked(shard_dirs, out, force, None if corpus is None else Path(corpus))


def _merge_locked(shard_dirs: Sequence[str | Path], out: str | Path, force: bool,
                  corpus: Path | None) -> ChunkIndex:
    shards = sorted((_read_shard(Path(d)) for d in shard_dirs), key=lambda m: m["shard"])
    first = shards[0]
    for m in shards:
        if m["corpus_listing"] != first["corpus_listing"]:
            raise ValueError(
                f"{m['dir']} and {first['dir']} saw different corpora ({m['corpus_listing'].get('n_files')} "
                f"vs {first['corpus_listing'].get('n_files')} files, or files renamed or resized "
                "between the two builds): a merge would miss documents; rebuild every shard from "
                "the corpus as it is now")
        for key in ("num_shards", "spec", "encoder_id"):
            if m[key] != first[key]:
                raise ValueError(
                    f"{m['dir']} and {first['dir']} differ in {key} ({m[key]!r} vs "
                    f"{first[key]!r}): they are not shards of one build"
                )
    got, want = [m["shard"] for m in shards], list(range(first["num_shards"]))
    if got != want:
        raise ValueError(
            f"shards {got} given, need exactly {want}: rebuild the missing ones "
            "(gralc shard build ... --shard I) or drop the duplicates"
        )
    listed = [f for m in shards for f in m["files"]]
    if len(set(listed)) != len(listed) or len(listed) != first["corpus_listing"].get("n_files"):
        raise ValueError(f"the shards list {len(set(listed))} distinct files of a corpus of "
                         f"{first['corpus_listing'].get('n_files')}: not the shards of one build; "
                         "rebuild them")
    # streamed file by file from the shards' files: a merge's memory does not grow with the
    # corpus (a block of rows, the FAISS index of an hnsw / ivf kind, and the BM25
    # vocabularies; docs/scaling.md)
    graph = _merge_graphs(shards, corpus)
    with write_artefact(out, "index", force, [*shard_dirs, corpus]) as tmp:
        spec = dict(first["spec"])
        write_joined_index(tmp, [m["dir"] for m in shards], trained=spec.get("model") is not None)
        if spec.get("model") is not None:  # relative to the merged index, as a single build's
            spec["model_origin"] = spec["model"]
            spec["model"] = Path(os.path.relpath(spec["model"], Path(out).resolve())).as_posix()
        if graph is not None:
            graph.save(tmp / GRAPH_DIR)
        write_spec(tmp, {k: v for k, v in spec.items() if k != "bound_files"})  # last: it binds the files above
    return ChunkIndex.load(out)


def write_joined_index(tmp: Path, dirs: Sequence[Path], trained: bool,
                       bm25: Sequence[str] | None = None) -> int:
    """Write into ``tmp`` (an index being written; :func:`write_spec` binds it last) the index
    of the chunks of the index folders ``dirs`` in order, streamed: the dense index
    (:meth:`ChunkIndex.write_joined`) and, ``trained``, the chunk tables joined and the BM25
    indexes the model reads built in blocks (``bm25``: their folder names; default, those the
    first folder holds). Memory does not grow with the total (docs/scaling.md). Returns the
    number of chunks.

    Example: ``write_joined_index(tmp, [Path("shard_0"), Path("shard_1")], trained=True)`` ->
    ``12140`` (what ``gralc shard merge`` writes besides ``retriever.json``).
    """
    parts = [ChunkIndex.load(d, faiss_index=False) for d in dirs]
    meta = read_json(Path(dirs[0]) / CONFIG_FILE)
    n = ChunkIndex.write_joined(tmp, parts, encoder_id=meta.get("encoder_id"),
                                pipeline_config=meta.get("pipeline_config"))
    if trained:
        names = list(bm25) if bm25 is not None else [
            name for name in (LEXICAL_DIR, PHRASE_DIR, CONCEPTS_DIR) if (Path(dirs[0]) / name).is_dir()]
        _merge_trained([Path(d) for d in dirs], parts, tmp, names)
    return n


def _merge_trained(dirs: list[Path], parts: list[ChunkIndex], tmp: Path, bm25: list[str]) -> None:
    """A trained model's part of the merged index in ``tmp``: the parts' tables joined (one
    codec), then the BM25 indexes named in ``bm25`` (BM25, the term-pair BM25, the concept
    match) built in blocks over every chunk of the merged ``chunks.jsonl``."""
    from gralc.retrieval.indexes.bm25 import BM25Config
    from gralc.retrieval.indexes.bm25_blocks import write_bm25_blocks
    from gralc.retrieval.indexes.dense import CHUNKS_FILE
    from gralc.retrieval.indexes.folder import ChunkRecords
    from gralc.retrieval.trained.chunk_table import ChunkTable, write_joined
    from gralc.retrieval.trained.concept_match import CONCEPT_BM25

    tables = [(d / TABLE_DIR, ChunkTable.load(d / TABLE_DIR, len(p), unit_bm25=False)) for d, p in zip(dirs, parts)]
    (tmp / TABLE_DIR).mkdir()
    write_joined(tmp / TABLE_DIR, tables, [p.chunks for p in parts])
    for name, config in ((LEXICAL_DIR, BM25Config()), (PHRASE_DIR, BM25Config(ngram=2)),
                         (CONCEPTS_DIR, CONCEPT_BM25)):
        if name in bm25:
            (tmp / name).mkdir()
            write_bm25_blocks(tmp / name, iter(ChunkRecords(tmp / CHUNKS_FILE)), config)


def _merge_graphs(shards: list[dict[str, Any]], corpus: Path | None):
    """The shards' corpus graphs added into one, with communities, reports and vectors
    computed over the whole (the files re-read from ``corpus``, each checked against its
    shard's digest first); None when no shard has a graph."""
    from gralc.safe_load import path_inside

    has = [(m["dir"] / GRAPH_DIR).is_dir() for m in shards]
    if not any(has):
        return None
    if corpus is None:
        raise ValueError("these shards carry corpus graphs, whose merge re-reads the corpus: "
                         "declare the folder they were built from with --corpus DIR")
    if not corpus.is_dir():
        raise FileNotFoundError(f"--corpus {corpus} is not a folder")
    paths = []
    for m in shards:
        for f in m["files"]:
            path = path_inside(corpus, f, f"{m['dir'] / SHARD_FILE} (files)")
            if not path.is_file() or not inside_corpus(corpus, path) or file_sha256(path) != m["digests"][f]:
                raise ValueError(f"{path} is not the file shard {m['shard']} was built from "
                                 f"({m['dir'] / SHARD_FILE} records its SHA-256): is --corpus the "
                                 "build's corpus? If the file changed since, rebuild the shards")
            paths.append(path)
    if not all(has):
        missing = [str(m["dir"]) for m, h in zip(shards, has) if not h]
        raise ValueError(f"shards {missing} have no corpus graph but others do: rebuild them with --graph")
    from gralc.config import config_from_dict
    from gralc.inference import finish_index_graph, read_files
    from gralc.knowledge.corpus_graph import CorpusGraph
    from gralc.pipeline import Pipeline, PipelineConfig
    from gralc.retrieval.graph.search import GraphConfig

    graph = CorpusGraph.load(shards[0]["dir"] / GRAPH_DIR / "graph.json")
    for m in shards[1:]:
        graph.merge(CorpusGraph.load(m["dir"] / GRAPH_DIR / "graph.json"))
    spec = shards[0]["spec"]
    cfg = config_from_dict(GraphConfig, spec.get("graph") or {}, f"{shards[0]['dir']}/{RETRIEVER_FILE} (graph)")
    pipeline = Pipeline(config_from_dict(PipelineConfig, spec["pipeline"], f"{RETRIEVER_FILE} (pipeline)"))
    docs = read_files(paths)
    return finish_index_graph(graph, [(d, pipeline.linker.link(d.text)) for d in docs], pipeline, cfg)
