"""The question side of the model's input: frozen query vectors and linked query concepts.

:func:`link_questions` is the one place a question's text meets the entity linker and
:func:`question_concepts` the one rule for its concept ids (descriptor ids in order of first
mention); the trained search, the concept match, the graph search of ``gralc search`` and
eval's graph rows all read them from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from gralc.knowledge.concept_graph import build_concept_graph

if TYPE_CHECKING:
    from gralc.knowledge.concept_embeddings import ConceptEmbedder
    from gralc.knowledge.linker import EntityLinker
    from gralc.knowledge.mention import EntityMention
    from gralc.pipeline import Pipeline


def link_questions(linker: EntityLinker, texts: Sequence[str]) -> list[list[EntityMention]]:
    """Each question's entity mentions (a pipeline's ``linker``: longest match, offsets into
    the question). E.g. ``link_questions(pipeline.linker, ["Is ACE2 a receptor?"])``.

    >>> from gralc.knowledge.builtin import builtin_vocabulary_path
    >>> from gralc.knowledge.linker import EntityLinker
    >>> from gralc.knowledge.vocabulary import load_vocabulary
    >>> linker = EntityLinker(load_vocabulary(builtin_vocabulary_path()))
    >>> [m.surface for m in link_questions(linker, ["Does metformin lower HbA1c?"])[0]]
    ['metformin', 'HbA1c']
    """
    return [linker.link(t) for t in texts]


def question_concepts(linker: EntityLinker, texts: Sequence[str]) -> list[list[str]]:
    """Each question's linked concept ids (descriptor ids), in order of first mention, each
    once: the nodes of its concept graph (:func:`~gralc.knowledge.concept_graph.build_concept_graph`
    orders them so). E.g. ``question_concepts(pipeline.linker, ["Where did 2019-nCoV come
    from?"])``: one id, the descriptor that SARS-CoV-2 also links to.

    >>> from gralc.knowledge.builtin import builtin_vocabulary_path
    >>> from gralc.knowledge.linker import EntityLinker
    >>> from gralc.knowledge.vocabulary import load_vocabulary
    >>> question_concepts(EntityLinker(load_vocabulary(builtin_vocabulary_path())), ["Does metformin lower HbA1c?"])
    [['D008687', 'D006442']]
    """
    return [list(dict.fromkeys(m.concept_id for m in ms)) for ms in link_questions(linker, texts)]


class QueryEncoder:
    """Frozen encodings of question-side texts with the pipeline's encoder and linker.

    Example: ``QueryEncoder(pipeline, embedder).encode(["What limits adherence?"])`` -> the
    questions' frozen vectors (1, 384) with MiniLM.
    """

    def __init__(self, pipeline: Pipeline, concept_embedder: ConceptEmbedder) -> None:
        self.pipeline, self.embedder = pipeline, concept_embedder

    def encode(self, texts: list[str]) -> torch.Tensor:
        """(Q, d) float32 query vectors of ``texts`` (the encoder's query prefix applied)."""
        return (
            self.pipeline.encoder.encode_queries(texts).float()
            if texts
            else torch.zeros(0, self.pipeline.encoder.dim)
        )

    def concepts(self, text: str) -> tuple[list[str], torch.Tensor, torch.Tensor]:
        """Linked concept ids, u (Cq, d_k) and the query's concept graph edges (2, Eq)."""
        return self.concepts_batch([text])[0]

    def concepts_batch(self, texts: list[str]) -> list[tuple[list[str], torch.Tensor, torch.Tensor]]:
        """:meth:`concepts` of several questions; the concepts not yet embedded are embedded
        together (one encoder batch, not one per question)."""
        graphs = [build_concept_graph(ms, [(0, len(t))], self.pipeline.knowledge_base)
                  for t, ms in zip(texts, link_questions(self.pipeline.linker, texts))]
        every = list(dict.fromkeys(c for g in graphs for c in g.concept_ids))
        if every:
            self.embedder.embed_ids(every, self.pipeline.vocabulary)  # fills the cache at once
        out = []
        for graph in graphs:
            ids = list(graph.concept_ids)
            u = (
                self.embedder.embed_ids(ids, self.pipeline.vocabulary).float()
                if ids
                else torch.zeros(0, self.pipeline.encoder.dim)
            )
            out.append((ids, u, graph.edge_index.long()))
        return out
