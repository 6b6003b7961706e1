"""GraLC: graph-aware late chunking for biomedical retrieval-augmented generation."""

__version__ = "0.1.0"
