"""The ``gralc`` command (issue 55): one entry point, one grammar, help generated from the
config dataclasses, offline by default, train.py / eval.py as thin entry points that work from
any folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gralc.cli import CommandParser, Settings, run, setting_rows
from gralc.commands import COMMANDS
from gralc.commands import main as gralc

REPO = Path(__file__).resolve().parents[1]


def gralc_proc(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m gralc ARGS`` in a fresh process (from ``cwd``, default a temporary folder)."""
    base = {k: v for k, v in os.environ.items() if k not in ("GRALC_DEBUG",)}
    return subprocess.run([sys.executable, "-m", "gralc", *args], cwd=cwd, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120)


def test_gralc_help_lists_every_command(capsys):
    assert gralc(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert f"  {name} " in out
    assert gralc([]) == 2  # nothing asked: the usage, and a non-zero exit for scripts


def test_an_unknown_command_is_named_with_the_closest_one(capsys):
    assert gralc(["serach", "idx", "q"]) == 2
    assert "did you mean `gralc search`" in capsys.readouterr().err


def test_every_commands_module_and_function_exists():
    import importlib

    for name, (target, _) in COMMANDS.items():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_answers_help_from_any_folder(command, tmp_path):
    """``gralc CMD --help`` exits 0 in a fresh process started outside the repository, names
    itself ``gralc CMD`` (not ``index.py``) and, where it takes settings, lists them."""
    proc = gralc_proc(command, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"gralc {command}" in proc.stdout
    if command in ("index", "search", "chunk", "train", "eval", "export", "graph"):
        assert "settings (key=value" in proc.stdout


@pytest.mark.slow  # two more processes; `gralc train/eval --help` above are the fast check
def test_train_and_eval_scripts_answer_help_from_any_folder(tmp_path):
    for script in ("train.py", "eval.py"):
        proc = subprocess.run([sys.executable, str(REPO / script), "--help"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "settings (key=value" in proc.stdout and "--print-config" in proc.stdout


def test_print_config_resolves_an_experiment_without_running(capsys, tmp_path, monkeypatch):
    from gralc.train import main as train_main

    monkeypatch.chdir(tmp_path)
    assert train_main(["--print-config", "experiment=covidqa_trained", "data.path=x.json",
                       "trainer.max_epochs=3"]) == 0
    out = capsys.readouterr().out
    assert "max_epochs: 3" in out and "path: x.json" in out and "name: squad" in out
    assert not any(tmp_path.iterdir())  # nothing written


# ----- the grammar -------------------------------------------------------------------------
def _parser() -> CommandParser:
    p = CommandParser("gralc test", renamed={"--search": "search.KEY=value"})
    p.add_argument("index")
    p.add_argument("question", nargs="?")
    p.add_argument("--out")
    p.add_argument("-k", type=int, default=10)
    return p


@pytest.mark.parametrize("argv", [
    ["IDX", "search.exact=64", "what dose?", "-k", "3"],
    ["search.exact=64", "IDX", "-k", "3", "what dose?"],
    ["IDX", "-k", "3", "what dose?", "search.exact=64"],
])
def test_settings_go_anywhere_and_never_swallow_a_positional(argv):
    args = _parser().parse(argv)
    assert (args.index, args.question, args.k, args.settings) == ("IDX", "what dose?", 3, ["search.exact=64"])


def test_an_option_value_that_looks_like_a_setting_stays_the_value():
    args = _parser().parse(["IDX", "--out", "runs/a=b"])
    assert args.out == "runs/a=b" and args.settings == []


def test_after_a_double_dash_everything_is_positional():
    args = _parser().parse(["IDX", "--", "dose=5mg?"])
    assert args.question == "dose=5mg?" and args.settings == []


def test_a_flag_of_an_earlier_release_says_how_it_is_written_now(capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse(["IDX", "q", "--search", "exact=64"])
    assert exc.value.code == 2
    assert "--search is now written search.KEY=value" in capsys.readouterr().err


def test_settings_help_is_generated_from_the_dataclasses():
    from gralc.retrieval.indexes.fusion import FusionConfig

    rows = {k: (v, m) for k, v, m in setting_rows(FusionConfig, "fusion.")}
    assert rows["fusion.lexical_weight"][0] == "0.8"
    assert rows["fusion.method"] == ("weighted", "rrf | weighted")
    text = CommandParser("gralc x", settings=lambda: [Settings("fusion", FusionConfig, "fusion.")]).format_help()
    assert "fusion.rrf_k=60" in text


def test_every_entry_point_is_offline_by_default(monkeypatch):
    """Set unless the user set them: an uncached model id fails at once instead of retrying."""
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "WANDB_MODE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("WANDB_MODE", "online")  # the user's choice wins
    seen = {}
    assert run(lambda argv: seen.update(os.environ) or 0, []) == 0
    assert seen["HF_HUB_OFFLINE"] == "1" and seen["TRANSFORMERS_OFFLINE"] == "1"
    assert seen["WANDB_MODE"] == "online"


def test_an_uncached_model_fails_at_once_with_one_message(tmp_path):
    """No HF_HUB_OFFLINE in the environment: the command sets it, so an id that is not cached
    is refused in seconds (it spent ~50 s on download retries)."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    (tmp_path / "a.txt").write_text("Title\n\nMetformin lowers glucose.\n")
    proc = subprocess.run([sys.executable, "-m", "gralc", "index", str(tmp_path / "a.txt"), "--out",
                           str(tmp_path / "idx"), "encoder.model=nobody/no-such-model"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "no-such-model" in proc.stderr and "Traceback" not in proc.stderr


def test_every_setting_a_command_lists_has_a_meaning():
    """``--help`` gives each key a one-line meaning (a ``#:`` comment or the class docstring)."""
    import importlib

    for command in ("index", "search", "chunk", "train", "eval", "export", "graph", "qrels"):
        module = importlib.import_module(f"gralc.{command}")
        missing = [key for group in module.settings() for key, _, meaning in
                   setting_rows(group.schema, group.prefix, group.skip) if not meaning]
        assert missing == [], f"gralc {command}: settings without a meaning: {missing}"


def test_help_shows_the_defaults_a_run_gets():
    """A section's default_factory may differ from its class (training's chunk bounds are
    64-512, BoundaryConfig's 128-1024): --help shows what a run gets, not the class's value."""
    import functools

    from gralc.cli import _value_text, setting_rows
    from gralc.evaluation.config import EvalConfig
    from gralc.training.config import TrainConfig

    for schema in (TrainConfig, EvalConfig):
        instance = schema()
        for key, shown, _ in setting_rows(schema):
            value = functools.reduce(getattr, key.split("."), instance)
            assert shown == _value_text(value), (schema.__name__, key, shown, value)
    rows = dict((k, v) for k, v, _ in setting_rows(TrainConfig))
    assert (rows["pipeline.chunking.boundary.min_tokens"], rows["pipeline.chunking.boundary.max_tokens"]) == ("64", "512")
