"""Per-document training features, computed ONCE with the frozen encoder and cached.

Everything the learnable GraLC model needs about a document, as tensors: token vectors H,
the fixed boundary signals (Eq. 5-7), the hard-cut constraints, the concept graph G_k with
concept embeddings u, and which tokens lie inside which concept's mention. Training then never
touches the encoder, the linker or the knowledge base again, except with LoRA adapters on the
encoder (``lora.enabled``): :func:`adapted_features` then recomputes the two encoder-dependent
fields, H and b_sem, at every step (concept embeddings u stay the base encoder's).
"""

from __future__ import annotations

from dataclasses import replace
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
from gralc.knowledge.concept_graph import build_concept_graph
from gralc.knowledge.mention import EntityMention, token_span
from gralc.model.doc_features import DocFeatures  # the model's input type (re-exported)

if TYPE_CHECKING:
    from gralc.encoding.lora import LoraEncoder
    from gralc.knowledge.concept_embeddings import ConceptEmbedder
    from gralc.pipeline import Pipeline


def mention_token_rows(
    mentions: list[EntityMention], offsets: np.ndarray, concept_row: dict[str, int]
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(token_entity (2, T), mention_tokens (M, 3))`` for mentions with at least one token."""
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
    """Features of one prepared document (its ``tokens`` must be filled)."""
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
    ``window`` (``BoundaryConfig.window``, as :func:`doc_features`); all else is ``f``'s."""
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
    """:func:`doc_features` for every document, in order."""
    return [doc_features(p, pipeline, concept_embedder, boundary_cfg) for p in prepared_docs]


def record_types() -> list[type]:
    """The GraLC record classes a feature cache may hold (and nothing else)."""
    from gralc.documents import model as dm
    from gralc.knowledge.mention import EntityMention
    from gralc.training.datamodule import TrainingData
    from gralc.training.pairs import Positives, TrainingExample

    return [DocFeatures, TrainingData, TrainingExample, Positives, EntityMention,
            *(getattr(dm, n) for n in ("Document", "Section", "Paragraph", "Sentence", "Citation",
                                       "CrossRef", "ListBlock", "Caption", "Reference"))]


def save_features(payload: object, path) -> None:
    """Write ``payload`` (tensors, plain values, :func:`record_types`) as the folder ``path``:
    ``records.json`` + ``tensors.safetensors``, renamed into place in one step."""
    from gralc.record_store import save_records

    save_records(payload, path, record_types())


def load_features(path) -> object:
    """Inverse of :func:`save_features`; nothing is unpickled, a record type outside
    :func:`record_types` or a damaged folder is a ``ValueError`` naming ``path``."""
    from gralc.record_store import load_records

    return load_records(path, record_types(), what="training feature cache")
