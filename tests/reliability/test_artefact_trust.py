"""Issue 45, classes 1-4 and 7: a rebuild never deletes a user's files, every artefact file is
verified before the first answer, untrusted files cannot reach the environment or paths
outside the artefact, and a crashed writer leaves nothing that blocks or loses data.

Each test builds real artefacts (a real index of a two-article corpus, real BM25, real FAISS)
and attacks them the way a user or a crafted file would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gralc import index as index_cli
from gralc.artefacts import (
    MARKER,
    ArtefactError,
    OutputDirError,
    _write_marker,
    check_output_dir,
    file_sha256,
    verify_artefact,
    write_artefact,
)
from gralc.config import CONFIG_DIR
from gralc.inference import Retriever
from gralc.retrieval.indexes.bm25 import BM25Index


def corpus_of(folder: Path) -> Path:
    folder.mkdir()
    for name, text in (("a", "Ferrets coughed for four days."), ("b", "Mice had fever for two days."),
                       ("c", "Bats carried the virus without symptoms.")):
        (folder / f"{name}.txt").write_text(f"Study {name}\n\n{text} Nothing else happened.\n",
                                            encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    return corpus_of(tmp_path_factory.mktemp("trust") / "corpus")


def build(corpus: Path, out: Path, *extra: str) -> int:
    return index_cli.main([str(corpus), "--out", str(out), "--strategy", "late", *extra])


@pytest.fixture
def hybrid(corpus, tmp_path) -> Path:
    out = tmp_path / "index"
    assert build(corpus, out, "--searcher", "hybrid") == 0
    return out


def reseal(folder: Path, kind: str = "index") -> None:
    """Rewrite the manifest the way a crafted artefact would (so only the content is at fault)."""
    (folder / MARKER).unlink()
    _write_marker(folder, kind)


def forge(folder: Path) -> None:
    """A forger who signs everything again: an index's ``retriever.json`` binding of its files
    (``bound_files``) and then its manifest, so only what structure guarantees can catch it."""
    from gralc.inference import write_spec

    spec = json.loads((folder / "retriever.json").read_text())
    spec.pop("bound_files", None)
    write_spec(folder, spec)
    reseal(folder)


# ----- 1. a rebuild never deletes what GraLC did not write ------------------------------------
def test_rebuilding_an_index_keeps_the_users_files(corpus, hybrid):
    (hybrid / "NOTES.md").write_text("my notes")
    (hybrid / "results").mkdir()
    (hybrid / "results" / "run1.json").write_text("{}")
    (hybrid / "lexical" / "mine.txt").write_text("inside a sub-folder GraLC writes")
    assert build(corpus, hybrid, "--searcher", "hybrid") == 0  # no --force needed: our own index
    assert (hybrid / "NOTES.md").read_text() == "my notes"
    assert (hybrid / "results" / "run1.json").is_file() and (hybrid / "lexical" / "mine.txt").is_file()
    assert Retriever.load(hybrid).search("fever in mice", k=1)
    assert not list(hybrid.parent.glob(".index.*")), "no temporary or old folder left"


def test_every_kind_keeps_unlisted_files_and_replaces_only_its_own(tmp_path):
    for kind in ("index", "export", "bm25_index", "chunk_index", "token_codec", "corpus_graph"):
        out = tmp_path / kind
        with write_artefact(out, kind) as tmp:
            (tmp / "weights.bin").write_text("v1")
            (tmp / "sub").mkdir()
            (tmp / "sub" / "old-only.bin").write_text("v1")
        (out / "MODEL_CARD.md").write_text("card")
        with write_artefact(out, kind) as tmp:
            (tmp / "weights.bin").write_text("v2")
        assert (out / "weights.bin").read_text() == "v2" and (out / "MODEL_CARD.md").read_text() == "card"
        assert not (out / "sub" / "old-only.bin").exists()  # listed in v1's manifest: replaced
        verify_artefact(out, (kind,))


def test_a_user_file_the_new_artefact_needs_refuses_the_write(tmp_path):
    """Refused with nothing changed; with force that one file moves aside, the rest stays."""
    out = tmp_path / "idx"
    with write_artefact(out, "index") as tmp:
        (tmp / "a.json").write_text("v1")
    (out / "extra.json").write_text("mine")
    with pytest.raises(OutputDirError, match="extra.json.*--force"), write_artefact(out, "index") as tmp:
        (tmp / "a.json").write_text("v2")
        (tmp / "extra.json").write_text("GraLC's")
    assert (out / "a.json").read_text() == "v1" and (out / "extra.json").read_text() == "mine"
    (out / "notes").mkdir()
    (out / "notes" / "keep.md").write_text("not in the way")
    with write_artefact(out, "index", force=True) as tmp:  # --force: that file moves aside
        (tmp / "a.json").write_text("v2")
        (tmp / "extra.json").write_text("GraLC's")
    (aside,) = tmp_path.glob("idx.replaced-*")
    assert [p.relative_to(aside).as_posix() for p in aside.rglob("*")] == ["extra.json"]
    assert (aside / "extra.json").read_text() == "mine"
    assert (out / "extra.json").read_text() == "GraLC's" and (out / "notes" / "keep.md").is_file()
    verify_artefact(out, ("index",))


def test_a_look_alike_folder_is_not_taken_for_an_index(corpus, tmp_path, capsys):
    fake = tmp_path / "fake"
    fake.mkdir()
    for name in ("retriever.json", "index.faiss", "chunks.jsonl", "thesis.tex"):
        (fake / name).write_text("user data")
    assert build(corpus, fake) == 2
    assert "GraLC did not write" in capsys.readouterr().err
    assert sorted(p.name for p in fake.iterdir()) == ["chunks.jsonl", "index.faiss", "retriever.json",
                                                      "thesis.tex"]
    assert build(corpus, fake, "--force") == 0  # --force moves it aside, deletes nothing
    (aside,) = tmp_path.glob("fake.replaced-*")
    assert (aside / "thesis.tex").read_text() == "user data"


# ----- 2. every input of a command enters the overlap check ---------------------------------
def test_eval_refuses_an_output_folder_that_is_an_input(corpus, tmp_path, monkeypatch):
    import gralc.data.demo as demo
    from gralc.config import load_config
    from gralc.evaluation import run as run_mod
    from gralc.evaluation.config import EvalConfig

    monkeypatch.chdir(Path(run_mod.__file__).resolve().parents[2])
    export = tmp_path / "export"
    with write_artefact(export, "export") as tmp:
        (tmp / "inference.yaml").write_text("{}")
    demo_dir = Path(demo.__file__).parent
    for out, extra in ((corpus, [f"data.path={corpus}"]), (export, [f"models=[{export}]"]),
                       (demo_dir / "out", []), (tmp_path / "cache" / "run", [f"paths.cache_dir={tmp_path / 'cache'}"])):
        cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml",
                          [f"paths.output_dir={out}", "paths.force=true", "methods=[bm25]", *extra])
        monkeypatch.setattr(run_mod, "Pipeline", lambda *a, **k: pytest.fail("encoding started"))
        with pytest.raises(OutputDirError, match="overlaps") as err:
            run_mod.evaluate(cfg)
        assert "paths.output_dir=" in str(err.value)  # eval.py's own key, not --out
    assert (export / "inference.yaml").is_file() and (corpus / "a.txt").is_file()
    assert not list(tmp_path.glob("*.replaced-*")) and not list(corpus.parent.glob("*.replaced-*"))


def test_an_index_inside_its_model_export_is_refused(tmp_path):
    export = tmp_path / "export"
    with write_artefact(export, "export") as tmp:
        (tmp / "inference.yaml").write_text("{}")
    with pytest.raises(OutputDirError, match="overlaps the input"):
        check_output_dir(export / "index", "index", inputs=[tmp_path / "corpus", export])
    from gralc.artefacts import model_digest

    before = model_digest(export)  # what every index of the model checks
    (export / "MODEL_CARD.md").write_text("a user's own file beside the export")
    assert model_digest(export) == before
    proc = subprocess.run([sys.executable, "-m", "gralc.index", str(tmp_path / "corpus"), "--out",
                           str(export / "index"), "--model", str(export)], capture_output=True, text=True)
    assert proc.returncode == 2 and "overlaps the input" in proc.stderr and "Traceback" not in proc.stderr


# ----- 3. no wrong answer without an error ----------------------------------------------------
def test_permuted_vectors_are_detected(hybrid):
    """A flat index searches its vectors.npy itself (no index.faiss): rows reversed, same size."""
    assert not (hybrid / "index.faiss").exists()
    vecs = np.load(hybrid / "vectors.npy")
    np.save(hybrid / "vectors.npy", np.ascontiguousarray(vecs[::-1]))
    with pytest.raises(ArtefactError, match="vectors.npy was changed"):
        Retriever.load(hybrid)


def test_an_edited_lexical_index_is_detected(hybrid):
    """The hybrid searcher's BM25 keeps no chunk list of its own (the index's chunks.jsonl,
    checked above, serves its hits); its vocabulary is checked like every file."""
    assert not (hybrid / "lexical" / "chunks.jsonl").exists()
    path = hybrid / "lexical" / "vocab.tokenizer.json"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("fever", "FEVER"), encoding="utf-8")
    assert path.read_text(encoding="utf-8") != text
    with pytest.raises(ArtefactError, match="lexical/vocab.tokenizer.json was changed"):
        Retriever.load(hybrid)
    with pytest.raises(ArtefactError, match="was changed"):
        BM25Index.load(hybrid / "lexical")


def test_a_removed_checksum_or_manifest_is_an_error_not_an_older_index(hybrid):
    config = json.loads((hybrid / "config.json").read_text())
    config.pop("git_hash", None)
    (hybrid / "config.json").write_text(json.dumps(config))
    with pytest.raises(ArtefactError, match="config.json was changed"):
        Retriever.load(hybrid)
    (hybrid / MARKER).unlink()
    with pytest.raises(ArtefactError, match="no GraLC manifest"):
        Retriever.load(hybrid)
    manifest = {"kind": "index", "files": {"../../etc/passwd": {"size": 1, "sha256": "0"}}}
    (hybrid / MARKER).write_text(json.dumps(manifest))
    with pytest.raises(ArtefactError, match="leads outside"):
        Retriever.load(hybrid)


def _edit_manifest(folder: Path, edit) -> None:
    marker = json.loads((folder / MARKER).read_text())
    edit(marker["files"])
    (folder / MARKER).write_text(json.dumps(marker))


def _reorder_chunks(folder: Path) -> None:
    lines = (folder / "chunks.jsonl").read_text().splitlines()
    (folder / "chunks.jsonl").write_text("\n".join(reversed(lines)) + "\n")


def _inject_lexical(folder: Path) -> None:
    (folder / "lexical" / "vocab.tokenizer.json").write_text('{"injected": 0}')


@pytest.mark.parametrize("tamper, edit", [
    pytest.param([_reorder_chunks, _inject_lexical], lambda files: files.clear(), id="files-emptied"),
    pytest.param([_reorder_chunks], lambda files: files.pop("chunks.jsonl"), id="one-entry-removed"),
    pytest.param([_inject_lexical], lambda files: files.pop("lexical/vocab.tokenizer.json"),
                 id="a-sub-folder-entry-removed"),
    pytest.param([_inject_lexical], lambda files: [files.pop(k) for k in list(files) if k.startswith("lexical/")],
                 id="a-whole-sub-folder-unlisted"),
])
def test_a_manifest_cannot_switch_its_checks_off(hybrid, tamper, edit):
    """Issue 58, class 1: with an entry removed (or ``files: {}``), a reordered chunks.jsonl was
    served with other chunks' scores and injected lexical text printed. Every data file GraLC
    reads must be listed."""
    for change in tamper:
        change(hybrid)
    _edit_manifest(hybrid, edit)
    with pytest.raises(ArtefactError, match="does not list"):
        Retriever.load(hybrid)


@settings(max_examples=40, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_no_manifest_edit_hides_a_changed_file(hybrid, tmp_path_factory, data):
    """Property (issue 58): whatever entries a manifest loses, a changed data file of the
    artefact is still refused by the check every loader runs first."""
    folder = tmp_path_factory.mktemp("edit") / "index"
    shutil.copytree(hybrid, folder)
    listed = sorted(json.loads((folder / MARKER).read_text())["files"])
    changed = data.draw(st.sampled_from(listed), label="changed file")
    dropped = data.draw(st.sets(st.sampled_from(listed)), label="entries removed")
    with open(folder / changed, "ab") as f:
        f.write(data.draw(st.binary(min_size=1, max_size=8), label="bytes appended"))
    _edit_manifest(folder, lambda files: [files.pop(k) for k in dropped])
    with pytest.raises(ArtefactError):
        verify_artefact(folder, ("index",))


def _write_field(folder: Path, spec: dict, path: tuple, value) -> None:
    """``retriever.json`` of ``folder`` with the field at ``path`` set to ``value``, re-signed."""
    node = spec
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (folder / "retriever.json").write_text(json.dumps(spec))
    reseal(folder)


def _leaves(d, path=()):
    if isinstance(d, dict) and d:
        for k, v in d.items():
            yield from _leaves(v, (*path, k))
    else:
        yield path, d


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_field_of_retriever_json_of_the_wrong_type_is_a_user_error(hybrid, tmp_path_factory, data):
    """Fuzz (issue 58, class 9): a retriever.json whose field has another type (re-signed, so
    only the content is at fault) loads, or fails with one user error; never a TypeError."""
    folder = tmp_path_factory.mktemp("spec") / "index"
    shutil.copytree(hybrid, folder)
    spec = json.loads((folder / "retriever.json").read_text())
    path, _ = data.draw(st.sampled_from([p for p in _leaves(spec) if p[0]]), label="field")
    value = data.draw(st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
                                st.text(max_size=5), st.just([]), st.just({}), st.just({"x": [1]})),
                      label="value")
    _write_field(folder, spec, path, value)
    try:
        Retriever.load(folder)
    except (ValueError, FileNotFoundError):
        pass


@pytest.mark.parametrize("path, value", [
    (("fusion", "rrf_k"), {}), (("fusion", "candidates"), "many"), (("fusion", "lexical_weight"), [1]),
    (("pipeline", "knowledge", "linker", "stoplist"), {}), (("pipeline",), "x"),
])
def test_a_malformed_retriever_json_field_is_named_before_any_search(hybrid, path, value):
    """Issue 58, class 9: each of these ended in a TypeError traceback (at load or at the
    first search); the spec's sections are validated like any config, naming the file."""
    _write_field(hybrid, json.loads((hybrid / "retriever.json").read_text()), path, value)
    with pytest.raises(ValueError, match="retriever.json"):
        Retriever.load(hybrid)


