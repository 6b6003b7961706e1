"""Artefacts travel (issue 55): a trained index names its model by SHA-256 and by a path
relative to itself, so an export and its index moved (``mv``), copied (``cp -r``) or unpacked
(``tar``) together anywhere answer with the same top 10; ``--bundle-model`` carries the export
inside the index, which then travels alone; a missing model is named by its digest with the
fix; ``gralc search --model`` points at a model that moved elsewhere (and refuses another)."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest

from gralc import index as index_cli
from gralc import search as search_cli
from gralc.data.demo import DEMO_DIR
from gralc.inference import Retriever
from gralc.model.persistence import export

ARTICLES = DEMO_DIR / "articles"
QUESTION = "Did slow titration of metformin reduce gastrointestinal adverse events?"


def top10(index: Path, model: Path | None = None) -> list[str]:
    return [h.chunk.chunk_id for h in Retriever.load(index, model=model).search(QUESTION, k=10)]


@pytest.fixture(scope="module")
def built(train_once, tmp_path_factory):
    """``(folder holding export/ and index/, the index's top 10)``; late interaction on, so the
    index holds token codes and the model's concept/unit tables too."""
    root = tmp_path_factory.mktemp("portable")
    ckpt = train_once(root / "run", "model.use_lexical=true")
    export(ckpt, root / "work" / "export", settings={"late_interaction": 0.4, "sentence_evidence": 0.3})
    assert index_cli.main([str(ARTICLES), "--model", str(root / "work" / "export"),
                           "--out", str(root / "work" / "index")]) == 0
    spec = json.loads((root / "work" / "index" / "retriever.json").read_text())
    assert spec["model"] == "../export" and len(spec["model_sha256"]) == 64
    return root / "work", top10(root / "work" / "index")


def test_moved_copied_and_tarred_together_give_the_same_top10(built, tmp_path):
    work, expected = built
    copy = tmp_path / "elsewhere" / "deeper"
    shutil.copytree(work, copy)  # cp -r
    assert top10(copy / "index") == expected
    moved = tmp_path / "moved"
    shutil.move(str(copy), moved)  # mv (the copy; the original stays for the other tests)
    assert top10(moved / "index") == expected
    archive = tmp_path / "both.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(moved, arcname="bundle")
    shutil.rmtree(moved)
    unpacked = tmp_path / "unpacked"
    with tarfile.open(archive) as tar:
        tar.extractall(unpacked, filter="data")
    assert top10(unpacked / "bundle" / "index") == expected


def test_an_index_that_carries_its_model_travels_alone(built, tmp_path, capsys):
    work, expected = built
    out = tmp_path / "bundled"
    assert index_cli.main([str(ARTICLES), "--model", str(work / "export"), "--out", str(out),
                           "--bundle-model"]) == 0
    assert json.loads((out / "retriever.json").read_text())["model"] == "model"
    alone = tmp_path / "alone"
    shutil.move(str(out), alone)
    archive = tmp_path / "alone.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(alone, arcname="index")
    shutil.rmtree(alone)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "x", filter="data")
    assert top10(tmp_path / "x" / "index") == expected
    capsys.readouterr()
    assert search_cli.main([str(tmp_path / "x" / "index"), QUESTION, "-k", "10", "--format", "json"]) == 0
    hits = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [h["chunk_id"] for h in hits] == expected


def test_a_missing_model_is_named_by_digest_and_search_model_points_at_it(built, tmp_path, capsys):
    work, expected = built
    index = tmp_path / "index"
    shutil.copytree(work / "index", index)  # the index alone: its export is not beside it
    shutil.copytree(work / "export", tmp_path / "models" / "mine")
    spec = json.loads((index / "retriever.json").read_text())
    # the recorded origin still exists in this test; hide it to see the message
    origin = Path(spec["model_origin"])
    hidden = origin.with_name(origin.name + ".hidden")
    origin.rename(hidden)
    try:
        assert search_cli.main([str(index), QUESTION]) == 2
        err = capsys.readouterr().err
        assert spec["model_sha256"][:12] in err and "--model" in err and "--bundle-model" in err
        assert search_cli.main([str(index), QUESTION, "--model", str(tmp_path / "models" / "mine"),
                                "--format", "json", "-k", "10"]) == 0
        hits = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert [h["chunk_id"] for h in hits] == expected
        assert {"doc_id", "char_start", "char_end", "section_path", "imrad_types", "components"} <= set(hits[0])
    finally:
        hidden.rename(origin)


def test_another_model_is_refused(built, train_once, tmp_path, capsys):
    work, _ = built
    other = export(train_once(tmp_path / "other_run", "seed=1"), tmp_path / "other")
    assert search_cli.main([str(work / "index"), QUESTION, "--model", str(other)]) == 2
    assert "is not the model that built" in capsys.readouterr().err
