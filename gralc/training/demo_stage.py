"""``make demo`` stage: train GraLC's learnable parts on the demo corpus (~1 min on CPU).

Prints the paper's hand-set values next to the learned ones and the validation MRR (dev
articles' questions against the whole demo corpus) before and after training.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from gralc.model.gralc_model import GraLCModel
from gralc.runinfo import seed_everything
from gralc.training.config import TrainConfig
from gralc.training.datamodule import GraLCDataModule
from gralc.training.lit_module import GraLCLitModule
from gralc.training.run import train


def demo_config(
    output_dir: str = "outputs/demo_train", cache_dir: str = "data/cache"
) -> TrainConfig:
    cfg = TrainConfig()
    cfg.paths.output_dir, cfg.paths.cache_dir = output_dir, cache_dir
    cfg.pipeline.encoder.cache_dir = f"{cache_dir}/encodings"
    cfg.trainer.max_epochs = 6
    cfg.trainer.accelerator = "cpu"
    cfg.trainer.num_threads = 1
    cfg.callbacks.early_stopping.enabled = False
    return cfg


def train_stage(cfg: TrainConfig | None = None, console: Console | None = None) -> dict:
    """Train on the demo corpus, print initial vs learned values; returns train()'s result
    plus ``val_mrr_initial``."""
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
        f"checkpoints: {cfg.paths.output_dir}/checkpoints (export: python -m gralc.export "
        f"{result['best_checkpoint']} --out DIR)"
    )
    return {**result, "val_mrr_initial": mrr0}


if __name__ == "__main__":
    train_stage()
