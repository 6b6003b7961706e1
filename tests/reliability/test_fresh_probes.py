"""Issue 58, second round of probes: 63 fresh members of the ten classes tried on a fresh
clone (45 passed); one test per probe that failed, each failing on the code before its fix.
Real indexes of a small corpus, the real command lines, real files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gralc import index as index_cli
from gralc import search as search_cli
from gralc.artefacts import MARKER, _write_marker
from gralc.inference import Retriever, write_spec
from gralc.knowledge.builtin import builtin_tree_path, builtin_vocabulary_path

REPO = Path(__file__).resolve().parents[2]


def _corpus(folder: Path, swap: bool = False) -> Path:
    folder.mkdir(parents=True)
    texts = [("a", "Metformin adherence was limited by nausea."), ("b", "Tamoxifen lowered recurrence."),
             ("c", "Bats carried the virus without symptoms.")]
    if swap:  # the same articles under other names: same shapes, other order of documents
        texts = [(n, t) for (n, _), (_, t) in zip(texts, reversed(texts))]
    for name, text in texts:
        (folder / f"{name}.txt").write_text(f"Study {name}\n\n{text} Nothing else happened.\n", encoding="utf-8")
    return folder


def _build(corpus: Path, out: Path, *extra: str) -> int:
    return index_cli.main([str(corpus), "--out", str(out), "--strategy", "late", *extra])


@pytest.fixture(scope="module")
def indexes(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("probes")
    assert _build(_corpus(root / "c"), root / "idx") == 0
    assert _build(_corpus(root / "cx", swap=True), root / "idxx") == 0
    return root, root / "idx", root / "idxx"


@pytest.fixture
def idx(indexes, tmp_path) -> Path:
    copy = tmp_path / "idx"
    shutil.copytree(indexes[1], copy)
    return copy


def _reseal(folder: Path) -> None:
    (folder / MARKER).unlink()
    _write_marker(folder, "index")


def _err(capsys) -> str:
    return capsys.readouterr().err


# ----- class 1 / 7: a listed file that is a pipe hangs nothing -------------------------------
def test_a_pipe_listed_in_the_manifest_is_refused_not_read(idx, capsys):
    (idx / "config.json").unlink()
    os.mkfifo(idx / "config.json")
    marker = json.loads((idx / MARKER).read_text())
    marker["files"]["config.json"] = {"size": 0, "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
    (idx / MARKER).write_text(json.dumps(marker))
    started = time.monotonic()
    assert search_cli.main([str(idx), "metformin"]) == 2
    assert "config.json is not a regular file" in _err(capsys) and time.monotonic() - started < 60


# ----- class 2: files of two indexes, or a reordered chunk list, under a re-signed manifest ----
def test_vectors_of_another_index_are_refused_under_a_re_signed_manifest(idx, indexes, capsys):
    for name in ("index.faiss", "vectors.npy"):  # a flat index keeps no index.faiss
        if (indexes[2] / name).is_file():
            shutil.copy(indexes[2] / name, idx / name)
    _reseal(idx)
    assert search_cli.main([str(idx), "What limits metformin adherence?"]) == 2
    assert "is not the file this index was built with" in _err(capsys)


def test_a_reordered_chunk_list_is_refused_under_a_re_signed_manifest(idx, capsys):
    lines = (idx / "chunks.jsonl").read_text().splitlines(keepends=True)
    lines[0], lines[1] = lines[1], lines[0]
    (idx / "chunks.jsonl").write_text("".join(lines))
    _reseal(idx)
    assert search_cli.main([str(idx), "metformin"]) == 2
    assert "chunks.jsonl is not the file this index was built with" in _err(capsys)


def test_an_index_that_does_not_bind_its_files_is_refused(idx):
    spec = json.loads((idx / "retriever.json").read_text())
    del spec["bound_files"]
    (idx / "retriever.json").write_text(json.dumps(spec))
    _reseal(idx)
    with pytest.raises(ValueError, match="does not bind the index's files"):
        Retriever.load(idx)
    write_spec(idx, spec)  # a forger who binds again and re-signs: structure holds the rest
    _reseal(idx)
    assert Retriever.load(idx).search("metformin", k=1)


# ----- class 3: the knowledge files questions are linked with are pinned ---------------------
def test_a_vocabulary_edited_after_indexing_is_refused(tmp_path, capsys):
    vocab, tree = tmp_path / "vocab.tsv", tmp_path / "tree.bin"
    shutil.copy(builtin_vocabulary_path(), vocab)
    shutil.copy(builtin_tree_path(), tree)
    assert _build(_corpus(tmp_path / "c"), tmp_path / "idx", f"knowledge.vocabulary={vocab}",
                  f"knowledge.tree_file={tree}") == 0
    assert search_cli.main([str(tmp_path / "idx"), "metformin"]) == 0
    capsys.readouterr()
    rows = vocab.read_text().splitlines(keepends=True)
    vocab.write_text("".join(r for r in rows if "Metformin" not in r))
    assert search_cli.main([str(tmp_path / "idx"), "metformin"]) == 2
    assert f"vocabulary {vocab} is not the file this index was built with" in _err(capsys)


# ----- class 4: caches keyed by content ------------------------------------------------------
def test_the_digest_cache_does_not_vouch_for_a_file_edited_with_its_time_restored(tmp_path, monkeypatch):
    from gralc.encoding.models import _DigestCache

    monkeypatch.setenv("GRALC_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "tokenizer.json"
    f.write_bytes(b'{"the": 1, "of": 2}')
    first = _DigestCache().sha256(f)
    st = f.stat()
    with open(f, "r+b") as h:  # same size, same inode
        h.write(b'{"the": 2, "of": 1}')
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_mtime_ns == st.st_mtime_ns and f.stat().st_size == st.st_size
    assert _DigestCache().sha256(f) != first


def test_the_digest_cache_serves_an_unchanged_file_without_reading_it(tmp_path, monkeypatch):
    """The cache's reason to exist: a file whose size, times and inode are unchanged is not read
    again (an encoder's weights, MeSH at every search). It never hit once ctime joined the
    stamp (entries of five values compared with four)."""
    from gralc import artefacts
    from gralc.encoding.models import _DigestCache

    monkeypatch.setenv("GRALC_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "model.safetensors"
    f.write_bytes(b"weights" * 100)
    cache = _DigestCache()
    first = cache.sha256(f)
    cache.save()

    def no_read(path):
        raise AssertionError(f"{path} read again although unchanged")

    monkeypatch.setattr(artefacts, "file_sha256", no_read)
    assert _DigestCache().sha256(f) == first


@pytest.mark.slow  # a subprocess or two encoder loads: make test-all (CI) runs it
def test_the_token_cache_never_serves_another_encoders_vectors(tmp_path, minilm_path):
    from gralc.encoding.encoder import DocumentEncoder, EncoderConfig

    enc = tmp_path / "enc"
    shutil.copytree(minilm_path, enc)
    before = DocumentEncoder(EncoderConfig(model=str(enc), device="cpu", precision="fp32"))._key("Metformin.")
    config = json.loads((enc / "tokenizer_config.json").read_text())
    config["model_max_length"] = 511
    (enc / "tokenizer_config.json").write_text(json.dumps(config))
    after = DocumentEncoder(EncoderConfig(model=str(enc), device="cpu", precision="fp32"))._key("Metformin.")
    assert before != after


# ----- class 5: a BEIR folder's files lie inside it ------------------------------------------
def test_a_beir_corpus_linked_from_outside_is_refused(tmp_path, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "TOPSECRET plans."}) + "\n")
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").symlink_to(outside / "corpus.jsonl")
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "plans?"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert index_cli.main([str(beir), "--out", str(tmp_path / "idx")]) == 2
    assert "corpus.jsonl leads outside" in _err(capsys) and not (tmp_path / "idx").exists()


# ----- class 6: what argparse echoes is escaped ----------------------------------------------
def test_a_usage_error_escapes_control_characters(capsys):
    assert search_cli.main(["nowhere", "q", "\x1b[2Jfoo\u009b=1", "--bogus\x1b]0;x\x07"]) == 2
    err = _err(capsys)
    assert "\x1b" not in err and "\u009b" not in err and "\x07" not in err and "\\x1b" in err


# ----- class 7: a sweep file bounded -----------------------------------------------------------
def test_a_sweep_of_aliases_or_a_huge_grid_is_refused_at_once(tmp_path, capsys):
    from gralc.sweep import main as sweep_main

    bomb = "method: grid\nprogram: train.py\nparameters:\n  seed:\n    values: &a0 [1,2,3,4,5,6,7,8,9,10]\n"
    bomb += "".join(f"  p{i}:\n    values: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 8))
    grid = "method: grid\nprogram: train.py\nparameters:\n" + "".join(
        f"  p{i}:\n    values: [1,2,3,4,5,6,7,8,9,10]\n" for i in range(8))
    for name, text, words in (("bomb.yaml", bomb, "a YAML alias (*a0)"),
                              ("grid.yaml", grid, "100,000,000 configurations")):
        (tmp_path / name).write_text(text)
        started = time.monotonic()
        assert sweep_main([str(tmp_path / name), "--dry-run"]) == 2
        assert words in _err(capsys) and time.monotonic() - started < 10


# ----- class 8: settings and names checked before the work -------------------------------------
def test_bad_settings_and_names_are_refused_before_any_encoding(indexes, tmp_path, capsys, monkeypatch):
    import gralc.inference

    def no_work(*_a, **_k):
        raise AssertionError("the work started before the refusal")

    monkeypatch.setattr(gralc.inference.Retriever, "build", no_work)
    monkeypatch.setattr(gralc.inference.Retriever, "load", no_work)
    corpus = indexes[0] / "c"
    assert index_cli.main([str(corpus), "--out", str(tmp_path / "x"), "index.kind=bogus"]) == 2
    assert "unknown index kind 'bogus'" in _err(capsys)
    out = tmp_path / "idx"
    shutil.copytree(indexes[1], out)
    (out / "lexical").write_text("my notes")
    assert index_cli.main([str(corpus), "--out", str(out), "--strategy", "late", "--searcher", "hybrid"]) == 2
    assert "holds lexical, a file of yours named like a folder GraLC writes" in _err(capsys)
    assert (out / "lexical").read_text() == "my notes"
    assert search_cli.main([str(out), "q", "--format", "trec", "--run-name", "my run"]) == 2
    assert "--run-name 'my run'" in _err(capsys)
    queries = tmp_path / "q.tsv"
    queries.write_text("q 1\tWhich dose?\n")
    assert search_cli.main([str(out), "--queries", str(queries), "--format", "trec"]) == 2
    assert "question id 'q 1'" in _err(capsys)


# ----- class 9: one message, not a traceback -------------------------------------------------
def test_an_output_that_cannot_be_written_is_one_message(indexes, tmp_path, capsys):
    corpus = indexes[0] / "c"
    (tmp_path / "f.txt").write_text("a file")
    assert index_cli.main([str(corpus), "--out", str(tmp_path / "f.txt" / "sub")]) == 2
    assert "f.txt is a file, not a folder" in _err(capsys)
    assert index_cli.main([str(corpus), "--out", "/proc/gralc_probe"]) == 2
    err = _err(capsys)
    assert "cannot write the output /proc/gralc_probe" in err and "Errno" not in err


@pytest.mark.slow  # a subprocess or two encoder loads: make test-all (CI) runs it
def test_ctrl_c_is_one_line_not_a_traceback(tmp_path):
    """SIGINT once the command has said it loaded the corpus, while it encodes the whole demo
    corpus (seconds on any CPU), so the interrupt always lands inside the work."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "gralc", "index", str(REPO / "gralc" / "data" / "demo" / "articles"),
                             "--out", str(tmp_path / "idx"), "--strategy", "structure_aware"],
                            stderr=subprocess.PIPE, text=True, env=env)
    seen = []
    for line in proc.stderr:  # bounded: the command prints a few lines before encoding
        seen.append(line)
        if line.startswith("loaded ") or len(seen) > 50:
            break
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)[1], None
    err = "".join(seen) + (rest or "")
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err[-2000:]
    assert not (tmp_path / "idx").exists()  # nothing half-written


