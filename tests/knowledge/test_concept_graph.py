"""The per-document concept graph G_k: exact edges per relation type and per source."""

from __future__ import annotations

import pytest
import torch

from gralc.knowledge.concept_graph import KnowledgeBase, RelationSources, build_concept_graph
from gralc.knowledge.linker import EntityLinker
from gralc.knowledge.mention import EntityMention
from gralc.knowledge.vocabulary import Concept, Vocabulary

VOCAB = Vocabulary(
    {
        c.id: c
        for c in [
            Concept("D009369", "Neoplasms", [], ["C04"]),
            Concept("D001943", "Breast Neoplasms", ["Breast Cancer"], ["C04.588"]),
            Concept("D001829", "Body Regions", [], ["A01"]),
            Concept("D001940", "Breast", [], ["A01.236"]),
            Concept("D013629", "Tamoxifen", [], ["D02.455"]),
            Concept("D000970", "Antineoplastic Agents", [], ["D27.505"]),
            Concept("D005221", "Fatigue", [], ["C23.888"]),
        ]
    }
)
# sentences: [0, 40) and [40, 90)
TEXT = "Tamoxifen treats breast cancer here.    Fatigue follows; the breast is examined."


def mention(surface: str, cid: str, occurrence: int = 0) -> EntityMention:
    start = -1
    for _ in range(occurrence + 1):
        start = TEXT.index(surface, start + 1)
    return EntityMention(start, start + len(surface), cid, surface, VOCAB[cid].name)


MENTIONS = [
    mention("Tamoxifen", "D013629"),
    mention("breast cancer", "D001943"),
    mention("Fatigue", "D005221"),
    mention("breast", "D001940", 1),
]
SENTENCES = [(0, 40), (40, len(TEXT))]


@pytest.fixture
def files(tmp_path):
    pharm = tmp_path / "pharm.tsv"
    pharm.write_text(
        "DescriptorUI\tDescriptorName\tPharmActionUI\tPharmActionName\n"
        "D013629\tTamoxifen\tD000970\tAntineoplastic Agents\n"
        "D013629\tTamoxifen\tD018931\tAntineoplastic Agents, Hormonal\n"
    )
    hsdn = tmp_path / "hsdn.tsv"
    hsdn.write_text(
        "symptom_name\tdisease_name\tcooccurs\ttfidf_score\tdisease_id\tsymptom_id\n"
        "Fatigue\tBreast Neoplasms\t5\t1.0\tD001943\tD005221\n"
        "Fatigue\tAnemia\t5\t1.0\tD000740\tD005221\n"
    )
    return str(pharm), str(hsdn)


def both(*pairs):
    return {p for a, b in pairs for p in ((a, b), (b, a))}


def test_linked_text_gives_the_handmade_mentions():
    assert EntityLinker(VOCAB).link(TEXT) == MENTIONS


def test_all_sources_exact_edges(files):
    pharm, hsdn = files
    kb = KnowledgeBase(VOCAB, RelationSources(pharm_action_tsv=pharm, disease_symptom_tsv=hsdn))
    assert kb.sources_used == ["mesh_tree", "pharm_action", "disease_symptom", "cooccurrence"]
    assert kb.relation_names == ["is_a", "part_of", "pharm_action", "has_symptom", "co_occurs"]
    g = build_concept_graph(MENTIONS, SENTENCES, kb)
    assert g.concept_ids == ["D013629", "D001943", "D005221", "D001940"]
    assert g.num_mentioned == 4
    assert g.edges_of("is_a") == set() and g.edges_of("part_of") == set()  # parents absent
    assert g.edges_of("pharm_action") == set()  # D000970 not mentioned
    assert g.edges_of("has_symptom") == both(("D001943", "D005221"))
    assert g.edges_of("co_occurs") == both(("D013629", "D001943"), ("D005221", "D001940"))
    assert g.edge_index.shape == (2, 6) and g.edge_index.dtype == torch.long
    assert g.edge_type.tolist().count(4) == 4

    g1 = build_concept_graph(MENTIONS, SENTENCES, kb, add_neighbours=True)
    assert g1.concept_ids[4:] == ["D000970", "D018931", "D009369", "D001829"]
    assert g1.edges_of("is_a") == both(("D001943", "D009369"))
    assert g1.edges_of("part_of") == both(("D001940", "D001829"))
    assert g1.edges_of("pharm_action") == both(("D013629", "D000970"), ("D013629", "D018931"))
    data = g1.to_pyg()
    assert data.num_nodes == 8 and data.edge_index.shape[1] == data.edge_type.shape[0] == 14
    assert g1.node_of(MENTIONS).tolist() == [0, 1, 2, 3]


