"""``train(cfg) -> dict``: everything ``python train.py`` does, callable from tests.

Output layout (``paths.output_dir``)::

    checkpoints/best-*.ckpt, checkpoints/last.ckpt   (best on val/mrr; last after every validation)
    initial.ckpt, initial.json  (the untrained model and its dev metrics, gralc.training.selection)
    config.yaml, run.json       (resolved config; git hash, versions, torch threads, precision)
    csv/..., wandb/             (CSVLogger, always; W&B if enabled), wandb_run_id.txt
    result.json                 (learned values, best score, paths)
    hpc_ckpt_N.ckpt             (SLURM only: saved on SIGUSR1 before requeue)

The rooms: :mod:`gralc.training.run_folder` (one run per folder, resume, copy_run),
:mod:`gralc.training.trainer` (the Lightning Trainer, threads and seeds, LoRA encoder),
:mod:`gralc.training.selection` (initial vs trained checkpoint); this module fits.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from filelock import FileLock
from pytorch_lightning.callbacks import Callback, TQDMProgressBar
from pytorch_lightning.utilities.rank_zero import rank_zero_only
from tqdm.contrib.logging import logging_redirect_tqdm

from gralc.atomic import write_json_atomic
from gralc.config import save_config, to_dict
from gralc.data.demo import check_vocabulary
from gralc.model.gralc_model import GraLCModel
from gralc.runinfo import expand_run_dir, run_metadata
from gralc.training.config import TrainConfig, has_dev_split, validate
from gralc.training.datamodule import GraLCDataModule
from gralc.training.lit_module import GraLCLitModule
from gralc.training.run_folder import (
    check_resume_fits,
    check_run_dir,
    claim_run_dir,
    resolve_resume,
)
from gralc.training.selection import (
    initial_record,
    learned_values,
    select_checkpoint,
    validate_initial,
)
from gralc.training.trainer import build_trainer, lora_encoder, reproducible

logger = logging.getLogger(__name__)


def train(
    cfg: TrainConfig, model: GraLCModel | None = None, callbacks: Sequence[Callback] = ()
) -> dict[str, Any]:
    """Fit (or resume) and return learned values, best val/mrr and checkpoint paths.

    ``model``: a prebuilt model (tests inject one); ``callbacks``: extra Lightning callbacks.

    Example: ``train(load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["trainer.max_epochs=1"]))``
    -> ``{'learned_values': {...}, 'best_val_mrr': ..., 'best_checkpoint': ..., ...}``.
    """
    validate(cfg)
    cfg.paths.output_dir = expand_run_dir(cfg.paths.output_dir)
    from gralc.encoding.encoder import resolve_device

    resolve_device(cfg.pipeline.encoder.device)  # checked even when cached features need no encoder
    aside = check_run_dir(cfg)  # before any work: never over another run
    ckpt_path = resolve_resume(cfg)
    check_vocabulary(cfg.pipeline.knowledge.vocabulary,
                     f"data={cfg.data.name} {cfg.data.path or ''}".strip(), cfg.data.name == "demo")
    with reproducible(cfg) as threads:
        return _fit(cfg, model, callbacks, ckpt_path, aside, threads)


def _fit(cfg: TrainConfig, model: GraLCModel | None, callbacks: Sequence[Callback],
         ckpt_path: str | None, aside: list[str], threads: int) -> dict[str, Any]:
    encoder = lora_encoder(cfg)  # before the data: a bad lora.target_modules fails at once
    out = Path(cfg.paths.output_dir)
    dm = GraLCDataModule(cfg)
    cache = Path(cfg.paths.cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    with FileLock(cache / ".features.lock"):  # DDP ranks: one builds the cache, the rest read it
        dm.setup("fit")
    model = model or GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, dm.token_dim, dm.concept_dim)
    # what the weights depend on besides the seed (module docstring), recorded with the run;
    # plain JSON types only, so Lightning can resume with torch.load(weights_only=True)
    reproducibility = {"torch_threads": threads, "deterministic": cfg.deterministic,
                       "encoder_precision": encoder.encoder.precision if encoder is not None else None}
    meta = json.loads(json.dumps(run_metadata(
        {"output_dir": str(out), "resumed_from": ckpt_path, **reproducibility}), default=str))
    lit = GraLCLitModule(
        model,
        cfg.optim,
        # what the model card of an export reports (gralc.model.model_card)
        extra_checkpoint={"train_config": to_dict(cfg), "run": meta, "data_summary": data_summary(dm)},
        encoder=encoder,
        sem_window=cfg.pipeline.chunking.boundary.window,
        windows_per_doc=cfg.lora.windows_per_doc,
        hard_windows=cfg.lora.hard_windows,
        search=cfg.search,
    )
    if ckpt_path is not None:  # before the run's config.yaml is rewritten
        check_resume_fits(ckpt_path, lit, cfg, threads)
    claim_run_dir(cfg, aside)  # the first write into the folder
    if rank_zero_only.rank == 0:
        save_config(cfg, out / "config.yaml")
        write_json_atomic(out / "run.json", meta)
    trainer = build_trainer(cfg, callbacks)
    dev = has_dev_split(cfg)  # else a refit: no initial-vs-trained choice, the last epoch is kept
    if cfg.trainer.validate_before_fit and dev and ckpt_path is None:
        validate_initial(trainer, lit, dm, out)
    monitor = cfg.callbacks.checkpoint.monitor
    initial_path, initial_score = (
        initial_record(out, monitor) if cfg.trainer.validate_before_fit and dev else (None, None)
    )
    # log lines (one per epoch) above a progress bar, not through it: Lightning's Rich bar (its
    # default where rich is installed) takes what is written to sys.stderr above it, tqdm's
    # needs its write
    tqdm_bar = isinstance(trainer.progress_bar_callback, TQDMProgressBar)
    bar = logging_redirect_tqdm() if tqdm_bar else nullcontext()
    with warnings.catch_warnings(), bar:
        if encoder is not None:  # LoraEncoder keeps its frozen transformer in eval mode on purpose
            warnings.filterwarnings("ignore", message=r"Found \d+ module\(s\) in eval mode")
        trainer.fit(lit, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)  # never unpickle code
    ckpt = trainer.checkpoint_callback
    best = float(ckpt.best_model_score) if ckpt.best_model_score is not None else None
    path, score, selected = select_checkpoint(
        ckpt.best_model_path,
        best,
        initial_path,
        initial_score,
        cfg.callbacks.checkpoint.mode,
        cfg.callbacks.checkpoint.min_improvement,
    )
    result = {
        "learned_values": learned_values(path) if path else model.learned_values(),
        "final_learned_values": model.learned_values(),
        "best_val_mrr": score if monitor == "val/mrr" else None,
        "best_checkpoint": path,
        "selected": selected if dev else "last",  # "last": no dev split (loader.dev_fraction=0)
        "monitor": monitor,  # the *_score entries are of this metric
        "best_score": score,
        "initial_score": initial_score,
        "trained_best_score": best,
        "trained_best_checkpoint": ckpt.best_model_path,
        "last_checkpoint": str(out / "checkpoints" / "last.ckpt"),
        "global_step": trainer.global_step,
        "epochs": trainer.current_epoch,
        **data_summary(dm),
    }
    if trainer.is_global_zero:
        write_json_atomic(out / "result.json", result)
    return result


def data_summary(dm: GraLCDataModule) -> dict[str, Any]:
    """How many questions a run trains and validates on, and its mixed-in sources (their
    training questions and how many each epoch draws); plain JSON types (stored in every
    checkpoint and in ``result.json``).

    Example: ``data_summary(dm)`` -> ``{'n_train_questions': ..., 'n_dev_questions': ..., 'mix': [...]}``.
    """
    return {
        "n_train_questions": len(dm.data.train),
        "n_dev_questions": len(dm.data.dev),
        "mix": [{"source": p.prefix[:-1], "weight": p.weight, "n_train_questions": len(p.examples),
                 "n_train_docs": len(p.doc_ids), "per_epoch": p.per_epoch} for p in dm.mix],
    }
