"""The evaluation config schema (``configs/eval.yaml`` is validated against it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gralc.config import PathsConfig, WandbConfig
from gralc.data.benchmarks import DataConfig
from gralc.evaluation.generation import GenerationConfig
from gralc.evaluation.methods import DEFAULT_METHODS, EvidenceConfig
from gralc.evaluation.significance import SignificanceConfig
from gralc.pipeline import PipelineConfig
from gralc.retrieval.graph.search import GraphConfig
from gralc.retrieval.indexes.dense import IndexConfig
from gralc.retrieval.indexes.fusion import FusionConfig
from gralc.retrieval.trained.candidates import CandidateConfig


@dataclass
class EvalConfig:
    """``methods``: rows to run, by name (default: every row of
    ``gralc.evaluation.methods.DEFAULT_METHODS``, hybrids included);
    ``models``: trained models (an export, a ``.ckpt`` or a run folder each), a list
    (``models=[A]``: rows named ``gralc``; several: each named after its path) or a mapping
    name -> model (``models={baseline: A, mine: B}``); each adds the rows ``NAME`` (the
    product's search, what ``gralc search`` returns), ``NAME_cosine``, ``NAME_hybrid`` and
    ``NAME_cosine_hybrid`` (:mod:`gralc.evaluation.trained_rows`); ``ks``: cut-offs (every row ranks to
    max(ks)); ``candidates``: depth searched before re-ranking; ``fusion``: the hybrid rows'
    fusion of BM25 and dense rankings; ``evidence``: the evidence hit rule and budgets;
    ``generation``: with ``enabled`` and an OpenAI-compatible endpoint, every row's top
    chunks answer the questions that carry a gold long answer (``gen_f1``, Table 6);
    ``graph``: SemRAG's corpus graph, communities, reports and graph search (the
    ``graph_local`` / ``graph_global`` rows); ``search``: how a trained model's rows search
    (two stages, :class:`~gralc.retrieval.trained.candidates.CandidateConfig`; ``search.exhaustive=true``
    scores every chunk);
    ``significance``: every row's gain over a reference row (default ``bm25``), with a
    paired bootstrap interval over the gold documents (``gains.json``, ``tables.md``);
    ``resume``: reuse the rows a killed run with the same settings already wrote.

    >>> from gralc.config import load_config
    >>> load_config(EvalConfig, overrides=["methods=[bm25,late]", "ks=[1,10]"]).methods
    ['bm25', 'late']
    """

    #: seeds every random draw of the run
    seed: int = 0
    data: DataConfig = field(default_factory=DataConfig)
    pipeline: PipelineConfig = field(default_factory=PipelineConfig)
    methods: list[str] = field(default_factory=lambda: [m.name for m in DEFAULT_METHODS])
    #: trained models: a list, or a mapping row name -> model (see the class docstring)
    models: Any = None
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10, 20])
    candidates: int = 100
    index: IndexConfig = field(default_factory=IndexConfig)
    fusion: FusionConfig = field(default_factory=FusionConfig)
    evidence: EvidenceConfig = field(default_factory=EvidenceConfig)
    generation: GenerationConfig = field(default_factory=GenerationConfig)
    graph: GraphConfig = field(default_factory=GraphConfig)
    search: CandidateConfig = field(default_factory=CandidateConfig)
    significance: SignificanceConfig = field(default_factory=SignificanceConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    wandb: WandbConfig = field(default_factory=WandbConfig)
    #: a progress bar over the rows (on a terminal only)
    progress: bool = True
    #: keep the rows already written to ``<output_dir>/rows/`` by an interrupted run with the
    #: same settings, and run only the rest
    resume: bool = False
