"""Every bench and driver that defaults to the shared data folder follows $GRALC_SHARED_DATA.

A bench run from a git worktree (how long experiments run here) looked for ``../shared/data``
beside the worktree and failed; the one default is ``gralc.experiments.real_data.SHARED_DATA``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_bench_defaults_follow_gralc_shared_data(tmp_path: Path) -> None:
    code = ("import json, bench.scale_search as s, bench.parse as p, bench.link as l, bench.scale as c, bench.index as i; "
            "print(json.dumps([str(s.DATA), str(p.DEFAULT_DIR), str(l.DEFAULT_DIR), str(c.DATA), str(i.DATA)]))")
    env = {**os.environ, "GRALC_SHARED_DATA": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == [str(tmp_path), str(tmp_path / "pmc"), str(tmp_path), str(tmp_path), str(tmp_path)]
