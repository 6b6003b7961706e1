"""Indexing speed of every chunking strategy relative to one encoder-only pass (issue 3).

Usage: python -m bench.index [PMC_DIR] [--limit N] [--mesh TSV] [--no-bf16] [--no-semantic]
[--repeats R]
(default PMC_DIR: ../shared/data/pmc beside the repository; default --mesh: the full MeSH 2024
thesaurus beside it). Parsing is excluded. One run measures, on the same documents:

* encoder-only: ``DocumentEncoder.encode_documents`` of every ``Document.text`` (no cache);
* linker alone: ``EntityLinker`` with the full MeSH thesaurus, best of 3 (automaton build
  reported separately);
* prepare = encoder-only + linker (exactly what ``Pipeline.prepare`` runs), measured ONCE and
  shared: a late-type strategy's time is prepare + its own ``chunk()`` time (boundary scoring,
  decoding, pooling);
* fixed / semantic: their own ``chunk()`` on documents WITHOUT token embeddings: fixed
  tokenises and encodes every chunk on its own; semantic in four settings (SEMANTIC_MODES):
  everything pooled from one encoding of each sentence; the default (buffered groups pooled
  from that pass, every chunk's text encoded on its own from the model card's 256
  word-pieces, as sentence-transformers' ``encode`` does); the same with chunk texts encoded
  from the model's whole 512-piece context; SemRAG to the letter (every buffered group and
  every chunk encoded on its own);
* a pass that encodes every sentence once (``encode_texts``), semantic's reference; it and
  the semantic rows run ``--repeats`` times in turn and report medians;
* optionally the encoder-only pass under bf16 autocast.

Rows are printed as they are measured (slowest last: semantic, then bf16).

Targets: structure-aware <= 1.3x encoder-only; semantic <= 1.5x the sentence pass; linker
>= 5 MB/s. Nothing is written to disk.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from gralc.chunking.base import PreparedDocument
from gralc.documents.corpus import load_corpus
from gralc.encoding.encoder import DocumentEncoder, EncoderConfig
from gralc.experiments.real_data import SHARED_DATA, require_files
from gralc.pipeline import KnowledgeConfig, Pipeline, PipelineConfig, build_chunker
from gralc.runinfo import blas_kernel

DATA = SHARED_DATA  # ../shared/data beside the repository, or $GRALC_SHARED_DATA
#: (row label, registered name, decoder, uses the shared prepare pass)
STRATEGIES = [
    ("fixed", "fixed", "peak", False),
    ("late", "late", "peak", True),
    ("structure_aware (peak)", "structure_aware", "peak", True),
    ("structure_aware (dp)", "structure_aware", "dp", True),
    ("dp_sentences", "dp_sentences", "dp", True),
    ("multilevel", "multilevel", "peak", True),
]


#: (row label, groups, chunk_vectors, encode_max_length) of the semantic rows, fastest first
SEMANTIC_MODES = [
    ("semantic, all pooled (one sentence pass)", "pooled", "pooled", None),
    ("semantic (default: pooled groups, chunk texts encoded, 256 pieces)", "pooled", "encoded", None),
    ("semantic, chunk texts encoded from 512 pieces", "pooled", "encoded", 512),
    ("semantic, SemRAG literal (encoded groups and chunks)", "encoded", "encoded", None),
]


def timed(fn):
    """(result, wall seconds) of ``fn()``."""
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def row(
    label: str, chunks: str, seconds: str, n_tok: int, total: float, ref: float, target: str = ""
) -> None:
    """One markdown row, printed at once so a cut-short run still leaves a partial table."""
    print(f"| {label} | {chunks} | {seconds} | {n_tok / total:,.0f} | {total / ref:.2f} | {target} |",
          flush=True)  # fmt: skip


def strategy_rows(
    pipeline: Pipeline,
    prepared: list[PreparedDocument],
    shared: bool,
    prep_s: float,
    enc_s: float,
    n_tok: int,
) -> None:
    """Time each strategy of STRATEGIES with this ``shared`` flag and print its row."""
    for label, name, decoder, uses_prepare in STRATEGIES:
        if uses_prepare != shared:
            continue
        cfg = pipeline.config.chunking
        cfg = replace(cfg, boundary=replace(cfg.boundary, decoder=decoder))
        chunker = build_chunker(name, pipeline.encoder, cfg)
        docs = prepared if shared else [replace(p, tokens=None) for p in prepared]
        chunks, own = timed(lambda: sum(len(chunker.chunk(p)) for p in docs))  # noqa: B023
        total = own + (prep_s if shared else 0.0)
        target = ""
        if name == "structure_aware":
            target = f"<= 1.3x: {'ok' if total / enc_s <= 1.3 else 'MISSED'}"
        seconds = f"{prep_s:.1f} + {own:.1f}" if shared else f"{own:.1f}"
        row(label, f"{chunks:,}", seconds, n_tok, total, enc_s, target)


def semantic_rows(
    pipeline: Pipeline, docs, docs_no_tokens: list[PreparedDocument], n_tok: int, enc_s: float,
    repeats: int,
) -> None:
    """The sentence pass and every SEMANTIC_MODES row, timed ``repeats`` times in turn (so load
    changes hit all of them alike); a row shows its median seconds and the median, min and max
    of its per-repeat ratio to that repeat's sentence pass."""
    encoder, base = pipeline.encoder, pipeline.config.chunking
    sentences = [d.text[s.start : s.end] for d in docs for s in d.sentences]
    chunkers = [
        (label, build_chunker("semantic", encoder, replace(base, semantic=replace(
            base.semantic, groups=groups, chunk_vectors=chunk_vectors,
            encode_max_length=max_length))))
        for label, groups, chunk_vectors, max_length in SEMANTIC_MODES
    ]  # fmt: skip
    sent_times, times, counts = [], {label: [] for label, _ in chunkers}, {}
    for _ in range(repeats):
        sent_times.append(timed(lambda: encoder.encode_texts(sentences))[1])
        for label, chunker in chunkers:
            n, seconds = timed(lambda: sum(len(chunker.chunk(p)) for p in docs_no_tokens))  # noqa: B023
            times[label].append(seconds)
            counts[label] = n
    sent_s = statistics.median(sent_times)
    row(f"sentence pass (every sentence once; median of {repeats})", "", f"{sent_s:.1f}", n_tok,
        sent_s, enc_s)  # fmt: skip
    for label, _ in chunkers:
        ratios = [t / r for t, r in zip(times[label], sent_times)]
        mid = statistics.median(ratios)
        spread = f" (runs {min(ratios):.2f}-{max(ratios):.2f})" if repeats > 1 else ""
        seconds = statistics.median(times[label])
        row(label, f"{counts[label]:,}", f"{seconds:.1f}", n_tok, seconds, enc_s,
            f"{mid:.2f}x sentence pass{spread} ({'<= 1.5x' if mid <= 1.5 else '> 1.5x'})")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.index", description=__doc__.split("\n")[0])
    ap.add_argument("pmc", nargs="?", type=Path, default=DATA / "pmc")
    ap.add_argument("--limit", type=int, default=None, help="use the first N articles only")
    ap.add_argument("--mesh", type=Path, default=DATA / "mesh" / "mesh2024_thesaurus_terms.tsv")
    ap.add_argument("--no-bf16", action="store_true", help="skip the bf16 autocast pass")
    ap.add_argument("--no-semantic", action="store_true", help="skip semantic (the slowest)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="interleaved repeats of the sentence pass and the semantic rows")
    args = ap.parse_args(argv)
    require_files(args.pmc, args.mesh)
    logging.basicConfig(level=logging.ERROR)
    load_start = os.getloadavg()[0]
    docs = load_corpus(args.pmc).documents[: args.limit]
    texts = [d.text for d in docs]
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6

    cfg = PipelineConfig(
        encoder=EncoderConfig(device="cpu", cache_dir=None),
        knowledge=KnowledgeConfig(vocabulary=str(args.mesh)),
    )
    pipeline, build_s = timed(lambda: Pipeline(cfg))
    encoder, linker = pipeline.encoder, pipeline.linker
    encoder.encode_document(texts[0][:2000])  # warm-up

    tokens, enc_s = timed(lambda: encoder.encode_documents(texts, progress=False))
    n_tok = sum(t.n_tokens for t in tokens)
    runs = [timed(lambda: linker.link_documents(texts)) for _ in range(3)]  # fast: best of 3
    mentions, link_s = runs[0][0], min(seconds for _, seconds in runs)
    # Pipeline.prepare is exactly these two calls; reuse them instead of encoding again
    prepared = [PreparedDocument(d, t, m) for d, t, m in zip(docs, tokens, mentions)]
    prep_s = enc_s + link_s

    print(
        f"# Indexing speed: {len(docs)} PMC articles, {n_tok:,} tokens, "
        f"{sum(len(d.sentences) for d in docs):,} sentences, {megabytes:.2f} MB of Document.text\n"
    )
    print("| stage | chunks | seconds | tokens/s | x encoder-only | target |")
    print("|---|---:|---:|---:|---:|---|")
    row("encoder-only pass (fp32)", "", f"{enc_s:.1f}", n_tok, enc_s, enc_s)
    mb_s = megabytes / link_s
    row(f"linker alone, full MeSH ({mb_s:.1f} MB/s, {sum(map(len, mentions)):,} mentions)", "",
        f"{link_s:.2f}", n_tok, link_s, enc_s, f">= 5 MB/s: {'ok' if mb_s >= 5 else 'MISSED'}")  # fmt: skip
    row("prepare = encode + link (shared)", "", f"{prep_s:.1f}", n_tok, prep_s, enc_s)
    strategy_rows(pipeline, prepared, True, prep_s, enc_s, n_tok)
    strategy_rows(pipeline, prepared, False, prep_s, enc_s, n_tok)
    if not args.no_semantic:
        semantic_rows(pipeline, docs, [replace(p, tokens=None) for p in prepared], n_tok, enc_s,
                      args.repeats)  # fmt: skip
    if not args.no_bf16:
        bf16 = DocumentEncoder(replace(cfg.encoder, precision="bf16"))
        bf16.encode_document(texts[0][:2000])
        _, bf16_s = timed(lambda: bf16.encode_documents(texts, progress=False))
        row("encoder-only pass (bf16 autocast)", "", f"{bf16_s:.1f}", n_tok, bf16_s, enc_s)

    print(
        "\nprepare = the encoder-only pass + the linker pass (what Pipeline.prepare runs), "
        "measured once and shared: late-type rows (late, structure_aware, dp_sentences, "
        "multilevel) show prepare + the strategy's own chunk() time (boundary scoring, "
        "decoding, pooling, chunk records). fixed / semantic: their own chunk() on documents "
        "without token embeddings (fixed: tokenise + encode each chunk on its own; semantic: "
        "see the row labels); their mentions come from the shared pass. tokens/s counts the documents' "
        "word-pieces."
    )
    print(
        f"\nAutomaton: {linker.num_keys:,} keys built in {linker.build_seconds:.1f} s "
        f"(Pipeline construction incl. thesaurus load and model load: {build_s:.1f} s). "
        f"Encoder {encoder.model_id}, window {encoder.window}, overlap "
        f"{encoder.config.overlap}, batch {encoder.config.batch_size}."
    )
    print(
        f"BLAS: OPENBLAS_CORETYPE={blas_kernel()}; torch {torch.__version__}, "
        f"threads {torch.get_num_threads()}, cpus {os.cpu_count()}; load average "
        f"{load_start:.1f} at start, {os.getloadavg()[0]:.1f} at end; "
        f"{time.strftime('%Y-%m-%d %H:%M:%S %z')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
