"""Vocabulary loaders on the real NLM files and on small hand-written fixtures."""

from __future__ import annotations

import pytest

from gralc.knowledge.vocabulary import Concept, Vocabulary, load_vocabulary

THESAURUS_HEADER = (
    "DescriptorUI\tDescriptorName\tConceptUI\tTermUI\tTermName\t"
    "ConceptPreferredTermYN\tIsPermutedTermYN\tLexicalTag\tRecordPreferredTermYN\n"
)

DESC_XML = """<?xml version="1.0"?>
<DescriptorRecordSet LanguageCode="eng">
 <DescriptorRecord DescriptorClass="1">
  <DescriptorUI>D001943</DescriptorUI>
  <DescriptorName><String>Breast Neoplasms</String></DescriptorName>
  <PharmacologicalActionList><PharmacologicalAction><DescriptorReferredTo>
    <DescriptorUI>D000900</DescriptorUI><DescriptorName><String>Not A Term</String></DescriptorName>
  </DescriptorReferredTo></PharmacologicalAction></PharmacologicalActionList>
  <TreeNumberList><TreeNumber>C04.588.180</TreeNumber><TreeNumber>C17.800.090.500</TreeNumber></TreeNumberList>
  <ConceptList>
   <Concept PreferredConceptYN="Y"><ConceptUI>M0002779</ConceptUI>
    <ConceptName><String>Breast Neoplasms</String></ConceptName>
    <TermList>
     <Term IsPermutedTermYN="N"><TermUI>T1</TermUI><String>Breast Neoplasms</String></Term>
     <Term IsPermutedTermYN="Y"><TermUI>T2</TermUI><String>Breast Neoplasm</String></Term>
     <Term IsPermutedTermYN="N"><TermUI>T3</TermUI><String>Neoplasms, Breast</String></Term>
     <Term IsPermutedTermYN="Y"><TermUI>T4</TermUI><String>Neoplasm, Breast</String></Term>
    </TermList>
   </Concept>
   <Concept PreferredConceptYN="N"><ConceptUI>M0</ConceptUI>
    <ConceptName><String>Breast Cancer</String></ConceptName>
    <TermList><Term><TermUI>T5</TermUI><String>Breast Cancer</String></Term></TermList>
   </Concept>
  </ConceptList>
 </DescriptorRecord>
 <DescriptorRecord DescriptorClass="3">
  <DescriptorUI>D005260</DescriptorUI>
  <DescriptorName><String>Female</String></DescriptorName>
  <ConceptList><Concept><TermList><Term><String>Female</String></Term></TermList></Concept></ConceptList>
 </DescriptorRecord>
</DescriptorRecordSet>
"""

# CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF|
MRCONSO = """\
C0006142|ENG|P|L0006142|PF|S0014866|Y|A0001|||D001943|MSH|MH|D001943|Breast Neoplasms|0|N||
C0006142|ENG|S|L0000001|PF|S0000001|Y|A0002|||D001943|MSH|ET|D001943|Breast Cancer|0|N||
C0006142|ENG|S|L0000002|PF|S0000002|Y|A0003|||D001943|MSH|ET|D001943|Old Breast Term|0|O||
C0006142|FRE|P|L0000003|PF|S0000003|Y|A0004|||D001943|MSHFRE|MH|D001943|Tumeurs du sein|0|N||
C0015672|ENG|P|L0015672|PF|S0041211|Y|A0005|||D005221|SNOMEDCT_US|PT|84229001|Fatigue|9|N||
"""