def test_only_requested_sources(files):
    kb = KnowledgeBase(
        VOCAB, RelationSources(tree=False, cooccurrence=False, pharm_action_tsv=files[0])
    )
    assert kb.sources_used == ["pharm_action"] and kb.relation_names == ["pharm_action"]
    g = build_concept_graph(MENTIONS + [mention("Tamoxifen", "D013629")], SENTENCES, kb)
    assert g.edge_index.shape == (2, 0) and g.edge_type.shape == (0,)
    with pytest.warns(UserWarning, match="no MeSH tree numbers"):
        kb = KnowledgeBase(Vocabulary({"X": Concept("X", "x")}), RelationSources())
    assert kb.sources_used == ["cooccurrence"]
    with pytest.raises(FileNotFoundError, match="missing.tsv"):
        KnowledgeBase(VOCAB, RelationSources(pharm_action_tsv="missing.tsv"))


def test_sentence_objects_and_mentions_outside_sentences():
    from gralc.documents.model import Sentence

    kb = KnowledgeBase(VOCAB, RelationSources(tree=False))
    g = build_concept_graph(MENTIONS, [Sentence(0, 40, "p1")], kb)  # second sentence unknown
    assert g.edges_of("co_occurs") == both(("D013629", "D001943"))


MRCONSO = "".join(
    f"{cui}|ENG|P|L|PF|S|Y|A{i}|||D|MSH|MH|D|{name}|0|N||\n"
    for i, (cui, name) in enumerate(
        [("C1", "Neoplasms"), ("C2", "Breast Neoplasms"), ("C3", "Tamoxifen"), ("C4", "Fatigue")]
    )
)
# CUI1|AUI1|STYPE1|REL|CUI2|AUI2|STYPE2|RELA|RUI|SRUI|SAB|SL|RG|DIR|SUPPRESS|CVF|
MRREL = """\
C1|A1|SCUI|CHD|C2|A2|SCUI|isa|R1||MSH|MSH|||N||
C2|A2|SCUI|RO|C3|A3|SCUI|may_treat|R2||MED-RT|MED-RT|||N||
C2|A2|SCUI|RO|C4|A4|SCUI|has_manifestation|R3||X|X|||N||
C2|A2|SCUI|RO|C9|A9|SCUI|may_be_treated_by|R4||MED-RT|MED-RT|||N||
C1|A1|SCUI|CHD|C4|A4|SCUI|isa|R5||MSH|MSH|||O||
"""


def test_mrrel_source(tmp_path):
    (tmp_path / "MRCONSO.RRF").write_text(MRCONSO)
    (tmp_path / "MRREL.RRF").write_text(MRREL)
    vocab = Vocabulary.from_mrconso(tmp_path / "MRCONSO.RRF")
    with pytest.warns(UserWarning, match="no MeSH tree numbers"):  # a CUI vocabulary
        kb = KnowledgeBase(
            vocab, RelationSources(mrrel=str(tmp_path / "MRREL.RRF"), cooccurrence=False)
        )
    assert kb.sources_used == ["mrrel"]
    assert kb.relation_names == ["is_a", "may_treat"]
    assert kb.relations["is_a"] == {"C2": {"C1"}}  # "C2 isa C1"
    assert kb.relations["may_treat"] == {"C3": {"C2"}}  # tamoxifen may treat breast neoplasms
    ments = [EntityMention(i, i + 1, c, c, c) for i, c in enumerate(["C2", "C3", "C4"])]
    g = build_concept_graph(ments, [], kb, add_neighbours=True)
    assert g.concept_ids == ["C2", "C3", "C4", "C1"]
    assert g.edges_of("is_a") == both(("C2", "C1"))
    assert g.edges_of("may_treat") == both(("C3", "C2"))


