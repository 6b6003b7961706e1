"""The Python API on objects (issue 55): ``from gralc import ...`` for the few names a user
calls; documents from paths, strings or lists; chunking a string or a Document; a Retriever
built from a list of Documents; each public name documented with an example."""

from __future__ import annotations

import subprocess
import sys

import pytest

import gralc
from gralc.data.demo import demo_articles

QUESTION = "Did slow titration of metformin reduce gastrointestinal adverse events?"


def test_import_gralc_is_instant_and_loads_nothing_heavy():
    """``import gralc`` imports none of torch, transformers, faiss (names load on first use)."""
    code = "import sys, gralc; print(sorted(m for m in ('torch', 'transformers', 'faiss') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert out.strip() == "[]"


def test_every_public_name_resolves_and_has_a_docstring_with_an_example():
    for name in gralc.__all__:
        obj = getattr(gralc, name)
        if name.startswith("__"):
            continue
        assert obj.__doc__ and len(obj.__doc__) > 40, name
    for name in ("load_documents", "document_from_text", "Chunker", "Retriever", "Document"):
        assert ">>>" in (getattr(gralc, name).__doc__ or "") or name == "Document", name
    assert set(dir(gralc)) >= set(gralc.__all__)
    with pytest.raises(AttributeError):
        gralc.nosuch  # noqa: B018


def test_documents_from_paths_strings_and_lists(tmp_path):
    paths = demo_articles()[:2]
    docs = gralc.load_documents([str(paths[0]), paths[1]])
    assert [d.id for d in docs] == ["PMC9000001", "PMC9000002"]
    note = gralc.document_from_text("# Titration\n\n## Methods\n\nMetformin was titrated over 8 weeks.", "n1")
    assert [d.id for d in gralc.load_documents([note, *docs])] == ["n1", "PMC9000001", "PMC9000002"]
    with pytest.raises(FileNotFoundError, match="document_from_text"):
        gralc.load_documents("no/such/folder")
    with pytest.raises(ValueError, match="share an id"):
        gralc.load_documents([note, note])
    with pytest.raises(TypeError, match="not int"):
        gralc.load_documents([3])


def test_chunking_a_string_a_document_and_a_path():
    chunker = gralc.Chunker("structure_aware")
    chunks = chunker("# Slow titration\n\n## Methods\n\nMetformin was titrated over eight weeks in "
                     "40 patients.\n\n## Results\n\nGastrointestinal adverse events fell by half.")
    assert chunks and all(isinstance(c, gralc.Chunk) for c in chunks)
    assert {c.section_path[0] for c in chunks} <= {"Abstract", "Methods", "Results"}
    assert "Gastrointestinal adverse events" in " ".join(c.text for c in chunks)
    doc = gralc.load_documents(demo_articles()[0])[0]
    from_doc, from_path = chunker(doc), chunker(demo_articles()[0])
    assert [c.chunk_id for c in from_doc] == [c.chunk_id for c in from_path]
    assert all(doc.text[c.char_start:c.char_end] == c.text for c in from_doc)
    with pytest.raises(FileNotFoundError):
        chunker("missing.nxml")  # a path with a typo is not read as text
    with pytest.raises(ValueError, match="unknown strategy"):
        gralc.Chunker("nope")


def test_a_retriever_from_a_list_of_documents(tmp_path):
    docs = gralc.load_documents(demo_articles()[:3])
    retriever = gralc.Retriever.build(docs, strategy="late")
    hits = retriever.search(QUESTION, k=3)
    assert len(hits) == 3 and isinstance(hits[0], gralc.Hit)
    assert hits[0].chunk.doc_id in {d.id for d in docs}
    retriever.save(tmp_path / "index")
    again = gralc.Retriever.load(tmp_path / "index").search(QUESTION, k=3)
    assert [h.chunk.chunk_id for h in again] == [h.chunk.chunk_id for h in hits]
