"""A write that finds no room (issue 58, class 9): a full disk, a quota or a file-size limit
ended in a raw traceback (FAISS's "write error", safetensors' SafetensorError, OSError 27/28).
Every command's error boundary (:func:`gralc.cli.run`) says it in one line, exit 2."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest
from safetensors import SafetensorError

from gralc.cli import run

REPO = Path(__file__).resolve().parents[2]


def _raising(exc: BaseException):
    def main(argv):
        raise exc
    return main


@pytest.mark.parametrize("exc", [
    OSError(28, "No space left on device", "out/vectors.npy"),
    OSError(27, "File too large", "out/index.faiss"),
    RuntimeError("Error in faiss::FileIOWriter::operator()(...) at impl/io.cpp:101: "
                 "write error in out/index.faiss: 4096 != 1 (No space left on device)"),
    SafetensorError("Error while serializing: IoError(Os { code: 28, kind: StorageFull, "
                    "message: \"No space left on device\" })"),
])
def test_no_room_is_one_message(exc, capsys):
    assert run(_raising(exc), []) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no room to write") and "Traceback" not in err


def test_a_wrapped_disk_error_is_found_in_the_chain(capsys):
    def main(argv):
        try:
            raise OSError(28, "No space left on device", "cache/x.safetensors")
        except OSError as inner:
            raise RuntimeError("saving the features failed") from inner
    assert run(main, []) == 2
    assert "no room to write cache/x.safetensors" in capsys.readouterr().err


def test_any_other_error_keeps_its_traceback():
    with pytest.raises(RuntimeError, match="a bug"):
        run(_raising(RuntimeError("a bug")), [])


@pytest.mark.slow  # a gralc index process under a file-size limit (~20 s)
def test_gralc_index_under_a_file_size_limit_says_so(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))

    proc = subprocess.run([sys.executable, "-m", "gralc", "index", str(REPO / "gralc/data/demo/articles"),
                           "--out", str(tmp_path / "idx"), "--strategy", "late",
                           f"encoder.cache_dir={tmp_path / 'cache'}"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, preexec_fn=limit)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "no room to write" in proc.stderr and "Traceback" not in proc.stderr
