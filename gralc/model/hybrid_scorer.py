"""Graph-guided hybrid retrieval score (Eq. 9) with a learnable beta."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def kg_proximity(
    q_ent: torch.Tensor, q_mask: torch.Tensor, c_ent: torch.Tensor, c_mask: torch.Tensor
) -> torch.Tensor:
    """Mean over query entities of the max cosine to the chunk's entities.

    q_ent (Q, Eq, d) with q_mask (Q, Eq) bool; c_ent (K, Ec, d) with c_mask (K, Ec) bool.
    Returns (Q, K); 0 where the query or the chunk has no entity.
    """
    qn, cn = F.normalize(q_ent, dim=-1), F.normalize(c_ent, dim=-1)
    sim = torch.einsum("qad,kbd->qkab", qn, cn)  # (Q, K, Eq, Ec)
    sim = sim.masked_fill(~c_mask[None, :, None, :], float("-inf"))
    best = sim.max(dim=-1).values  # (Q, K, Eq)
    has_c = c_mask.any(dim=1)[None, :, None]
    best = torch.where(has_c & q_mask[:, None, :], best, torch.zeros_like(best))
    n_q = q_mask.sum(dim=1).clamp(min=1)[:, None]
    return best.sum(dim=-1) / n_q


class HybridScorer(nn.Module):
    """score = beta * cos(q, c) + (1 - beta) * kg_prox(E_q, E_c), beta = sigmoid(logit) in (0, 1).

    ``forward(q (Q, d), c (K, d), q_ent, q_mask, c_ent, c_mask) -> (Q, K)``; without entity
    tensors it returns the cosine term alone (beta applied).
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
        q_ent: torch.Tensor | None = None,
        q_mask: torch.Tensor | None = None,
        c_ent: torch.Tensor | None = None,
        c_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        cos = F.normalize(q, dim=-1) @ F.normalize(c, dim=-1).T
        if q_ent is None or c_ent is None:
            return self.beta * cos
        prox = kg_proximity(q_ent, q_mask, c_ent, c_mask)
        return self.beta * cos + (1.0 - self.beta) * prox
