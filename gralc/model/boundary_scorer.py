"""Learnable boundary score b_i = a1*b_struct + a2*b_sem + a3*b_entity (Eq. 5-8)."""

from __future__ import annotations

import torch
from torch import nn


class BoundaryScorer(nn.Module):
    """alpha (3,), gamma and tau as parameters, initialised to the paper's values.

    ``forward(b_struct (N,), b_sem (N,), entity_cross (N,) bool) -> b (N,)`` with
    ``b = a1*b_struct + a2*b_sem - a3*gamma*entity_cross``.
    ``cut_probability(b) -> p (N,)``: the soft boundary ``sigmoid((b - tau) / T)`` used in
    training; at inference the hard decoders (peak / DP) use the learned alpha, gamma, tau.

    >>> s = BoundaryScorer(alpha=(0.5, 0.3, 1.0), gamma=0.5)
    >>> s(torch.tensor([1.0, 0.0]), torch.tensor([0.2, 0.4]), torch.tensor([False, True])).detach()
    tensor([ 0.5600, -0.3800])
    """

    def __init__(
        self,
        alpha: tuple[float, float, float] = (0.5, 0.3, 1.0),
        gamma: float = 0.5,
        tau: float = 0.3,
        temperature: float = 0.05,
        learn_alpha: bool = True,
        learn_gamma: bool = True,
        learn_tau: bool = True,
    ) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.tensor(alpha, dtype=torch.float32), requires_grad=learn_alpha)
        self.gamma = nn.Parameter(torch.tensor(float(gamma)), requires_grad=learn_gamma)
        self.tau = nn.Parameter(torch.tensor(float(tau)), requires_grad=learn_tau)
        self.temperature = temperature

    def forward(
        self, b_struct: torch.Tensor, b_sem: torch.Tensor, entity_cross: torch.Tensor
    ) -> torch.Tensor:
        """Boundary scores b (N,) from ``b_struct`` (N,), ``b_sem`` (N,) and ``entity_cross`` (N,)
        bool (Eq. 8)."""
        b_entity = -self.gamma * entity_cross.to(b_struct.dtype)
        return self.alpha[0] * b_struct + self.alpha[1] * b_sem + self.alpha[2] * b_entity

    def cut_probability(self, b: torch.Tensor) -> torch.Tensor:
        """Soft cut probabilities ``sigmoid((b - tau) / temperature)``, same shape as ``b``."""
        return torch.sigmoid((b - self.tau) / self.temperature)

    def learned_values(self) -> dict[str, float | list[float]]:
        """The current ``alpha`` (3 floats), ``gamma`` and ``tau`` as floats (logged and saved)."""
        return {
            "alpha": [float(a) for a in self.alpha.detach()],
            "gamma": float(self.gamma.detach()),
            "tau": float(self.tau.detach()),
        }
