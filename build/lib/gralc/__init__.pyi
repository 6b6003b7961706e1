# Types of the names gralc/__init__.py loads on first use (for IDEs and type checkers).
from gralc.chunking.chunk import Chunk as Chunk
from gralc.config import load_config as load_config
from gralc.documents.model import Document as Document
from gralc.documents.plaintext import document_from_text as document_from_text
from gralc.documents.question import Question as Question
from gralc.inference import Chunker as Chunker
from gralc.inference import Retriever as Retriever
from gralc.pipeline import PipelineConfig as PipelineConfig
from gralc.pipeline import load_documents as load_documents
from gralc.retrieval.hits import Hit as Hit

__version__: str
__all__: list[str]