def test_an_export_with_files_emptied_is_refused_as_a_model(tmp_path):
    out = tmp_path / "export"
    with write_artefact(out, "export") as tmp:
        (tmp / "inference.yaml").write_text("x: 1\n")
        (tmp / "encoder").mkdir()
        (tmp / "encoder" / "vocab.txt").write_text("[PAD]\n")
    _edit_manifest(out, lambda files: files.clear())
    with pytest.raises(ArtefactError, match="does not list inference.yaml, encoder/vocab.txt"):
        verify_artefact(out, ("export",))


def test_a_rebuild_keeps_a_listed_file_the_user_changed(corpus, hybrid):
    """A file the manifest lists but whose size / SHA-256 no longer match what GraLC wrote is
    someone's now: a rebuild keeps it (in <index>.recovered-<time>), never deletes it."""
    marker = json.loads((hybrid / MARKER).read_text())
    marker["files"]["NOTES.md"] = {"size": 3, "sha256": "0" * 64}  # listed, but not as written
    (hybrid / MARKER).write_text(json.dumps(marker))
    (hybrid / "NOTES.md").write_text("my notes")
    (hybrid / "config.json").write_text('{"mine": true}')  # a listed name, the user's content
    assert build(corpus, hybrid, "--searcher", "hybrid") == 0
    assert (hybrid / "NOTES.md").read_text() == "my notes"
    kept = list(hybrid.parent.glob("index.recovered-*/config.json"))
    assert [p.read_text() for p in kept] == ['{"mine": true}']
    assert Retriever.load(hybrid).search("fever in mice", k=1)


