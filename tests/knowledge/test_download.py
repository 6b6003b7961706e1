"""MeSH download (offline path only: no network in tests) and the command line."""

from __future__ import annotations

import pytest

from gralc.knowledge.__main__ import main
from gralc.knowledge.download import OfflineError, download_mesh, mesh_file_urls

CLOSED = "http://127.0.0.1:9"  # discard port: connection refused


def test_standard_urls():
    urls = mesh_file_urls(2024)
    assert urls["desc2024.xml"][0] == (
        "https://nlmpubs.nlm.nih.gov/projects/mesh/MESH_FILES/xmlmesh/desc2024.xml"
    )
    assert urls["mtrees2024.bin"][0] == (
        "https://nlmpubs.nlm.nih.gov/projects/mesh/MESH_FILES/meshtrees/mtrees2024.bin"
    )


def test_offline_error_is_clear(tmp_path):
    with pytest.raises(OfflineError, match="no network") as err:
        download_mesh(2024, tmp_path, base_url=CLOSED, timeout=5)
    assert "knowledge.vocabulary=" in str(err.value) and "desc2024.xml" in str(err.value)
    assert list(tmp_path.iterdir()) == []  # no partial file left


def test_present_files_are_kept(tmp_path):
    for name in ("desc2024.xml", "mtrees2024.bin"):
        (tmp_path / name).write_text("x")
    assert [p.name for p in download_mesh(2024, tmp_path, base_url=CLOSED)] == [
        "desc2024.xml",
        "mtrees2024.bin",
    ]


def test_cli_download_offline(tmp_path, capsys):
    assert main(["download", "--year", "2024", "--out", str(tmp_path), "--base-url", CLOSED]) == 2
    assert "no network" in capsys.readouterr().err


def test_cli_link_text_file(tmp_path, capsys):
    vocab = tmp_path / "terms.tsv"
    vocab.write_text(
        "DescriptorUI\tDescriptorName\tTermName\tIsPermutedTermYN\n"
        "D001943\tBreast Neoplasms\tBreast Cancer\tN\n"
        "D000163\tAcquired Immunodeficiency Syndrome\tAIDS\tN\n"
    )
    text = tmp_path / "a.txt"
    text.write_text("AIDS and breast cancer; aids.")
    assert main(["link", str(text), f"knowledge.vocabulary={vocab}"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        "0\t4\tD000163\tAIDS\tAcquired Immunodeficiency Syndrome",
        "9\t22\tD001943\tbreast cancer\tBreast Neoplasms",
    ]
    assert main(["link", str(text), f"knowledge.vocabulary={tmp_path / 'none.xml'}"]) == 2
    assert "gralc mesh" in capsys.readouterr().err


def test_gralc_link_defaults_to_the_builtin_vocabulary(tmp_path, capsys):
    from gralc.knowledge.__main__ import link_main

    text = tmp_path / "a.txt"
    text.write_text("Metformin lowers glucose in type 2 diabetes.")
    assert link_main([str(text)]) == 0
    out = capsys.readouterr().out
    assert "\tmetformin\t" in out.lower()


def test_download_from_local_mirror_gunzips_and_loads(tmp_path):
    """The real fetch path (urllib, gzip, atomic rename) on a file:// mirror of NLM's layout."""
    import gzip

    from gralc.knowledge.vocabulary import Vocabulary

    xml = (
        '<?xml version="1.0"?><DescriptorRecordSet><DescriptorRecord>'
        "<DescriptorUI>D001943</DescriptorUI><DescriptorName><String>Breast Neoplasms</String>"
        "</DescriptorName><ConceptList><Concept><TermList><Term><String>Breast Cancer</String>"
        "</Term></TermList></Concept></ConceptList></DescriptorRecord></DescriptorRecordSet>"
    )
    mirror = tmp_path / "mirror"
    (mirror / "2024" / "xmlmesh").mkdir(parents=True)  # only the gzipped yearly copy
    (mirror / "2024" / "xmlmesh" / "desc2024.gz").write_bytes(gzip.compress(xml.encode()))
    (mirror / "MESH_FILES" / "meshtrees").mkdir(parents=True)
    (mirror / "MESH_FILES" / "meshtrees" / "mtrees2024.bin").write_text(
        "Breast Neoplasms;C04.588\n"
    )
    out = tmp_path / "out"
    desc, trees = download_mesh(2024, out, base_url=mirror.as_uri())
    assert desc.read_text() == xml
    assert sorted(p.name for p in out.iterdir()) == ["desc2024.xml", "mtrees2024.bin"]
    vocab = Vocabulary.from_descriptor_xml(desc)
    assert vocab.add_tree_file(trees) == 1
    assert vocab["D001943"].tree_numbers == ["C04.588"]
    with pytest.raises(FileNotFoundError, match="desc2023.xml not found"):
        download_mesh(2023, out, base_url=mirror.as_uri())
