"""GraLC: graph-aware late chunking for biomedical retrieval-augmented generation.

The few names a user calls, importable from ``gralc`` (each loaded on first use, so ``import
gralc`` is instant)::

    import gralc
    docs = gralc.load_documents("gralc/data/demo/articles")      # paths, Documents or lists
    note = gralc.document_from_text("# Titration\\n\\n## Methods\\n\\nMetformin was titrated over 8 weeks.", "n1")
    chunks = gralc.Chunker("structure_aware")(note)             # or Chunker(model="export/")
    retriever = gralc.Retriever.build(docs)                     # or model="export/"
    retriever.save("index/")
    for hit in gralc.Retriever.load("index/").search("What limits metformin adherence?", k=3):
        print(hit.score, hit.chunk.doc_id, hit.chunk.section_path, hit.components)

The command line is ``gralc`` (``gralc --help``); the API reference is docs/api.md."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0"

#: public name -> the module that defines it (imported on first use: PEP 562)
_EXPORTS = {
    "Document": "gralc.documents.model",
    "Question": "gralc.documents.question",
    "Chunk": "gralc.chunking.chunk",
    "Hit": "gralc.retrieval.hits",
    "load_documents": "gralc.pipeline",
    "document_from_text": "gralc.documents.plaintext",
    "Chunker": "gralc.inference",
    "Retriever": "gralc.inference",
    "PipelineConfig": "gralc.pipeline",
    "load_config": "gralc.config",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # once
        return value
    raise AttributeError(f"module 'gralc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
