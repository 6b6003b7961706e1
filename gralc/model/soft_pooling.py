"""Differentiable chunk pooling under soft boundaries."""

from __future__ import annotations

import torch


def soft_chunk_pool(
    h: torch.Tensor,
    cut_prob: torch.Tensor,
    spans: list[tuple[int, int]],
    extend: int = 64,
) -> torch.Tensor:
    """Chunk vectors (K, d) from token vectors h (N, d) and cut probabilities (N,).

    ``cut_prob[i]`` is the probability of a boundary just before token i. For a chunk with
    hard span [s, e) and anchor a = (s + e - 1) // 2, token i in [s - extend, e + extend) is
    weighted by the probability that no boundary lies between a and i:
    ``w_i = prod_{k in (min(a,i), max(a,i)]} (1 - p_k) = exp(-|L_i - L_a|)`` with
    ``L = cumsum(log(1 - p))``. The vector is the w-weighted mean. With hard 0/1
    probabilities this is exactly mean pooling over [s, e); gradients reach whatever
    produced ``cut_prob`` (alpha, gamma, tau).

    >>> soft_chunk_pool(torch.tensor([[1.0], [3.0], [5.0]]), torch.tensor([0.0, 0.0, 1.0]), [(0, 2), (2, 3)])
    tensor([[2.0000],
            [5.0000]])
    """
    n = h.shape[0]
    log_keep = torch.log1p(-cut_prob.clamp(max=1.0 - 1e-6))
    cum = torch.cumsum(log_keep, dim=0)
    out = []
    for s, e in spans:
        lo, hi = max(0, s - extend), min(n, e + extend)
        a = (s + e - 1) // 2
        w = torch.exp(-(cum[lo:hi] - cum[a]).abs())
        out.append((w.unsqueeze(1) * h[lo:hi]).sum(0) / w.sum().clamp(min=1e-8))
    return torch.stack(out) if out else h.new_zeros((0, h.shape[1]))
