"""An entity mention found by a linker."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EntityMention:
    """A concept mention: ``[start, end)`` characters in the linked text, the concept id (MeSH
    descriptor UI such as ``D003920``, or a UMLS CUI), the matched surface form and the
    concept's preferred name. Token spans are derived with
    :func:`gralc.knowledge.mention.token_span` from the encoder's offsets.

    >>> EntityMention(0, 9, "D008687", "Metformin", "Metformin").concept_id
    'D008687'
    """

    start: int
    end: int
    concept_id: str
    surface: str
    name: str


def token_span(offsets, start: int, end: int) -> tuple[int, int]:
    """Half-open token range covering characters ``[start, end)``.

    ``offsets`` is the (N, 2) array of :class:`gralc.encoding.types.TokenEmbeddings`.

    >>> import numpy as np
    >>> token_span(np.array([[0, 3], [3, 9], [10, 16]]), 0, 9)
    (0, 2)
    """
    import numpy as np

    tok_start = int(np.searchsorted(offsets[:, 1], start, side="right"))
    tok_end = int(np.searchsorted(offsets[:, 0], end, side="left"))
    return tok_start, max(tok_start, tok_end)
