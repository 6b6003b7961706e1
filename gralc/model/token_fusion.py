"""Token-level KG fusion: h'_i = h_i + lambda * MLP(u'_j) for tokens inside entity j (Eq. 4)."""

from __future__ import annotations

import torch
from torch import nn


class TokenFusion(nn.Module):
    """The MLP projection d' -> d and the lambda gate.

    ``forward(h (N, d), u_prime (C, d'), token_entity (2, M))`` where ``token_entity[0]`` are
    token rows of ``h`` and ``token_entity[1]`` the concept rows of ``u_prime`` whose mention
    covers that token. A token covered by several mentions gets their mean. Tokens outside
    every mention are returned unchanged. ``lambda`` is a scalar (init 0.1) or, with
    ``per_dimension=True``, a (d,) vector.

    >>> fusion = TokenFusion(concept_dim=4, token_dim=8)
    >>> fusion(torch.zeros(3, 8), torch.ones(2, 4), torch.tensor([[1], [0]])).shape
    torch.Size([3, 8])
    """

    def __init__(
        self,
        concept_dim: int,
        token_dim: int,
        hidden_dim: int = 384,
        lambda_init: float = 0.1,
        per_dimension: bool = False,
        dropout: float = 0.1,
        learn_lambda: bool = True,
    ) -> None:
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(concept_dim, hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, token_dim),
        )
        shape = (token_dim,) if per_dimension else (1,)
        self.lam = nn.Parameter(torch.full(shape, float(lambda_init)), requires_grad=learn_lambda)

    def forward(
        self, h: torch.Tensor, u_prime: torch.Tensor, token_entity: torch.Tensor
    ) -> torch.Tensor:
        """h' (N, d): ``h`` plus ``lambda`` times the mean projected u' of the mentions covering
        each token (Eq. 4)."""
        if token_entity.numel() == 0:
            return h
        tok, ent = token_entity[0], token_entity[1]
        projected = self.mlp(u_prime)  # (C, d)
        summed = h.new_zeros(h.shape).index_add(0, tok, projected[ent])
        counts = h.new_zeros(h.shape[0]).index_add(0, tok, h.new_ones(tok.shape[0]))
        delta = summed / counts.clamp(min=1.0).unsqueeze(1)
        return h + self.lam * delta
