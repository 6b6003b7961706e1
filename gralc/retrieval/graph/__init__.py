"""SemRAG's search over a corpus knowledge graph: community reports and the local / global
searchers."""