def test_thesaurus_tsv_fixture_permuted_rule(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text(
        THESAURUS_HEADER
        + "".join(
            f"D001943\tBreast Neoplasms\tM1\tT{i}\t{term}\tN\t{perm}\tNON\tN\n"
            for i, (term, perm) in enumerate(
                [
                    ("Breast Neoplasms", "N"),
                    ("Breast Neoplasm", "Y"),
                    ("Neoplasms, Breast", "N"),
                    ("Neoplasm, Breast", "Y"),
                    ("Breast Cancer", "N"),
                    ("ICI 46,474", "Y"),
                ]
            )
        )
    )
    vocab = Vocabulary.from_thesaurus_tsv(path)
    concept = vocab["D001943"]
    assert concept.name == "Breast Neoplasms"
    # real synonyms first, then permuted variants; permuted inversions ("X, Y") dropped
    assert concept.synonyms == [
        "Neoplasms, Breast",
        "Breast Cancer",
        "Breast Neoplasm",
        "ICI 46,474",
    ]
    assert vocab.term_index["Breast Cancer"] == ["D001943"]
    assert "Neoplasm, Breast" not in vocab.term_index

def test_thesaurus_tsv_real(mesh_vocab):
    vocab = mesh_vocab
    assert len(vocab) == 30764
    assert vocab["D051379"].name == "Mice"
    assert vocab.term_index["Mouse"] == ["D051379"]
    assert "Breast Cancer" in vocab["D001943"].synonyms
    assert "Lead Poisonings" in vocab["D007855"].synonyms  # permuted plural kept
    assert "Poisonings, Lead" not in vocab.term_index  # permuted inversion skipped
    assert 150_000 < vocab.num_terms() < 200_000


def test_tree_file_and_tree_tsv_agree(mesh_vocab, shared_data):
    mesh = shared_data / "mesh"
    a = Vocabulary({k: Concept(k, c.name) for k, c in mesh_vocab.concepts.items()})
    b = Vocabulary({k: Concept(k, c.name) for k, c in mesh_vocab.concepts.items()})
    assert a.add_tree_file(mesh / "mtrees2024_style.bin") == 64457
    assert b.add_tree_tsv(mesh / "mesh2024_descriptor_tree_numbers.tsv") == 64457
    assert a["D001940"].tree_numbers == ["A01.236"]  # Breast
    assert a["D001943"].tree_numbers == ["C04.588.180", "C17.800.090.500"]
    assert {k: c.tree_numbers for k, c in a.concepts.items()} == {
        k: c.tree_numbers for k, c in b.concepts.items()
    }
    assert a.tree_index()["A01.236"] == "D001940"


def test_descriptor_xml_fixture(tmp_path):
    path = tmp_path / "desc.xml"
    path.write_text(DESC_XML)
    vocab = Vocabulary.from_descriptor_xml(path)
    assert sorted(vocab.concepts) == ["D001943", "D005260"]
    concept = vocab["D001943"]
    assert concept.name == "Breast Neoplasms"  # not the pharmacological action's name
    assert concept.synonyms == ["Neoplasms, Breast", "Breast Cancer", "Breast Neoplasm"]
    assert concept.tree_numbers == ["C04.588.180", "C17.800.090.500"]
    assert vocab["D005260"].tree_numbers == []
    assert load_vocabulary(path)["D001943"].synonyms == concept.synonyms


def test_descriptor_xml_real_sample_is_truncated(shared_data):
    path = shared_data / "mesh" / "desc2015_subset_sample.xml"
    with pytest.raises(ValueError, match="truncated"):
        Vocabulary.from_descriptor_xml(path)
    with pytest.warns(UserWarning, match="keeping the 2 complete records"):
        vocab = Vocabulary.from_descriptor_xml(path, strict=False)
    assert sorted(vocab.concepts) == ["D000001", "D000002"]
    calcimycin = vocab["D000001"]
    assert calcimycin.name == "Calcimycin"
    assert calcimycin.tree_numbers == ["D03.438.221.173"]
    assert calcimycin.synonyms == ["A-23187", "Antibiotic A23187", "A23187", "A 23187"]
    assert vocab["D000002"].synonyms[:3] == ["Temephos", "Abate", "Difos"]


def test_mrconso_fixture(tmp_path):
    path = tmp_path / "MRCONSO.RRF"
    path.write_text(MRCONSO)
    vocab = Vocabulary.from_mrconso(path)
    assert list(vocab.concepts) == ["C0006142"]  # SNOMED row and French row filtered
    assert vocab["C0006142"].name == "Breast Neoplasms"
    assert vocab["C0006142"].synonyms == ["Breast Cancer"]  # suppressed (O) row dropped
    both = Vocabulary.from_mrconso(path, sabs=("MSH", "SNOMEDCT_US"))
    assert sorted(both.concepts) == ["C0006142", "C0015672"]
    assert load_vocabulary(path).concepts.keys() == vocab.concepts.keys()


def test_merge():
    a = Vocabulary({"D1": Concept("D1", "Alpha", ["A1"], ["X01"])})
    b = Vocabulary({"D1": Concept("D1", "Alpha", ["A2"], ["X02"]), "D2": Concept("D2", "Beta")})
    merged = a.merge(b)
    assert merged["D1"].synonyms == ["A1", "A2"]
    assert merged["D1"].tree_numbers == ["X01", "X02"]
    assert merged.term_index["Beta"] == ["D2"]
    assert len(a) == 1  # inputs unchanged


def test_missing_file_names_path_and_fix(tmp_path):
    missing = tmp_path / "desc2024.xml"
    for loader in (
        Vocabulary.from_descriptor_xml,
        Vocabulary.from_thesaurus_tsv,
        Vocabulary.from_mrconso,
        Vocabulary().add_tree_file,
    ):
        with pytest.raises(FileNotFoundError, match="gralc mesh --year 2024") as err:
            loader(missing)
        assert str(missing) in str(err.value)


def test_bad_tsv_columns(tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text("a\tb\n1\t2\n")
    with pytest.raises(ValueError, match="missing columns"):
        Vocabulary.from_thesaurus_tsv(path)
