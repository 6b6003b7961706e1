"""A crafted 900-deep section nesting parses, inspects and chunks without RecursionError."""

from __future__ import annotations

from gralc.documents.__main__ import inspect
from gralc.documents.jats import MAX_SECTION_DEPTH, parse_jats
from gralc.pipeline import Pipeline

DEPTH = 900


def deep_article() -> bytes:
    body = "".join(f"<sec><title>Part {i}</title><p>Finding number {i} held.</p>" for i in range(DEPTH))
    return (f"<article><front><article-meta><title-group><article-title>Deep</article-title>"
            f"</title-group></article-meta></front><body>{body}{'</sec>' * DEPTH}</body></article>").encode()


def test_deep_nesting_is_merged_with_a_warning_and_keeps_every_paragraph():
    doc = parse_jats(deep_article(), source="deep.nxml")
    assert max(s.level for s in doc.iter_sections()) == MAX_SECTION_DEPTH
    assert all(f"Finding number {i} held." in doc.text for i in range(DEPTH))
    assert any(f"deeper than {MAX_SECTION_DEPTH}" in w for w in doc.warnings)
    assert "Deep" in inspect(doc)
    pipeline = Pipeline()
    chunks = pipeline.chunk(pipeline.prepare([doc], progress=False), "structure_aware", progress=False)
    assert chunks and chunks[-1].char_end <= len(doc.text)
