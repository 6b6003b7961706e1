"""Issue 45: the gaps of the one error boundary (``gralc.cli``).

A missing or corrupt encoder folder, a device this machine lacks or an unknown device string
end, through every command that builds an encoder, with exit 2 and one message naming the key
(``encoder.model`` / ``encoder.device``), the path and the fix; ``--debug`` / ``GRALC_DEBUG=1``
show the traceback of a user error in ``gralc.index``, ``gralc.search`` and ``gralc.export``;
``eval.py`` names its own keys for the output folder; the documented ``resume=/absolute/path``
is a checkpoint, not a config-group file. Every command runs twice: its ``main(argv)`` in
this process (fast, ``make test``) and as a child process, as a user runs it (slow).
"""

from __future__ import annotations

import copy
import importlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gralc.config import CONFIG_DIR, ConfigError, load_config

REPO = Path(__file__).resolve().parents[2]
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message for encoder.device=cuda on a machine without a GPU; here a GPU exists, so the setting is valid")


def cli(*args: str, debug_env: bool = False, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python ARGS`` in the repository, offline, without GRALC_DEBUG unless ``debug_env``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "WANDB_MODE": "offline", "MPLBACKEND": "Agg"}
    env.pop("GRALC_DEBUG", None)
    if debug_env:
        env["GRALC_DEBUG"] = "1"
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)


#: the commands run as ``python eval.py`` / ``python train.py`` (thin wrappers of these mains)
SCRIPTS = {"eval.py": "gralc.eval", "train.py": "gralc.train"}


@pytest.fixture(params=["main", pytest.param("process", marks=pytest.mark.slow)])
def run(request, monkeypatch, capsys):
    """:func:`cli`'s signature, run two ways: ``main`` calls the command's ``main(argv)`` in
    this process (the same boundary, no interpreter start: fast); ``process`` is :func:`cli`."""
    if request.param == "process":
        return cli

    def in_process(*args: str) -> subprocess.CompletedProcess:
        module, argv = (args[1], args[2:]) if args[0] == "-m" else (SCRIPTS[args[0]], args[1:])
        monkeypatch.chdir(REPO)
        monkeypatch.delenv("GRALC_DEBUG", raising=False)
        capsys.readouterr()
        rc = importlib.import_module(module).main(list(argv))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess([module, *argv], rc, out, err)

    return in_process


def assert_user_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    """Exit 2, one message holding every needle, no traceback, the --debug hint."""
    err = proc.stderr
    assert proc.returncode == 2, f"exit {proc.returncode}:\n{err[-4000:]}"
    assert "Traceback" not in err, err[-4000:]
    assert "--debug" in err and "GRALC_DEBUG=1" in err
    for needle in needles:
        assert needle in err, f"{needle!r} not in:\n{err[-4000:]}"


def assert_traceback(proc: subprocess.CompletedProcess, *needles: str) -> None:
    err = proc.stderr
    assert proc.returncode == 1, f"exit {proc.returncode}:\n{err[-4000:]}"
    assert "Traceback (most recent call last)" in err, err[-4000:]
    for needle in needles:
        assert needle in err, f"{needle!r} not in:\n{err[-4000:]}"

def encoder_copy(minilm_path: Path, folder: Path) -> Path:
    """A copy of the bundled MiniLM folder (its files linked, not copied: fast)."""
    folder.mkdir(parents=True)
    for f in minilm_path.iterdir():
        if f.is_file():
            (folder / f.name).symlink_to(f)
    return folder


def _missing(minilm_path: Path, tmp: Path) -> tuple[str, list[str]]:
    path = tmp / "no" / "such" / "encoder"
    return str(path), [f"encoder.model={path}", "does not exist", "model folder"]


def _corrupt_config(minilm_path: Path, tmp: Path) -> tuple[str, list[str]]:
    folder = encoder_copy(minilm_path, tmp / "enc")
    (folder / "config.json").unlink()
    (folder / "config.json").write_text('{"model_type": "bert", ', encoding="utf-8")
    return str(folder), [f"encoder.model={folder}", str(folder / "config.json"), "not valid JSON"]


def _truncated_weights(minilm_path: Path, tmp: Path) -> tuple[str, list[str]]:
    folder = encoder_copy(minilm_path, tmp / "enc")
    (folder / "model.safetensors").unlink()
    with open(minilm_path / "model.safetensors", "rb") as f:
        (folder / "model.safetensors").write_bytes(f.read(200_000))  # a copy cut short
    return str(folder), [f"encoder.model={folder}", str(folder / "model.safetensors"), "truncated"]


def _no_tokenizer(minilm_path: Path, tmp: Path) -> tuple[str, list[str]]:
    folder = encoder_copy(minilm_path, tmp / "enc")
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (folder / name).unlink()
    return str(folder), [f"encoder.model={folder}", "no tokenizer files", "tokenizer.json"]


