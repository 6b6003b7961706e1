"""Fixtures for the baseline chunkers: small structured documents, the real MiniLM encoder,
and one shared set of invariants every strategy must satisfy."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from gralc.chunking.base import PreparedDocument
from gralc.chunking.chunk import Chunk
from gralc.documents.model import Document, Paragraph, Section, Sentence, TextBuilder
from gralc.knowledge.mention import token_span

# (title, imrad type, paragraphs as lists of sentences, subsections)
SMALL = [
    ("Introduction", "introduction", [
        ["Type 2 diabetes mellitus affects more than 400 million adults worldwide.",
         "Chronic hyperglycaemia damages the retina, the kidneys and peripheral nerves.",
         "Metformin remains the first-line pharmacological treatment."],
        ["Its glucose-lowering mechanism is still debated.",
         "Suppression of hepatic gluconeogenesis is the most widely cited explanation."],
    ], []),
    ("Methods", "methods", [
        ["We enrolled 120 patients from three outpatient clinics between 2015 and 2018.",
         "Participants were randomised to metformin or placebo for twenty-four weeks.",
         "Glycated haemoglobin was measured by high-performance liquid chromatography."],
        ["Differences between groups were assessed with a two-sided t-test.",
         "A p-value below 0.05 was considered statistically significant."],
    ], []),
]

_TOPICS = [
    ("Introduction", "introduction", "asthma", "airway inflammation"),
    ("Methods", "methods", "cohort recruitment", "spirometry"),
    ("Results", "results", "exacerbation rates", "eosinophil counts"),
    ("Discussion", "discussion", "clinical implications", "biologic therapies"),
]


def _long_sections() -> list:
    """Four IMRaD sections (Methods with a subsection), ~750 word-pieces in total."""
    sections = []
    for title, imrad, a, b in _TOPICS:
        paragraphs = [
            [f"This paragraph number {p} discusses {a} in detail for sentence {s}, "
             f"including its relation to {b} and to previously published observations."
             for s in range(3)]
            for p in range(2)
        ]
        subs = []
        if imrad == "methods":
            subs = [("Statistical analysis", "methods", [
                ["Mixed-effects logistic regression models were fitted with clinic as a random "
                 "intercept.", "Missing values were handled by multiple imputation."]], [])]
        sections.append((title, imrad, paragraphs, subs))
    return sections


def build_document(doc_id: str, title: str, sections: list) -> Document:
    """A Document with exact offsets, built block by block with TextBuilder."""
    b = TextBuilder()
    t0, t1 = b.add(title)
    doc = Document(id=doc_id, text="", title=title, title_start=t0, title_end=t1)
    counter = iter(range(10_000))

    def add_section(spec, level: int, parent: str | None) -> Section:
        name, imrad, paragraphs, subs = spec
        s0, s1 = b.add(name)
        sec = Section(id=f"sec{next(counter)}", title=name, level=level, imrad_type=imrad,
                      start=s0, end=s1, title_start=s0, title_end=s1, parent_id=parent)
        for sents in paragraphs:
            p0, p1 = b.add(" ".join(sents))
            para = Paragraph(id=f"p{next(counter)}", start=p0, end=p1, section_id=sec.id)
            pos = p0
            for s in sents:
                para.sentences.append(Sentence(pos, pos + len(s), para.id))
                pos += len(s) + 1
            doc.paragraphs.append(para)
            sec.paragraph_ids.append(para.id)
        sec.subsections = [add_section(sub, level + 1, sec.id) for sub in subs]
        sec.end = b.length
        return sec

    doc.sections = [add_section(s, 1, None) for s in sections]
    doc.text = b.text
    for p in doc.paragraphs:
        for s in p.sentences:
            assert doc.text[s.start : s.end].strip() == doc.text[s.start : s.end]
    return doc


@pytest.fixture(scope="session")
def encoder(minilm_path):
    from gralc.encoding.encoder import DocumentEncoder, EncoderConfig

    return DocumentEncoder(EncoderConfig(model=str(minilm_path), window=None, overlap=128,
                                         batch_size=8, device="cpu"))


@pytest.fixture(scope="session")
def small_doc() -> Document:
    return build_document("small", "Metformin and glycaemic control in type 2 diabetes", SMALL)


@pytest.fixture(scope="session")
def long_doc() -> Document:
    return build_document("long", "Eosinophilic asthma in adults: a cohort study", _long_sections())


@pytest.fixture(scope="session")
def small_prepared(small_doc, encoder) -> PreparedDocument:
    return PreparedDocument(small_doc, tokens=encoder.encode_document(small_doc.text))


@pytest.fixture(scope="session")
def long_prepared(long_doc, encoder) -> PreparedDocument:
    prepared = PreparedDocument(long_doc, tokens=encoder.encode_document(long_doc.text))
    assert prepared.tokens.n_tokens > 600 and len(prepared.tokens.windows) >= 2
    return prepared


def _innermost_titles(doc: Document, pos: int) -> list[str]:
    """Titles from the top-level section down to the innermost one containing ``pos`` (the
    first section when ``pos`` precedes every section, e.g. in the document title)."""
    path: list[str] = []
    sections = doc.sections
    while sections:
        inside = [s for s in sections if s.start <= pos < s.end]
        if not inside:
            if not path:
                path.append(sections[0].title)
            break
        path.append(inside[0].title)
        sections = inside[0].subsections
    return path


def check_chunks(
    prepared: PreparedDocument, chunks: list[Chunk], strategy: str, dim: int,
    require_methods: bool = True,
) -> None:
    """Invariants every strategy must satisfy (see Chunk's docstring); ``require_methods``:
    some chunk must start directly in the Methods section (so its metadata is exercised)."""
    doc = prepared.doc
    offsets = prepared.tokens.offsets
    assert chunks, "no chunks"
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    starts_methods = 0
    for c in chunks:
        assert c.strategy == strategy and c.doc_id == doc.id
        assert c.text == doc.text[c.char_start : c.char_end] and c.text.strip()
        assert c.n_tokens > 0
        assert token_span(offsets, c.char_start, c.char_end) == (c.token_start, c.token_end)
        assert c.section_path == _innermost_titles(doc, c.char_start)
        top = doc.sections[[s.title for s in doc.sections].index(c.section_path[0])]
        assert c.imrad_types[0] == top.imrad_type or c.char_start < top.start
        methods = next(s for s in doc.sections if s.title == "Methods")
        if methods.start <= c.char_start < methods.end and c.section_path == ["Methods"]:
            starts_methods += 1
            assert c.imrad_types[0] == "methods"
        assert isinstance(c.embedding, np.ndarray)
        assert c.embedding.shape == (dim,) and c.embedding.dtype == np.float32
        assert np.isfinite(c.embedding).all()
        assert abs(float(np.linalg.norm(c.embedding)) - 1.0) < 1e-4
    assert starts_methods > 0 or not require_methods, "no chunk starts in Methods: metadata not exercised"


def check_tiling(prepared: PreparedDocument, chunks: list[Chunk], overlap: int = 0) -> None:
    """Chunks tile all tokens in order, consecutive chunks sharing exactly ``overlap`` tokens;
    text between non-overlapping chunks is whitespace only."""
    text = prepared.doc.text
    assert chunks[0].token_start == 0
    assert chunks[-1].token_end == prepared.tokens.n_tokens
    for a, b in zip(chunks, chunks[1:]):
        assert b.token_start == a.token_end - overlap
        if overlap == 0:
            assert text[a.char_end : b.char_start].strip() == ""
    assert text[: chunks[0].char_start].strip() == "" and text[chunks[-1].char_end :].strip() == ""


@pytest.fixture(scope="session")
def check() -> Callable[..., None]:
    return check_chunks


@pytest.fixture(scope="session")
def tiling() -> Callable[..., None]:
    return check_tiling
