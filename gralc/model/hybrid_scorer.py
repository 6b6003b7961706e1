"""Graph-guided hybrid retrieval score (Eq. 9) with a learnable beta, and the learned lexical
term: ``score = (1 - w_lex) * (beta * cos + (1 - beta) * kg_prox) + w_lex * lex``, i.e.
w_cos = (1 - w_lex) beta, w_kg = (1 - w_lex)(1 - beta), three non-negative weights summing
to 1, with ``lex`` a chunk's BM25 score divided by the query's best BM25 score among the
chunks scored (:func:`normalise_lexical`)."""

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

    q_ent (Q, Eq, d') with q_mask (Q, Eq) bool, or float weights >= 0 (a weighted mean, e.g.
    each concept's IDF: ``scoring.kg_prox_idf``); the chunks' entity table: ``entity_vectors``
    (M, d'), ``entity_chunk`` (M,) the chunk row of each. Returns (Q, n_chunks), through one
    scatter-max over all chunk entities (memory Q * Eq * (M + n_chunks), never padded per chunk).

    >>> q = torch.tensor([[[1.0, 0.0]]]); mask = torch.tensor([[True]])
    >>> kg_proximity(q, mask, torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 1]), 3)
    tensor([[1., 0., 0.]])
    """
    n_q, width = q_mask.shape
    best = q_ent.new_full((n_q, width, n_chunks), float("-inf"))
    if entity_vectors.shape[0]:
        sim = F.normalize(q_ent, dim=-1) @ F.normalize(entity_vectors, dim=-1).T  # (Q, Eq, M)
        index = entity_chunk.to(sim.device).expand_as(sim)
        best = best.scatter_reduce(2, index, sim, reduce="amax", include_self=True)
    if q_mask.dtype == torch.bool:
        best = torch.where(torch.isfinite(best) & q_mask[:, :, None], best, torch.zeros_like(best))
        return best.sum(dim=1) / q_mask.sum(dim=1).clamp(min=1)[:, None]
    w = q_mask.to(best.dtype).clamp(min=0)
    best = torch.where(torch.isfinite(best) & (w > 0)[:, :, None], best, torch.zeros_like(best))
    return (best * w[:, :, None]).sum(dim=1) / w.sum(dim=1).clamp(min=1e-12)[:, None]



def logit_parameter(value: float, learn: bool, name: str) -> nn.Parameter:
    """A weight in (0, 1) learned as its logit: a 0-d parameter ``log(value / (1 - value))``;
    ``name`` names the setting in the error for a value outside (0, 1).

    Example: ``torch.sigmoid(logit_parameter(0.7, True, "beta_init"))`` is 0.7 (to float
    precision)."""
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie in (0, 1), got {value}")
    return nn.Parameter(torch.tensor(math.log(value / (1.0 - value))), requires_grad=learn)

class HybridScorer(nn.Module):
    """score = beta * cos(q, c) + (1 - beta) * kg_prox, beta = sigmoid(logit) in (0, 1).

    ``forward(q (Q, d), c (K, d), q_ent (Q, Eq, d'), q_mask (Q, Eq), entity_vectors (M, d'),
    entity_chunk (M,)) -> (score, cos, kg_prox)``, each (Q, K) (see :func:`kg_proximity`).

    >>> hs = HybridScorer(beta_init=0.7)
    >>> round(float(hs.beta.detach()), 4)
    0.7
    """

    def __init__(self, beta_init: float = 0.7, learn_beta: bool = True) -> None:
        super().__init__()
        self.beta_logit = logit_parameter(beta_init, learn_beta, "beta_init")

    @property
    def beta(self) -> torch.Tensor:
        """beta = sigmoid(``beta_logit``), a 0-d tensor in (0, 1)."""
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
        """``(score, cos, kg_prox)``, each (Q, K): see the class docstring."""
        cos = F.normalize(q, dim=-1) @ F.normalize(c, dim=-1).T
        prox = kg_proximity(q_ent, q_mask, entity_vectors, entity_chunk, c.shape[0])
        return self.beta * cos + (1.0 - self.beta) * prox, cos, prox


def normalise_lexical(lexical: torch.Tensor) -> torch.Tensor:
    """(Q, K) raw BM25 -> (Q, K) in [0, 1]: each row divided by its maximum (a query sharing
    no term with any chunk: all 0). BM25 is >= 0, so the best chunk gets 1.

    >>> normalise_lexical(torch.tensor([[2.0, 1.0], [0.0, 0.0]]))
    tensor([[1.0000, 0.5000],
            [0.0000, 0.0000]])
    """
    lexical = lexical.clamp(min=0)
    return lexical / lexical.amax(dim=1, keepdim=True).clamp(min=1e-12)


class LexicalTerm(nn.Module):
    """``w_lex = sigmoid(logit)`` in (0, 1): ``forward(dense (Q, K), lexical (Q, K) raw BM25)
    -> (score (Q, K), lex (Q, K) normalised)`` with ``score = (1 - w_lex) dense + w_lex lex``.

    >>> lex = LexicalTerm(weight_init=0.5)
    >>> score, norm = lex(torch.tensor([[0.2, 0.4]]), torch.tensor([[3.0, 0.0]]))
    >>> score.detach(), norm
    (tensor([[0.6000, 0.2000]]), tensor([[1., 0.]]))
    """

    def __init__(self, weight_init: float = 0.5, learn: bool = True) -> None:
        super().__init__()
        self.logit = logit_parameter(weight_init, learn, "lexical_init")

    @property
    def weight(self) -> torch.Tensor:
        """w_lex = sigmoid(``logit``), a 0-d tensor in (0, 1)."""
        return torch.sigmoid(self.logit)

    def forward(
        self, dense: torch.Tensor, lexical: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(score, lex)``, each (Q, K): ``dense`` mixed with the row-normalised ``lexical``
        (:func:`normalise_lexical`); ValueError when their shapes differ."""
        if lexical.shape != dense.shape:
            raise ValueError(
                f"lexical scores have shape {tuple(lexical.shape)}, the dense scores "
                f"{tuple(dense.shape)}: one BM25 score per (question, chunk)"
            )
        lex = normalise_lexical(lexical.to(dense.dtype))
        w = self.weight
        return (1.0 - w) * dense + w * lex, lex