def _offline_hub_id(minilm_path: Path, tmp: Path) -> tuple[str, list[str]]:
    return "org/no-such-encoder", ["encoder.model=org/no-such-encoder", "HF_HUB_OFFLINE=1",
                                   "Hugging Face cache", "local model folder"]


@pytest.mark.parametrize("make", [_missing, _corrupt_config, _truncated_weights, _no_tokenizer,
                                  _offline_hub_id], ids=lambda f: f.__name__.strip("_"))
def test_a_broken_encoder_model_is_one_message(make, ferret_corpus, minilm_path, tmp_path, run):
    """Before: an OSError / SafetensorError traceback and exit 1, or (no tokenizer files) an
    index silently built with a 5-token tokenizer that maps every word to [UNK]."""
    model, needles = make(minilm_path, tmp_path)
    out = tmp_path / "index"
    proc = run("-m", "gralc.index", str(ferret_corpus), f"encoder.model={model}",
               "--strategy", "late", "--out", str(out))
    assert_user_error(proc, *needles)
    assert not out.exists()


@pytest.mark.parametrize("device, needles", [
    pytest.param("cuda", ["encoder.device='cuda'", "no CUDA device", "encoder.device=auto"],
                 marks=NO_CUDA),
    pytest.param("cuda:3", ["encoder.device='cuda:3'", "encoder.device=auto"],
                 marks=pytest.mark.skipif(torch.cuda.device_count() > 3, reason="checks the message for a GPU index beyond the machine's; this one has a cuda:3")),
    ("gpu", ["encoder.device='gpu'", "is not a device", "cpu, cuda, cuda:N"]),
])
def test_a_device_this_machine_lacks_is_one_message(device, needles, ferret_corpus, tmp_path, run):
    """Before: ``AssertionError: Torch not compiled with CUDA enabled`` (after loading the
    weights) or ``RuntimeError: Expected one of cpu, cuda, ...``, each a traceback, exit 1."""
    proc = run("-m", "gralc.index", str(ferret_corpus), f"encoder.device={device}",
               "--strategy", "late", "--out", str(tmp_path / "index"))
    assert_user_error(proc, *needles)


@pytest.fixture(scope="module")
def built(ferret_corpus, minilm_path, tmp_path_factory):
    """A small index (in memory) whose encoder is a folder of its own."""
    from gralc.inference import Retriever

    encoder = encoder_copy(minilm_path, tmp_path_factory.mktemp("built") / "encoder")
    return Retriever.build(str(ferret_corpus), "late", overrides=[f"encoder.model={encoder}"])


def _index_with(retriever, tmp_path: Path, **encoder) -> Path:
    """The index saved as one that recorded other encoder settings when it was built (an
    encoder folder since moved away, a GPU of the machine that built it)."""
    saved = copy.deepcopy(retriever.spec.pipeline)
    retriever.spec.pipeline["encoder"].update(encoder)
    try:
        return retriever.save(tmp_path / "index")
    finally:
        retriever.spec.pipeline = saved


def test_search_names_the_encoder_folder_an_index_records(built, tmp_path, run):
    """The encoder folder an index was built with moved away: gralc.search names the key, the
    folder and the index's retriever.json (before: an OSError traceback, exit 1)."""
    moved = tmp_path / "moved-away"
    index = _index_with(built, tmp_path, model=str(moved))
    proc = run("-m", "gralc.search", str(index), "ferret cough")
    assert_user_error(proc, f"encoder.model={moved}", "does not exist",
                      str(index / "retriever.json"))


@NO_CUDA
def test_search_of_an_index_built_for_a_gpu_on_a_cpu_machine(built, tmp_path, run):
    index = _index_with(built, tmp_path, device="cuda")
    proc = run("-m", "gralc.search", str(index), "ferret cough")
    assert_user_error(proc, "encoder.device='cuda'", str(index / "retriever.json"))


def test_eval_names_a_missing_encoder_folder(tmp_path, run):
    missing = tmp_path / "no-such-encoder"
    proc = run("eval.py", f"pipeline.encoder.model={missing}", "methods=[late]",
               f"paths.output_dir={tmp_path / 'out'}", "paths.cache_dir=null")
    assert_user_error(proc, f"encoder.model={missing}", "does not exist")
    assert not (tmp_path / "out").exists()


def test_train_names_an_unknown_device(tmp_path, run):
    proc = run("train.py", "pipeline.encoder.device=gpu", f"paths.output_dir={tmp_path / 'run'}",
               "trainer.max_epochs=1")
    assert_user_error(proc, "encoder.device='gpu'", "encoder.device=auto")


# --debug / GRALC_DEBUG=1 (before: gralc.index, gralc.search and gralc.export caught user
# errors themselves, printed them and returned 2, so the boundary never saw them)

