"""Entity linker: acronyms, longest match, word boundaries, stop-list, Unicode offsets, and
the full MeSH 2024 thesaurus on a real PMC article."""

from __future__ import annotations

import re

import pytest

from gralc.knowledge.linker import EntityLinker, LinkerConfig, normalise
from gralc.knowledge.vocabulary import Concept, Vocabulary

SMALL = Vocabulary(
    {
        c.id: c
        for c in [
            Concept("D_ACE", "Peptidyl-Dipeptidase A", ["ACE", "Angiotensin Converting Enzyme"]),
            Concept("D_ACEI", "Angiotensin-Converting Enzyme Inhibitors", ["ACE Inhibitors"]),
            Concept("D000163", "Acquired Immunodeficiency Syndrome", ["AIDS"]),
            Concept("D_COPD", "Pulmonary Disease, Chronic Obstructive", ["COPD"]),
            Concept("D001940", "Breast"),
            Concept("D001943", "Breast Neoplasms", ["Breast Cancer"]),
            Concept("D007498", "Iris"),
            Concept("D007854", "Lead"),
            Concept("D007855", "Lead Poisoning"),
            Concept("D_HA", "Hearing Aids"),
            Concept("D_X", "Xy"),  # shorter than min_length
        ]
    }
)


@pytest.fixture(scope="module")
def small() -> EntityLinker:
    return EntityLinker(SMALL)


def spans(linker, text):
    return [(text[m.start : m.end], m.concept_id) for m in linker.link(text)]


def test_acronyms_are_case_sensitive(small):
    assert spans(small, "we can ace the test and aids were given") == []
    assert spans(small, "Aids and Ace") == []
    assert spans(small, "ACE inhibitors lower ACE activity; AIDS and COPD.") == [
        ("ACE inhibitors", "D_ACEI"),
        ("ACE", "D_ACE"),
        ("AIDS", "D000163"),
        ("COPD", "D_COPD"),
    ]
    assert spans(small, "new hearing aids") == [("hearing aids", "D_HA")]


def test_longest_match_wins(small):
    assert spans(small, "Breast cancer and the breast.") == [
        ("Breast cancer", "D001943"),
        ("breast", "D001940"),
    ]
    m = small.link("BREAST CANCER")[0]
    assert (m.concept_id, m.name, m.surface) == ("D001943", "Breast Neoplasms", "BREAST CANCER")


def test_word_boundaries_and_stoplist(small):
    assert spans(small, "Irish irises; the Iris.") == [("Iris", "D007498")]
    assert spans(small, "this may lead to lead poisoning") == [("lead poisoning", "D007855")]
    assert spans(small, "breastfeeding, xy, cancerous") == []
    plain = EntityLinker(SMALL, LinkerConfig(stoplist=()))
    assert spans(plain, "this may lead to") == [("lead", "D007854")]
    # punctuation is a boundary and matches the term's punctuation loosely
    assert spans(small, "(breast-cancer)") == [("breast-cancer", "D001943")]


def test_unicode_offsets_are_input_offsets(small):
    assert len("İ".lower()) == 2  # the case the normalisation must not let shift offsets
    text = "İİ İstanbul: Breast Cancer in COPD—and ﬁ AIDS’ β-breast"
    assert len(normalise(text)) == len(text)
    assert spans(small, text) == [
        ("Breast Cancer", "D001943"),
        ("COPD", "D_COPD"),
        ("AIDS", "D000163"),
        ("breast", "D001940"),
    ]
    assert all(m.surface == text[m.start : m.end] for m in small.link(text))


def test_link_documents_and_save_load(small, tmp_path):
    texts = ["Breast cancer", "", "nothing here", "AIDS"]
    result = small.link_documents(texts)
    assert [len(r) for r in result] == [1, 0, 0, 1]
    small.save(tmp_path / "linker.json")
    loaded = EntityLinker.load(tmp_path / "linker.json")
    assert loaded.link_documents(texts) == result
    with pytest.raises(FileNotFoundError, match="EntityLinker"):
        EntityLinker.load(tmp_path / "missing.json")


def test_a_pickled_linker_is_refused_not_run(tmp_path):
    import pickle

    class Payload:
        def __reduce__(self):
            return (open, (str(tmp_path / "PWNED"), "w"))

    (tmp_path / "linker.pkl").write_bytes(pickle.dumps(Payload()))
    with pytest.raises(ValueError, match="not a GraLC linker file"):
        EntityLinker.load(tmp_path / "linker.pkl")
    assert not (tmp_path / "PWNED").exists()

@pytest.fixture(scope="module")
def mesh_linker(mesh_vocab) -> EntityLinker:
    return EntityLinker(mesh_vocab)


def test_full_thesaurus_acronyms_and_stoplist(mesh_linker):
    text = "ACE inhibitors in AIDS; we can ace the test and aids were given; this may lead to Irish"
    assert spans(mesh_linker, text) == [("ACE inhibitors", "D000806"), ("AIDS", "D000163")]
    assert spans(mesh_linker, "Breast cancer in mice: lead poisoning") == [
        ("Breast cancer", "D001943"),
        ("mice", "D051379"),
        ("lead poisoning", "D007855"),
    ]
    assert mesh_linker.num_keys > 150_000


def test_full_thesaurus_on_real_pmc_article(mesh_linker, mesh_vocab, shared_data):
    from lxml import etree

    path = shared_data / "pmc" / "UCDenver-ccp__CRAFT" / "BMC Cancer-4-_-539250.nxml"
    body = etree.parse(str(path)).getroot().find(".//body")
    text = " ".join(body.itertext())
    mentions = mesh_linker.link(text)
    ids = [m.concept_id for m in mentions]
    n_apoptosis = len(re.findall(r"\bapoptosis\b", text, flags=re.I))
    assert n_apoptosis == 6
    assert ids.count("D017209") == n_apoptosis  # Apoptosis
    assert ids.count("D051379") == len(re.findall(r"\b(mice|mouse)\b", text, flags=re.I)) == 20
    assert "D001943" in ids  # "breast cancer"
    starts = [m.start for m in mentions]
    assert starts == sorted(starts)
    assert all(a.end <= b.start for a, b in zip(mentions, mentions[1:]))  # no overlaps
    assert all(m.surface == text[m.start : m.end] for m in mentions)
    for m in mentions:  # the surface is, up to case and punctuation, a term of the concept
        term_keys = {normalise(t).strip() for t in mesh_vocab[m.concept_id].terms()}
        assert normalise(m.surface) in term_keys


def test_ambiguous_term_prefers_preferred_name_then_lower_id():
    many = [f"Syn {i}" for i in range(150)]
    vocab = Vocabulary(
        {
            "D2": Concept("D2", "Cold", many),
            "D1": Concept("D1", "Cold Temperature", ["Cold"]),
            "D3": Concept("D3", "Other", [*many, "Late Term"]),
        }
    )
    linker = EntityLinker(vocab)
    assert spans(linker, "cold") == [("cold", "D2")]  # D2's preferred name beats D1's synonym
    assert spans(linker, "Syn 3") == [("Syn 3", "D2")]  # same position in both: lower id wins
    assert spans(linker, "late term") == [("late term", "D3")]  # synonym at position > 99
