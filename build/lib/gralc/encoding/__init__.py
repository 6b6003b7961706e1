"""Full-document (late) encoding: token vectors of whole documents, queries, span pooling."""

from gralc.encoding.cache import EmbeddingCache
from gralc.encoding.encoder import DocumentEncoder, EncoderConfig
from gralc.encoding.types import TokenEmbeddings

__all__ = ["DocumentEncoder", "EncoderConfig", "EmbeddingCache", "TokenEmbeddings"]
