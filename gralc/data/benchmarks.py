"""Benchmarks: a corpus of documents plus questions with gold evidence.

* ``demo``: the bundled demo corpus and its questions (offline quick start).
* ``pubmedqa``: PubMedQA* (paper Sect. 3.2.1): the PQA-L questions with contexts removed;
  the corpus is every abstract; a chunk is relevant when it comes from the gold abstract.
* ``pmc``: a directory of JATS articles, IMRaD-filtered, at a document-length condition
  (Sect. 3.3), with template cross-section questions (Sect. 3.4); evidence = gold paragraphs.
* ``squad``: a SQuAD-format JSON file whose contexts are whole articles (COVID-QA); every
  question keeps its answer span(s) as evidence, mapped exactly into ``Document.text``.
* ``beir``: a BEIR folder (:mod:`gralc.data.beir`), every question judged against all its
  relevant documents (graded); evidence = the whole most relevant document.

Every question carries evidence for the evidence-level metrics. In full: docs/data.md."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gralc.data.benchmark import Benchmark
from gralc.data.folds import cv_side as side_of
from gralc.documents.model import Document
from gralc.documents.question import Question, clean_question_text

logger = logging.getLogger(__name__)


@dataclass
class DataConfig:
    """Which benchmark to run. ``name``: demo | pubmedqa | pmc | squad | beir. ``path``:
    ori_pqal.json (pubmedqa), the article directory (pmc), the SQuAD-format JSON file (squad)
    or the BEIR folder (beir). ``split``: all | test | train | dev (pubmedqa; beir: the qrels
    file ``qrels/<split>.tsv``, ``all`` meaning test), or several separated by commas
    (``all,test``: one benchmark each, one shared corpus).
    ``conditions``: document-length conditions for pmc. ``questions``: a JSONL file of
    questions to use instead of generating them. ``max_docs``: cap for quick runs.
    ``cv_folds`` > 1: cross-validation by article (:mod:`gralc.data.folds`, folds seeded by
    ``cv_seed``): training sees only the articles outside fold ``cv_fold`` and their
    questions; evaluation asks only fold ``cv_fold``'s questions, against every article.

    >>> DataConfig(name="pubmedqa", path="data/pubmedqa/ori_pqal.json", split="test").conditions
    ['full']
    """

    name: str = "demo"
    path: str | None = None
    split: str = "all"
    conditions: list[str] = field(default_factory=lambda: ["full"])
    questions: str | None = None
    #: seeds generated questions (pmc)
    seed: int = 0
    #: questions generated per article (pmc)
    per_article: int = 5
    max_docs: int | None = None
    cv_folds: int = 0
    cv_fold: int = 0
    cv_seed: int = 0


def demo_benchmark() -> Benchmark:
    """The ``demo`` benchmark: the bundled JATS articles and their questions.

    >>> bench = demo_benchmark()
    >>> bench.name, len(bench.documents)
    ('demo', 10)
    """
    from gralc.data.demo import demo_articles, demo_questions_path
    from gralc.data.question_io import read_jsonl
    from gralc.documents.jats import parse_jats

    docs = [parse_jats(p) for p in demo_articles()]
    return Benchmark("demo", docs, read_jsonl(demo_questions_path()))


def pubmedqa_benchmarks(
    path: str | Path, splits: str = "all", max_docs: int | None = None
) -> list[Benchmark]:
    """PubMedQA*: every split searches the SAME corpus of all abstracts (or the first
    ``max_docs`` questions' abstracts for a quick run).

    Example: ``[b.name for b in pubmedqa_benchmarks("data/pubmedqa/ori_pqal.json", "test")]`` ->
    ``['pubmedqa[test]']`` (its 500 questions over all 1,000 abstracts).
    """
    from gralc.documents.pubmedqa import load_pqal

    data = load_pqal(path)
    docs = data.documents
    by_id = {d.id: d for d in docs}
    for q in data.questions:  # evidence: the whole gold abstract (its context paragraphs)
        d = by_id[q.gold_doc_id]
        if d.paragraphs and not q.evidence_spans:
            q.evidence_spans = [[d.paragraphs[0].start, d.paragraphs[-1].end]]
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
    """One benchmark per condition over the IMRaD articles of ``cfg.path``.

    Example: ``[b.name for b in pmc_benchmarks(DataConfig(name="pmc", path="data/pmc", conditions=["abstract", "full"]))]``
    -> ``['pmc[abstract]', 'pmc[full]']``.
    """
    from gralc.data.crosssection_questions import GeneratorConfig, generate_questions
    from gralc.data.question_io import read_jsonl
    from gralc.documents.conditions import derive_condition
    from gralc.documents.corpus import load_corpus
    from gralc.documents.imrad import is_imrad

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


def _squad_answer(context: str, answer: Any, where: str) -> tuple[int, int, bool] | str:
    """``(start, end, repaired)`` of an answer in ``context``, or why it cannot be placed.
    ``answer_start`` is trusted when the (whitespace-stripped) text is there; otherwise the
    occurrence of the text nearest to it is used (reported as repaired)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        return f"{where}: an answer must be {{'text': str, 'answer_start': int}}, got {answer!r}"
    text, start = answer["text"], answer.get("answer_start")
    stripped = text.strip()
    if not stripped:
        return f"{where}: empty answer text; remove the answer or give its text"
    if isinstance(start, int):
        lead = len(text) - len(text.lstrip())
        for s in (start, start + lead):
            if context[s : s + len(stripped)] == stripped:
                return s, s + len(stripped), False
    found, i = [], context.find(stripped)
    while i >= 0:
        found.append(i)
        i = context.find(stripped, i + 1)
    if not found:
        return (f"{where}: answer text {stripped[:60]!r} does not occur in the context; fix its "
                "'text' or 'answer_start'")
    best = min(found, key=lambda i: abs(i - (start if isinstance(start, int) else 0)))
    return best, best + len(stripped), True


def squad_benchmark(path: str | Path, max_docs: int | None = None) -> Benchmark:
    """A SQuAD-format full-text benchmark (module docstring). Bad entries (empty context, an
    answer that cannot be placed, a question without answers) are skipped with one warning
    each naming the file, the entry and the fix; their counts are in ``Benchmark.stats``.

    Example: ``squad_benchmark("data/covidqa/covidqa_dev.json").stats`` -> ``{'n_skipped_contexts':
    0.0, ..., 'n_answers': 633.0}`` (the counts of skipped, repaired and placed answers).
    """
    from gralc.documents.squad import iter_squad_contexts, read_squad

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data.path={path}: no such SQuAD-format JSON file")
    raw = read_squad(path)
    stats = dict.fromkeys(("n_skipped_contexts", "n_questions_without_answers", "n_repaired_answers",
                           "n_unplaced_answers", "n_unmapped_answers", "n_answers"), 0.0)
    docs: list[Document] = []
    questions: list[Question] = []
    seen_q: set[str] = set()

    def warn(key: str, message: str) -> None:
        stats[key] += 1
        logger.warning("%s", message)

    for ctx in iter_squad_contexts(path, raw, lambda m: warn("n_skipped_contexts", m), max_docs):
        where, para, doc, offsets = ctx.where, ctx.para, ctx.doc, ctx.offsets
        context, doc_id = para["context"], doc.id
        docs.append(doc)
        for n, qa in enumerate(para.get("qas", [])):
            qwhere = f"{where}.qas[{n}] (id {qa.get('id')!r})"
            try:  # the one question gate; a question without words is skipped like a blank one
                text = clean_question_text(str(qa.get("question") or ""), f"{qwhere}.question").strip()
            except ValueError:
                text = ""
            answers = qa.get("answers") or []
            if not text or not answers:
                warn("n_questions_without_answers", f"{qwhere}: no question text or no "
                     "answers; skipped (every question needs 'question' and 'answers')")
                continue
            spans = []
            for m, ans in enumerate(answers):
                stats["n_answers"] += 1
                placed = _squad_answer(context, ans, f"{qwhere}.answers[{m}]")
                if isinstance(placed, str):
                    warn("n_unplaced_answers", placed + "; answer skipped")
                    continue
                if placed[2]:
                    warn("n_repaired_answers", f"{qwhere}.answers[{m}]: answer_start "
                         f"{ans.get('answer_start')} does not match its text; used the nearest "
                         f"occurrence at {placed[0]}")
                mapped = offsets.span(placed[0], placed[1])
                if mapped is None:
                    warn("n_unmapped_answers", f"{qwhere}.answers[{m}]: the answer lies in "
                         "text the reader drops (metadata lines); not used as evidence")
                    continue
                spans.append(list(mapped))
            qid = str(qa.get("id", f"{doc_id}-{n}"))
            while qid in seen_q:
                qid += "'"
            seen_q.add(qid)
            questions.append(Question(qid, text, doc.id, long_answer=answers[0].get("text", "")
                                      if isinstance(answers[0], dict) else "",
                                      evidence_spans=spans, kind="squad"))
    if not docs:
        raise ValueError(f"{path}: no usable context; every entry was skipped (see the warnings)")
    logger.info("squad %s: %d documents, %d questions, %s", path.name, len(docs), len(questions),
                ", ".join(f"{k} {int(v)}" for k, v in stats.items()))
    return Benchmark(f"squad[{path.stem}]", docs, questions, stats)


def load_benchmarks(cfg: DataConfig, linker=None, cv_side: str | None = None) -> list[Benchmark]:
    """The benchmark(s) ``cfg`` selects; with ``cfg.cv_folds`` > 1, their ``cv_side``
    (``"train"`` or ``"test"``, :func:`gralc.data.folds.cv_side`).

    >>> [b.name for b in load_benchmarks(DataConfig(name="demo"))]
    ['demo']
    """
    if cfg.cv_folds > 1:  # checked before any loading
        if cfg.name in ("pubmedqa", "beir"):
            name = "PubMedQA" if cfg.name == "pubmedqa" else "A BEIR folder"
            raise ValueError(f"data.cv_folds: {name} has its official train/dev/test split; "
                             "cross-validate the article benchmarks (squad, pmc, demo)")
        if cv_side is None:
            raise ValueError("data.cv_folds is set but this command has no cross-validation side")
        if not 0 <= cfg.cv_fold < cfg.cv_folds:
            raise ValueError(f"data.cv_fold={cfg.cv_fold} must be in [0, {cfg.cv_folds}) "
                             f"for data.cv_folds={cfg.cv_folds}")
    benches = _load(cfg, linker)
    if cfg.cv_folds > 1:
        benches = [side_of(b, cfg.cv_folds, cfg.cv_fold, cfg.cv_seed, cv_side) for b in benches]
    return benches


def _load(cfg: DataConfig, linker=None) -> list[Benchmark]:
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
    if cfg.name == "squad":
        if cfg.path is None:
            raise ValueError("data=squad needs data.path=FILE.json (SQuAD format, whole articles "
                             "as contexts, e.g. COVID-QA)")
        return [squad_benchmark(cfg.path, cfg.max_docs)]
    if cfg.name == "beir":
        from gralc.data.beir import beir_benchmarks

        if cfg.path is None:
            raise ValueError("data=beir needs data.path=DIR (a BEIR folder: corpus.jsonl, "
                             "queries.jsonl, qrels/<split>.tsv)")
        return beir_benchmarks(cfg.path, cfg.split, cfg.max_docs)
    raise ValueError(f"unknown benchmark {cfg.name!r}; use demo, pubmedqa, pmc, squad or beir")