def test_a_python_warning_is_printed_as_one_warning_line():
    code = ("from gralc.cli import configure_output; import warnings; configure_output(0); "
            "warnings.warn('RelationSources.tree: no tree numbers', UserWarning)")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO).stderr
    assert err.strip() == "warning: RelationSources.tree: no tree numbers"


# ----- class 10: the words say what is there -------------------------------------------------
def test_a_device_or_pipe_is_not_called_missing(idx, tmp_path, capsys):
    os.mkfifo(tmp_path / "q.jsonl")
    for path in ("/dev/zero", str(tmp_path / "q.jsonl")):
        started = time.monotonic()
        assert search_cli.main([str(idx), "--queries", path]) == 2
        err = _err(capsys)
        assert "not found" not in err and "is not a regular file (a pipe, socket or device" in err
        assert time.monotonic() - started < 30
    assert search_cli.main([str(idx), "--queries", str(tmp_path)]) == 2  # a folder: read as BEIR
    assert "no queries.jsonl" in _err(capsys)


# ----- found by the 20,000-input fuzz campaign (test_fuzz_artefacts.py) ----------------------
def test_a_retriever_json_field_of_the_wrong_type_is_one_message(idx, capsys):
    spec = json.loads((idx / "retriever.json").read_text())
    spec["model"], spec["model_sha256"] = [], ""
    (idx / "retriever.json").write_text(json.dumps(spec))
    _reseal(idx)
    assert search_cli.main([str(idx), "metformin"]) == 2
    assert "field 'model' holds list" in _err(capsys)


def test_an_infinite_dimension_is_one_message(idx, capsys):
    meta = (idx / "config.json").read_text()
    dim = json.loads(meta)["dim"]
    (idx / "config.json").write_text(meta.replace(f'"dim": {dim}', '"dim": 1e999'))
    spec = json.loads((idx / "retriever.json").read_text())
    spec.pop("bound_files")
    write_spec(idx, spec)  # a forger who binds the files again
    _reseal(idx)
    assert search_cli.main([str(idx), "metformin"]) == 2
    assert "dim: expected an integer >= 1, got inf" in _err(capsys)
