"""The model's input for one document (:class:`DocFeatures`): token vectors, boundary signals,
concept graph and mention tables as tensors. Built by :mod:`gralc.training.features`."""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

from gralc.chunking.base import PreparedDocument
from gralc.documents.model import Document
from gralc.knowledge.mention import EntityMention


@dataclass
class DocFeatures:
    """One document. N tokens of dim d, C concepts of dim d_k, E graph edges, M mentions.

    ``H`` (N, d) float32; ``offsets`` (N, 2) int64 char spans in ``doc.text``; ``b_struct``,
    ``b_sem`` (N,) float32 (b_sem from H with ``BoundaryConfig.window``); ``entity_cross``,
    ``word_start`` (N,) bool; ``concept_ids`` (C,) node ids of G_k; ``u`` (C, d_k);
    ``edge_index`` (2, E) int64; ``token_entity`` (2, T) int64 pairs (token row, concept row)
    for every token inside a mention; ``mention_tokens`` (M, 3) int64 rows
    (token_start, token_end, concept row); ``doc`` and ``mentions`` build Chunk records.
    """

    doc_id: str
    H: torch.Tensor
    offsets: torch.Tensor
    b_struct: torch.Tensor
    b_sem: torch.Tensor
    entity_cross: torch.Tensor
    word_start: torch.Tensor
    concept_ids: list[str]
    u: torch.Tensor
    edge_index: torch.Tensor
    token_entity: torch.Tensor
    mention_tokens: torch.Tensor
    doc: Document
    mentions: list[EntityMention]

    @property
    def n_tokens(self) -> int:
        return int(self.H.shape[0])

    @property
    def prepared(self) -> PreparedDocument:
        """A token-less PreparedDocument, enough for :func:`gralc.chunking.base.make_chunk`."""
        return PreparedDocument(doc=self.doc, tokens=None, mentions=self.mentions)

    def char_span(self, s: int, e: int) -> tuple[int, int]:
        """Characters ``[start, end)`` of the half-open token span ``[s, e)``."""
        return int(self.offsets[s, 0]), int(self.offsets[e - 1, 1])

    def to(self, device: torch.device | str) -> DocFeatures:
        """This object when already on ``device``, else a copy with every tensor moved."""
        if self.H.device == torch.device(device):
            return self
        moved = {
            f.name: getattr(self, f.name).to(device)
            if isinstance(getattr(self, f.name), torch.Tensor)
            else getattr(self, f.name)
            for f in fields(self)
        }
        return DocFeatures(**moved)
