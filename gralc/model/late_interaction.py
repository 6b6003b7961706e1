"""Late interaction in a chunk's score (ColBERT-style MaxSim over the chunk's token vectors).

A chunk is pooled into one vector, but the whole-document pass gives a vector per token:
a question can also be matched word-piece by word-piece. ``maxsim(q, chunk)`` = mean over
the question's word-pieces of their best cosine with a token vector of the chunk (the
enriched H' the chunk was pooled from), and a chunk's score becomes
``(1 - m) * score(chunk) + m * maxsim`` (after sentence evidence). ``m``
(``scoring.late_interaction``) is chosen by cross-validation, not learned, and is applied at
inference only (an export may set it: ``gralc export scoring.late_interaction=...``); token vectors are
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
    from ``first_row``.

    >>> vectors, rows = chunk_tokens(torch.ones(4, 2), [(0, 1), (1, 4)], first_row=10)
    >>> vectors.shape, rows.tolist()
    (torch.Size([4, 2]), [10, 11, 11, 11])
    """
    if not spans:
        return h_prime.new_zeros(0, h_prime.shape[1]), torch.zeros(0, dtype=torch.long, device=h_prime.device)
    vecs = torch.cat([h_prime[s:e] for s, e in spans])
    rows = torch.cat([torch.full((e - s,), first_row + i, dtype=torch.long, device=h_prime.device)
                      for i, (s, e) in enumerate(spans)])
    unit = F.normalize(vecs.float(), dim=-1)
    return (unit, rows) if exact else (unit.detach().half().float(), rows)


def piece_best(pieces: torch.Tensor, token_vectors: torch.Tensor, token_chunk: torch.Tensor,
               n_chunks: int) -> torch.Tensor:
    """(L, K): each of one question's word-pieces' (``pieces`` (L, d)) best cosine with a
    token of each chunk (``token_vectors`` (T, d) unit rows, ``token_chunk`` (T,) their chunk
    row); a chunk without tokens gets -1.

    >>> piece_best(torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 0]), 2)
    tensor([[ 1., -1.]])
    """
    q = F.normalize(pieces.float(), dim=-1)
    return best_per_chunk(q @ token_vectors.to(q.device).T, token_chunk, n_chunks)


def best_per_chunk(sim: torch.Tensor, token_chunk: torch.Tensor, n_chunks: int) -> torch.Tensor:
    """(L, K): the largest of each row of ``sim`` (L, T) (word-piece x token similarities)
    among each chunk's tokens (``token_chunk`` (T,) their chunk row); -1 for a chunk without
    tokens. The one reduction of every MaxSim: exact, or from compressed token codes
    (:mod:`gralc.retrieval.trained.token_store`).

    >>> best_per_chunk(torch.tensor([[0.1, 0.9, 0.5]]), torch.tensor([0, 0, 1]), 3)
    tensor([[ 0.9000,  0.5000, -1.0000]])
    """
    best = torch.full((sim.shape[0], n_chunks), -1.0, dtype=sim.dtype, device=sim.device)
    rows = token_chunk.to(sim.device).expand(sim.shape[0], -1)
    return best.scatter_reduce(1, rows, sim, reduce="amax", include_self=True)


def maxsim(q_tokens: torch.Tensor, q_mask: torch.Tensor, token_vectors: torch.Tensor,
           token_chunk: torch.Tensor, n_chunks: int) -> torch.Tensor:
    """(Q, K) mean over each question's word-pieces (``q_tokens`` (Q, L, d), ``q_mask``
    (Q, L) bool) of :func:`piece_best`; a question without word-pieces scores 0.

    >>> maxsim(torch.tensor([[[1.0, 0.0]]]), torch.tensor([[True]]), torch.tensor([[1.0, 0.0], [0.0, 1.0]]),
    ...        torch.tensor([0, 1]), 2)
    tensor([[1., 0.]])
    """
    out = []
    for i in range(q_tokens.shape[0]):  # one question at a time: (L, T) similarities
        pieces = q_tokens[i, q_mask[i]]
        out.append(piece_best(pieces, token_vectors, token_chunk, n_chunks).mean(0) if pieces.shape[0]
                   else q_tokens.new_zeros(n_chunks, dtype=torch.float32))
    return torch.stack(out) if out else q_tokens.new_zeros(0, n_chunks, dtype=torch.float32)


def with_late_interaction(scores: torch.Tensor, late: torch.Tensor, weight: float) -> torch.Tensor:
    """``(1 - weight) * scores + weight * late``, (Q, K).

    >>> with_late_interaction(torch.tensor([[0.4]]), torch.tensor([[0.8]]), 0.25)
    tensor([[0.5000]])
    """
    return (1.0 - weight) * scores + weight * late


__all__ = ["best_per_chunk", "chunk_tokens", "maxsim", "piece_best", "with_late_interaction"]
