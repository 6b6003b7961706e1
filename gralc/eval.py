"""``gralc eval [key=value ...]``: evaluate methods and trained models at the evidence level.

    gralc eval paths.output_dir=results/demo                  # every method, the demo corpus
    gralc eval 'methods=[bm25,structure_aware]' 'models={baseline: runs/a, mine: runs/b}'
    gralc eval data=squad data.path=covidqa_dev.json knowledge.vocabulary=...
    gralc eval data=beir data.path=scifact/ 'methods=[bm25]'
    gralc eval --print-config experiment=covidqa              # the resolved settings, nothing run

Settings: the defaults in ``gralc/configs/eval.yaml`` (shipped in the package), ``group=name``
selections (``data=``, ``experiment=``) and ``key=value`` overrides, validated against
:class:`gralc.evaluation.config.EvalConfig` before any work. ``models``: trained models (an
export, checkpoint or run folder each) as a list or a mapping name -> model; each adds its own
rows (``NAME``: the product's search, ``NAME_hybrid``: fused with BM25, ...).
"""

from __future__ import annotations

import logging
import sys

from gralc.cli import Settings, command_main

#: the output-folder options of the index / export commands, as eval spells them
EVAL_KEYS = (("--out ", "paths.output_dir="), ("--force", "paths.force=true"))


def eval_keys(text: str) -> str:
    """``text`` (a message of :mod:`gralc.artefacts`) with ``--out`` / ``--force`` written as
    eval's keys ``paths.output_dir=`` / ``paths.force=true``."""
    for option, key in EVAL_KEYS:
        text = text.replace(option, key)
    return text


class EvalKeysFilter(logging.Filter):
    """Writes :mod:`gralc.artefacts`' log messages with eval's keys (:func:`eval_keys`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message; keep every record."""
        if isinstance(record.msg, str):
            record.msg = eval_keys(record.msg)
        return True


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc eval`` takes (for ``--help``)."""
    from gralc.evaluation.config import EvalConfig

    return [Settings("evaluation (gralc/configs/eval.yaml overrides these defaults)", EvalConfig)]



def _main(argv: list[str]) -> int:
    from gralc.train import config_command

    artefacts_log = logging.getLogger("gralc.artefacts")
    if not any(isinstance(f, EvalKeysFilter) for f in artefacts_log.filters):
        artefacts_log.addFilter(EvalKeysFilter())
    started = config_command(argv, "gralc eval", __doc__, settings, "eval.yaml",
                             "gralc.evaluation.config:EvalConfig")
    if started is None:
        return 0
    _, cfg = started
    from gralc.artefacts import OutputDirError
    from gralc.evaluation.run import evaluate, print_tables

    try:
        results, out = evaluate(cfg)
    except OutputDirError as exc:  # gralc.artefacts names the options of gralc index
        message = eval_keys(str(exc))
        if message == str(exc):
            raise
        raise OutputDirError(message) from exc
    print_tables(results)
    print(f"\nresults written to {out}")
    return 0


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
