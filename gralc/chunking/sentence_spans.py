"""Sentence units of a document mapped onto its word-piece tokens.

Baseline strategies cut documents at sentence ends. A *unit* is the smallest piece they never
split (except a forced split of an over-long unit):

* every sentence of every paragraph (``Document.sentences``);
* a paragraph that has no sentences (e.g. a formula or an unsplit block) as a whole;
* the document title and every section title, each as a unit of its own. Titles are separate
  blocks of the canonical text, so a unit never spans two blocks, and a chunk may start exactly
  at a section title (which then lands in that section's metadata).

Units TILE the token sequence: unit ``i`` owns tokens ``[tok_start_i, tok_start_{i+1})``, so every
token of the document belongs to exactly one unit (stray tokens outside any unit are attached to
the unit before them; tokens before the first unit to the first). ``char_start``/``char_end`` are
the character span of the unit's first and last token, so char and token spans always agree.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from gralc.documents.model import Document
from gralc.encoding.types import TokenEmbeddings


class Unit(NamedTuple):
    """Half-open token range ``[tok_start, tok_end)`` and char range ``[char_start, char_end)``.

    >>> Unit(0, 4, 0, 17).tok_end
    4
    """

    tok_start: int
    tok_end: int
    char_start: int
    char_end: int


def tokenize_offsets(tokenizer, text: str) -> np.ndarray:
    """Character spans (N, 2) int64 of the word-pieces of ``text`` (no special tokens, no
    truncation), for strategies that need token counts but no embeddings.

    Example: ``tokenize_offsets(encoder.tokenizer, "Metformin helps")`` -> ``array([[0, 3], [3, 7],
    [7, 9], [10, 15]])`` (one row per word-piece: ``met``, ``##form``, ``##in``, ``helps``).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise TypeError(
            f"{type(tokenizer).__name__} is not a fast (Rust) tokenizer: character offsets need "
            "one; load the tokenizer with AutoTokenizer.from_pretrained(path, use_fast=True)"
        )
    enc = tokenizer(
        text,
        add_special_tokens=False,
        return_offsets_mapping=True,
        truncation=False,
        verbose=False,
    )
    return np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)


def text_token_limit(encoder) -> int:
    """Most content tokens one ``encoder.encode_texts`` call can embed: the model's context
    minus its special tokens (510 for MiniLM). Chunkers embed with
    ``max_length=embed_length(encoder, n)`` so chunks up to this size are embedded whole.

    Example: ``text_token_limit(pipeline.encoder)`` -> ``510`` for MiniLM (512 minus [CLS] and [SEP]).
    """
    return int(encoder.max_window)


def embed_independently(encoder, chunks, max_length: int | None = None) -> None:
    """Set each chunk's embedding to its own text's encoding (naive-style chunk vectors),
    L2-normalised float32 (d,), from at most ``max_length`` word-pieces, special tokens
    included (None: the model's whole context, ``embed_length``).

    Example: ``embed_independently(pipeline.encoder, chunks)`` sets each ``chunk.embedding`` to the
    L2-normalised (d,) encoding of ``chunk.text`` alone.
    """
    if not chunks:
        return
    import torch.nn.functional as F

    max_length = embed_length(encoder) if max_length is None else max_length
    vecs = F.normalize(
        encoder.encode_texts([c.text for c in chunks], max_length=max_length).float(), dim=-1
    )
    for c, v in zip(chunks, vecs.cpu().numpy().astype(np.float32)):
        c.embedding = v


def embed_length(encoder) -> int:
    """``max_length`` for ``encode_texts`` when embedding chunk texts: the model's whole
    context (a chunk's text can re-tokenise into a few more pieces than its token span).

    Example: ``embed_length(pipeline.encoder)`` -> ``512`` for MiniLM.
    """
    return text_token_limit(encoder) + encoder.tokenizer.num_special_tokens_to_add(pair=False)


def _offsets(tokens: TokenEmbeddings | np.ndarray) -> np.ndarray:
    return tokens.offsets if isinstance(tokens, TokenEmbeddings) else np.asarray(tokens)


def unit_char_spans(doc: Document) -> list[tuple[int, int]]:
    """Character spans of the units of ``doc`` (titles, sentences, sentence-less paragraphs),
    sorted by start; empty spans dropped.

    >>> from gralc.documents.plaintext import document_from_text
    >>> unit_char_spans(document_from_text("# T\\n\\nIt took 8 weeks. It helped.", "d1"))
    [(0, 1), (3, 19), (20, 30)]
    """
    spans: list[tuple[int, int]] = [(doc.title_start, doc.title_end)]
    spans += [(s.title_start, s.title_end) for s in doc.iter_sections()]
    for p in doc.paragraphs:
        spans += [(s.start, s.end) for s in p.sentences] if p.sentences else [(p.start, p.end)]
    return sorted((s, e) for s, e in spans if e > s)


def sentence_token_spans(doc: Document, tokens: TokenEmbeddings | np.ndarray) -> list[Unit]:
    """The units of ``doc`` as token ranges tiling ``tokens`` (TokenEmbeddings or an (N, 2)
    offsets array of ``doc.text``). Empty list for a document without tokens.

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\nIt took 8 weeks. It helped.", "d1")
    >>> sentence_token_spans(doc, np.array([[0, 1], [3, 5], [6, 10], [11, 19], [20, 22], [23, 30]]))
    [Unit(tok_start=0, tok_end=1, char_start=0, char_end=1), Unit(tok_start=1, tok_end=4, char_start=3, char_end=19), Unit(tok_start=4, tok_end=6, char_start=20, char_end=30)]
    """
    offsets = _offsets(tokens)
    n = len(offsets)
    if n == 0:
        return []
    if int(offsets[:, 1].max()) > len(doc.text):
        raise ValueError(
            f"token offsets reach character {int(offsets[:, 1].max())} but document {doc.id!r} "
            f"has {len(doc.text)}: the tokens were computed on a different text; encode "
            "doc.text itself"
        )
    starts = [0]
    for char_start, _ in unit_char_spans(doc):
        # first token whose span ends after the unit's first character
        tok = int(np.searchsorted(offsets[:, 1], char_start, side="right"))
        if starts[-1] < tok < n:
            starts.append(tok)
    bounds = starts + [n]
    return [
        Unit(ts, te, int(offsets[ts, 0]), int(offsets[te - 1, 1]))
        for ts, te in zip(bounds[:-1], bounds[1:])
    ]


def check_window(what: str, size: int, overlap: int, size_name: str = "size",
                 overlap_name: str = "overlap") -> None:
    """ValueError unless ``size > 0`` and ``0 <= overlap < size`` (windows of ``size``
    tokens sharing ``overlap``), naming the settings as ``what`` chunking calls them.

    Example: ``check_window("fixed", 256, 256)`` raises "fixed chunking needs size > 0 and
    0 <= overlap < size, got size=256, overlap=256"."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"{what} chunking needs {size_name} > 0 and 0 <= {overlap_name} < "
                         f"{size_name}, got {size_name}={size}, {overlap_name}={overlap}")


def token_windows(start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Windows of at most ``size`` tokens over ``[start, end)``, each starting ``overlap``
    tokens before the previous one ends; the last may be shorter.

    >>> token_windows(0, 10, size=4, overlap=1)
    [(0, 4), (3, 7), (6, 10)]
    """
    check_window("token", size, overlap)
    windows: list[tuple[int, int]] = []
    s = start
    while s < end:
        e = min(s + size, end)
        windows.append((s, e))
        if e >= end:
            break
        s = e - overlap
    return windows
