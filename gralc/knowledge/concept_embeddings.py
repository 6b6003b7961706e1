"""Concept embeddings u_j: mean of the normalised text embeddings of a concept's names.

``u_j = mean(normalise(encode(name)), normalise(encode(synonym_1)), ..., up to k synonyms)``
computed once per concept and cached in memory, optionally on disk (``.safetensors`` or
``.npz``). ``encode_texts`` is any ``list[str] -> Tensor (n, d)`` callable, e.g.
``DocumentEncoder.encode_texts`` or a SapBERT wrapper. The disk cache stores ids, vectors and
k only: use one cache file per encoder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gralc.atomic import atomic_path, atomic_write
from gralc.knowledge.vocabulary import Concept, Vocabulary


class ConceptEmbedder:
    """Cached concept embeddings. ``k``: synonyms used besides the preferred name (the
    vocabulary lists real synonyms before generated plural variants).

    Example: ``ConceptEmbedder(pipeline.encoder.encode_texts, k=4).embed_ids(["D008687"], vocabulary)``
    -> a (1, d) tensor: the normalised mean of the name's and up to 4 synonyms' vectors.
    """

    def __init__(
        self,
        encode_texts: Callable[[list[str]], torch.Tensor],
        cache_path: str | Path | None = None,
        k: int = 4,
        batch_size: int = 256,
    ) -> None:
        self.encode_texts = encode_texts
        self.cache_path = Path(cache_path) if cache_path is not None else None
        self.k = k
        self.batch_size = batch_size
        self.cache: dict[str, torch.Tensor] = {}
        if self.cache_path is not None and self.cache_path.is_file():
            self._load(self.cache_path)

    def __len__(self) -> int:
        return len(self.cache)

    def embed(self, concepts: Sequence[Concept]) -> torch.Tensor:
        """(n, d) float32 embeddings of ``concepts`` (computed for those not cached)."""
        todo = list({c.id: c for c in concepts if c.id not in self.cache}.values())
        if todo:
            texts_per = [c.terms()[: 1 + self.k] for c in todo]
            flat = [t for texts in texts_per for t in texts]
            vectors = torch.cat(
                [
                    self._encode(flat[i : i + self.batch_size])
                    for i in range(0, len(flat), self.batch_size)
                ]
            )
            offset = 0
            for concept, texts in zip(todo, texts_per):
                self.cache[concept.id] = vectors[offset : offset + len(texts)].mean(0)
                offset += len(texts)
        if not concepts:
            return torch.empty(0, 0)
        return torch.stack([self.cache[c.id] for c in concepts])

    def embed_ids(self, concept_ids: Sequence[str], vocabulary: Vocabulary) -> torch.Tensor:
        """(n, d) embeddings of concepts given by id."""
        missing = [cid for cid in concept_ids if cid not in vocabulary and cid not in self.cache]
        if missing:
            raise KeyError(
                f"concept ids not in the vocabulary: {missing[:5]} (use the vocabulary "
                "the linker was built from)"
            )
        return self.embed(
            [vocabulary[cid] if cid in vocabulary else Concept(cid, cid) for cid in concept_ids]
        )

    def _encode(self, texts: list[str]) -> torch.Tensor:
        vectors = torch.as_tensor(self.encode_texts(texts)).detach().float().cpu()
        if vectors.ndim != 2 or vectors.shape[0] != len(texts):
            raise ValueError(
                f"encode_texts returned shape {tuple(vectors.shape)} for "
                f"{len(texts)} texts; expected ({len(texts)}, d)"
            )
        return F.normalize(vectors, dim=-1)

    def save(self, path: str | Path | None = None) -> Path:
        """Write the cache to ``path`` (default ``cache_path``), atomically."""
        path = Path(path) if path is not None else self.cache_path
        if path is None:
            raise ValueError("no path: pass save(path) or ConceptEmbedder(cache_path=...)")
        if path.suffix not in (".safetensors", ".npz"):
            raise ValueError(f"{path}: cache must end in .safetensors or .npz")
        ids = sorted(self.cache)
        matrix = torch.stack([self.cache[i] for i in ids]) if ids else torch.empty(0, 0)
        if path.suffix == ".safetensors":
            from safetensors.torch import save_file

            with atomic_path(path) as tmp:
                save_file(
                    {"vectors": matrix.contiguous()},
                    str(tmp),
                    metadata={"ids": "\n".join(ids), "k": str(self.k)},
                )
        else:
            with atomic_write(path, "wb") as f:  # a file object: numpy adds no ".npz" to it
                np.savez(f, ids=np.array(ids, dtype=str), vectors=matrix.numpy(), k=self.k)
        return path

    def _load(self, path: Path) -> None:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                ids, k = meta.get("ids", "").split("\n"), int(meta.get("k", -1))
                matrix = f.get_tensor("vectors")
        elif path.suffix == ".npz":
            with np.load(path) as data:
                ids, k = data["ids"].tolist(), int(data["k"])
                matrix = torch.from_numpy(data["vectors"])
        else:
            raise ValueError(f"{path}: cache must end in .safetensors or .npz")
        if k != self.k:
            raise ValueError(
                f"{path} was computed with k={k}, not k={self.k}: delete it or use the same k"
            )
        self.cache.update({cid: matrix[i] for i, cid in enumerate(ids) if cid})
