"""What a command prints on stderr (issue 55): a summary line, not library chatter, per-document
lines, FAISS's k-means warnings or known third-party warnings; ``-v`` brings them back.

Every command runs in a subprocess with stderr a pipe (not a terminal, as in a log file):
in-process, pytest's own logging is in place and :func:`gralc.cli.configure_output` leaves it
alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gralc.cli import pop_verbose
from gralc.data.demo import DEMO_DIR, demo_articles

REPO = Path(__file__).resolve().parents[1]
#: what no quiet command may print on stderr
NOISE = re.compile(r"clustering|faiss\.loader|encoded document|DeprecationWarning|UserWarning|"
                   r"FutureWarning|deprecated|GPU available|Loading weights|LOCAL_RANK|💡")


def python(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python ARGS`` in the repository, offline, stdout and stderr pipes (no terminal)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "WANDB_MODE": "offline", "MPLBACKEND": "Agg"}
    for name in ("GRALC_DEBUG", "HF_HUB_DISABLE_PROGRESS_BARS"):
        env.pop(name, None)
    proc = subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def assert_quiet(err: str) -> None:
    noise = [line for line in err.splitlines() if NOISE.search(line)]
    assert not noise, "\n".join(noise[:20])


def test_verbosity_is_counted_beside_key_value_settings():
    assert pop_verbose(["a=1", "-v", "b=2"]) == (1, ["a=1", "b=2"])
    assert pop_verbose(["-vv", "--verbose", "x=-v2"]) == (3, ["x=-v2"])
    assert pop_verbose(["-x", "-", "data=demo"]) == (0, ["-x", "-", "data=demo"])


def test_configure_output_keeps_our_lines_and_drops_the_chatter():
    """Library INFO lines and the known warnings go, GraLC's INFO lines and an unknown warning
    stay (short format); -v: all back in the long format; -vv: GraLC's DEBUG lines too."""
    script = textwrap.dedent("""
        import logging, sys, warnings
        from gralc.cli import configure_output
        configure_output(int(sys.argv[1]))
        logging.getLogger("gralc.inference").info("indexed 3 documents")
        logging.getLogger("gralc.encoding.encoder").debug("encoded document 0")
        logging.getLogger("gralc.artefacts").warning("moved aside")
        logging.getLogger("faiss.loader").info("Loading faiss with AVX2 support.")
        logging.getLogger("pytorch_lightning.utilities.rank_zero").info("GPU available: False")
        warnings.warn_explicit("`isinstance(treespec, LeafSpec)` is deprecated, use ...",
                               FutureWarning, "_pytree.py", 21,
                               module="pytorch_lightning.utilities._pytree")
        warnings.warn_explicit("something new", UserWarning, "x.py", 1, module="somelib.x")
    """)
    err = python("-c", script, "0").stderr
    assert "indexed 3 documents\n" in err and "warning: moved aside" in err
    assert "something new" in err  # an unknown warning still shows
    assert "faiss" not in err and "GPU available" not in err and "LeafSpec" not in err
    assert "encoded document" not in err
    err = python("-c", script, "1").stderr
    assert "INFO gralc.inference: indexed 3 documents" in err and "WARNING gralc.artefacts" in err
    assert "INFO faiss.loader: Loading faiss" in err and "GPU available" in err and "LeafSpec" in err
    assert "encoded document" not in err
    assert "DEBUG gralc.encoding.encoder: encoded document 0" in python("-c", script, "2").stderr


@pytest.mark.slow  # two gralc.index processes on the demo corpus
def test_indexing_prints_one_summary_line_and_v_brings_the_rest_back(tmp_path):
    proc = python("-m", "gralc.index", str(DEMO_DIR / "articles"), "--out", str(tmp_path / "index"))
    assert_quiet(proc.stderr)
    assert "indexed 10 documents into" in proc.stderr and "indexing" not in proc.stderr  # no bar
    assert len(proc.stderr.splitlines()) <= 3, proc.stderr
    proc = python("-m", "gralc.index", str(demo_articles()[0]), "--out", str(tmp_path / "one"), "-v")
    assert "INFO faiss.loader" in proc.stderr
    assert "INFO gralc.inference: indexed 1 documents into" in proc.stderr


@pytest.mark.slow
def test_train_export_and_a_trained_index_with_a_token_codec_are_quiet(tmp_path):
    """The whole way of a user: train.py (a line per epoch, training_curve.png, no Lightning
    chatter or warnings), the export with late interaction, an index of it whose token codec
    FAISS trains (no clustering warnings)."""
    run = tmp_path / "run"
    proc = python("train.py", "data.max_docs=6", "model.gat_out_dim=32", "model.gat_heads=2",
                  "model.mlp_hidden=32", "pipeline.chunking.boundary.min_tokens=64",
                  "pipeline.chunking.boundary.max_tokens=512", "loader.batch_size=3",
                  "loader.extra_negative_docs=1", "pipeline.encoder.device=cpu",
                  "trainer.accelerator=cpu", "trainer.max_epochs=2", "trainer.num_threads=1",
                  f"paths.output_dir={run}", f"paths.cache_dir={tmp_path / 'cache'}")
    assert_quiet(proc.stderr)
    assert re.search(r"^epoch 1/2: train/loss [\d.]+, val/mrr [\d.]+, val/ev_mrr [\d.]+ \(", proc.stderr, re.M)
    assert re.search(r"^epoch 2/2: ", proc.stderr, re.M)
    assert (run / "training_curve.png").read_bytes()[:4] == b"\x89PNG"
    export = tmp_path / "export"
    proc = python("-m", "gralc", "export", str(run / "checkpoints" / "last.ckpt"), "--out", str(export),
                  "scoring.late_interaction=0.8")
    assert_quiet(proc.stderr)
    proc = python("-m", "gralc.index", str(DEMO_DIR / "articles"), "--out",
                  str(tmp_path / "index"), "--model", str(export))
    assert_quiet(proc.stderr)
    assert "indexed 10 documents into" in proc.stderr


def test_lightnings_bar_is_drawn_on_a_terminal_only(monkeypatch):
    """trainer.enable_progress_bar=null (the default): a bar when stdout (where Lightning draws
    it) and stderr (the log lines) are terminals; true / false as set."""
    import io

    from gralc.training.trainer import progress_bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    for out, err, expected in ((Terminal(), Terminal(), True), (io.StringIO(), Terminal(), False),
                               (Terminal(), io.StringIO(), False)):
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        assert progress_bar(None) is expected
        assert progress_bar(True) is True and progress_bar(False) is False
