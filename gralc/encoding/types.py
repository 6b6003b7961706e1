"""What the document encoder returns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class TokenEmbeddings:
    """Contextual token vectors of a WHOLE document.

    ``vectors``: float32 tensor (N, d), one row per word-piece of ``text`` (special tokens
    such as [CLS]/[SEP] excluded). ``offsets``: int64 array (N, 2), half-open character span
    of each token in ``text`` (the same ``Document.text`` every other stage uses).
    ``windows``: list of (token_start, token_end) windows the model ran over (one for a
    document that fits in the model's context). ``model_id`` names the encoder.

    >>> te = TokenEmbeddings(torch.zeros(3, 4), np.array([[0, 3], [3, 9], [10, 15]]), "minilm", [(0, 3)])
    >>> te.n_tokens, te.char_to_token(9)
    (3, 2)
    """

    vectors: torch.Tensor
    offsets: np.ndarray
    model_id: str
    windows: list[tuple[int, int]]

    @property
    def n_tokens(self) -> int:
        """Number of tokens ``N`` (rows of ``vectors``)."""
        return int(self.vectors.shape[0])

    def char_to_token(self, char_pos: int) -> int:
        """Index of the first token whose span ends after ``char_pos`` (N if none)."""
        return int(np.searchsorted(self.offsets[:, 1], char_pos, side="right"))
