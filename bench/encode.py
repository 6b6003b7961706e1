"""Full-document encoding throughput (tokens/s) of DocumentEncoder, fp32 vs bf16.

Usage: python bench/encode.py [N_TEXTS=8] [SENTENCES_PER_TEXT=60]
Synthetic biomedical-style texts (no data needed); each of ~60 sentences is ~1k word pieces,
so the default window (510) and overlap (128) exercise the sliding-window path.
"""

from __future__ import annotations

import os
import re
import sys
import time

import numpy as np
import torch

from gralc.encoding import DocumentEncoder, EncoderConfig
from gralc.experiments.training_cost import make_texts  # the one synthetic text maker


def blas_kernel() -> str:
    torch_blas = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    try:
        np_blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except Exception:  # older numpy without mode="dicts"
        np_blas = "unknown"
    return (
        f"torch BLAS={torch_blas.group(1) if torch_blas else 'unknown'}, numpy BLAS={np_blas}, "
        f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'default')}, "
        f"torch threads={torch.get_num_threads()}"
    )


def main() -> None:
    n_texts = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    n_sentences = int(sys.argv[2]) if len(sys.argv) > 2 else 60
    texts = make_texts(n_texts, n_sentences)
    rows = []
    for precision in ("fp32", "bf16"):
        encoder = DocumentEncoder(EncoderConfig(device="cpu", precision=precision))
        encoder.encode_document(texts[0][:2000])  # warm-up
        start = time.perf_counter()
        out = encoder.encode_documents(texts, progress=False)
        seconds = time.perf_counter() - start
        n_tokens = sum(te.n_tokens for te in out)
        n_windows = sum(len(te.windows) for te in out)
        rows.append((precision, n_texts, n_tokens, n_windows, seconds, n_tokens / seconds))
    print(
        f"Encoder: {encoder.model_id}, window={encoder.window}, overlap={encoder.config.overlap}, "
        f"batch_size={encoder.config.batch_size}; {blas_kernel()}\n"
    )
    print("| precision | texts | tokens | windows | seconds | tokens/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for precision, n, tok, win, sec, rate in rows:
        print(f"| {precision} | {n} | {tok} | {win} | {sec:.2f} | {rate:.0f} |")


if __name__ == "__main__":
    main()
