"""Every chunk's token vectors as codes (:mod:`gralc.retrieval.trained.token_codec`), and MaxSim
against a few candidate chunks read from them.

Codes are kept per chunk row (:class:`~gralc.retrieval.trained.ragged.Ragged`, memory-mapped at
load), so scoring K candidates reads their tokens only. Two readings:

* :meth:`TokenStore.centroid_maxsim`: each token stands for its coarse centroid, the cosine
  read from a (L, C) table of the question's word-pieces against the C centroids (PLAID's
  centroid interaction): no decoding, a ranking signal for many candidates;
* :meth:`TokenStore.maxsim`: the decoded vectors, MaxSim within the quantisation error.

Both reduce with :func:`~gralc.model.late_interaction.best_per_chunk`, the reduction of the
exact MaxSim, and return the mean over word-pieces (the model's MaxSim).
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gralc.artefacts import file_sha256, manifest_digest
from gralc.atomic import write_text_atomic
from gralc.model.late_interaction import best_per_chunk
from gralc.retrieval.trained.ragged import Ragged
from gralc.retrieval.trained.token_codec import TokenCodec, TokenCodecConfig
from gralc.safe_load import json_int, read_json_untrusted

CODEC_FILE, META_FILE, NAME = "codec.faiss", "tokens.json", "codes"
#: tokens decoded at once by a MaxSim pass (~200 MB of float32 at d = 384)
BLOCK_TOKENS = 131_072


class TokenStore:
    """Token codes of K chunks (``codes``: Ragged of (T, code_size) uint8) and their codec.
    Built with :meth:`add` batch by batch, or read with :meth:`load`."""

    def __init__(self, codec: TokenCodec, codes: Ragged | None = None) -> None:
        self.codec = codec
        self._parts: list[np.ndarray] = []
        self._counts: list[np.ndarray] = []
        self._codes = codes or Ragged(np.zeros((0, codec.code_size), np.uint8), np.zeros(1, np.int64))

    # ----- building -------------------------------------------------------------------------
    def add(self, vectors: torch.Tensor | np.ndarray, token_chunk: torch.Tensor | np.ndarray,
            n_chunks: int) -> None:
        """Append ``n_chunks`` chunks: their tokens' unit ``vectors`` (T, d) and the chunk of
        each (``token_chunk`` (T,) in [0, n_chunks), non-decreasing)."""
        rows = np.asarray(token_chunk, dtype=np.int64)
        if len(rows) and ((np.diff(rows) < 0).any() or rows[0] < 0 or rows[-1] >= n_chunks):
            raise ValueError(f"token rows must be sorted and in [0, {n_chunks})")
        x = vectors.detach().float().cpu().numpy() if isinstance(vectors, torch.Tensor) else vectors
        self._parts.append(self.codec.encode(x) if len(rows) else np.zeros((0, self.codec.code_size), np.uint8))
        self._counts.append(np.bincount(rows, minlength=n_chunks) if len(rows) else np.zeros(n_chunks, np.int64))

    @property
    def codes(self) -> Ragged:
        """The chunks' codes (appended batches joined on first use)."""
        if self._parts:
            counts = np.concatenate([self._codes.counts, *self._counts])
            values = np.concatenate([np.asarray(self._codes.values), *self._parts])
            self._codes = Ragged(values, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
            self._parts, self._counts = [], []
        return self._codes

    def __len__(self) -> int:
        return len(self.codes)

    @property
    def n_tokens(self) -> int:
        """Tokens stored, over every chunk."""
        return int(self.codes.offsets[-1])

    # ----- scoring --------------------------------------------------------------------------
    def _pieces(self, pieces: torch.Tensor) -> torch.Tensor:
        return F.normalize(pieces.float(), dim=-1)

    def _blocks(self, rows: np.ndarray) -> list[np.ndarray]:
        """``rows`` cut into consecutive blocks of at most :data:`BLOCK_TOKENS` tokens (one
        chunk may exceed it alone), so a pass over every chunk never decodes the whole store
        at once."""
        rows = np.asarray(rows, dtype=np.int64)
        sizes = np.cumsum(np.asarray(self.codes.counts)[rows]) if len(rows) else np.zeros(0)
        if not len(rows) or sizes[-1] <= BLOCK_TOKENS:
            return [rows]
        cuts = np.searchsorted(sizes, np.arange(BLOCK_TOKENS, sizes[-1], BLOCK_TOKENS), side="right")
        return [b for b in np.split(rows, np.unique(np.clip(cuts, 1, len(rows) - 1))) if len(b)]

    def maxsim(self, pieces: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
        """(R,) MaxSim of one question's word-pieces (``pieces`` (L, d)) with the decoded tokens
        of chunk ``rows`` (R,); 0 for a question without pieces."""
        if not pieces.shape[0]:
            return torch.zeros(len(rows))
        q = self._pieces(pieces)
        out = []
        for block in self._blocks(rows):
            codes, local = self.codes.gather(block)
            tokens = torch.from_numpy(self.codec.decode(codes)) if len(codes) else torch.zeros(0, q.shape[1])
            out.append(best_per_chunk(q @ tokens.T, torch.from_numpy(local), len(block)).mean(0))
        return torch.cat(out)

    def centroid_maxsim(self, pieces: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
        """(R,) MaxSim with each token read as its coarse centroid (no decoding); the exact
        :meth:`maxsim` for a float16 store."""
        if self.codec.index is None:
            return self.maxsim(pieces, rows)
        if not pieces.shape[0]:
            return torch.zeros(len(rows))
        q = torch.from_numpy(self.codec.rotate(self._pieces(pieces).numpy()))  # rotations keep cosines
        table = q @ torch.from_numpy(self.codec.centroids).T  # (L, C)
        out = []
        for block in self._blocks(rows):
            codes, local = self.codes.gather(block)
            sim = table[:, torch.from_numpy(self.codec.centroid_ids(codes))]
            out.append(best_per_chunk(sim, torch.from_numpy(local), len(block)).mean(0))
        return torch.cat(out)

    # ----- persistence ----------------------------------------------------------------------
    def save(self, folder: Path) -> list[str]:
        """Write the codec, the codes and ``tokens.json`` into ``folder``; the file names."""
        folder.mkdir(parents=True, exist_ok=True)
        self.codec.save(folder / CODEC_FILE)
        names = self.codes.save(folder, NAME)
        self._write_meta(folder, names, len(self), self.n_tokens)
        return [CODEC_FILE, META_FILE, *names]

    def _write_meta(self, folder: Path, names: list[str], n_chunks: int, n_tokens: int) -> None:
        meta = {"format": "gralc.token_store/2", "codec": asdict(self.codec.config),
                "dim": self.codec.dim, "bytes_per_token": self.codec.code_size,
                "n_chunks": n_chunks, "n_tokens": n_tokens, "codec_sha256": self.codec.digest(),
                # cross-file digests: codes from another table (or reordered) under a re-signed
                # manifest still differ from what this file records
                "codes_sha256": {name: file_sha256(folder / name) for name in names}}
        write_text_atomic(folder / META_FILE, json.dumps(meta, indent=2))

    def write_joined(self, folder: Path, stores: list[TokenStore]) -> dict:
        """Write what :meth:`save` of one store of ``stores``' chunks in order writes (this
        store's codec, which they share; every store's codes) without holding the joined codes;
        the codec's description (``describe()``)."""
        from gralc.retrieval.trained.ragged import write_ragged_concat

        if any(s.codec.digest() != self.codec.digest() for s in stores):
            raise ValueError("token stores of different codecs cannot be merged: build every shard "
                             "with one codec (gralc shard codec, then build --codec)")
        folder.mkdir(parents=True, exist_ok=True)
        self.codec.save(folder / CODEC_FILE)
        names = write_ragged_concat(folder, NAME, [s.codes for s in stores])
        self._write_meta(folder, names, sum(len(s) for s in stores), sum(s.n_tokens for s in stores))
        return self.codec.describe()

    @classmethod
    def load(cls, folder: Path, mmap: bool = True) -> TokenStore:
        """The store :meth:`save` wrote to ``folder`` (codes memory-mapped with ``mmap``);
        ValueError when the metadata, codec or codes do not match."""
        meta_path = folder / META_FILE
        if not meta_path.is_file():
            raise FileNotFoundError(f"{meta_path} is missing: the index is incomplete, rebuild it")
        try:
            meta = read_json_untrusted(meta_path, allow_interpolation=True)
            config, dim = TokenCodecConfig(**meta["codec"]), json_int(meta["dim"], f"{meta_path}: dim", 1)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{meta_path}: unreadable ({exc}); rebuild the index") from None
        codec = TokenCodec.load(folder / CODEC_FILE, dim, config)
        if codec.digest() != meta.get("codec_sha256"):
            raise ValueError(f"{folder / CODEC_FILE} differs from the codec {meta_path} records: "
                             "rebuild the index")
        recorded = meta.get("codes_sha256")
        if not isinstance(recorded, dict):
            raise ValueError(f"{meta_path} records no digests of its codes (written before GraLC "
                             "0.4, or edited): rebuild the index")
        for name in (f"{NAME}.values.npy", f"{NAME}.offsets.npy"):
            if (folder / name).is_file() and manifest_digest(folder / name) != recorded.get(name):
                raise ValueError(f"{folder / name} is not the file {meta_path} records (SHA-256 "
                                 "differs): the token table was altered; rebuild the index")
        codes = Ragged.load(folder, NAME, mmap=mmap)
        if codes.values.ndim != 2 or codes.values.shape[1] != codec.code_size or codes.values.dtype != np.uint8:
            raise ValueError(f"{folder}/{NAME}.values.npy: codes of shape {codes.values.shape} "
                             f"({codes.values.dtype}), the codec writes {codec.code_size} bytes a token")
        return cls(codec, codes)


def train_codec(vectors: torch.Tensor | np.ndarray, config: TokenCodecConfig) -> TokenCodec:
    """A codec trained on the first ``config.train_tokens`` of ``vectors`` (T, d)."""
    x = vectors.detach().float().cpu().numpy() if isinstance(vectors, torch.Tensor) else np.asarray(vectors)
    return TokenCodec.train(x[: config.train_tokens], config)


__all__ = ["TokenStore", "train_codec"]
