"""Chunk indexes: dense (FAISS) and lexical (BM25)."""

from gralc.retrieval.bm25 import BM25Config, BM25Index
from gralc.retrieval.faiss_index import ChunkIndex, IndexConfig

__all__ = ["BM25Config", "BM25Index", "ChunkIndex", "IndexConfig"]
