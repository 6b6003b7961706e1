"""Cross-validation by article (gralc.data.folds): no held-out article is ever trained on."""

from __future__ import annotations

import pytest

from gralc.data.benchmarks import DataConfig, load_benchmarks
from gralc.data.folds import article_folds, cv_side


def test_folds_are_seeded_balanced_and_cover_every_article():
    ids = [f"d{i}" for i in range(49)]
    a, b = article_folds(ids, 5, seed=0), article_folds(list(reversed(ids)), 5, seed=0)
    assert a == b and sorted(set(a.values())) == [0, 1, 2, 3, 4]
    sizes = [list(a.values()).count(k) for k in range(5)]
    assert max(sizes) - min(sizes) <= 1 and sum(sizes) == 49
    assert article_folds(ids, 5, seed=1) != a
    with pytest.raises(ValueError, match="at least 2 folds"):
        article_folds(ids, 1)


def test_train_and_test_sides_of_the_demo():
    cfg = DataConfig(name="demo", cv_folds=5, cv_fold=2)
    full = load_benchmarks(DataConfig(name="demo"))[0]
    train = load_benchmarks(cfg, cv_side="train")[0]
    test = load_benchmarks(cfg, cv_side="test")[0]
    held = {d.id for d in full.documents} - {d.id for d in train.documents}
    assert held and not held & {q.gold_doc_id for q in train.questions}  # never trained on
    assert {q.gold_doc_id for q in test.questions} == held
    assert len(test.documents) == len(full.documents)  # asked against the pooled corpus
    everyone = [q.id for k in range(5) for q in cv_side(full, 5, k, 0, "test").questions]
    assert sorted(everyone) == sorted(q.id for q in full.questions)  # each question once
    with pytest.raises(ValueError, match="no cross-validation side"):
        load_benchmarks(cfg)
    with pytest.raises(ValueError, match="official"):
        load_benchmarks(DataConfig(name="pubmedqa", path="x.json", cv_folds=5), cv_side="train")
    with pytest.raises(ValueError, match="cv_fold=7"):
        load_benchmarks(DataConfig(name="demo", cv_folds=5, cv_fold=7), cv_side="test")
