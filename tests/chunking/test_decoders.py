"""Peak and DP decoders: exact cuts on crafted scores, DP optimality against brute force."""

from __future__ import annotations

import itertools
import logging
from itertools import pairwise

import numpy as np
import pytest
import torch

from gralc.chunking.decoders import (
    EmbeddingCohesion,
    InfeasibleSegmentation,
    InteriorScoreCohesion,
    dp_decode,
    peak_decode,
    spans_from_cuts,
)


# ----- peak detection ---------------------------------------------------------------------
def test_peak_decode_threshold_and_min_distance():
    s = np.zeros(40)
    s[10], s[13], s[25], s[30], s[38] = 0.9, 0.5, 0.35, 0.2, 0.8
    # 13 is too close to the stronger 10, 30 is below tau, 38 leaves a 2-token tail
    assert peak_decode(s, tau=0.3, min_tokens=5, max_tokens=100) == [10, 25]


def test_peak_decode_prefers_higher_peak_within_min_distance():
    s = np.zeros(40)
    s[10], s[13] = 0.5, 0.9
    assert peak_decode(torch.tensor(s), tau=0.3, min_tokens=5, max_tokens=100) == [13]


def test_peak_decode_forced_cuts_at_best_allowed_position():
    s = np.zeros(100)
    s[22], s[45], s[47], s[70] = 0.2, 0.25, 0.1, 0.2
    cuts = peak_decode(s, tau=0.5, min_tokens=10, max_tokens=30)
    # ranges: [10, 30] -> 22; [32, 52] -> 45; [55, 75] -> 70; 30 tokens left
    assert cuts == [22, 45, 70]
    assert all(10 <= e - b <= 30 for b, e in spans_from_cuts(cuts, 100))


def test_peak_decode_never_cuts_at_forbidden_position():
    s = np.zeros(40)
    s[19], s[20], s[21] = 0.6, 0.9, 0.5
    forbidden = np.zeros(40, dtype=bool)
    forbidden[20] = True
    assert peak_decode(s, tau=0.3, min_tokens=5, max_tokens=100) == [20]
    assert peak_decode(s, 0.3, 5, 100, forbidden=forbidden) == [19]


def test_peak_decode_forced_cut_inside_long_protected_span_warns(caplog):
    s = np.zeros(30)
    forbidden = np.ones(30, dtype=bool)
    with caplog.at_level(logging.WARNING):
        cuts = peak_decode(s, tau=0.3, min_tokens=2, max_tokens=10, forbidden=forbidden)
    assert all(e - b <= 10 for b, e in spans_from_cuts(cuts, 30))
    assert "forbidden" in caplog.text


def test_peak_decode_forced_cut_prefers_fallback_positions():
    """A forced cut with no allowed position (a sentence longer than max_tokens under
    sentence-level cuts) falls on the best ``fallback`` position (a word start), not on the
    best position overall; without fallback positions in range, on any."""
    s = np.zeros(30)
    s[6] = 0.9  # the best position: inside a word
    s[4] = 0.1
    forbidden = np.ones(30, dtype=bool)
    word_start = np.zeros(30, dtype=bool)
    word_start[[4, 8, 12, 16, 20, 24]] = True
    assert peak_decode(s, 0.3, 2, 10, forbidden=forbidden)[0] == 6
    cuts = peak_decode(s, 0.3, 2, 10, forbidden=forbidden, fallback=word_start)
    assert cuts[0] == 4 and set(cuts) <= {4, 8, 12, 16, 20, 24}
    assert all(e - b <= 10 for b, e in spans_from_cuts(cuts, 30))
    assert peak_decode(s, 0.3, 2, 10, forbidden=forbidden, fallback=np.zeros(30, dtype=bool))[0] == 6


def test_peak_decode_random_sizes_within_bounds():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(300, 2000))
        s = rng.random(n)
        forbidden = rng.random(n) < 0.3
        cuts = peak_decode(s, tau=0.6, min_tokens=32, max_tokens=128, forbidden=forbidden)
        assert all(32 <= e - b <= 128 for b, e in spans_from_cuts(cuts, n))
        assert not forbidden[cuts].any()


