"""Evaluate chunking + retrieval methods: ``python eval.py [key=value ...]``.

Defaults run every method on the bundled demo corpus. Examples::

    python eval.py paths.output_dir=results/demo
    python eval.py data=pubmedqa data.path=../shared/data/pubmedqa/ori_pqal.json
    python eval.py data=pmc data.path=../shared/data/pmc 'data.conditions=[introduction,partial,full]'
    python eval.py models=[outputs/train/export]          # adds the trained GraLC rows
"""

from __future__ import annotations

import logging
import sys

from gralc.cli import run
from gralc.config import load_config
from gralc.evaluation.config import EvalConfig
from gralc.evaluation.run import evaluate, print_tables


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("bm25s", "matplotlib", "PIL", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    cfg = load_config(EvalConfig, "configs/eval.yaml", argv)
    results, out = evaluate(cfg)
    print_tables(results)
    print(f"\nresults written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run(main))
