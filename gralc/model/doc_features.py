"""The model's input for one document (:class:`DocFeatures`): token vectors, boundary signals,
concept graph and mention tables as tensors, and how they are built (:func:`doc_features`,
once per document with the frozen encoder; :func:`adapted_features` with LoRA adapters)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from gralc.chunking.base import PreparedDocument
from gralc.chunking.boundaries import (
    BoundaryConfig,
    entity_crossing_mask,
    semantic_signal,
    structural_signal,
    word_start_mask,
)
from gralc.documents.model import Document
from gralc.knowledge.concept_graph import build_concept_graph
from gralc.knowledge.mention import EntityMention, token_span

if TYPE_CHECKING:
    from gralc.encoding.lora import LoraEncoder
    from gralc.knowledge.concept_embeddings import ConceptEmbedder
    from gralc.pipeline import Pipeline


@dataclass
class DocFeatures:
    """One document. N tokens of dim d, C concepts of dim d_k, E graph edges, M mentions.

    ``H`` (N, d) float32; ``offsets`` (N, 2) int64 char spans in ``doc.text``; ``b_struct``,
    ``b_sem`` (N,) float32 (b_sem from H with ``BoundaryConfig.window``); ``entity_cross``,
    ``word_start`` (N,) bool; ``concept_ids`` (C,) node ids of G_k; ``u`` (C, d_k);
    ``edge_index`` (2, E) int64; ``token_entity`` (2, T) int64 pairs (token row, concept row)
    for every token inside a mention; ``mention_tokens`` (M, 3) int64 rows
    (token_start, token_end, concept row); ``doc`` and ``mentions`` build Chunk records.

    Example: ``doc_features(prepared, pipeline, embedder, BoundaryConfig()).H.shape`` -> ``(N, 384)``
    with MiniLM: one row per word-piece of the document.
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
        """Number of tokens N (rows of ``H``)."""
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


def mention_token_rows(
    mentions: list[EntityMention], offsets: np.ndarray, concept_row: dict[str, int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(token_entity (2, T), mention_tokens (M, 3))`` for mentions with at least one token.

    >>> from gralc.knowledge.mention import EntityMention
    >>> te, mt = mention_token_rows([EntityMention(0, 9, "D008687", "Metformin", "Metformin")],
    ...                             np.array([[0, 3], [3, 9], [10, 15]]), {"D008687": 0})
    >>> te.tolist(), mt.tolist()
    ([[0, 1], [0, 0]], [[0, 2, 0]])
    """
    pairs: list[tuple[int, int]] = []
    rows: list[tuple[int, int, int]] = []
    for m in mentions:
        s, e = token_span(offsets, m.start, m.end)
        if e <= s:
            continue
        c = concept_row[m.concept_id]
        rows.append((s, e, c))
        pairs.extend((t, c) for t in range(s, e))
    token_entity = torch.tensor(pairs, dtype=torch.long).reshape(-1, 2).T.contiguous()
    return token_entity, torch.tensor(rows, dtype=torch.long).reshape(-1, 3)


def doc_features(
    prepared: PreparedDocument,
    pipeline: Pipeline,
    concept_embedder: ConceptEmbedder,
    boundary_cfg: BoundaryConfig,
) -> DocFeatures:
    """Features of one prepared document (its ``tokens`` must be filled).

    Example: ``doc_features(pipeline.prepare(docs)[0], pipeline, embedder, BoundaryConfig()).concept_ids``
    -> the concepts linked in the first document (the nodes of its concept graph).
    """
    doc, tokens = prepared.doc, prepared.tokens
    if tokens is None or tokens.n_tokens == 0:
        raise ValueError(
            f"document {doc.id!r} has no token embeddings: prepare it with Pipeline.prepare"
        )
    offsets = np.asarray(tokens.offsets)
    H = tokens.vectors.detach().float().cpu()
    graph = build_concept_graph(
        prepared.mentions,
        doc.sentences,
        pipeline.knowledge_base,
        add_neighbours=pipeline.config.knowledge.add_neighbours,
    )
    concept_row = {cid: i for i, cid in enumerate(graph.concept_ids)}
    if graph.concept_ids:
        u = concept_embedder.embed_ids(graph.concept_ids, pipeline.vocabulary).float()
    else:
        u = torch.zeros(0, pipeline.encoder.dim)
    token_entity, mention_tokens = mention_token_rows(prepared.mentions, offsets, concept_row)
    return DocFeatures(
        doc_id=doc.id,
        H=H,
        offsets=torch.from_numpy(offsets.astype(np.int64)),
        b_struct=structural_signal(doc, offsets, boundary_cfg.struct_weights).float(),
        b_sem=semantic_signal(H, boundary_cfg.window).float(),
        entity_cross=entity_crossing_mask(prepared.mentions, offsets, len(offsets)),
        word_start=word_start_mask(offsets),
        concept_ids=list(graph.concept_ids),
        u=u,
        edge_index=graph.edge_index.long(),
        token_entity=token_entity,
        mention_tokens=mention_tokens,
        doc=doc,
        mentions=list(prepared.mentions),
    )


def adapted_features(f: DocFeatures, encoder: LoraEncoder, window: int) -> DocFeatures:
    """A copy of ``f`` whose token vectors H (N, d) come from the LoRA-adapted ``encoder``
    (with gradient when grad mode is on) and whose b_sem (N,) is recomputed from them with
    ``window`` (``BoundaryConfig.window``, as :func:`doc_features`); all else is ``f``'s.

    Example: ``adapted_features(f, lora_encoder, 16).H`` -> the document's token vectors re-encoded
    through the LoRA adapters (``b_sem`` recomputed from them).
    """
    H = encoder.encode_document(f.doc.text).to(f.H.device)
    if H.shape != f.H.shape:
        raise ValueError(
            f"document {f.doc_id!r}: the adapted encoder gives {tuple(H.shape)} token vectors, "
            f"the cached features {tuple(f.H.shape)}: the features were built with another "
            "encoder or tokenizer (check pipeline.encoder)"
        )
    return replace(f, H=H, b_sem=semantic_signal(H, window).float())


def build_features(
    pipeline: Pipeline,
    prepared_docs: list[PreparedDocument],
    concept_embedder: ConceptEmbedder,
    boundary_cfg: BoundaryConfig,
) -> list[DocFeatures]:
    """:func:`doc_features` for every document, in order.

    Example: ``[f.doc_id for f in build_features(pipeline, prepared, embedder, BoundaryConfig())]``
    -> the prepared documents' ids, in order.
    """
    return [doc_features(p, pipeline, concept_embedder, boundary_cfg) for p in prepared_docs]
