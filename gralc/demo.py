"""``make demo``: the main job on the bundled demo corpus.

Parses every demo article (section tree, IMRaD verdict, structure-graph statistics), trains
the learnable parts (printing the learned values), then evaluates every method plus the
trained model and ends with the evaluation tables. A few minutes on a 2-core CPU.
"""

from __future__ import annotations

import argparse
import logging
import sys

from rich.console import Console
from rich.table import Table

from gralc.data.demo import demo_articles
from gralc.documents.__main__ import inspect as inspect_document
from gralc.documents.imrad import is_imrad
from gralc.documents.jats import parse_jats
from gralc.documents.structure_graph import graph_stats

console = Console(width=120)


def documents_stage() -> None:
    docs = [parse_jats(p) for p in demo_articles()]
    console.rule("[bold]1. Documents: the demo corpus parsed into section trees and structure graphs")
    console.print(inspect_document(docs[0]), markup=False, highlight=False)
    table = Table(title="Demo corpus")
    for col in ("document", "sections", "paragraphs", "sentences", "body words", "citations",
                "IMRaD", "graph nodes", "graph edges"):
        table.add_column(col, justify="right" if col != "document" else "left")
    for d in docs:
        stats = graph_stats(d)
        nodes = sum(v for k, v in stats.items() if k.startswith("nodes/"))
        edges = sum(stats[f"edges/{k}"] for k in ("hierarchical", "sequential", "citation", "xref"))
        table.add_row(d.id, str(sum(1 for _ in d.iter_sections())), str(len(d.paragraphs)),
                      str(len(d.sentences)), str(d.body_word_count()), str(len(d.citations)),
                      "yes" if is_imrad(d) else "no", str(nodes), str(edges))
    console.print(table)


_STATE: dict = {}


def train_stage() -> None:
    from gralc.training.demo_stage import train_stage as run_training

    console.rule("[bold]2. Training the learnable parts on the demo corpus")
    result = run_training(console=console)
    _STATE["checkpoint"] = result.get("best_checkpoint")


def evaluate_stage() -> None:
    from gralc.config import load_config
    from gralc.evaluation.config import EvalConfig
    from gralc.evaluation.run import evaluate, print_tables

    console.rule("[bold]3. Evaluation: every method on the demo questions (eval.py defaults)")
    overrides = ["paths.output_dir=results/demo", "progress=false"]
    if _STATE.get("checkpoint"):
        overrides.append(f"models=[{_STATE['checkpoint']}]")
    cfg = load_config(EvalConfig, "configs/eval.yaml", overrides)
    results, out = evaluate(cfg)
    print_tables(results)
    console.print(f"results, tables and plots: {out}/ (reproduce: python eval.py {' '.join(overrides)})",
                  markup=False, highlight=False)


STAGES = {"documents": documents_stage, "train": train_stage, "evaluate": evaluate_stage}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", nargs="*", default=list(STAGES), choices=list(STAGES))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("WANDB_MODE", "offline")
    for name in args.stages:
        STAGES[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
