"""One error boundary for every CLI: user mistakes exit 2 with one message, bugs keep tracebacks."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from gralc.cli import run

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("script, args, message", [
    ("eval.py", ["data=nosuch"], "data=nosuch: no config gralc/configs/data/nosuch.yaml; available: beir, demo, pmc, pubmedqa, squad"),
    ("eval.py", ["methods=[nosuch]"], "unknown method(s) ['nosuch']"),
    ("eval.py", ["models=[/no/such/export]"], "no such checkpoint, export or run folder"),
    ("train.py", ["data=squad"], "data=squad needs data.path=FILE.json"),
    ("eval.py", ["fusion.method=max"], "fusion.method='max'"),
    ("eval.py", ["pipeline.encoder.device=gpu"], "encoder.device='gpu' is not a device"),
    ("eval.py", ["pipeline.encoder.model=/no/such/encoder"],
     "encoder.model=/no/such/encoder: /no/such/encoder does not exist"),
])
def test_user_mistakes_end_with_one_message(script, args, message, capsys, monkeypatch, tmp_path):
    """From any folder (the configs ship in the package)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GRALC_DEBUG", raising=False)
    g = runpy.run_path(str(REPO / script))
    assert g["main"](args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "GRALC_DEBUG=1" in err


@pytest.mark.parametrize("module", ["gralc.index", "gralc.search", "gralc.export"])
def test_commands_leave_user_errors_to_the_boundary(module, tmp_path, capsys, monkeypatch):
    """Their ``main`` runs inside ``gralc.cli.run`` (not a ``try/except: return 2`` of their
    own, which hid the traceback from --debug / GRALC_DEBUG=1)."""
    import importlib

    main = importlib.import_module(module).main
    monkeypatch.delenv("GRALC_DEBUG", raising=False)
    argv = [str(tmp_path / "missing"), "--out", str(tmp_path / "o")] if module != "gralc.search" \
        else [str(tmp_path / "missing"), "a question"]
    assert main(argv) == 2
    assert "GRALC_DEBUG=1" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError):
        main([*argv, "--debug"])
    monkeypatch.setenv("GRALC_DEBUG", "1")
    with pytest.raises(FileNotFoundError):
        main(argv)


def test_debug_shows_the_traceback_and_bugs_keep_theirs(monkeypatch):
    def user_mistake(argv):
        raise ValueError("bad value")

    def bug(argv):
        raise KeyError("internal")

    with pytest.raises(ValueError, match="bad value"):
        run(user_mistake, ["--debug"])
    monkeypatch.setenv("GRALC_DEBUG", "1")
    with pytest.raises(ValueError):
        run(user_mistake, [])
    monkeypatch.delenv("GRALC_DEBUG")
    with pytest.raises(KeyError):
        run(bug, [])
