"""Compressed token vectors for late interaction: FAISS residual product quantisation.

Late interaction (:mod:`gralc.model.late_interaction`) needs every chunk token's unit vector
(768 bytes a token as float16 for MiniLM). An index stores each token instead as a FAISS
IVF-PQ code (``sa_encode`` / ``sa_decode`` of ``faiss.index_factory(d, "IVF{C},PQ{m}x{b}")``):
the id of its nearest coarse centroid and ``m`` sub-quantiser codes of ``b`` bits for the
residual (PQ48x10 with 4,096 centroids: 62 bytes). As in PLAID, the centroid ids alone rank
the candidates (*centroid interaction*); only the best are decoded for their exact MaxSim
(:mod:`gralc.retrieval.trained.token_store`). ``kind="float16"`` keeps the vectors themselves,
for checking. The layout in detail and why FAISS rather than fast-plaid: docs/inference.md
("Under the hood: the serving stack").
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gralc.atomic import write_bytes_atomic, write_text_atomic
from gralc.safe_load import json_int, require_file

CODEC_KINDS = ("ivf_pq", "float16")
#: codecs read in this process, by (file SHA-256, dim, config): read-only once trained
_LOADED: dict[tuple[str, int, str], TokenCodec] = {}


def _faiss():
    import faiss

    return faiss


@dataclass
class TokenCodecConfig:
    """How token vectors are stored. ``kind``: ivf_pq (default) | float16 (exact, 2 d bytes);
    ``pq_bytes``: sub-quantisers of the residual (divides d), each coded in ``pq_bits`` bits
    (``pq_bytes * pq_bits / 8`` bytes a token); ``opq``: a learned rotation before the
    quantisers (FAISS ``OPQ``, fitted to the sample); ``centroids``: coarse centroids
    (None: a power of two near 4 sqrt(tokens trained on), 256 to 65,536); ``train_tokens``: the
    sample k-means and the quantiser train on (the first tokens of the corpus); ``seed``."""

    kind: str = "ivf_pq"
    pq_bytes: int = 48
    pq_bits: int = 10
    opq: bool = False
    centroids: int | None = None
    train_tokens: int = 131_072
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in CODEC_KINDS:
            raise ValueError(f"token codec kind {self.kind!r}: use one of {', '.join(CODEC_KINDS)}")
        if self.pq_bytes < 1:
            raise ValueError(f"token codec pq_bytes must be >= 1, got {self.pq_bytes}")
        if not 4 <= self.pq_bits <= 12:
            raise ValueError(f"token codec pq_bits must lie in [4, 12], got {self.pq_bits}")
        if self.centroids is not None and not 1 <= self.centroids <= 65_536:
            raise ValueError(f"token codec centroids must lie in [1, 65536], got {self.centroids}")
        if self.train_tokens < 1:
            raise ValueError(f"token codec train_tokens must be >= 1, got {self.train_tokens}")


class TokenCodec:
    """Encode (n, d) unit vectors to (n, :attr:`code_size`) uint8 codes and back."""

    def __init__(self, dim: int, config: TokenCodecConfig, index: Any = None) -> None:
        self.dim, self.config, self.index = dim, config, index
        self._centroids: np.ndarray | None = None

    # ----- building -------------------------------------------------------------------------
    @classmethod
    def train(cls, sample: np.ndarray, config: TokenCodecConfig | None = None) -> TokenCodec:
        """A codec trained on ``sample`` (n, d) unit token vectors (float16 needs no training)."""
        config = config or TokenCodecConfig()
        sample = np.ascontiguousarray(sample, dtype=np.float32)
        if sample.ndim != 2 or not len(sample):
            raise ValueError(f"a token codec trains on (n, d) vectors, got shape {sample.shape}")
        dim = sample.shape[1]
        if config.kind == "float16":
            return cls(dim, config)
        if dim % config.pq_bytes:
            raise ValueError(f"token codec pq_bytes={config.pq_bytes} must divide the vector "
                             f"dimension {dim}")
        faiss = _faiss()
        n_centroids = config.centroids or cls.default_centroids(len(sample))
        # k-means wants >= 39 points a centroid; the residual quantiser 256 x 39 points
        n_centroids = max(1, min(n_centroids, len(sample) // 39))
        if len(sample) < 256 * 39:
            raise ValueError(f"a token codec needs >= {256 * 39} training tokens, got {len(sample)}: "
                             "index more text, or store tokens exactly (token codec kind float16)")
        rotation = f"OPQ{config.pq_bytes}," if config.opq else ""
        index = faiss.index_factory(dim, f"{rotation}IVF{n_centroids},PQ{config.pq_bytes}x{config.pq_bits}",
                                    faiss.METRIC_INNER_PRODUCT)
        ivfpq = faiss.downcast_index(faiss.extract_index_ivf(index))  # views: ``index`` owns them
        if config.opq:
            opq = faiss.downcast_VectorTransform(faiss.downcast_index(index).chain.at(0))
            opq.niter = 10  # FAISS's default 50 takes minutes; measured in docs/scaling.md
        ivfpq.cp.seed = config.seed
        ivfpq.pq.cp.seed = config.seed
        # 10 k-means iterations on <= 64 x 256 points per sub-quantiser: ~10x faster to train
        # than FAISS's defaults (25, 256 x 256); the quality cost is measured (docs/scaling.md)
        ivfpq.pq.cp.niter = 10
        ivfpq.pq.cp.max_points_per_centroid = 64
        # FAISS warns (on fd 2, once per sub-quantiser: 48 lines) below 39 points a centroid;
        # the threshold gates nothing but that warning, and the sample size is checked above
        ivfpq.pq.cp.min_points_per_centroid = 1
        ivfpq.cp.min_points_per_centroid = 1
        ivfpq.do_polysemous_training = False  # a search-time Hamming filter codes never use
        index.train(sample)
        return cls(dim, config, index)

    @staticmethod
    def default_centroids(n_tokens: int) -> int:
        """A power of two near 4 sqrt(n), between 256 and 65,536."""
        return int(min(65_536, max(256, 2 ** round(math.log2(4 * math.sqrt(max(n_tokens, 1)))))))

    # ----- coding ---------------------------------------------------------------------------
    @property
    def code_size(self) -> int:
        """Bytes per token."""
        return 2 * self.dim if self.index is None else int(self.index.sa_code_size())

    @property
    def n_centroids(self) -> int:
        """Coarse centroids of the IVF-PQ codec (0 for float16)."""
        return 0 if self.index is None else int(_faiss().extract_index_ivf(self.index).nlist)

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        """(n, code_size) uint8 codes of (n, d) vectors."""
        x = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1, self.dim)
        if self.index is None:
            return x.astype(np.float16).view(np.uint8).reshape(len(x), self.code_size)
        return self.index.sa_encode(x)

    def decode(self, codes: np.ndarray) -> np.ndarray:
        """(n, d) float32 vectors of (n, code_size) codes. Codes are of unit vectors, so an
        IVF-PQ reconstruction is put back on the unit sphere, where the exact vectors live:
        a decoded token's dot product with a question word-piece is then a cosine, as the
        exact MaxSim's is."""
        codes = np.ascontiguousarray(codes, dtype=np.uint8).reshape(-1, self.code_size)
        if self.index is None:
            return codes.view(np.float16).astype(np.float32).reshape(len(codes), self.dim)
        x = self.index.sa_decode(codes)
        x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        return x

    def centroid_ids(self, codes: np.ndarray) -> np.ndarray:
        """(n,) int64: each code's coarse centroid (the little-endian list number FAISS writes
        first in an IVF code)."""
        size = _faiss().extract_index_ivf(self.index).coarse_code_size()
        head = np.asarray(codes)[:, :size].astype(np.int64)
        return (head << (8 * np.arange(size, dtype=np.int64))).sum(axis=1)

    def rotate(self, x: np.ndarray) -> np.ndarray:
        """``x`` (n, d) in the space the centroids live in (the OPQ rotation, if any)."""
        faiss = _faiss()
        if self.index is None or not self.config.opq:
            return x
        pre = faiss.downcast_index(self.index)
        return pre.chain.at(0).apply(np.ascontiguousarray(x, dtype=np.float32))

    @property
    def centroids(self) -> np.ndarray:
        """(C, d) float32 coarse centroids (in the rotated space with ``opq``)."""
        if self._centroids is None:
            q = _faiss().extract_index_ivf(self.index).quantizer
            self._centroids = q.reconstruct_n(0, q.ntotal)
        return self._centroids

    # ----- persistence ----------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The serialised FAISS index (empty for float16)."""
        return b"" if self.index is None else _faiss().serialize_index(self.index).tobytes()

    def digest(self) -> str:
        """SHA-256 of the settings and the trained codec: codes of two codecs never mix."""
        h = hashlib.sha256(repr(sorted(asdict(self.config).items())).encode())
        h.update(str(self.dim).encode())
        h.update(self.to_bytes())
        return h.hexdigest()

    def describe(self) -> dict[str, Any]:
        """The settings, ``dim``, ``bytes_per_token``, ``n_centroids`` and ``sha256``
        (:meth:`digest`), JSON-ready."""
        return {**asdict(self.config), "dim": self.dim, "bytes_per_token": self.code_size,
                "n_centroids": self.n_centroids, "sha256": self.digest()}

    def save(self, path: Path) -> None:
        """Write :meth:`to_bytes` to ``path``."""
        write_bytes_atomic(path, self.to_bytes())

    @classmethod
    def load(cls, path: Path, dim: int, config: TokenCodecConfig) -> TokenCodec:
        """Read what :meth:`save` wrote; a damaged file is a ValueError naming it. A codec read
        before in this process from the same bytes is shared, not read again (the parts of a
        merge, or the indexes a server holds, all carry their build's one codec)."""
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: the index is incomplete, rebuild it")
        data = path.read_bytes()
        if config.kind == "float16":
            if data:
                raise ValueError(f"{path}: a float16 token store has an empty codec file")
            return cls(dim, config)
        key = (hashlib.sha256(data).hexdigest(), dim, repr(sorted(asdict(config).items())))
        if key in _LOADED:
            return _LOADED[key]
        try:
            index = _faiss().deserialize_index(np.frombuffer(data, dtype=np.uint8))
        except RuntimeError as exc:
            raise ValueError(f"{path}: corrupt token codec ({exc}); rebuild the index") from None
        if index.d != dim:
            raise ValueError(f"{path}: codec of dimension {index.d}, the index's vectors {dim}")
        _LOADED[key] = codec = cls(dim, config, index)
        while len(_LOADED) > 8:  # a few builds' codecs, oldest dropped
            _LOADED.pop(next(iter(_LOADED)))
        return codec


