"""Tensors made inside the training path follow their input's device.

A GPU training run (``trainer.accelerator=gpu``, H200) stopped in validation because
``semantic_signal`` built its index on the CPU while H was on the GPU. The ``meta`` device
reproduces that class of error on a CPU-only machine: a tensor left on the CPU and combined
with ``meta`` tensors raises, so these tests fail if a helper forgets its input's device."""

from __future__ import annotations

import torch

from gralc.chunking.boundaries import semantic_signal
from gralc.model.late_interaction import chunk_tokens


def test_semantic_signal_stays_on_the_input_device():
    H = torch.empty(12, 8, device="meta")
    out = semantic_signal(H, 3)
    assert out.device.type == "meta" and out.shape == (12,)


def test_chunk_tokens_rows_stay_on_the_input_device():
    H = torch.empty(12, 8, device="meta")
    for exact in (True, False):
        vecs, rows = chunk_tokens(H, [(0, 5), (5, 12)], first_row=3, exact=exact)
        assert vecs.device.type == rows.device.type == "meta"
        assert vecs.shape == (12, 8) and rows.shape == (12,)
    vecs, rows = chunk_tokens(H, [], first_row=0)
    assert vecs.device.type == rows.device.type == "meta"
