"""gralc.chunking.plots: the boundary-score figure of a chunked document (``gralc chunk --plot``)."""

from __future__ import annotations

import numpy as np
import pytest

from gralc.chunking.base import PreparedDocument
from gralc.chunking.boundaries import BoundaryConfig
from gralc.chunking.plots import plot_boundaries, signal_curves
from gralc.chunking.structure_aware import StructureAwareChunker
from gralc.data.demo import demo_articles
from gralc.documents.jats import parse_jats

PNG = b"\x89PNG\r\n\x1a\n"


def _image(path):
    """(height, width, channels) of a PNG file, read back by matplotlib."""
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == PNG
    return imread(path).shape


@pytest.fixture(scope="module")
def chunked(encoder):
    """A demo article, structure-aware chunks of it, and the chunker's per-token signals."""
    doc = parse_jats(demo_articles()[0])
    prepared = PreparedDocument(doc, tokens=encoder.encode_document(doc.text))
    chunker = StructureAwareChunker(encoder, BoundaryConfig(min_tokens=64, max_tokens=512))
    chunks = chunker.chunk(prepared)
    return prepared, chunks, chunker.signals(prepared, prepared.tokens)


def test_the_signals_that_made_the_chunks_are_drawn_into_a_png(chunked, tmp_path):
    prepared, chunks, signals = chunked
    assert len(chunks) >= 3
    curves = signal_curves(signals)
    assert set(curves) == {"b_struct", "b_sem", "entity crossing", "score (Eq. 8)"}
    assert all(len(v) == prepared.tokens.n_tokens for v in curves.values())
    # each chunk's recorded boundary score is the curve's value at its cut
    for c in chunks[1:]:
        assert c.boundary_scores["score"] == pytest.approx(curves["score (Eq. 8)"][c.token_start])
    path = plot_boundaries(prepared, chunks, tmp_path / "plots" / "boundaries.png", signals=signals)
    assert path == tmp_path / "plots" / "boundaries.png"
    height, width, _ = _image(path)
    assert width > 1000 and height > 400
    assert [p.name for p in path.parent.iterdir()] == ["boundaries.png"]  # no temporary left


def test_without_signals_the_chunks_scores_are_drawn_at_their_cuts(chunked, tmp_path):
    """A Document alone (no token offsets: section ticks interpolated) and the chunks'
    ``boundary_scores``; a mapping of curves works too; bad input is refused."""
    prepared, chunks, signals = chunked
    assert _image(plot_boundaries(prepared.doc, chunks, tmp_path / "a.png"))[1] > 1000
    n = prepared.tokens.n_tokens
    assert _image(plot_boundaries(prepared.doc, chunks, tmp_path / "b.png",
                                  signals={"total": np.zeros(n)}))[1] > 1000
    with pytest.raises(ValueError, match=f"3 values for a document of {n} tokens"):
        plot_boundaries(prepared, chunks, tmp_path / "c.png", signals={"total": [0.0, 1.0, 2.0]})
    other = [type(chunks[0])(**{**chunks[0].__dict__, "doc_id": "other"})]
    with pytest.raises(ValueError, match="not of document"):
        plot_boundaries(prepared, other, tmp_path / "d.png")
    assert not (tmp_path / "c.png").exists() and not (tmp_path / "d.png").exists()
