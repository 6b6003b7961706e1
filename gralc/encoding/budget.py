"""The one word-piece counter of every retrieved-text budget: all-MiniLM-L6-v2's word-pieces.

A budget (eval's ``ev_recall@Nwp``, the graph search's window ``graph.search.budget``) is a
fixed unit whatever the encoder: an encoder with a larger vocabulary (e5) would otherwise count
fewer pieces for the same text, and the product's budget would differ from eval's.
:func:`budget_counter` hands out the counter; everything that cuts at a budget takes one.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any


class PieceCounter:
    """Word-piece end offsets of chunk texts from a Hugging Face fast tokenizer (no special
    tokens), cached by ``(doc_id, chunk_id, char_start, char_end)``. E.g.
    ``len(PieceCounter(encoder.tokenizer)(chunk))`` is the chunk's word-piece count.

    Example: ``len(PieceCounter(encoder.tokenizer)(Chunk("d1", "c0", "Metformin helps", 0, 15)))``
    -> ``4`` with MiniLM's tokenizer (``met``, ``##form``, ``##in``, ``helps``).
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._cache: dict[tuple, list[int]] = {}

    def _key(self, c: Any) -> tuple:
        return c.doc_id, c.chunk_id, c.char_start, c.char_end

    def prime(self, chunks: Sequence[Any], batch: int = 256) -> None:
        """Tokenise the chunks not yet cached, in batches. E.g. ``counter.prime(chunks)``."""
        todo = [c for c in chunks if self._key(c) not in self._cache]
        for i in range(0, len(todo), batch):
            part = todo[i : i + batch]
            enc = self.tokenizer([c.text for c in part], add_special_tokens=False,
                                 return_offsets_mapping=True, truncation=False, verbose=False)
            for c, offs in zip(part, enc["offset_mapping"]):
                self._cache[self._key(c)] = [e for _, e in offs]

    def __call__(self, chunk: Any) -> list[int]:
        key = self._key(chunk)
        if key not in self._cache:
            self.prime([chunk])
        return self._cache[key]


@lru_cache(maxsize=1)
def _minilm_tokenizer() -> Any:
    from transformers import AutoTokenizer

    from gralc.encoding.models import default_model_path

    return AutoTokenizer.from_pretrained(default_model_path())


def budget_counter(encoder: Any = None) -> PieceCounter:
    """The word-piece counter of retrieved-text budgets: always all-MiniLM-L6-v2's tokenizer,
    so budgets stay one fixed unit when encoders are compared. ``encoder``: the pipeline's
    encoder, whose tokenizer is reused when it is MiniLM's (None: the bundled MiniLM's).
    E.g. ``len(budget_counter(pipeline.encoder)(chunk))``.

    Example: ``budget_counter()(chunk)`` -> the MiniLM word-piece end offsets of ``chunk.text``
    (its length is the chunk's budget cost, whatever encoder indexed it).
    """
    from gralc.encoding.models import DEFAULT_MODEL_ID

    if getattr(encoder, "model_id", None) == DEFAULT_MODEL_ID:
        return PieceCounter(encoder.tokenizer)
    return PieceCounter(_minilm_tokenizer())


__all__ = ["PieceCounter", "budget_counter"]
