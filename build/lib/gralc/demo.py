"""``gralc demo`` (``make demo``): the main job on the bundled demo corpus.

Parses every demo article (section tree, IMRaD verdict, structure-graph statistics), trains
the learnable parts (~1 min; the paper's hand-set values beside the learned ones and the
validation MRR before and after), then evaluates every method plus the
trained model and ends with the evaluation tables. A few minutes on a 2-core CPU.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from gralc.training.config import TrainConfig

console = Console(width=120)


def documents_stage() -> None:
    """Stage 1: the demo articles parsed, one shown as `gralc inspect` shows it."""
    from gralc.data.demo import demo_articles
    from gralc.documents.__main__ import inspect as inspect_document
    from gralc.documents.imrad import is_imrad
    from gralc.documents.jats import parse_jats
    from gralc.documents.structure_graph import graph_stats

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


def demo_config(
    output_dir: str = "outputs/demo_train", cache_dir: str = "data/cache"
) -> TrainConfig:
    """The demo's training run: ``TrainConfig`` defaults (what ``configs/train.yaml`` holds),
    6 epochs on one CPU thread, no early stopping."""
    from gralc.training.config import TrainConfig

    cfg = TrainConfig()
    cfg.paths.output_dir, cfg.paths.cache_dir = output_dir, cache_dir
    cfg.pipeline.encoder.cache_dir = f"{cache_dir}/encodings"
    cfg.trainer.max_epochs = 6
    cfg.trainer.accelerator = "cpu"
    cfg.trainer.num_threads = 1
    cfg.paths.force = True  # a rerun of the demo moves its previous run aside (never deletes it)
    cfg.callbacks.early_stopping.enabled = False
    return cfg


def train_model(cfg: TrainConfig | None = None, console: Console | None = None) -> dict:
    """Train on the demo corpus, print initial vs learned values; returns train()'s result
    plus ``val_mrr_initial``."""
    from gralc.model.gralc_model import GraLCModel
    from gralc.runinfo import seed_everything
    from gralc.training.datamodule import GraLCDataModule
    from gralc.training.lit_module import GraLCLitModule
    from gralc.training.run import train

    cfg = cfg or demo_config()
    console = console or Console(width=120)
    console.rule(
        "[bold]Training: alpha, gamma, tau, beta, lambda, GAT and MLP learned contrastively"
    )
    dm = GraLCDataModule(cfg)
    dm.setup("fit")
    seed_everything(cfg.seed, cfg.deterministic)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, dm.token_dim, dm.concept_dim)
    initial = model.learned_values()
    lit = GraLCLitModule(model, cfg.optim)
    model.eval()
    mrr0 = lit.retrieval_mrr(dm.val_batch())
    model.train()
    result = train(cfg, model=model)
    table = Table(
        title=f"Learned values ({result['global_step']} steps, {result['n_train_questions']} "
        f"train / {result['n_dev_questions']} dev questions)"
    )
    for col in ("parameter", "paper (init)", "learned"):
        table.add_column(col, justify="left" if col == "parameter" else "right")
    for name, value in result["learned_values"].items():
        table.add_row(name, f"{initial[name]:.3f}", f"{value:.3f}")
    best = result["best_val_mrr"]
    table.add_row("val MRR", f"{mrr0:.3f}", f"{best:.3f}" if best is not None else "-")
    console.print(table)
    console.print(
        f"checkpoints: {cfg.paths.output_dir}/checkpoints (export: gralc export "
        f"{result['best_checkpoint']} --out DIR)"
    )
    return {**result, "val_mrr_initial": mrr0}


def train_stage() -> str | None:
    """Stage 2; returns the selected checkpoint for stage 3."""
    console.rule("[bold]2. Training the learnable parts on the demo corpus")
    return train_model(console=console).get("best_checkpoint")


def evaluate_stage(checkpoint: str | None = None) -> None:
    """Stage 3: every method and the trained model on the demo questions (eval's defaults)."""
    from gralc.config import CONFIG_DIR, load_config
    from gralc.evaluation.config import EvalConfig
    from gralc.evaluation.run import evaluate, print_tables

    console.rule("[bold]3. Evaluation: every method on the demo questions (gralc eval defaults)")
    overrides = ["paths.output_dir=results/demo", "progress=false"]
    if checkpoint:
        overrides.append(f"models=[{checkpoint}]")
    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", overrides)
    results, out = evaluate(cfg)
    print_tables(results)
    console.print(f"results, tables and plots: {out}/ (reproduce: gralc eval {' '.join(overrides)})",
                  markup=False, highlight=False)


STAGES = ("documents", "train", "evaluate")


def main(argv: list[str] | None = None) -> int:
    """``gralc demo [--stages documents,train,evaluate]`` inside the error boundary."""
    from gralc.cli import run

    return run(_main, argv)


def _main(argv: list[str]) -> int:
    from gralc.cli import CommandParser, configure_output

    parser = CommandParser("gralc demo", description=__doc__.split("\n\n")[1].replace("\n", " "),
                           takes_settings=False)
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"comma-separated stages to run (default {','.join(STAGES)}); the "
                             "demo writes outputs/demo_train and results/demo")
    args = parser.parse(argv)
    stages = [s for s in args.stages.split(",") if s]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        parser.error(f"--stages: unknown {', '.join(unknown)}; choose from {', '.join(STAGES)}")
    configure_output(args.verbose)
    checkpoint = None
    if "documents" in stages:
        documents_stage()
    if "train" in stages:
        checkpoint = train_stage()
    if "evaluate" in stages:
        evaluate_stage(checkpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
