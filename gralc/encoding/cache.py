"""On-disk cache of whole-document token embeddings (safetensors files, atomic writes)."""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from gralc.atomic import atomic_path
from gralc.encoding.types import TokenEmbeddings


def cache_key(text: str, model_id: str, window: int, overlap: int, precision: str) -> str:
    """Hex sha256 over the text and every setting that changes the vectors.

    >>> len(cache_key("Metformin helps.", "all-MiniLM-L6-v2", 510, 128, "fp32"))
    64
    """
    digest = hashlib.sha256()
    text_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    for part in (text_hash, model_id, str(window), str(overlap), precision):
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


logger = logging.getLogger(__name__)


def tensors_digest(tensors: dict[str, torch.Tensor]) -> str:
    """SHA-256 over a cache entry's tensors (name, dtype, shape and bytes), in name order.

    >>> len(tensors_digest({"a": torch.zeros(2)}))
    64
    """
    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}\0".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return digest.hexdigest()


def entry_problem(key: str, meta: dict[str, str], tensors: dict[str, torch.Tensor],
                  text_len: int | None = None) -> str | None:
    """Why a token-cache entry cannot be served for ``key``, else None: stored under another
    key, its tensors not the ones it records a digest of (changed since it was written),
    vectors and offsets of different lengths, values that are not finite, offsets outside the
    text or going backwards.

    >>> entry_problem("k", {"key": "other"}, {})
    "written for the key 'other'"
    """
    if meta.get("key") != key:
        return f"written for the key {meta.get('key')!r}"
    if meta.get("sha256") != tensors_digest(tensors):
        return "its tensors differ from the digest it records (changed since it was written)"
    vectors, offsets, windows = tensors.get("vectors"), tensors.get("offsets"), tensors.get("windows")
    if vectors is None or offsets is None or windows is None or vectors.ndim != 2 \
            or offsets.shape != (len(vectors), 2) or windows.ndim != 2 or windows.shape[-1] != 2:
        return "its vectors, offsets and windows do not fit together"
    if not bool(torch.isfinite(vectors.float()).all()):
        return "its vectors are not all finite"
    if len(offsets) and (bool((offsets[:, 0] > offsets[:, 1]).any()) or int(offsets.min()) < 0
                         or bool((offsets[1:, 0] < offsets[:-1, 0]).any())
                         or (text_len is not None and int(offsets.max()) > text_len)):
        return "its token offsets do not lie in the text in order"
    return None

class EmbeddingCache:
    """``TokenEmbeddings`` stored as ``<cache_dir>/<key[:2]>/<key>.safetensors``.

    Vectors are stored as ``dtype`` (default float32, exact round trip); offsets and
    windows as int64; the model id in the file metadata.

    >>> import tempfile
    >>> te = TokenEmbeddings(torch.ones(2, 3), np.array([[0, 3], [4, 9]]), "minilm", [(0, 2)])
    >>> cache = EmbeddingCache(tempfile.mkdtemp()); cache.put("ab12", te)
    >>> cache.get("ab12").offsets.tolist()
    [[0, 3], [4, 9]]
    """

    def __init__(self, cache_dir: str | os.PathLike, dtype: torch.dtype = torch.float32):
        self.cache_dir = Path(cache_dir)
        self.dtype = dtype

    def path(self, key: str) -> Path:
        """The file that holds (or would hold) the embeddings of ``key``."""
        return self.cache_dir / key[:2] / f"{key}.safetensors"

    def get(self, key: str, text_len: int | None = None) -> TokenEmbeddings | None:
        """The stored embeddings for ``key``, or None when absent or not verified
        (:func:`entry_problem`; ``text_len``: the length of the text it encodes, for the
        offsets), with a warning naming the entry: the caller recomputes and overwrites it."""
        path = self.path(key)
        if not path.is_file():
            return None
        from safetensors import safe_open

        try:
            with safe_open(str(path), framework="pt") as handle:
                meta = handle.metadata() or {}
            tensors = load_file(str(path))
            problem = entry_problem(key, meta, tensors, text_len)
            if problem:
                raise ValueError(problem)
            model_id = meta.get("model_id", "")
            windows = [(int(s), int(e)) for s, e in tensors["windows"].tolist()]
            vectors, offsets = tensors["vectors"], tensors["offsets"]
        except Exception as exc:  # noqa: BLE001 - any unreadable entry is a miss, never a crash
            logger.warning("token cache entry %s is not usable (%s: %s); recomputing it", path,
                           type(exc).__name__, exc)
            return None
        return TokenEmbeddings(
            vectors=vectors.float(),
            offsets=offsets.numpy().astype(np.int64),
            model_id=model_id,
            windows=windows,
        )

    def put(self, key: str, te: TokenEmbeddings) -> None:
        """Store ``te`` under ``key`` (write a temporary file, then atomically rename it)."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tensors = {
            "vectors": te.vectors.detach().to("cpu", self.dtype).contiguous(),
            "offsets": torch.from_numpy(np.ascontiguousarray(te.offsets, dtype=np.int64)),
            "windows": torch.tensor(te.windows, dtype=torch.int64).reshape(-1, 2),
        }
        with atomic_path(path) as tmp:
            save_file(tensors, str(tmp), metadata={"model_id": te.model_id, "key": key,
                                                   "sha256": tensors_digest(tensors)})
