"""Cross-validation by article: which fold each document is in, and a benchmark's training
side (the other folds' documents and questions only: a held-out article is never trained on)
and held-out side (the held-out fold's questions, asked against the whole pooled corpus)."""

from __future__ import annotations

import random
from collections.abc import Iterable

from gralc.data.benchmark import Benchmark


def article_folds(doc_ids: Iterable[str], n: int, seed: int = 0) -> dict[str, int]:
    """Document id -> fold in ``range(n)``: the sorted distinct ids shuffled by ``seed``, dealt
    round-robin (fold sizes differ by at most one).

    >>> sorted(article_folds(["d1", "d2", "d3", "d4"], n=2).values())
    [0, 0, 1, 1]
    """
    if n < 2:
        raise ValueError(f"cross-validation needs at least 2 folds, got {n}")
    ids = sorted(set(doc_ids))
    if len(ids) < n:
        raise ValueError(f"{len(ids)} articles cannot fill {n} folds")
    random.Random(seed).shuffle(ids)
    return {d: i % n for i, d in enumerate(ids)}


def cv_side(bench: Benchmark, n: int, fold: int, seed: int, side: str) -> Benchmark:
    """``side="train"``: the documents outside ``fold`` and their questions; ``"test"``: every
    document (the pooled corpus) and the questions of ``fold``'s documents.

    >>> from gralc.data.benchmarks import demo_benchmark
    >>> bench = demo_benchmark()
    >>> len(cv_side(bench, 5, 0, 0, "train").documents), len(cv_side(bench, 5, 0, 0, "test").documents)
    (8, 10)
    """
    if not 0 <= fold < n:
        raise ValueError(f"data.cv_fold={fold} must be in [0, {n}) for data.cv_folds={n}")
    of = article_folds([d.id for d in bench.documents], n, seed)
    name = f"{bench.name}[fold{fold}of{n}]"
    if side == "train":
        docs = [d for d in bench.documents if of[d.id] != fold]
        questions = [q for q in bench.questions if of.get(q.gold_doc_id) != fold]
        return Benchmark(name, docs, questions, dict(bench.stats))
    if side == "test":
        questions = [q for q in bench.questions if of.get(q.gold_doc_id) == fold]
        return Benchmark(name, bench.documents, questions, dict(bench.stats))
    raise ValueError(f"side must be 'train' or 'test', got {side!r}")