CODEC_DIR_FILES = ("codec.faiss", "codec.json")


def save_codec_dir(codec: TokenCodec, folder: Path) -> None:
    """A codec on its own (``codec.faiss`` + ``codec.json``), for the shards of one build."""
    import json

    codec.save(folder / CODEC_DIR_FILES[0])
    write_text_atomic(folder / CODEC_DIR_FILES[1], json.dumps({"format": "gralc.token_codec/1",
                                                              **codec.describe()}, indent=2))


def load_codec_dir(folder: str | Path) -> TokenCodec:
    """Read what :func:`save_codec_dir` wrote; a missing, damaged or edited file is an error
    naming it."""
    folder = Path(folder)
    meta_path = folder / CODEC_DIR_FILES[1]
    if not meta_path.exists():
        raise FileNotFoundError(f"{meta_path} not found: --codec takes a folder written by "
                                "`gralc shard codec`")
    require_file(meta_path, "token codec file")
    from gralc.artefacts import verify_artefact
    from gralc.safe_load import read_json_untrusted

    verify_artefact(folder, ("token_codec",))
    try:
        meta = read_json_untrusted(meta_path)
        fields = {k: meta[k] for k in ("kind", "pq_bytes", "pq_bits", "opq", "centroids", "train_tokens", "seed")}
        config, dim = TokenCodecConfig(**fields), json_int(meta["dim"], f"{meta_path}: dim", 1)
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{meta_path}: unreadable ({exc}); rebuild the codec") from None
    codec = TokenCodec.load(folder / CODEC_DIR_FILES[0], dim, config)
    if codec.digest() != meta.get("sha256"):
        raise ValueError(f"{folder / CODEC_DIR_FILES[0]} differs from the codec {meta_path} "
                         "records: rebuild the codec")
    return codec


__all__ = ["CODEC_KINDS", "TokenCodec", "TokenCodecConfig", "load_codec_dir", "save_codec_dir"]
