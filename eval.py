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

from gralc.artefacts import OutputDirError
from gralc.cli import configure_output, pop_verbose, run
from gralc.config import load_config
from gralc.evaluation.config import EvalConfig
from gralc.evaluation.run import evaluate, print_tables

#: the output-folder options of the index / export commands, as eval.py spells them
EVAL_KEYS = (("--out ", "paths.output_dir="), ("--force", "paths.force=true"))


def eval_keys(text: str) -> str:
    """``text`` (a message of :mod:`gralc.artefacts`) with ``--out`` / ``--force`` written as
    eval.py's keys ``paths.output_dir=`` / ``paths.force=true``."""
    for option, key in EVAL_KEYS:
        text = text.replace(option, key)
    return text


class EvalKeysFilter(logging.Filter):
    """Writes :mod:`gralc.artefacts`' log messages with eval.py's keys (:func:`eval_keys`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = eval_keys(record.msg)
        return True


def main(argv: list[str]) -> int:
    verbose, argv = pop_verbose(argv)  # -v / -vv beside the key=value settings
    configure_output(verbose)
    artefacts_log = logging.getLogger("gralc.artefacts")
    if not any(isinstance(f, EvalKeysFilter) for f in artefacts_log.filters):
        artefacts_log.addFilter(EvalKeysFilter())
    cfg = load_config(EvalConfig, "configs/eval.yaml", argv)
    try:
        results, out = evaluate(cfg)
    except OutputDirError as exc:  # gralc.artefacts names the options of gralc.index
        message = eval_keys(str(exc))
        if message == str(exc):
            raise
        raise OutputDirError(message) from exc
    print_tables(results)
    print(f"\nresults written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run(main))
