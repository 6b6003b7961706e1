"""``TrainConfig``: the typed schema of ``configs/train.yaml`` (see :func:`gralc.config.load_config`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gralc.chunking.boundaries import BoundaryConfig
from gralc.config import ConfigError, PathsConfig, WandbConfig
from gralc.data.benchmarks import DataConfig
from gralc.encoding.precision import PRECISIONS
from gralc.model.gralc_model import ModelConfig
from gralc.model.scoring_config import ScoringConfig
from gralc.pipeline import PipelineConfig
from gralc.retrieval.trained.candidates import CandidateConfig

#: Validation metrics a checkpoint / early stopping may monitor (GraLCLitModule.validation_step).
MONITORS = ("val/mrr", "val/mrr_cos", "val/mrr_min", "val/nll", "val/ev_mrr")


@dataclass
class LoaderConfig:
    """``batch_size`` questions per batch (never two of one document); each batch adds
    ``extra_negative_docs`` random training documents whose chunks are negatives.
    ``dev_fraction`` / ``split_seed``: document-level dev split (not PubMedQA, which has its
    official split); ``dev_fraction=0``: no dev split (a refit on every training document once
    the epochs and settings were chosen with one: no validation, the last epoch is the
    model; early stopping must be off, see :func:`has_dev_split`). ``holdout_fraction``: share of the training DOCUMENTS (with all their
    questions; seeded by ``split_seed``) moved to the dev set after the split, for a larger
    model-selection signal (PubMedQA's official dev set has 50 questions; its test set is never
    touched). Held-out documents are no extra negatives either. ``max_train_questions``: cap
    for quick runs (None: all)."""

    batch_size: int = 4
    extra_negative_docs: int = 2
    dev_fraction: float = 0.2
    split_seed: int = 0
    holdout_fraction: float = 0.0
    max_train_questions: int | None = None

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ConfigError(f"loader.batch_size must be >= 1, got {self.batch_size}")
        if not 0.0 <= self.dev_fraction < 1.0:
            raise ConfigError(f"loader.dev_fraction must be in [0, 1), got {self.dev_fraction}")
        if not 0.0 <= self.holdout_fraction < 1.0:
            raise ConfigError(
                f"loader.holdout_fraction must be in [0, 1), got {self.holdout_fraction}")
        if self.extra_negative_docs < 0:
            raise ConfigError("loader.extra_negative_docs must be >= 0")


@dataclass
class PairsConfig:
    """Which chunks of the gold document are positives. ``evidence``: the benchmark's own
    definition (:data:`gralc.training.pairs.PAIR_SOURCES`: gold paragraphs / sections, or the
    chunk closest to PubMedQA's long answer); ``document``: every chunk of the gold document
    (matches document-level relevance, as PubMedQA's metric)."""

    #: evidence (the benchmark's gold paragraphs, sections or answer chunk) or document
    positives: str = "evidence"

    def __post_init__(self) -> None:
        if self.positives not in ("evidence", "document"):
            raise ConfigError(
                f"pairs.positives must be 'evidence' or 'document', got {self.positives!r}")


@dataclass
class OptimConfig:
    """AdamW. Scalars (alpha, gamma, tau, beta, lambda) get ``lr * scalar_lr_scale`` and no
    weight decay (decay would pull the boundary weights to 0). ``scalar_anchor``: weight of an
    L2 penalty ``sum (p - p_init)^2`` pulling the scalars (as parameterised: beta as its logit)
    toward their initial values instead (0: off). ``temperature`` scales the InfoNCE logits.
    ``evidence_cut_weight``: weight of the boundary loss from evidence (0: off; see
    :meth:`gralc.training.lit_module.GraLCLitModule.evidence_cut_loss`): the mean soft-cut
    probability at cuts that would split a question's evidence span, minus the mean over its
    document, so alpha, gamma and tau learn to keep evidence inside one chunk without simply
    cutting less everywhere. ``lexical_stats``: where the learned lexical term's BM25 takes
    its term statistics (document frequencies, mean length) in training: ``batch``, the
    batch's own chunks (a few dozen, or encoder windows of them), or ``corpus``, the chunks
    of every training-corpus document at the start of training, as an index of the corpus
    scores them at inference (validation always scores against the whole dev corpus).
    ``dense_weight``: weight of a second InfoNCE on the chunks' cosine alone (0: off), so the
    dense part is trained to find the evidence on its own, not only where the lexical term
    leaves it a margin to fill. ``late_interaction``: weight ``m`` of late interaction in the
    training score, ``(1 - m) * score + m * MaxSim`` (ColBERT-style: the questions' word-piece
    vectors, re-encoded through the adapters, against the chunks' enriched token vectors,
    with gradient through both; 0: off; LoRA only); validation (``val/*`` metrics, the
    checkpoint and initial-vs-trained choice) scores with the same mix. This is the training
    loss's weight only: inference mixes MaxSim in with the model's own
    ``scoring.late_interaction`` (:class:`~gralc.model.scoring_config.ScoringConfig`, set at
    export), never with this one. ``schedule``: the learning rate
    over the run's optimiser steps, ``constant`` or ``linear`` (a linear warm-up over the first
    ``warmup_fraction`` of the steps, then a linear decay to 0 at the last step, the schedule
    sentence-transformers fine-tunes with); every parameter group follows it."""

    #: AdamW's learning rate of the networks (GAT, MLP, LoRA)
    lr: float = 1e-3
    #: AdamW's weight decay (not on the scalars)
    weight_decay: float = 0.01
    #: the scalars' learning rate is lr times this
    scalar_lr_scale: float = 10.0
    scalar_anchor: float = 0.0
    temperature: float = 0.05
    evidence_cut_weight: float = 0.0
    lexical_stats: str = "batch"
    dense_weight: float = 0.0
    #: weight of MaxSim in the training loss's score (inference's: scoring.late_interaction)
    late_interaction: float = 0.0
    schedule: str = "constant"
    warmup_fraction: float = 0.1

    def __post_init__(self) -> None:
        if self.scalar_anchor < 0:
            raise ConfigError(f"optim.scalar_anchor must be >= 0, got {self.scalar_anchor}")
        if self.lexical_stats not in ("batch", "corpus"):
            raise ConfigError(
                f"optim.lexical_stats must be 'batch' or 'corpus', got {self.lexical_stats!r}")
        if self.dense_weight < 0:
            raise ConfigError(f"optim.dense_weight must be >= 0, got {self.dense_weight}")
        if not 0 <= self.late_interaction < 1:
            raise ConfigError(
                f"optim.late_interaction must be in [0, 1), got {self.late_interaction}")
        if self.evidence_cut_weight < 0:
            raise ConfigError(
                f"optim.evidence_cut_weight must be >= 0, got {self.evidence_cut_weight}")
        if self.temperature <= 0:
            raise ConfigError(f"optim.temperature must be > 0, got {self.temperature}")
        if self.schedule not in SCHEDULES:
            raise ConfigError(
                f"optim.schedule must be one of {', '.join(SCHEDULES)}, got {self.schedule!r}")
        if not 0 <= self.warmup_fraction < 1:
            raise ConfigError(
                f"optim.warmup_fraction must be in [0, 1), got {self.warmup_fraction}")


#: learning-rate schedules of ``optim.schedule``
SCHEDULES = ("constant", "linear")


@dataclass
class TrainerConfig:
    """The Lightning trainer of a run (``trainer.*``): epochs, devices and DDP, precision,
    logging, validation and gradient clipping, torch threads."""
    #: epochs to train
    max_epochs: int = 10
    #: auto | cpu | gpu (Lightning)
    accelerator: str = "auto"
    devices: str = "auto"  # under SLURM: equal to --ntasks-per-node (Lightning#19883)
    strategy: str = "auto"  # "ddp" for multi-process (gloo on CPU, nccl on GPU)
    num_nodes: int = 1  # under SLURM: equal to --nodes
    #: Lightning's precision of the learnable parts (the encoder's: encoder.precision)
    precision: str = "32-true"
    #: steps between logged training values
    log_every_n_steps: int = 5
    #: a share (<= 1) or count of training batches per epoch (null: all)
    limit_train_batches: float | None = None
    #: validate within an epoch this often (null: once per epoch)
    val_check_interval: float | None = None
    #: clip gradients to this norm (null: no clipping)
    gradient_clip_val: float | None = 1.0
    # None: a progress bar on a terminal (none in a log file, SLURM); true / false
    #: null: a bar on a terminal only; true: always; false: never
    enable_progress_bar: bool | None = None
    # torch intra-op threads for the run (None: torch's count when train() starts); pinned for
    # the whole run and recorded in run.json (torch_threads): the trained weights depend on it
    # (a parallel sum splits by thread count), so one seed trains bit-identical weights only
    # at one thread count (run.reproducible)
    #: torch threads (null: torch's choice); one seed trains one set of weights per thread count
    num_threads: int | None = None
    # validate the untrained model before fitting and keep it (checkpoints/initial.ckpt) as
    # the selected model when no trained epoch beats its val/mrr (see run.select_checkpoint)
    #: score the untrained model on dev first (it is kept when no epoch beats it)
    validate_before_fit: bool = True

    def __post_init__(self) -> None:
        if self.num_nodes < 1:
            raise ConfigError(f"trainer.num_nodes must be >= 1, got {self.num_nodes}")
        if self.num_threads is not None and self.num_threads < 1:
            raise ConfigError(
                f"trainer.num_threads must be >= 1 (or null: torch's count), got {self.num_threads}")


@dataclass
class EarlyStoppingConfig:
    """Early stopping on a validation metric (``callbacks.early_stopping.*``)."""
    #: stop when the monitored metric has not improved for `patience` validations
    enabled: bool = True
    #: validations without improvement before stopping
    patience: int = 5
    #: the metric watched (val/mrr, val/ev_mrr, ...)
    monitor: str = "val/mrr"
    #: max or min
    mode: str = "max"

    def __post_init__(self) -> None:
        _check_metric("early_stopping", self.monitor, self.mode)


def _check_metric(name: str, monitor: str, mode: str) -> None:
    """``callbacks.NAME`` watches a metric :data:`MONITORS` knows, in ``min`` or ``max`` mode."""
    if mode not in ("min", "max"):
        raise ConfigError(f"callbacks.{name}.mode must be 'min' or 'max', got {mode!r}")
    if monitor not in MONITORS:
        raise ConfigError(
            f"callbacks.{name}.monitor must be one of {', '.join(MONITORS)}, got {monitor!r}")


@dataclass
class CheckpointConfig:
    """The metric that selects the best checkpoint (and the initial model, see
    ``trainer.validate_before_fit``): ``val/mrr`` (max; the hybrid score), ``val/mrr_cos``
    (max; cosine alone, the KG row), ``val/mrr_min`` (max; the lower of the two, so neither
    row may get worse), ``val/nll`` (min; document-level InfoNCE over the dev
    corpus, for dev sets where the MRR saturates at 1) or ``val/ev_mrr`` (max; MRR of the
    first chunk holding the question's evidence: the evidence level the evaluation judges). ``min_improvement``: None keeps the
    best trained epoch unless the initial model is strictly better; a number >= 0 keeps the
    initial model unless a trained epoch beats it by MORE than that (ties keep the initial
    model: training must earn every deviation from the initial values)."""

    #: the metric that selects the best checkpoint (class docstring)
    monitor: str = "val/mrr"
    #: max or min
    mode: str = "max"
    min_improvement: float | None = None

    def __post_init__(self) -> None:
        _check_metric("checkpoint", self.monitor, self.mode)
        mi = self.min_improvement
        if mi is not None and mi < 0:
            raise ConfigError(f"callbacks.checkpoint.min_improvement must be >= 0, got {mi}")


@dataclass
class CallbacksConfig:
    """The run's callbacks (``callbacks.*``): early stopping and best-checkpoint selection."""
    early_stopping: EarlyStoppingConfig = field(default_factory=EarlyStoppingConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)


def training_paths() -> PathsConfig:
    """The folders of a training run: :class:`~gralc.config.PathsConfig` writing to
    ``outputs/train`` unless set."""
    return PathsConfig(output_dir="outputs/train")


@dataclass
class LoraConfig:
    """LoRA adapters on the encoder (peft, :mod:`gralc.encoding.lora`), trained with the rest.

    ``enabled=False`` (default): the encoder is frozen and training reads cached token
    vectors. ``enabled=True``: every step re-encodes the batch's documents (H, b_sem) and
    questions through the adapted encoder with gradient (slow on a CPU: see README).
    ``r``: rank; ``alpha``: scaling numerator (updates scaled by alpha / r); ``dropout`` on
    the adapter input; ``target_modules``: names of the Linear layers to adapt (BERT
    attention: ``query``, ``value``; not Llama's ``q_proj`` / ``v_proj``); ``layers``: adapt
    only the last N transformer layers (null: every layer). The frozen layers below run once
    per encoder window and their states are kept for the run, so a step runs the top N
    layers forward and backward only (``layers: 2`` of MiniLM's 6: ~3x faster per window).

    ``windows_per_doc``: what a training step encodes (:mod:`gralc.model.doc_windows`).
    ``n >= 1``: each question's gold document contributes the encoder window holding its
    evidence plus ``n - 1`` other windows of the same document (sampled; their chunks are
    same-document negatives), each extra negative document one sampled window: a step costs a
    few windows instead of whole documents. ``0``: whole documents (every window, blended).
    ``hard_windows``: the first of those ``n - 1`` windows is the one sharing the most
    (idf-weighted) question word-pieces outside the evidence window
    (:func:`gralc.model.doc_windows.lexical_window`), not a random one.
    Validation always encodes whole documents, as inference does. ``precision``: of the
    adapted encoder's passes in training and validation (``auto``: bf16 only where the
    hardware has native bf16 and a measured probe finds it faster than fp32, see
    :mod:`gralc.encoding.precision`; the exported encoder then
    runs in the pipeline's precision)."""

    #: train LoRA adapters on the encoder (the class docstring)
    enabled: bool = False
    r: int = 8
    alpha: int = 16
    dropout: float = 0.1
    target_modules: list[str] = field(default_factory=lambda: ["query", "value"])
    layers: int | None = None
    windows_per_doc: int = 2
    hard_windows: bool = False
    precision: str = "auto"

    def __post_init__(self) -> None:
        if not self.enabled:
            return
        if self.r < 1:
            raise ConfigError(f"lora.r must be >= 1, got {self.r}")
        if self.alpha <= 0:
            raise ConfigError(f"lora.alpha must be > 0, got {self.alpha}")
        if not 0 <= self.dropout < 1:
            raise ConfigError(f"lora.dropout must be in [0, 1), got {self.dropout}")
        if not self.target_modules:
            raise ConfigError("lora.target_modules is empty; BERT encoders: [query,value]")
        if self.layers is not None and self.layers < 1:
            raise ConfigError(f"lora.layers must be >= 1 (null: every layer), got {self.layers}")
        if self.windows_per_doc < 0:
            raise ConfigError(
                f"lora.windows_per_doc must be >= 0 (0: whole documents), got {self.windows_per_doc}")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"lora.precision must be one of {', '.join(PRECISIONS)}, got {self.precision!r}")


@dataclass
class MixSource(DataConfig):
    """An extra training source mixed into the primary ``data`` source: the fields of
    :class:`~gralc.data.benchmarks.DataConfig` (``name``, ``path``, ``max_docs``, ...) plus
    ``weight``. Only its TRAINING questions are used (PubMedQA: the official train split;
    the others: the training documents of the usual document split, ``loader.dev_fraction``
    / ``loader.split_seed``); its dev questions are dropped (validation and checkpoint
    selection stay on the primary source) and its training documents join the training
    corpus (gold documents and extra negatives). ``weight`` w >= 0: each epoch draws
    ``round(w * n_primary_train)`` of its questions (seeded by ``seed + epoch``; without
    replacement while there are enough, beyond that every question equally often plus a
    draw without replacement of the rest); w = 0 switches the source off. See
    :mod:`gralc.training.datamodule` ("Mixed sources")."""

    weight: float = 1.0

    def data_config(self) -> DataConfig:
        """This source as a plain ``DataConfig`` (what ``data=`` would hold to train on it
        alone: the same feature cache entry)."""
        return DataConfig(**{f.name: getattr(self, f.name) for f in fields(DataConfig)})


#: Sources that read ``path`` (``demo`` is bundled).
NEEDS_PATH = {"pubmedqa": "ori_pqal.json", "pmc": "a directory of JATS .nxml files",
              "squad": "a SQuAD-format JSON file"}


def validate_mix(cfg: TrainConfig) -> None:
    """Every ``mix[i]`` entry names a known source with an existing ``path``, a weight >= 0,
    ``split: all`` and is neither the primary source nor a repeat; raises ConfigError naming
    ``mix[i].KEY`` and the fix (before any data is loaded)."""
    from gralc.training.pairs import PAIR_SOURCES

    seen: dict[tuple[str, str | None], int] = {}
    primary = (cfg.data.name, _norm(cfg.data.path))
    for i, m in enumerate(cfg.mix):
        key = f"mix[{i}]"
        if m.name not in PAIR_SOURCES:
            raise ConfigError(f"{key}.name={m.name!r} is not a training source; use one of "
                              f"{', '.join(sorted(PAIR_SOURCES))}")
        if not m.weight >= 0:  # also NaN
            raise ConfigError(f"{key}.weight must be >= 0 (0 switches the source off), got {m.weight}")
        if m.name in NEEDS_PATH:
            if m.path is None:
                raise ConfigError(f"{key}.path is missing: {key} (name={m.name}) needs "
                                  f"path={NEEDS_PATH[m.name]}, e.g. mix=[{{name: {m.name}, "
                                  "path: PATH, weight: 0.5}]")
            if not Path(m.path).exists():
                raise ConfigError(f"{key}.path={m.path} does not exist; give {NEEDS_PATH[m.name]}")
        if m.split != "all":
            raise ConfigError(f"{key}.split={m.split!r}: a mix source contributes its training "
                              "questions by its own split; leave split at 'all'")
        here = (m.name, _norm(m.path))
        if here == primary:
            raise ConfigError(f"{key} is the primary source data (name={m.name}, path={m.path}): "
                              "its training questions are already used; drop the entry")
        if here in seen:
            raise ConfigError(f"{key} repeats mix[{seen[here]}] (name={m.name}, path={m.path}); "
                              "give one entry a larger weight instead")
        seen[here] = i


def _norm(path: str | None) -> str | None:
    return None if path is None else str(Path(path).resolve())


def _training_boundary() -> BoundaryConfig:
    return BoundaryConfig(min_tokens=64, max_tokens=512)


@dataclass
class TrainChunkingConfig:
    """The model's chunking (``pipeline.chunking`` of a training run): ``boundary`` alone, the
    one :class:`~gralc.chunking.boundaries.BoundaryConfig` the structure-aware baseline reads
    too, with chunks of 64-512 word-pieces (CPU-friendly batches) instead of the baselines'
    128-1024. The baselines' sections (``fixed``, ``semantic``, ...) are no training setting.

    >>> TrainChunkingConfig().boundary.max_tokens
    512
    """

    boundary: BoundaryConfig = field(default_factory=_training_boundary)


@dataclass
class TrainPipelineConfig(PipelineConfig):
    """The pipeline of a training run: a :class:`~gralc.pipeline.PipelineConfig` whose
    ``chunking`` is the model's (:class:`TrainChunkingConfig`); a trained model's saved
    pipeline reads back as a ``PipelineConfig`` with the baselines' defaults.

    >>> TrainPipelineConfig().chunking.boundary.min_tokens
    64
    """

    chunking: TrainChunkingConfig = field(default_factory=TrainChunkingConfig)  # type: ignore[assignment]


@dataclass
class TrainConfig:
    """``pipeline.chunking.boundary`` is the model's boundary config: the initial alpha /
    gamma / tau and the hard decoder (as the structure-aware baseline's). ``data``: the
    primary source (training questions, dev set, validation corpus); ``mix``: extra sources
    of training questions only (:class:`MixSource`), e.g.
    ``'mix=[{name: pubmedqa, path: PATH/ori_pqal.json, weight: 0.5}]'``."""

    #: seeds the split, the model's initial weights and the batches
    seed: int = 0
    #: deterministic torch algorithms (one seed trains one set of weights)
    deterministic: bool = True
    data: DataConfig = field(default_factory=DataConfig)
    # extra training sources, each with a weight (MixSource; `data` alone is validated on)
    mix: list[MixSource] = field(default_factory=list)
    pipeline: TrainPipelineConfig = field(default_factory=TrainPipelineConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    loader: LoaderConfig = field(default_factory=LoaderConfig)
    pairs: PairsConfig = field(default_factory=PairsConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    trainer: TrainerConfig = field(default_factory=TrainerConfig)
    #: Weights & Biases (CSV logs are always written); the same keys as gralc eval's
    wandb: WandbConfig = field(default_factory=WandbConfig)
    callbacks: CallbacksConfig = field(default_factory=CallbacksConfig)
    paths: PathsConfig = field(default_factory=training_paths)
    lora: LoraConfig = field(default_factory=LoraConfig)
    #: validation ranks each dev question's candidates, as a two-stage search does
    search: CandidateConfig = field(default_factory=CandidateConfig)
    #: export-time scoring of the experiment, ``{key: value}`` of
    #: :func:`~gralc.model.scoring_config.scoring_keys` (training ignores it): recorded in
    #: every checkpoint, applied by ``gralc.export`` unless its ``scoring.KEY=value`` replace it
    scoring: dict[str, Any] = field(default_factory=dict)
    resume: str | None = None  # None | "last" | "auto" | a checkpoint path (see run.resolve_resume)

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """The checks across sections (each section checks its own values when built); raises
        ConfigError. (Whether ``lora.target_modules`` name layers of the encoder is checked
        when the encoder is loaded, see run.train.)"""
        for key in ("output_dir", "cache_dir"):
            if not getattr(self.paths, key):
                raise ConfigError(f"paths.{key} is empty: a training run needs a folder "
                                  f"(default {getattr(training_paths(), key)})")
        validate_mix(self)
        try:
            ScoringConfig.from_dict(self.scoring)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if not has_dev_split(self) and self.callbacks.early_stopping.enabled:
            raise ConfigError(
                "loader.dev_fraction=0 trains on every document with no dev split, so there is "
                "nothing for early stopping to monitor: add callbacks.early_stopping.enabled=false "
                "(the run keeps its last epoch; choose trainer.max_epochs with a dev split first)")
        if self.optim.late_interaction > 0 and not self.lora.enabled:
            raise ConfigError(
                f"optim.late_interaction={self.optim.late_interaction} trains MaxSim through the "
                "encoder's adapters: set lora.enabled=true (or optim.late_interaction=0)")


def has_dev_split(cfg: TrainConfig) -> bool:
    """Training validates on a dev split: always for PubMedQA (its official split) and when
    ``loader.dev_fraction`` or ``loader.holdout_fraction`` > 0; otherwise a refit on every
    training document (no validation, the last epoch is the selected model)."""
    return (cfg.data.name == "pubmedqa" or cfg.loader.dev_fraction > 0
            or cfg.loader.holdout_fraction > 0)


def validate(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` after every check again (each section's ``__post_init__``, then
    :meth:`TrainConfig.check`), for a config changed after it was built; raises ConfigError."""
    sections = [cfg.loader, cfg.pairs, cfg.optim, cfg.trainer, cfg.lora,
                cfg.callbacks.early_stopping, cfg.callbacks.checkpoint]
    for section in sections:
        section.__post_init__()
    cfg.check()
    return cfg
