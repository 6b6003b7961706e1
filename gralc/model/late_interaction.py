"""Late interaction in a chunk's score (ColBERT-style MaxSim over the chunk's token vectors).

A chunk is pooled into one vector, but the whole-document pass gives a vector per token:
a question can also be matched word-piece by word-piece. ``maxsim(q, chunk)`` = mean over
the question's word-pieces of their best cosine with a token vector of the chunk (the
enriched H' the chunk was pooled from), and a chunk's score becomes
``(1 - m) * score(chunk) + m * maxsim`` (after sentence evidence). ``m``
(``model.late_interaction``) is chosen by cross-validation, not learned, and is applied at
inference only (an export may set it: ``gralc.export --late-interaction``); token vectors are
kept in float16 precision, so an index stores them at half size and every path scores alike.
Training may put the same mix in its loss (``optim.late_interaction``): token vectors then
keep their gradient and full precision (``exact=True``).
(Khattab & Zaharia, SIGIR 2020, "ColBERT": late interaction over BERT token vectors.)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def chunk_tokens(h_prime: torch.Tensor, spans: list[tuple[int, int]], first_row: int,
                 exact: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """``(token vectors (T, d), chunk row (T,))`` of every token inside ``spans`` of one
    document's H' (N, d): L2-normalised, rounded to float16 precision (kept as float32) and
    detached, or with ``exact`` (training) float32 with their gradient; chunk rows numbered
    from ``first_row``."""
    if not spans:
        return h_prime.new_zeros(0, h_prime.shape[1]), torch.zeros(0, dtype=torch.long)
    vecs = torch.cat([h_prime[s:e] for s, e in spans])
    rows = torch.cat([torch.full((e - s,), first_row + i, dtype=torch.long)
                      for i, (s, e) in enumerate(spans)])
    unit = F.normalize(vecs.float(), dim=-1)
    return (unit, rows) if exact else (unit.detach().half().float(), rows)


def maxsim(q_tokens: torch.Tensor, q_mask: torch.Tensor, token_vectors: torch.Tensor,
           token_chunk: torch.Tensor, n_chunks: int) -> torch.Tensor:
    """(Q, K) mean over each question's word-pieces (``q_tokens`` (Q, L, d), ``q_mask``
    (Q, L) bool) of the best cosine with a token (``token_vectors`` (T, d) unit rows,
    ``token_chunk`` (T,) their chunk row) of each of the ``n_chunks`` chunks; a chunk
    without tokens gets -1."""
    q = F.normalize(q_tokens.float(), dim=-1)
    rows = token_chunk.to(q.device)
    out = []
    for i in range(q.shape[0]):  # one question at a time: (L, T) similarities
        qi = q[i, q_mask[i]]
        if not qi.shape[0]:
            out.append(q.new_zeros(n_chunks))
            continue
        sim = qi @ token_vectors.to(q.device).T
        best = torch.full((qi.shape[0], n_chunks), -1.0, dtype=sim.dtype, device=q.device)
        best = best.scatter_reduce(1, rows.expand(qi.shape[0], -1), sim, reduce="amax",
                                   include_self=True)
        out.append(best.mean(0))
    return torch.stack(out) if out else q.new_zeros(0, n_chunks)


def with_late_interaction(scores: torch.Tensor, late: torch.Tensor, weight: float) -> torch.Tensor:
    """``(1 - weight) * scores + weight * late``, (Q, K)."""
    return (1.0 - weight) * scores + weight * late


__all__ = ["chunk_tokens", "maxsim", "with_late_interaction"]