def test_a_missing_listed_file_is_named(hybrid):
    (hybrid / "lexical" / "vocab.tokenizer.json").unlink()
    with pytest.raises(FileNotFoundError, match="vocab.tokenizer.json is missing"):
        Retriever.load(hybrid)


# ----- 4. untrusted files cannot reach the environment or outside paths ---------------------
def test_an_interpolation_in_an_index_never_reaches_the_environment(hybrid, monkeypatch):
    monkeypatch.setenv("GRALC_TEST_SECRET", "sk-do-not-leak")
    spec = json.loads((hybrid / "retriever.json").read_text())
    spec["pipeline"]["encoder"]["cache_dir"] = "${oc.env:GRALC_TEST_SECRET}"
    (hybrid / "retriever.json").write_text(json.dumps(spec))
    reseal(hybrid)  # a crafted index carries a matching manifest
    with pytest.raises(ValueError, match="interpolation") as err:
        Retriever.load(hybrid)
    assert "sk-do-not-leak" not in str(err.value)


def test_an_interpolation_in_an_export_is_refused(tmp_path, monkeypatch):
    from gralc.model.persistence import load_trained

    monkeypatch.setenv("GRALC_TEST_SECRET", "sk-do-not-leak")
    export = tmp_path / "export"
    with write_artefact(export, "export") as tmp:
        (tmp / "inference.yaml").write_text("model_config: {}\ngit_hash: ${oc.env:GRALC_TEST_SECRET}\n")
        (tmp / "weights.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="interpolation") as err:
        load_trained(export)
    assert "sk-do-not-leak" not in str(err.value)


def test_an_export_naming_an_encoder_outside_itself_is_refused(tmp_path):
    from gralc.model.persistence import load_trained
    from gralc.safe_load import path_inside

    with pytest.raises(ValueError, match="leads outside"):
        path_inside(tmp_path, "../../home/user/.ssh", "inference.yaml")
    with pytest.raises(ValueError, match="leads outside"):
        path_inside(tmp_path, "/etc", "inference.yaml")
    (tmp_path / "link").symlink_to("/etc")
    with pytest.raises(ValueError, match="leads outside"):
        path_inside(tmp_path, "link/passwd", "inference.yaml")
    assert path_inside(tmp_path, "encoder", "x") == (tmp_path / "encoder").resolve()
    assert load_trained  # the export loader resolves lora.merged_encoder through path_inside


def _two_shards(corpus: Path, root: Path, graph: bool = True) -> list[Path]:
    from gralc.shard_index import build_shard

    shards = [root / f"shard_{i}" for i in range(2)]
    for i, shard in enumerate(shards):
        build_shard(corpus, i, 2, shard, strategy="late", graph=graph)
    return shards


def test_a_merge_reads_the_corpus_its_caller_declares_never_the_shards(corpus, tmp_path):
    """Issue 58, class 2: a shard's ``corpus`` field (an absolute path) was trusted, so a
    merge read files from any folder into graph/reports.json."""
    import shutil

    from gralc.shard_index import merge_shards

    shards = _two_shards(corpus, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(corpus, elsewhere)
    for name in sorted(p.name for p in elsewhere.iterdir()):
        (elsewhere / name).write_text("Private\n\nThe password is hunter2.\n")
    meta = json.loads((shards[0] / "shard.json").read_text())
    meta["corpus"] = str(elsewhere)
    (shards[0] / "shard.json").write_text(json.dumps(meta))
    forge(shards[0])
    with pytest.raises(ValueError, match="declare the folder they were built from with --corpus"):
        merge_shards(shards, tmp_path / "merged")
    with pytest.raises(ValueError, match="is not the file shard 0 was built from"):
        merge_shards(shards, tmp_path / "merged", corpus=elsewhere)  # other content, same names
    merged = tmp_path / "merged"
    merge_shards(shards, merged, corpus=corpus)
    assert "hunter2" not in (merged / "graph" / "reports.json").read_text()


def test_a_corpus_that_changed_between_shard_builds_is_refused(corpus, tmp_path):
    """Issue 58, class 3: files added between two shard builds left the merged index silently
    without a document."""
    import shutil

    from gralc.shard_index import build_shard, merge_shards

    moving = tmp_path / "corpus"
    shutil.copytree(corpus, moving)
    build_shard(moving, 0, 2, tmp_path / "shard_0", strategy="late")
    (moving / "zz_new.txt").write_text("A new article\n\nAbout fever in rats.\n")
    build_shard(moving, 1, 2, tmp_path / "shard_1", strategy="late")
    with pytest.raises(ValueError, match="saw different corpora"):
        merge_shards([tmp_path / "shard_0", tmp_path / "shard_1"], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_a_link_out_of_the_corpus_is_never_read(corpus, tmp_path, caplog):
    """Issue 58, class 5: ``corpus/notes.txt -> ../private.txt`` was indexed by gralc.index,
    gralc.graph and shard builds. One walker, one rule: only files inside the folder."""
    import shutil

    from gralc.documents.corpus import corpus_files

    linked = tmp_path / "corpus"
    shutil.copytree(corpus, linked)
    private = tmp_path / "private.txt"
    private.write_text("Private\n\nThe password is hunter2.\n")
    (linked / "notes.txt").symlink_to(private)
    (linked / "inside.txt").symlink_to(linked / sorted(p.name for p in corpus.iterdir())[0])
    names = [p.name for p in corpus_files(linked)]
    assert "notes.txt" not in names and "inside.txt" in names  # a link inside the folder is fine
    assert "outside the corpus folder" in caplog.text
    out = tmp_path / "index"
    assert build(linked, out) == 0
    assert "hunter2" not in (out / "chunks.jsonl").read_text()


def test_a_shard_manifest_cannot_pull_outside_files_into_a_merge(corpus, tmp_path):
    from gralc.shard_index import build_shard, merge_shards

    secret = tmp_path / "secret.txt"
    secret.write_text("Private\n\nThe password is hunter2.\n")
    shards = []
    for i in range(2):
        shards.append(tmp_path / f"shard_{i}")
        build_shard(corpus, i, 2, shards[-1], strategy="late", graph=True)
    meta = json.loads((shards[0] / "shard.json").read_text())
    meta["files"] = ["../secret.txt"]
    (shards[0] / "shard.json").write_text(json.dumps(meta))
    forge(shards[0])
    with pytest.raises(ValueError, match="leads outside"):
        merge_shards(shards, tmp_path / "merged")
    meta["files"], meta["shard"] = ["a.txt"], "0"  # a wrong field type
    meta["digests"]["a.txt"] = "0" * 64
    (shards[0] / "shard.json").write_text(json.dumps(meta))
    forge(shards[0])
    with pytest.raises(ValueError, match="'shard' must be int"):
        merge_shards(shards, tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


# ----- 7. crash leftovers ---------------------------------------------------------------------
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_stale_lock_and_temporary_folders_are_recovered(tmp_path, caplog):
    import socket

    out = tmp_path / "idx"
    with write_artefact(out, "index") as tmp:
        (tmp / "a.json").write_text("v1")
    lock = tmp_path / ".idx.lock"
    lock.write_text(json.dumps({"pid": dead_pid(), "host": socket.gethostname()}))
    half = tmp_path / ".idx.tmp-deadbeef"  # a new artefact cut short by the crash
    half.mkdir()
    (half / "a.json").write_text("half")
    swapped_out = tmp_path / ".idx.old-deadbeef"  # an old one swapped out, the user's file inside
    swapped_out.mkdir()
    (swapped_out / "a.json").write_text("v0")
    (swapped_out / "NOTES.md").write_text("mine")
    (swapped_out / MARKER).write_text(json.dumps({"kind": "index", "files": {"a.json": {
        "size": 2, "sha256": file_sha256(swapped_out / "a.json")}}}))
    with write_artefact(out, "index") as tmp:
        (tmp / "a.json").write_text("v2")
    assert "stale lock" in caplog.text
    assert (out / "a.json").read_text() == "v2" and (out / "NOTES.md").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx"]


def test_a_live_lock_fails_before_any_encoding(corpus, tmp_path, capsys, monkeypatch):
    import gralc.inference

    out = tmp_path / "idx"
    monkeypatch.setattr(gralc.inference, "Pipeline", lambda *a, **k: pytest.fail("encoding started"))
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        import socket

        (tmp_path / ".idx.lock").write_text(json.dumps({"pid": holder.pid, "host": socket.gethostname()}))
        t0 = time.perf_counter()
        assert build(corpus, out) == 2
        assert "another GraLC process is writing" in capsys.readouterr().err
        assert time.perf_counter() - t0 < 5, "the lock must be taken before the corpus is encoded"
    finally:
        holder.kill()
    other_host = json.dumps({"pid": dead_pid(), "host": "another-node"})
    (tmp_path / ".idx.lock").write_text(other_host)  # another host: its PID cannot be checked
    assert build(corpus, out) == 2
    assert (tmp_path / ".idx.lock").read_text() == other_host


def test_the_swap_is_one_exchange_where_the_file_system_allows(tmp_path, monkeypatch):
    """Readers never see a missing folder: the old content leaves by renameat2(RENAME_EXCHANGE)."""
    from gralc import atomic

    out = tmp_path / "idx"
    with write_artefact(out, "index") as tmp:
        (tmp / "a.json").write_text("v1")
    calls = []
    real = atomic.exchange
    monkeypatch.setattr(atomic, "exchange", lambda a, b: calls.append(1) or real(a, b))
    renames = []
    real_replace = os.replace
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: renames.append((a, b)) or real_replace(a, b))
    with write_artefact(out, "index") as tmp:
        (tmp / "a.json").write_text("v2")
    assert calls == [1] and (out / "a.json").read_text() == "v2"
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    if real(tmp_path / "x", tmp_path / "y"):  # exchange supported here: out is never renamed away
        assert not [r for r in renames if Path(r[0]) == out]


def test_an_empty_lock_left_by_a_killed_writer_is_taken_over(tmp_path, caplog):
    """Issue 58, class 10: an empty lock (a writer killed between creating and writing it)
    blocked every later writer forever. A fresh empty lock still blocks (its writer may be
    about to write it); an old one is stale."""
    out = tmp_path / "idx"
    lock = tmp_path / ".idx.lock"
    lock.write_text("")
    with pytest.raises(OutputDirError, match="another GraLC process"):
        with write_artefact(out, "index") as tmp:
            (tmp / "a.json").write_text("{}")
    old = time.time() - 60
    os.utime(lock, (old, old))
    with write_artefact(out, "index") as tmp:
        (tmp / "a.json").write_text("{}")
    assert "stale lock" in caplog.text and "empty" in caplog.text
    assert not lock.exists() and (out / "a.json").is_file()


def test_an_index_refuses_an_encoder_changed_since_it_was_built(corpus, tmp_path, minilm_path, monkeypatch):
    """Issue 58, class 3: the encoder folder was not pinned: corrupted in place after indexing
    search returned 0 hits (rc 0); replaced by another encoder of the same width, a garbage
    ranking. The index records the encoder's content and checks it before any answer."""
    import shutil

    monkeypatch.setenv("GRALC_CACHE", str(tmp_path / "cache"))
    encoder = tmp_path / "encoder"
    shutil.copytree(minilm_path, encoder)
    out = tmp_path / "index"
    assert build(corpus, out, f"encoder.model={encoder}") == 0
    assert Retriever.load(out).search("fever in mice", k=1)
    weights = encoder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte of the weights, in place: same size
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="is not the encoder this index was built with"):
        Retriever.load(out)
    shutil.rmtree(encoder)
    shutil.copytree(minilm_path, encoder)  # the original again
    assert Retriever.load(out).search("fever in mice", k=1)
    config = json.loads((encoder / "config.json").read_text())
    config["layer_norm_eps"] = 1e-6  # another encoder of the same width
    (encoder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="replaced or changed since"):
        Retriever.load(out)