def test_real_relation_files(shared_data):
    mesh = shared_data / "mesh"
    vocab = Vocabulary.from_thesaurus_tsv(mesh / "mesh2024_thesaurus_terms.tsv")
    vocab.add_tree_file(mesh / "mtrees2024_style.bin")
    kb = KnowledgeBase(
        vocab,
        RelationSources(
            pharm_action_tsv=str(mesh / "mesh2024_pharmacological_action.tsv"),
            disease_symptom_tsv=str(shared_data / "relations" / "hsdn_disease_symptom.tsv"),
        ),
    )
    assert kb.relations["part_of"]["D001940"] == {"D001829"}  # Breast -> Body Regions
    assert "D009371" in kb.relations["is_a"]["D001943"]  # Breast Neoplasms -> Neoplasms by Site
    assert kb.relations["pharm_action"]["D000001"] == {"D000900", "D061207"}
    assert "D019588" in kb.relations["has_symptom"]["D000163"]  # AIDS -> Aging, Premature
    text = "Tamoxifen is given in breast cancer; fatigue is common in breast cancer."
    subset = Vocabulary({k: vocab[k] for k in ("D013629", "D001943", "D005221")})
    mentions = EntityLinker(subset).link(text)
    g = build_concept_graph(mentions, [(0, 36), (36, len(text))], kb, add_neighbours=True)
    assert g.sources_used == ["mesh_tree", "pharm_action", "disease_symptom", "cooccurrence"]
    assert g.num_mentioned == 3
    assert ("D001943", "D005221") in g.edges_of("has_symptom")
    assert ("D013629", "D001943") in g.edges_of("co_occurs")


def test_pharm_actions_read_from_the_descriptor_xml_as_from_the_tsv(files, tmp_path):
    """``pharm_action_tsv`` may name NLM's descYYYY.xml (what ``python -m gralc.knowledge
    download`` fetches): its records' PharmacologicalActionList give the same edges."""

    def record(uid, name, actions=()):
        acts = "".join(f"<PharmacologicalAction><DescriptorReferredTo><DescriptorUI>{a}"
                       f"</DescriptorUI><DescriptorName><String>x</String></DescriptorName>"
                       "</DescriptorReferredTo></PharmacologicalAction>" for a in actions)
        return (f"<DescriptorRecord><DescriptorUI>{uid}</DescriptorUI><DescriptorName><String>"
                f"{name}</String></DescriptorName>"
                + (f"<PharmacologicalActionList>{acts}</PharmacologicalActionList>" if acts else "")
                + "</DescriptorRecord>")

    xml = tmp_path / "desc2024.xml"
    xml.write_text('<?xml version="1.0"?><DescriptorRecordSet>'
                   + record("D009369", "Neoplasms")
                   + record("D013629", "Tamoxifen", ["D000970", "D018931"])
                   + "</DescriptorRecordSet>")
    from_xml = KnowledgeBase(VOCAB, RelationSources(tree=False, pharm_action_tsv=str(xml)))
    from_tsv = KnowledgeBase(VOCAB, RelationSources(tree=False, pharm_action_tsv=files[0]))
    assert from_xml.relations == from_tsv.relations == {"pharm_action": {"D013629": {"D000970", "D018931"}}}
    xml.write_text("<DescriptorRecordSet><DescriptorRecord>")  # truncated
    with pytest.raises(ValueError, match="desc2024.xml"):
        KnowledgeBase(VOCAB, RelationSources(tree=False, pharm_action_tsv=str(xml)))
