"""Chunking strategies, one per module, selectable by name (``registered()``)."""

from gralc.chunking import fixed, late, multilevel, semantic, structure_aware  # noqa: F401  (register)
from gralc.chunking.base import PreparedDocument, make_chunk
from gralc.chunking.chunk import Chunk, register, registered

__all__ = ["Chunk", "PreparedDocument", "make_chunk", "register", "registered"]
