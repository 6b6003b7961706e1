"""The inference API and CLIs: build an index from a corpus, save, load, search."""

import json

import pytest

from gralc import index as index_cli
from gralc import search as search_cli
from gralc.data.demo import DEMO_DIR
from gralc.inference import Retriever

ARTICLES = DEMO_DIR / "articles"
QUESTION = "How did slow titration of extended-release metformin change HbA1c?"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("index")
    assert index_cli.main([str(ARTICLES), "--out", str(out), "--strategy", "late"]) == 0
    return out


def test_build_save_load_search_is_stable(built):
    loaded = Retriever.load(built)
    hits = loaded.search(QUESTION, k=5)
    assert len(hits) == 5 and hits[0].chunk.doc_id == "PMC9000001"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    again = Retriever.load(built).search(QUESTION, k=5)
    assert [h.chunk.chunk_id for h in again] == [h.chunk.chunk_id for h in hits]
    assert all(h.chunk.section_path and all(h.chunk.section_path) for h in hits)


def test_search_cli_json(built, capsys):
    assert search_cli.main([str(built), QUESTION, "-k", "3", "--format", "json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["doc_id"] == "PMC9000001" and "cos" in rows[0]["components"]


def test_clear_errors(tmp_path, capsys):
    assert search_cli.main([str(tmp_path), QUESTION]) == 2
    assert "not a GraLC index" in capsys.readouterr().err
    assert index_cli.main([str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_hybrid_index_fuses_bm25_and_survives_reload(built, tmp_path):
    out = tmp_path / "hybrid"
    assert index_cli.main([str(ARTICLES), "--out", str(out), "--strategy", "late",
                           "--searcher", "hybrid", "fusion.lexical_weight=0.8"]) == 0
    # the BM25 scores the index's chunks: their records are the index's chunks.jsonl, once
    assert (out / "lexical" / "config.json").is_file() and not (out / "lexical" / "chunks.jsonl").exists()
    loaded = Retriever.load(out)
    assert loaded.spec.searcher == "hybrid" and loaded.fusion.lexical_weight == 0.8
    hits = loaded.search(QUESTION, k=5)
    assert len(hits) == 5 and {"dense", "lexical", "fused"} <= set(hits[0].components)
    assert [h.chunk.chunk_id for h in Retriever.load(out).search(QUESTION, k=5)] == \
        [h.chunk.chunk_id for h in hits]
    dense = Retriever.load(built).search(QUESTION, k=20)
    fused = loaded.search(QUESTION, k=20)
    assert [h.chunk.chunk_id for h in fused] != [h.chunk.chunk_id for h in dense]


def test_plain_text_files_are_a_corpus(tmp_path):
    corpus = tmp_path / "txt"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Ferret cough study\n\nAbstract: Ferrets cough.\n\nIntroduction\n\n"
                                  "Coughing ferrets were studied in 2019. The incubation period "
                                  "was four days.\n", encoding="utf-8")
    (corpus / "b.md").write_text("# Mouse fever\n\n## Results\n\nMice had fever for two days.\n",
                                 encoding="utf-8")
    r = Retriever.build(corpus, strategy="late")
    assert {c.doc_id for c in r.index.chunks} == {"a", "b"}
    assert r.search("How long was the incubation period in ferrets?", k=1)[0].chunk.doc_id == "a"
