"""Re-rankers over any ranked list of chunks: section diversity, Chunk-Link's completion with
linked chunks, MAL-RAG's probability-threshold selection."""
