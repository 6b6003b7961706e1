"""Graph attention over a document's concept graph G_k (paper Eq. 2-3)."""

from __future__ import annotations

import torch
from torch import nn


class GATInfusion(nn.Module):
    """u (C, d_k) concept embeddings, edge_index (2, E) -> u' (C, d').

    ``u'_j = ELU(sum_k alpha_jk W u_k)`` over the neighbours of j (self-loops added, so an
    isolated concept still attends to itself). Heads are concatenated: d' = heads * head_dim.
    Per-document graphs are batched with ``torch_geometric.data.Batch`` (block-diagonal
    edge_index), which this module handles transparently.

    >>> gat = GATInfusion(in_dim=8, out_dim=16, heads=4)
    >>> gat(torch.ones(3, 8), torch.tensor([[0, 1], [1, 0]])).shape
    torch.Size([3, 16])
    """

    def __init__(
        self,
        in_dim: int,
        out_dim: int = 256,
        heads: int = 4,
        dropout: float = 0.1,
        version: str = "gat",
    ) -> None:
        super().__init__()
        if out_dim % heads:
            raise ValueError(f"GAT out_dim {out_dim} must be divisible by heads {heads}")
        # imported here: torch_geometric costs ~1 s to import, which a command that never
        # builds the GAT (gralc --help, a search without it) should not pay
        from torch_geometric.nn import GATConv, GATv2Conv

        conv_cls = {"gat": GATConv, "gatv2": GATv2Conv}.get(version)
        if conv_cls is None:
            raise ValueError(f"GAT version {version!r} unknown; use 'gat' or 'gatv2'")
        # Homogeneous concept graph (C x C), so self-loops are safe here (the bipartite
        # pitfall pyg#1631 does not apply).
        self.conv = conv_cls(
            in_dim, out_dim // heads, heads=heads, concat=True, dropout=dropout, add_self_loops=True
        )
        self.act = nn.ELU()
        self.out_dim = out_dim

    def forward(
        self, u: torch.Tensor, edge_index: torch.Tensor, return_attention: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """u' (C, d') from ``u`` (C, d_k) and ``edge_index`` (2, E); with ``return_attention`` also
        PyG's ``(edge_index, weights)`` of the attention (self-loops included)."""
        if u.shape[0] == 0:
            empty = u.new_zeros((0, self.out_dim))
            return (empty, (edge_index, u.new_zeros((0,)))) if return_attention else empty
        if return_attention:
            out, att = self.conv(u, edge_index, return_attention_weights=True)
            return self.act(out), att
        return self.act(self.conv(u, edge_index))
