"""Chunk-Link: preamble detection, enumeration links, top-k expansion, persistence."""

from __future__ import annotations

import pytest
from _retrieval_fixtures import build_document, paragraph_chunks

from gralc.chunking.base import PreparedDocument, make_chunk
from gralc.retrieval.hits import Hit
from gralc.retrieval.rerank.chunk_link import (
    ChunkLinker,
    build_links,
    detect_preambles,
    enumeration_for,
)

PREAMBLE = "Patients were excluded for the following reasons:"
ITEMS = ["Age under 18 years.", "Pregnancy.", "Prior heart surgery."]


@pytest.fixture
def trial():
    doc = build_document(
        "d1",
        [
            (
                "Methods",
                [
                    f"We enrolled 120 adults in 2019. {PREAMBLE}",
                    ITEMS,
                    "Blood pressure was measured twice.",
                ],
            ),
            ("Results", ["Mean age was 54 years."]),
            ("Inclusion criteria", ["Adults aged 18 to 65.", "Written consent."]),
        ],
    )
    return doc, paragraph_chunks(doc)  # c0 preamble, c1-c3 items, c4 ..., c7


def _span(doc, text):
    start = doc.text.index(text)
    return start, start + len(text)


def test_detects_preamble_list_and_title(trial):
    doc, _ = trial
    lst = doc.lists[0]
    title = next(s for s in doc.sections if s.title == "Inclusion criteria")
    assert detect_preambles(doc) == [
        _span(doc, PREAMBLE),
        (lst.start, lst.end),
        (title.title_start, title.title_end),
    ]
    assert doc.text[lst.start : lst.end] == "\n\n".join(ITEMS)


def test_no_false_positive_on_ordinary_sentences():
    doc = build_document(
        "d2",
        [
            (
                "Methods",
                [
                    "Blood pressure was measured twice. Patients were seen again the following day.",
                    "Details are given in the following section. Ratios were 1:500 in all assays.",
                ],
            ),
            ("Discussion", ["Background: none."]),
        ],
    )
    assert detect_preambles(doc) == []


def test_enumeration_regions(trial):
    doc, _ = trial
    lst = doc.lists[0]
    first_item = doc.paragraph(lst.item_ids[0])
    pre = _span(doc, PREAMBLE)
    assert enumeration_for(doc, pre).items == (pre[1], lst.end)  # the whole following list
    assert enumeration_for(doc, (lst.start, lst.end)).preamble == (lst.start, first_item.end)
    assert enumeration_for(doc, (lst.start, lst.end)).items == (first_item.end, lst.end)
    inline = build_document("d3", [("M", ["Three outcomes were recorded: death, stroke and MI."])])
    en = enumeration_for(inline, detect_preambles(inline)[0])
    assert inline.text[en.items[0] : en.items[1]] == "death, stroke and MI."


def test_exact_links_and_window(trial):
    doc, chunks = trial
    ids = [c.chunk_id for c in chunks]
    document_level = make_chunk(
        PreparedDocument(doc), "test", 0, 0, len(doc.text), level="document"
    )
    expected = {ids[0]: ids[1:4], ids[1]: ids[2:4]}  # preamble -> items; 1st item -> rest
    assert build_links(doc, chunks + [document_level]) == expected  # levels linked apart
    assert build_links(doc, chunks, window=2) == {ids[0]: ids[1:3], ids[1]: ids[2:4]}


def test_section_title_preamble_links_the_section_content(trial):
    doc, _ = trial
    sec = next(s for s in doc.sections if s.title == "Inclusion criteria")
    p7, p8 = (doc.paragraph(pid) for pid in sec.paragraph_ids)
    prepared = PreparedDocument(doc)
    title_chunk = make_chunk(prepared, "t", 0, sec.title_start, p7.end)
    rest = make_chunk(prepared, "t", 1, p8.start, p8.end)
    assert build_links(doc, [rest, title_chunk]) == {title_chunk.chunk_id: [rest.chunk_id]}


def test_textual_enumeration_links_only_the_next_paragraph():
    doc = build_document(
        "d4",
        [
            (
                "Methods",
                [
                    "Outcomes were recorded as follows.",
                    "Mortality at 30 days and stroke.",
                    "Blood samples were frozen.",
                ],
            )
        ],
    )
    c = paragraph_chunks(doc)
    assert build_links(doc, c) == {c[0].chunk_id: [c[1].chunk_id]}


