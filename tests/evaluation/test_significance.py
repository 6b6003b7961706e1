"""The paired, article-clustered bootstrap of a CV gain (gralc.evaluation.significance)."""

import numpy as np
import pytest

from gralc.evaluation.significance import FoldPairs, paired_gain


def test_a_constant_gain_has_no_spread():
    folds = [FoldPairs(a=[1.0, 0.5, 0.25], b=[0.9, 0.4, 0.15], clusters=["x", "y", "y"]),
             FoldPairs(a=[0.3, 0.2], b=[0.2, 0.1], clusters=["z", "w"])]
    got = paired_gain(folds, resamples=500)
    assert got.gain == pytest.approx(0.1)
    assert got.low == pytest.approx(0.1) and got.high == pytest.approx(0.1)
    assert got.share_not_above == 0.0


def test_the_gain_is_the_mean_of_fold_means_as_the_cv_table_reports_it():
    # fold 0: one question, +1; fold 1: three questions, 0 -> fold means 1 and 0, gain 0.5
    # (pooling the four questions would say 0.25)
    folds = [FoldPairs(a=[1.0], b=[0.0], clusters=["p"]),
             FoldPairs(a=[0.0, 1.0, 0.0], b=[0.0, 1.0, 0.0], clusters=["q", "r", "s"])]
    assert paired_gain(folds, resamples=10).gain == pytest.approx(0.5)


def test_questions_of_one_article_move_together_so_the_interval_widens():
    rng = np.random.default_rng(1)
    articles = np.repeat(np.arange(40), 10)  # 40 articles, 10 questions each
    effect = rng.choice([-1.0, 1.0], size=40)[articles] + 0.2  # the article decides the sign
    clustered = paired_gain([FoldPairs(a=effect, b=np.zeros(400), clusters=articles)], resamples=4000)
    one_each = paired_gain([FoldPairs(a=effect, b=np.zeros(400), clusters=np.arange(400))], resamples=4000)
    assert clustered.gain == pytest.approx(one_each.gain)
    assert (clustered.high - clustered.low) > 2.5 * (one_each.high - one_each.low)


def test_independent_questions_match_the_normal_interval():
    rng = np.random.default_rng(2)
    d = rng.normal(0.05, 0.3, size=2000)
    got = paired_gain([FoldPairs(a=d, b=np.zeros_like(d), clusters=np.arange(d.size))], resamples=4000)
    half = 1.96 * d.std() / np.sqrt(d.size)
    assert (got.high - got.low) / 2 == pytest.approx(half, rel=0.1)
    assert got.low < d.mean() < got.high
    assert got.share_not_above < 0.01  # a gain of 0.05 over 2000 questions at sd 0.3 is clear


def test_the_seed_fixes_the_interval():
    folds = [FoldPairs(a=[0.0, 1.0, 1.0, 0.0], b=[0.0, 0.0, 1.0, 1.0], clusters=["a", "b", "c", "d"])]
    assert paired_gain(folds, seed=3) == paired_gain(folds, seed=3)
    assert paired_gain(folds, seed=3).as_dict()["resamples"] == 10_000


def test_mismatched_values_are_named_by_fold():
    ok = FoldPairs(a=[1.0], b=[0.0], clusters=["a"])
    bad = FoldPairs(a=[1.0, 0.0], b=[0.0], clusters=["a", "b"])
    with pytest.raises(ValueError, match="fold 1 has 2 A values, 1 B values and 2 articles"):
        paired_gain([ok, bad])
    with pytest.raises(ValueError, match="no folds"):
        paired_gain([])
    with pytest.raises(ValueError, match="level=1"):
        paired_gain([ok], level=1)
