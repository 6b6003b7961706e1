"""A figure of how a document was cut: the boundary scores along its tokens, the cuts, the
sections (``gralc chunk --plot``).

matplotlib is imported inside :func:`plot_boundaries` (the object API, no pyplot state: the
caller's backend is left alone), so importing the chunkers never loads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from gralc.atomic import atomic_write
from gralc.chunking.base import PreparedDocument
from gralc.chunking.boundaries import BoundarySignals, char_to_token_start
from gralc.chunking.chunk import Chunk
from gralc.documents.model import Document

_PNG_META = {"Software": None}  # no version string: same inputs give the same bytes
#: the components a chunk's ``boundary_scores`` holds (structure-aware chunkers), drawn at its cut
_COMPONENTS = (("score", "score (Eq. 8)"), ("struct", "b_struct"), ("sem", "b_sem"),
               ("entity", "b_entity"))


def signal_curves(signals: BoundarySignals | Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Name -> (N,) float array of per-token signals: a :class:`BoundarySignals` gives
    ``b_struct``, ``b_sem``, ``entity crossing`` (-1 where a cut would split a mention) and the
    total ``score (Eq. 8)``; a mapping is taken as it is.

    >>> signal_curves({"score": [0.1, 0.5]})["score"]
    array([0.1, 0.5])
    """
    if isinstance(signals, BoundarySignals):
        signals = {"b_struct": signals.struct, "b_sem": signals.sem,
                   "entity crossing": -signals.entity_mask.float(), "score (Eq. 8)": signals.score}
    curves = {}
    for name, values in signals.items():
        if hasattr(values, "detach"):
            values = values.detach().cpu().numpy()
        curves[str(name)] = np.asarray(values, dtype=np.float64).reshape(-1)
    return curves


def _section_positions(doc: Document, offsets: np.ndarray | None, anchors: tuple[np.ndarray, np.ndarray],
                       in_tokens: bool) -> list[tuple[float, str, int]]:
    """``(x, title, level)`` of every section start: a token index (from the token offsets,
    else interpolated between the chunks' character and token starts) or a character."""
    out = []
    chars, tokens = anchors
    for sec in doc.iter_sections():
        if not in_tokens:
            x = float(sec.start)
        elif offsets is not None:
            x = float(char_to_token_start(offsets, sec.start))
        else:
            x = float(np.interp(sec.start, chars, tokens))
        out.append((x, sec.title or sec.imrad_type.capitalize(), sec.level))
    return out


def plot_boundaries(doc: Document | PreparedDocument, chunks: Sequence[Chunk], path: str | Path,
                    signals: BoundarySignals | Mapping[str, Any] | None = None) -> Path:
    """Draw the chunking of ``doc`` into the PNG ``path`` (written atomically); returns it.

    Along the document's tokens (characters when a chunk has no token span, e.g. fixed-size
    chunks): ``signals`` as curves, per token (a :class:`BoundarySignals` of the chunker,
    ``chunker.signals(prepared, chunker.tokens(prepared))``, or name -> (N,) values); without
    them, each chunk's ``boundary_scores`` (score and components at its start cut) as points.
    Chunk cuts are vertical lines, section starts ticks on the top axis (titled for
    top-level sections). ``doc``: the :class:`Document` the chunks were cut from, or its
    :class:`PreparedDocument` (its token offsets then place the section ticks exactly, else
    they are interpolated between the chunks' character and token starts). Pass one level
    of a multi-level index's chunks. Raises ValueError for chunks of another document, or
    signals whose length is not the token count.

    Example: ``plot_boundaries(prepared, Chunker("structure_aware")(prepared.doc), "cuts.png")``
    -> ``Path('cuts.png')`` (the chunk cuts over each chunk's boundary scores).
    """
    from matplotlib.figure import Figure

    prepared = doc if isinstance(doc, PreparedDocument) else None
    doc = prepared.doc if prepared is not None else doc
    offsets = prepared.tokens.offsets if prepared is not None and prepared.tokens is not None else None
    if not chunks:
        raise ValueError(f"document {doc.id!r}: no chunks to plot")
    other = sorted({c.doc_id for c in chunks} - {doc.id})
    if other:
        raise ValueError(f"plot_boundaries: chunks of {other} are not of document {doc.id!r}")
    chunks = sorted(chunks, key=lambda c: (c.char_start, c.char_end))
    in_tokens = all(c.token_start >= 0 and c.token_end >= c.token_start for c in chunks)
    curves = signal_curves(signals) if signals is not None else {}
    if curves and not in_tokens:
        raise ValueError("plot_boundaries: per-token signals need chunks with token spans")
    if in_tokens:
        n = len(offsets) if offsets is not None else max(c.token_end for c in chunks)
        starts = [c.token_start for c in chunks]
    else:
        n = len(doc.text)
        starts = [c.char_start for c in chunks]
    for name, values in curves.items():
        if len(values) != n:
            raise ValueError(f"plot_boundaries: signal {name!r} has {len(values)} values for a "
                             f"document of {n} tokens")
    anchors = (np.array([c.char_start for c in chunks] + [len(doc.text)], dtype=np.float64),
               np.array([c.token_start for c in chunks] + [n], dtype=np.float64))
    sections = _section_positions(doc, offsets, anchors, in_tokens)

    fig = Figure(figsize=(12, 4.2))
    ax = fig.add_subplot()
    x = np.arange(n)
    for name, values in curves.items():
        total = name.startswith("score")
        ax.plot(x, values, label=name, linewidth=1.4 if total else 0.8, alpha=1.0 if total else 0.75,
                zorder=3 if total else 2)
    if not curves:
        for key, label in _COMPONENTS:
            points = [(s, c.boundary_scores[key]) for s, c in zip(starts, chunks)
                      if key in c.boundary_scores and s > 0]
            if points:
                px, py = zip(*points)
                ax.plot(px, py, "o" if key == "score" else ".", label=f"{label} at the cut",
                        markersize=6 if key == "score" else 4, zorder=3)
    cuts = sorted({s for s in starts if s > 0})
    for i, s in enumerate(cuts):
        ax.axvline(s, color="black", linewidth=0.7, linestyle="--", alpha=0.6,
                   label="chunk cut" if i == 0 else None, zorder=1)
    ax.axhline(0.0, color="grey", linewidth=0.5)
    ax.set_xlim(0, max(n, 1))
    ax.set_xlabel("token" if in_tokens else "character")
    ax.set_ylabel("boundary score")
    strategy = chunks[0].strategy or "chunks"
    ax.set_title(f"{doc.id}: {len(chunks)} {strategy} chunks, {len(cuts)} cuts", fontsize=10)
    top = ax.secondary_xaxis("top")
    top.set_xticks([p for p, _, level in sections if level <= 1],
                   labels=[t[:24] for _, t, level in sections if level <= 1], fontsize=7, rotation=30,
                   ha="left")
    top.set_xticks([p for p, _, level in sections if level > 1], minor=True)
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(loc="upper right", fontsize=7, framealpha=0.8)
    fig.tight_layout()
    path = Path(path)
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=110, metadata=_PNG_META)
    return path