def test_pluggable_detector(trial):
    doc, _ = trial
    first = doc.paragraphs[0]
    cut = first.sentences[0].end
    prepared = PreparedDocument(doc)
    a = make_chunk(prepared, "s", 0, first.start, cut)
    b = make_chunk(prepared, "s", 1, cut, first.end)
    sentence0 = (first.sentences[0].start, cut)
    assert build_links(doc, [a, b], detector=lambda d: [sentence0]) == {a.chunk_id: [b.chunk_id]}
    assert build_links(doc, [a, b], detector=lambda d: []) == {}
    with pytest.raises(ValueError, match="outside document 'd1'"):
        build_links(doc, [a, b], detector=lambda d: [(0, 10**6)])


def test_expand_completes_top_k_with_item_chunks(trial):
    doc, chunks = trial
    by_id = {c.chunk_id: c for c in chunks}
    linker = ChunkLinker().fit([doc], chunks)
    ranked = [(chunks[0], 0.9), (chunks[5], 0.8), (chunks[4], 0.7), (chunks[2], 0.6)]
    out = linker.expand(ranked, by_id, k=3)
    assert [h.chunk.chunk_id for h in out] == [chunks[i].chunk_id for i in (0, 1, 2, 3, 5, 4)]
    assert [h.score for h in out] == pytest.approx(
        [0.9, 0.9 - 1e-6, 0.9 - 2e-6, 0.9 - 3e-6, 0.8, 0.7], abs=1e-12
    )
    assert out[1].components == {"chunk_link": 1.0} and out[1].via == chunks[0].chunk_id
    assert out[0].via is None and chunks[1].boundary_scores == {}  # chunks not mutated


def test_expand_no_duplicates(trial):
    doc, chunks = trial
    linker = ChunkLinker().fit([doc], chunks)
    by_id = {c.chunk_id: c for c in chunks}
    out = linker.expand([Hit(chunks[1], 0.9), Hit(chunks[0], 0.8), Hit(chunks[3], 0.1)], by_id, 2)
    assert [h.chunk.chunk_id for h in out] == [chunks[i].chunk_id for i in (1, 2, 3, 0)]
    with pytest.raises(ValueError, match="not in all_chunks_by_id"):
        linker.expand([(chunks[0], 1.0)], {}, k=1)


def test_save_load_round_trip(trial, tmp_path):
    doc, chunks = trial
    linker = ChunkLinker(window=4).fit([doc], chunks)
    linker.save(tmp_path / "links.json")
    loaded = ChunkLinker.load(tmp_path / "links.json")
    assert loaded.links == linker.links and loaded.window == 4
    assert loaded.linked(chunks[0].chunk_id) == [c.chunk_id for c in chunks[1:4]]
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="not a Chunk-Link file"):
        ChunkLinker.load(tmp_path / "bad.json")


def test_fit_needs_the_documents(trial):
    _, chunks = trial
    with pytest.raises(ValueError, match="d1"):
        ChunkLinker().fit([], chunks)


def test_real_pmc_list_is_linked(shared_data):
    from gralc.documents.jats import parse_jats

    path = shared_data / "pmc" / "UCDenver-ccp__CRAFT" / "PLoS Genet-3-4-1857728.nxml"
    assert path.is_file(), f"{path} missing from the shared data"
    doc = parse_jats(path)
    (lst,) = doc.lists  # the primer list: 15 list items
    spans = detect_preambles(doc)
    assert (lst.start, lst.end) in spans
    assert all(0 <= s < e <= len(doc.text) for s, e in spans)
    chunks = paragraph_chunks(doc)
    by_start = {c.char_start: c.chunk_id for c in chunks}
    items = [by_start[doc.paragraph(pid).start] for pid in lst.item_ids]
    links = build_links(doc, chunks)
    assert links[items[0]] == items[1:6]  # window 5
    pos = {c.chunk_id: i for i, c in enumerate(chunks)}
    assert all(0 < pos[t] - pos[src] <= 5 for src, ts in links.items() for t in ts)
