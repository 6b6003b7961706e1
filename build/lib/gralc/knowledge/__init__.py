"""Biomedical knowledge: vocabularies (MeSH, UMLS), the entity linker, the per-document
concept graph G_k and concept embeddings."""

from gralc.knowledge.concept_embeddings import ConceptEmbedder
from gralc.knowledge.concept_graph import (
    ConceptGraph,
    KnowledgeBase,
    RelationSources,
    build_concept_graph,
)
from gralc.knowledge.download import OfflineError, download_mesh
from gralc.knowledge.linker import DEFAULT_STOPLIST, EntityLinker, LinkerConfig
from gralc.knowledge.mention import EntityMention, token_span
from gralc.knowledge.vocabulary import Concept, Vocabulary, load_vocabulary

__all__ = [
    "Concept",
    "ConceptEmbedder",
    "ConceptGraph",
    "DEFAULT_STOPLIST",
    "EntityLinker",
    "EntityMention",
    "KnowledgeBase",
    "LinkerConfig",
    "OfflineError",
    "RelationSources",
    "Vocabulary",
    "build_concept_graph",
    "download_mesh",
    "load_vocabulary",
    "token_span",
]
