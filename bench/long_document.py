"""Peak memory and time to index one very long article (``gralc.index``, late chunking).

Builds a plain-text article of ``--mb`` megabytes from the COVID-QA contexts (or ``--text``),
then runs ``python -m gralc.index`` on it in a child process and reports its peak resident
memory and wall time, with the token-vector size for scale (n word-pieces x 384 x 4 bytes).

    python -m bench.long_document --mb 5        # ~5 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_SOURCE = Path(__file__).resolve().parents[1].parent / "shared/data/covidqa/covidqa_dev.json"


def article(mb: float, source: Path) -> str:
    data = json.loads(source.read_text(encoding="utf-8"))
    body = "\n\n".join(p["context"] for a in data["data"] for p in a["paragraphs"])
    text = "A very long article\n\n"
    while len(text) < mb * 1e6:
        text += body + "\n\n"
    return text[: int(mb * 1e6)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="SQuAD JSON to draw text from")
    ap.add_argument("--strategy", default="late")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "long.txt"
        path.write_text(article(args.mb, args.source), encoding="utf-8")
        t0 = time.perf_counter()
        run = subprocess.run([sys.executable, "-m", "gralc.index", str(path), "--out",
                              str(Path(tmp) / "index"), "--strategy", args.strategy],
                             capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if run.returncode != 0:
            print(run.stderr[-2000:], file=sys.stderr)
            return run.returncode
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        n = next((int(w) for line in run.stderr.splitlines() if "word-pieces" in line
                  for w in line.replace("(", " ").split() if w.isdigit() and int(w) > 1000), None)
    print("| article | word-pieces | token vectors (fp32) | peak RSS | wall | chunks |")
    print("|---|---|---|---|---|---|")
    vec = f"{n * 384 * 4 / 2**30:.2f} GiB" if n else "?"
    print(f"| {args.mb:g} MB | {n or '?'} | {vec} | {peak_mb / 1024:.2f} GiB | {wall:.0f} s | "
          f"{run.stdout.split()[1] if run.stdout else '?'} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
