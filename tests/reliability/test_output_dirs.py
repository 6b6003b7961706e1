"""Output folders never lose a user's files (gralc.artefacts, gralc.index, shard tools)."""

from __future__ import annotations

import pytest

from gralc import index as index_cli
from gralc.artefacts import MARKER, OutputDirError, artefact_kind, check_output_dir, write_artefact
from gralc.chunking.chunk import Chunk
from gralc.config import CONFIG_DIR
from gralc.retrieval.indexes.bm25 import BM25Index


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "a.txt").write_text("Ferret cough study\n\nIntroduction\n\nFerrets coughed for four days "
                             "after infection. Mice did not.\n", encoding="utf-8")
    (d / "b.md").write_text("# Mouse fever\n\n## Results\n\nMice had fever for two days.\n",
                            encoding="utf-8")
    return d


def user_folder(path):
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("years of work", encoding="utf-8")
    return path


def test_index_refuses_a_folder_of_user_files_before_any_work(corpus, tmp_path, capsys):
    out = user_folder(tmp_path / "results")
    assert index_cli.main([str(corpus), "--out", str(out), "--strategy", "late"]) == 2
    err = capsys.readouterr().err
    assert "thesis.tex" in err and "--force" in err and "nothing is deleted" in err
    assert (out / "thesis.tex").read_text(encoding="utf-8") == "years of work"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "results"]  # no temp, no lock


@pytest.mark.parametrize("where", ["same", "inside", "parent"])
def test_index_refuses_an_output_overlapping_the_corpus(corpus, where, capsys):
    out = {"same": corpus, "inside": corpus / "index", "parent": corpus.parent}[where]
    assert index_cli.main([str(corpus), "--out", str(out), "--strategy", "late"]) == 2
    assert "overlaps the input" in capsys.readouterr().err
    assert sorted(p.name for p in corpus.iterdir()) == ["a.txt", "b.md"]


def test_force_moves_user_files_aside_and_rebuilds_replace_our_index(corpus, tmp_path):
    out = user_folder(tmp_path / "results")
    assert index_cli.main([str(corpus), "--out", str(out), "--strategy", "late", "--force"]) == 0
    (aside,) = tmp_path.glob("results.replaced-*")
    assert (aside / "thesis.tex").read_text(encoding="utf-8") == "years of work"
    assert artefact_kind(out) == "index" and (out / MARKER).is_file()
    # a second build into our own index replaces it without --force and leaves nothing behind
    assert index_cli.main([str(corpus), "--out", str(out), "--strategy", "fixed",
                           "--searcher", "hybrid"]) == 0
    assert (out / "lexical" / "config.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["corpus", aside.name, "results"])


def test_a_failed_write_leaves_the_old_artefact_untouched(tmp_path):
    out = tmp_path / "idx"
    with write_artefact(out, "index") as tmp:
        (tmp / "retriever.json").write_text("old")
    with pytest.raises(RuntimeError, match="crash"), write_artefact(out, "index") as tmp:
        (tmp / "retriever.json").write_text("half")
        raise RuntimeError("crash")
    assert (out / "retriever.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_a_second_writer_gets_a_clear_error(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "idx"
    second = ("from gralc.artefacts import write_artefact\n"
              f"with write_artefact({str(out)!r}, 'index') as t: (t / 'x').write_text('second')")
    with write_artefact(out, "index") as tmp:
        (tmp / "x").write_text("first")
        proc = subprocess.run([sys.executable, "-c", second], capture_output=True, text=True)
        assert proc.returncode != 0 and "another GraLC process is writing" in proc.stderr
    assert (out / "x").read_text() == "first"
    assert not list(tmp_path.glob(".*lock"))


def test_kinds_do_not_replace_each_other_and_look_alike_folders_are_foreign(tmp_path):
    bm25 = BM25Index()
    bm25.index([Chunk("d", "c0", "mice had fever", 0, 14)])
    bm25.save(tmp_path / "bm25")
    with pytest.raises(OutputDirError, match="holds a GraLC bm25_index, not a GraLC index"):
        check_output_dir(tmp_path / "bm25", "index")
    legacy = tmp_path / "old_index"
    legacy.mkdir()
    for name in ("retriever.json", "index.faiss", "chunks.jsonl"):
        (legacy / name).write_text("{}")
    with pytest.raises(OutputDirError, match="GraLC did not write"):  # file names prove nothing
        check_output_dir(legacy, "index")
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputDirError, match="is a file"):
        check_output_dir(tmp_path / "file", "index", force=True)
    with pytest.raises(OutputDirError, match="GraLC did not write"):
        bm25.save(user_folder(tmp_path / "mine"))


def test_export_refuses_user_files_and_its_own_training_folder(tmp_path, capsys):
    from gralc import export as export_cli

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    ckpt = run / "checkpoints" / "last.ckpt"
    ckpt.write_bytes(b"not read: the output folder is checked first")
    out = user_folder(tmp_path / "paper")
    assert export_cli.main([str(ckpt), "--out", str(out)]) == 2
    assert "thesis.tex" in capsys.readouterr().err
    assert export_cli.main([str(ckpt), "--out", str(run)]) == 2  # would replace the run
    assert "overlaps the input" in capsys.readouterr().err
    assert ckpt.is_file() and (out / "thesis.tex").is_file()


def test_eval_refuses_a_folder_of_user_files_before_encoding(tmp_path, monkeypatch):
    from gralc.config import load_config
    from gralc.evaluation import run as run_mod
    from gralc.evaluation.config import EvalConfig

    monkeypatch.chdir(run_mod.Path(__file__).resolve().parents[2])
    out = user_folder(tmp_path / "paper")
    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", [f"paths.output_dir={out}", "methods=[bm25]"])
    monkeypatch.setattr(run_mod, "Pipeline", lambda *a, **k: pytest.fail("encoding started"))
    with pytest.raises(OutputDirError, match="thesis.tex"):
        run_mod.evaluate(cfg)
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]
    from gralc.artefacts import claim_dir  # what evaluate() does with paths.force=true

    assert claim_dir(out, "eval_results", force=True) == out.resolve()
    (aside,) = tmp_path.glob("paper.replaced-*")
    assert (aside / "thesis.tex").is_file() and artefact_kind(out) == "eval_results"
    assert claim_dir(out, "eval_results") == out.resolve()  # our own run folder: reusable
