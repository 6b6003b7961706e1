"""The one chunk record every strategy returns, and the strategy registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass
class Chunk:
    """A retrievable unit of a document.

    Spans are half-open. ``char_start``/``char_end`` index ``Document.text`` (so
    ``doc.text[c.char_start:c.char_end] == c.text``); ``token_start``/``token_end`` index the
    document's token sequence (:class:`gralc.encoding.types.TokenEmbeddings`), or are -1 for
    levels not built from tokens. ``section_ids`` / ``section_path`` (titles, outermost first;
    an untitled section is labelled by its type, e.g. ``Abstract``;
    of the section where the chunk starts) and ``imrad_types`` (top-level IMRaD types of every
    section the chunk overlaps, document order, no repeats) are filled for EVERY strategy.
    ``level`` is ``chunk`` except for multi-level indexes (``document`` | ``section`` |
    ``paragraph`` | ``sentences``). ``embedding`` is a float32 vector of shape (d,) or None.

    >>> c = Chunk("d1", "d1_c0", "Metformin was titrated.", 0, 23, token_start=0, token_end=5,
    ...           section_path=["Methods"], imrad_types=["methods"])
    >>> c.n_tokens, c.section_path
    (5, ['Methods'])
    """

    doc_id: str
    chunk_id: str
    text: str
    char_start: int
    char_end: int
    token_start: int = -1
    token_end: int = -1
    section_ids: list[str] = field(default_factory=list)
    section_path: list[str] = field(default_factory=list)
    imrad_types: list[str] = field(default_factory=list)
    entity_ids: list[str] = field(default_factory=list)
    level: str = "chunk"
    strategy: str = ""
    boundary_scores: dict[str, float] = field(default_factory=dict)
    embedding: np.ndarray | None = None

    @property
    def n_tokens(self) -> int:
        """Tokens in the chunk, ``token_end - token_start`` (0 for levels not built from tokens).

        >>> Chunk("d1", "d1_c0", "Metformin.", 0, 10, token_start=3, token_end=7).n_tokens
        4
        """
        return max(0, self.token_end - self.token_start)

    def to_dict(self, with_embedding: bool = False) -> dict[str, Any]:
        """JSON-ready dict (the embedding as a list only when asked).

        >>> Chunk("d1", "d1_c0", "Metformin.", 0, 10).to_dict()["char_end"]
        10
        """
        d = asdict(self)
        d["embedding"] = (
            self.embedding.tolist() if (with_embedding and self.embedding is not None) else None
        )
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Chunk:
        """The chunk a :meth:`to_dict` dict describes (the embedding back as float32, or None).

        >>> c = Chunk("d1", "d1_c0", "Metformin.", 0, 10, embedding=np.ones(2, dtype=np.float32))
        >>> Chunk.from_dict(c.to_dict(with_embedding=True)).embedding
        array([1., 1.], dtype=float32)
        """
        d = dict(d)
        emb = d.pop("embedding", None)
        chunk = cls(**d)
        chunk.embedding = None if emb is None else np.asarray(emb, dtype=np.float32)
        return chunk


# ----- registry ---------------------------------------------------------------------------
_REGISTRY: dict[str, Callable[..., Any]] = {}


def register(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Class decorator: make a chunking strategy selectable by ``name``.

    Example: ``@register("my_strategy")`` above a chunker class makes ``Chunker("my_strategy")``
    and ``pipeline.chunk(prepared, "my_strategy")`` use it.
    """

    def deco(cls: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY:
            raise ValueError(f"chunking strategy {name!r} registered twice")
        _REGISTRY[name] = cls
        return cls

    return deco


def registered() -> dict[str, Callable[..., Any]]:
    """All registered strategies by name.

    >>> import gralc.chunking
    >>> {"fixed", "late", "structure_aware"} <= set(registered())
    True
    """
    return dict(_REGISTRY)
