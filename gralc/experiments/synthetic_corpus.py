"""A synthetic corpus grown from a trained model's index at hand, for measuring search at sizes
the real data does not reach (issue 59; ``bench.scale_search``, quality at scale).

Every copy of a chunk has its vector moved (cosine ~0.95 to its source), a fifth of its words
dropped (other BM25 scores) and a fifth of its token codes' residual bytes redrawn (another
MaxSim; exact float16 tokens are moved instead), its concepts and sentence units copied alike (units' vectors moved, words dropped;
their texts cut from the copy's chunk texts, as a real index's are). So the corpus keeps the
real vectors', texts' and codes' statistics, and each real chunk has near-duplicates competing
with it: a hard case for a candidate stage. Copies are written with the library's own writers
and joined streamed (:func:`gralc.shard_index.write_joined_index`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

from gralc.experiments.search_cost import memory_mb


def drop_words(text: str, rng: np.random.Generator, keep: float = 0.8) -> str:
    """``text`` with each word kept with probability ``keep`` (at least one word).

    >>> drop_words("a b c d", np.random.default_rng(0), keep=1.0)
    'a b c d'
    """
    words = text.split()
    kept = [w for w, k in zip(words, rng.random(len(words)) < keep) if k]
    return " ".join(kept or words[:1])


def moved(vectors: np.ndarray, rng: np.random.Generator, cos: float = 0.95) -> np.ndarray:
    """Unit vectors at about cosine ``cos`` to ``vectors`` (random directions).

    >>> x = np.eye(2, 4, dtype=np.float32)
    >>> bool(abs((moved(x, np.random.default_rng(0)) * x).sum(1) - 0.95).max() < 0.05)
    True
    """
    noise = rng.standard_normal(vectors.shape).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    sigma = math.tan(math.acos(cos))
    x = vectors + sigma * noise
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def grow_index(real_dir: Path, copies: int, out: Path, keep: Sequence[Path] = (), seed: int = 0) -> dict:
    """Write at ``out`` one index of the index folders ``keep`` (as they are), the index at
    ``real_dir`` and ``copies - 1`` synthetic copies of it (module docstring), all of one
    trained model: each copy made in memory alone and written as an index folder of its own
    (resumable: a copy written is kept until the join), then all joined as a shard merge joins
    shards (streamed, :func:`gralc.shard_index.write_joined_index`): memory bounded by one copy
    and a block. Returns counts, seconds and the peak RSS of this process.

    Example: ``grow_index(Path("distractors"), 100, Path("big"), keep=[Path("covidqa")])`` ->
    ``{"copies": 100, "n_chunks": ..., "build_s": ..., "build_rss_mb": ...}``: COVID-QA's
    articles among 100 copies of the distractor articles.
    """
    import shutil

    from gralc.artefacts import write_artefact
    from gralc.inference import RETRIEVER_FILE, Retriever, write_spec
    from gralc.retrieval.indexes.dense import ChunkIndex, IndexConfig
    from gralc.retrieval.trained.chunk_table import ChunkTable, Int8Rows, UnitTable, unit_texts
    from gralc.retrieval.trained.ragged import Ragged
    from gralc.retrieval.trained.token_store import TokenStore
    from gralc.safe_load import read_json_untrusted
    from gralc.shard_index import write_joined_index

    real = Retriever.load(real_dir)
    table, units = real.scorer.table, real.scorer.table.units
    n, chunks0 = len(real.index), list(real.index.chunks)
    vectors0 = np.asarray(real.index.vectors)
    unit_records0 = ChunkTable.load(real_dir / "trained", n, chunks=chunks0).unit_chunks
    spans0 = np.array([(u.char_start, u.char_end) for u in unit_records0], dtype=np.int64)
    codes0 = np.asarray(table.tokens.codes.values)
    head = 2 if table.tokens.codec.n_centroids > 256 else 1  # the coarse code's bytes
    parts, dirs, t0 = out.parent / f".{out.name}.parts", [*map(Path, keep), real_dir], time.perf_counter()
    for c in range(1, copies):  # copy 0 is the real index itself
        dirs.append(parts / f"copy_{c:05d}")
        if (dirs[-1] / RETRIEVER_FILE).is_file():
            continue
        rng, tag = np.random.default_rng([seed, c]), f"~{c}"
        copy = [replace(ch, doc_id=ch.doc_id + tag, chunk_id=ch.chunk_id + tag, text=drop_words(ch.text, rng))
                for ch in chunks0]
        for ch, v in zip(copy, moved(vectors0, rng)):
            ch.embedding = v
        index = ChunkIndex(real.index.dim, IndexConfig(kind="flat"))  # the join builds the real kind
        index.add(copy)
        codec = table.tokens.codec
        if codec.config.kind == "float16":  # exact tokens (a corpus too small for a codec): moved
            codes = codec.encode(moved(codec.decode(codes0), rng))
        else:  # PQ codes: a fifth of the residual bytes redrawn (random float16 bytes would be NaN)
            codes = codes0.copy()
            redraw = rng.random((len(codes), codes.shape[1] - head)) < 0.2
            codes[:, head:][redraw] = rng.integers(0, 256, int(redraw.sum()), dtype=np.uint8)
        part = ChunkTable(table.tokens.codec)  # its own concept vectors, as a real document's
        part.n_chunks, part.concepts, part.entities = n, np.asarray(table.concepts), table.entities
        part._concepts, part._entities = [part.concepts], [part.entities]
        # a copy's units are cut from its chunks' texts, as a real index's are
        part.unit_chunks = [replace(u, doc_id=u.doc_id + tag, chunk_id=u.chunk_id + tag, text=t)
                            for u, t in zip(unit_records0, unit_texts(spans0, units.chunks, copy))]
        part.units = UnitTable(Int8Rows.encode(moved(units.vectors[:], rng)), units.entities, units.pairs,
                               units.chunks, records=part.unit_chunks)
        part.has_units = part.has_tokens = True
        part.tokens = TokenStore(table.tokens.codec, Ragged(codes, table.tokens.codes.offsets))
        real.scorer.table = part
        Retriever(real.spec, index, real.pipeline, real.scorer).save(dirs[-1], force=True)
    timings, copies_rss = {"copies_s": time.perf_counter() - t0}, memory_mb(field="VmHWM")
    t0 = time.perf_counter()
    spec = read_json_untrusted(real_dir / RETRIEVER_FILE, allow_interpolation=True)
    spec.pop("bound_files", None)
    if spec.get("model"):  # named relative to the index, as Retriever.save does
        spec["model"] = os.path.relpath((real_dir / spec["model"]).resolve(), out.resolve())
    with write_artefact(out, "index", force=True) as tmp:
        write_joined_index(tmp, dirs, trained=True)
        write_spec(tmp, spec)
    timings["join_s"] = time.perf_counter() - t0
    shutil.rmtree(parts, ignore_errors=True)
    kept = [Retriever.load(d).scorer.table for d in keep]
    return {"copies": copies, "kept": [str(d) for d in keep],
            "n_chunks": n * copies + sum(t.n_chunks for t in kept),
            "n_units": (len(units.vectors) * copies + sum(len(t.units.vectors) for t in kept)) if units else 0,
            "n_tokens": table.tokens.n_tokens * copies + sum(t.tokens.n_tokens for t in kept),
            "build": timings, "build_s": sum(timings.values()), "build_rss_mb": memory_mb(field="VmHWM"),
            "copies_rss_mb": copies_rss}  # the peak before the join (one copy at a time)