# ----- DP: exact optimum ------------------------------------------------------------------
def _brute_force(s, allowed, lengths, min_len, max_len, chunk_cost):
    """Best cost over every subset of cut positions (None if none is feasible)."""
    n = len(s)
    w = np.concatenate([[0], np.cumsum(lengths)])
    if w[-1] < min_len:
        return 0.0 if n <= 1 else chunk_cost(0, n), []
    best = (None, None)
    for k in range(n):
        for cuts in itertools.combinations(range(1, n), k):
            if not all(allowed[c] for c in cuts):
                continue
            bounds = [0, *cuts, n]
            if not all(min_len <= w[b] - w[a] <= max_len for a, b in pairwise(bounds)):
                continue
            cost = sum(chunk_cost(a, b) for a, b in pairwise(bounds))
            if best[0] is None or cost < best[0]:
                best = (cost, list(cuts))
    return best


def _naive_cost(s, lengths, target, lw, vectors, cw):
    """Chunk cost written out independently of the DP (pairwise cosines by loops)."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def cost(a, b):
        c = -s[b] if b < len(s) else 0.0
        c += lw * ((sum(lengths[a:b]) - target) / target) ** 2
        pairs = [unit[x] @ unit[y] for x in range(a, b) for y in range(a, b) if x != y]
        c += cw * ((1 - np.mean(pairs)) if pairs else 0.0)
        return c

    return cost


@pytest.mark.parametrize("seed", range(50))
def test_dp_is_exact_optimum_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 15))
    s = rng.normal(0.3, 0.3, n)
    allowed = rng.random(n) < 0.75
    lengths = rng.integers(1, 4, n).astype(float) if seed % 2 else np.ones(n)
    min_len = int(rng.integers(1, 4))
    max_len = int(rng.integers(min_len + 1, min_len + 7))
    target, lw, cw = float(rng.uniform(2, 6)), float(rng.uniform(0, 2)), float(rng.uniform(0, 2))
    vectors = rng.normal(size=(n, 5))
    cost = _naive_cost(s, lengths, target, lw, vectors, cw)
    best, _ = _brute_force(s, allowed, lengths, min_len, max_len, cost)
    kwargs = dict(
        allowed=allowed,
        min_len=min_len,
        max_len=max_len,
        target_len=target,
        length_weight=lw,
        cohesion=EmbeddingCohesion(vectors),
        cohesion_weight=cw,
        unit_lengths=lengths,
        on_infeasible="raise",
    )
    if best is None:
        with pytest.raises(InfeasibleSegmentation):
            dp_decode(s, **kwargs)
        return
    cuts = dp_decode(s, **kwargs)
    assert all(allowed[c] for c in cuts)
    bounds = [0, *cuts, n]
    assert sum(cost(a, b) for a, b in pairwise(bounds)) == pytest.approx(best, abs=1e-9)


def test_interior_score_cohesion_matches_definition():
    v = np.array([0.0, 0.5, 0.1, 0.9, 0.3])
    coh = InteriorScoreCohesion(v)
    # chunk [1, 5): interior cuts 2, 3, 4
    assert coh(np.array([1, 3, 4]), 5).tolist() == pytest.approx([(0.1 + 0.9 + 0.3) / 3, 0.3, 0.0])


def test_dp_never_cuts_at_forbidden_high_score():
    s = np.zeros(20)
    s[10] = 5.0
    s[12] = 0.5
    allowed = np.ones(20, dtype=bool)
    assert dp_decode(s, min_len=3, max_len=20) == [10]
    allowed[10] = False
    assert dp_decode(s, allowed=allowed, min_len=3, max_len=20) == [12]


def test_dp_infeasible_raises_or_relaxes_with_fewest_violations(caplog):
    s = np.zeros(10)
    allowed = np.zeros(10, dtype=bool)  # a protected span covering the whole document
    with pytest.raises(InfeasibleSegmentation, match="max_len"):
        dp_decode(s, allowed=allowed, max_len=4, on_infeasible="raise")
    with caplog.at_level(logging.WARNING):
        cuts = dp_decode(s, allowed=allowed, max_len=4)
    assert "relaxing" in caplog.text
    assert len(cuts) == 2 and all(e - b <= 4 for b, e in spans_from_cuts(cuts, 10))


def test_dp_short_document_is_one_chunk():
    assert dp_decode(np.ones(5), min_len=8, max_len=20) == []
