"""Graph-guided hybrid retrieval score (Eq. 9) with a learnable beta."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def kg_proximity(
    q_ent: torch.Tensor,
    q_mask: torch.Tensor,
    entity_vectors: torch.Tensor,
    entity_chunk: torch.Tensor,
    n_chunks: int,
) -> torch.Tensor:
    """Mean over each query's entities of the max cosine to a chunk's entities (0 where the
    query or the chunk has none): the one kg_prox of training, validation and inference.

    q_ent (Q, Eq, d') with q_mask (Q, Eq) bool; the chunks' entity table: ``entity_vectors``
    (M, d'), ``entity_chunk`` (M,) the chunk row of each. Returns (Q, n_chunks), through one
    scatter-max over all chunk entities (memory Q * Eq * (M + n_chunks), never padded per chunk).
    """
    n_q, width = q_mask.shape
    best = q_ent.new_full((n_q, width, n_chunks), float("-inf"))
    if entity_vectors.shape[0]:
        sim = F.normalize(q_ent, dim=-1) @ F.normalize(entity_vectors, dim=-1).T  # (Q, Eq, M)
        index = entity_chunk.to(sim.device).expand_as(sim)
        best = best.scatter_reduce(2, index, sim, reduce="amax", include_self=True)
    best = torch.where(torch.isfinite(best) & q_mask[:, :, None], best, torch.zeros_like(best))
    return best.sum(dim=1) / q_mask.sum(dim=1).clamp(min=1)[:, None]


class HybridScorer(nn.Module):
    """score = beta * cos(q, c) + (1 - beta) * kg_prox, beta = sigmoid(logit) in (0, 1).

    ``forward(q (Q, d), c (K, d), q_ent (Q, Eq, d'), q_mask (Q, Eq), entity_vectors (M, d'),
    entity_chunk (M,)) -> (score, cos, kg_prox)``, each (Q, K) (see :func:`kg_proximity`).
    """

    def __init__(self, beta_init: float = 0.7, learn_beta: bool = True) -> None:
        super().__init__()
        if not 0.0 < beta_init < 1.0:
            raise ValueError(f"beta_init must lie in (0, 1), got {beta_init}")
        logit = math.log(beta_init / (1.0 - beta_init))
        self.beta_logit = nn.Parameter(torch.tensor(logit), requires_grad=learn_beta)

    @property
    def beta(self) -> torch.Tensor:
        return torch.sigmoid(self.beta_logit)

    def forward(
        self,
        q: torch.Tensor,
        c: torch.Tensor,
        q_ent: torch.Tensor,
        q_mask: torch.Tensor,
        entity_vectors: torch.Tensor,
        entity_chunk: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cos = F.normalize(q, dim=-1) @ F.normalize(c, dim=-1).T
        prox = kg_proximity(q_ent, q_mask, entity_vectors, entity_chunk, c.shape[0])
        return self.beta * cos + (1.0 - self.beta) * prox, cos, prox