# (without --debug the same mistakes end with exit 2: test_in_process_main_... below, and the
# encoder tests above for the commands run as `python -m`)

@pytest.mark.slow  # a real process's traceback; in-process: test_in_process_main_...
def test_index_debug_shows_the_traceback(tmp_path):
    missing = tmp_path / "no-such-corpus"
    proc = cli("-m", "gralc.index", str(missing), "--strategy", "late", "--out",
               str(tmp_path / "i"), "--debug")
    assert_traceback(proc, "FileNotFoundError", str(missing))


@pytest.mark.slow  # a real process's traceback; in-process: test_in_process_main_...
def test_search_debug_shows_the_traceback(tmp_path):
    proc = cli("-m", "gralc.search", str(tmp_path / "no-index"), "a question", debug_env=True)
    assert_traceback(proc, "FileNotFoundError", "not a GraLC index")


@pytest.mark.slow  # a real process's traceback; in-process: test_in_process_main_...
def test_export_debug_shows_the_traceback(tmp_path):
    proc = cli("-m", "gralc.export", str(tmp_path / "missing.ckpt"), "--out", str(tmp_path / "e"),
               "--debug")
    assert_traceback(proc, "FileNotFoundError", "missing.ckpt")


def test_in_process_main_still_returns_2_and_debug_raises(tmp_path, capsys, monkeypatch):
    """Scripts and tests call ``main(argv)``: 2 for a user error, its exception with --debug."""
    from gralc import export as export_cli
    from gralc import index as index_cli
    from gralc import search as search_cli

    monkeypatch.delenv("GRALC_DEBUG", raising=False)
    missing = str(tmp_path / "missing")
    cases = [(index_cli, [missing, "--out", str(tmp_path / "i")]),
             (search_cli, [missing, "q"]),
             (export_cli, [missing, "--out", str(tmp_path / "e")])]
    for module, argv in cases:
        assert module.main(argv) == 2
        assert missing in capsys.readouterr().err
        with pytest.raises(FileNotFoundError):
            module.main([*argv, "--debug"])


# eval.py's output folder: its own keys, not gralc.index's --out / --force

def test_eval_names_its_own_output_keys(tmp_path, run):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "thesis.tex").write_text("years of work", encoding="utf-8")
    proc = run("eval.py", f"paths.output_dir={out}", "methods=[bm25]", "paths.cache_dir=null")
    assert_user_error(proc, f"paths.output_dir={out}", "paths.force=true")
    assert "--out" not in proc.stderr and "--force" not in proc.stderr
    assert (out / "thesis.tex").read_text(encoding="utf-8") == "years of work"


def test_eval_rewords_the_output_folder_log_lines(monkeypatch):
    """gralc.artefacts logs ``--force: the previous content of ... was moved``; under eval.py
    that line names ``paths.force=true``."""
    from gralc import eval as g_mod

    g = vars(g_mod)
    record = logging.LogRecord("gralc.artefacts", logging.WARNING, __file__, 1,
                               "--force: the previous content of %s was moved to %s", ("a", "b"),
                               None)
    assert g["EvalKeysFilter"]().filter(record)
    assert record.getMessage() == "paths.force=true: the previous content of a was moved to b"
    assert g["eval_keys"]("--out /x is a file") == "paths.output_dir=/x is a file"


# resume=/absolute/path (docs/training.md, docs/guarantees.md: resume=last|PATH)

def test_resume_takes_an_absolute_checkpoint_path(tmp_path, run):
    """Before: ``resume=/abs/x.ckpt`` was read as the config-group file /abs/x.ckpt.yaml and
    refused ("no config ...; available: ..."), because ``configs/resume/`` joined with an
    absolute path is that path."""
    from gralc.training.config import TrainConfig

    ckpt = tmp_path / "checkpoints" / "last.ckpt"
    ckpt.parent.mkdir()
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [f"resume={ckpt}"])
    assert cfg.resume == str(ckpt)
    proc = run("train.py", f"resume={ckpt}", f"paths.output_dir={tmp_path / 'run'}")
    assert_user_error(proc, f"resume='{ckpt}'", "does not exist")
    assert "no config" not in proc.stderr


def test_a_config_group_given_a_path_says_where_the_path_goes(tmp_path):
    """``data=/abs/file.json`` is not a config name: the message points at data.path."""
    from gralc.evaluation.config import EvalConfig

    with pytest.raises(ConfigError, match=r"data=/.*not a path; a file or folder goes in "
                                          r"data.path=/"):
        load_config(EvalConfig, CONFIG_DIR / "eval.yaml", [f"data={tmp_path}/q.json"])
    with pytest.raises(ConfigError, match="no config .*nosuch.yaml; available: beir, demo"):
        load_config(EvalConfig, CONFIG_DIR / "eval.yaml", ["data=nosuch"])
    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", ["data=pubmedqa"])
    assert cfg.data.name == "pubmedqa"
