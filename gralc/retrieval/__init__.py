"""Retrieval, one room per job (imports go down the list; the three jobs never import each other):

- shared parts: :mod:`~gralc.retrieval.hits` (one retrieved candidate),
  :mod:`~gralc.retrieval.ranking` (the one tie-break), :mod:`~gralc.retrieval.rank_metrics`,
  :mod:`~gralc.retrieval.trec` (TREC runs and qrels);
- :mod:`gralc.retrieval.indexes`: the baseline chunk indexes (dense FAISS, BM25, their fusion);
- :mod:`gralc.retrieval.trained`: the trained model's serving stack (chunk table, candidates,
  token codes, the two-stage search);
- :mod:`gralc.retrieval.rerank`: re-rankers over any ranking (section diversity, Chunk-Link,
  MAL-RAG);
- :mod:`gralc.retrieval.graph`: SemRAG's corpus graph search (communities, local / global).
"""

from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index
from gralc.retrieval.indexes.dense import ChunkIndex, IndexConfig

__all__ = ["BM25Config", "BM25Index", "ChunkIndex", "IndexConfig"]
