"""The baseline chunk indexes: dense (FAISS inner product over normalised vectors), lexical
(BM25), their fusion, and the folder format they share (chunk records, JSON, manifest)."""
