"""Benchmarks: a corpus of documents plus questions with gold evidence.

* ``demo``: the bundled demo corpus and its questions (offline quick start).
* ``pubmedqa``: PubMedQA* (paper Sect. 3.2.1): the PQA-L questions with contexts removed;
  the corpus is every abstract; a chunk is relevant when it comes from the gold abstract.
* ``pmc``: a directory of JATS articles, IMRaD-filtered, at a document-length condition
  (Sect. 3.3), with template cross-section questions generated from the full articles
  (Sect. 3.4) and asked against the condition's instances.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from gralc.documents.model import Document
from gralc.documents.question import Question

logger = logging.getLogger(__name__)


@dataclass
class DataConfig:
    """Which benchmark to run. ``name``: demo | pubmedqa | pmc. ``path``: ori_pqal.json
    (pubmedqa) or the article directory (pmc). ``split``: all | test | train | dev (pubmedqa),
    or several separated by commas (``all,test``: one benchmark each, one shared corpus).
    ``conditions``: document-length conditions for pmc. ``questions``: a JSONL file of
    questions to use instead of generating them. ``max_docs``: cap for quick runs."""

    name: str = "demo"
    path: str | None = None
    split: str = "all"
    conditions: list[str] = field(default_factory=lambda: ["full"])
    questions: str | None = None
    seed: int = 0
    per_article: int = 5
    max_docs: int | None = None


@dataclass
class Benchmark:
    """Documents and questions of one benchmark instance (one condition)."""

    name: str
    documents: list[Document]
    questions: list[Question]

    def __post_init__(self) -> None:
        ids = {d.id for d in self.documents}
        missing = sorted({q.gold_doc_id for q in self.questions} - ids)
        if missing:
            raise ValueError(
                f"benchmark {self.name!r}: {len(missing)} questions name gold documents that "
                f"are not in the corpus, e.g. {missing[:3]}"
            )


def demo_benchmark() -> Benchmark:
    from gralc.demo import demo_articles, demo_questions_path
    from gralc.documents.jats import parse_jats
    from gralc.documents.question_io import read_jsonl

    docs = [parse_jats(p) for p in demo_articles()]
    return Benchmark("demo", docs, read_jsonl(demo_questions_path()))


def pubmedqa_benchmarks(
    path: str | Path, splits: str = "all", max_docs: int | None = None
) -> list[Benchmark]:
    """PubMedQA*: every split searches the SAME corpus of all abstracts (or the first
    ``max_docs`` questions' abstracts for a quick run)."""
    from gralc.documents.pubmedqa import load_pqal

    data = load_pqal(path)
    docs = data.documents
    if max_docs is not None:
        keep = {q.gold_doc_id for q in data.questions[:max_docs]}
        docs = [d for d in docs if d.id in keep]
    have = {d.id for d in docs}
    out = []
    for split in [s.strip() for s in splits.split(",") if s.strip()]:
        questions = data.questions if split == "all" else data.split(split)
        out.append(Benchmark(f"pubmedqa[{split}]", docs, [q for q in questions if q.gold_doc_id in have]))
    return out


def pmc_benchmarks(cfg: DataConfig, linker=None) -> list[Benchmark]:
    """One benchmark per condition over the IMRaD articles of ``cfg.path``."""
    from gralc.documents.conditions import derive_condition
    from gralc.documents.corpus import load_corpus
    from gralc.documents.imrad import is_imrad
    from gralc.documents.question_io import read_jsonl
    from gralc.evaluation.crosssection import GeneratorConfig, generate_questions

    if cfg.path is None:
        raise ValueError("data=pmc needs data.path=DIR (a directory of JATS .nxml files)")
    loaded = load_corpus(cfg.path)
    articles = [d for d in loaded.documents if is_imrad(d)]
    if cfg.max_docs is not None:
        articles = articles[: cfg.max_docs]
    logger.info("pmc: %d articles, %d IMRaD, %d skipped", len(loaded.documents), len(articles), len(loaded.skipped))
    if cfg.questions:
        questions = read_jsonl(cfg.questions)
    else:
        gen = GeneratorConfig(seed=cfg.seed, per_article=cfg.per_article)
        questions = generate_questions(articles, gen, linker=linker)
    out = []
    for condition in cfg.conditions:
        docs = []
        for art in articles:
            try:
                docs.append(derive_condition(art, condition))
            except ValueError as exc:  # e.g. no introduction section
                logger.info("%s: no %s instance (%s)", art.id, condition, exc)
        have = {d.id for d in docs}
        qs = [
            replace(q, gold_doc_id=f"{q.gold_doc_id}#{condition}")
            for q in questions
            if f"{q.gold_doc_id}#{condition}" in have
        ]
        out.append(Benchmark(f"pmc[{condition}]", docs, qs))
    return out


def load_benchmarks(cfg: DataConfig, linker=None) -> list[Benchmark]:
    """The benchmark(s) ``cfg`` selects."""
    if cfg.name == "demo":
        return [demo_benchmark()]
    if cfg.name == "pubmedqa":
        if cfg.path is None:
            raise ValueError(
                "data=pubmedqa needs data.path=/path/to/ori_pqal.json (from the PubMedQA "
                "repository's data/ folder)"
            )
        return pubmedqa_benchmarks(cfg.path, cfg.split, cfg.max_docs)
    if cfg.name == "pmc":
        return pmc_benchmarks(cfg, linker)
    raise ValueError(f"unknown benchmark {cfg.name!r}; use demo, pubmedqa or pmc")
