"""Window planning and linear distance-weighted blending (paper Sect. 3.1.3)."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch

from gralc.encoding.windows import blend_windows, plan_windows, window_weights


@pytest.mark.parametrize(
    ("n", "window", "overlap"),
    [(1, 8, 2), (8, 8, 2), (9, 8, 2), (300, 64, 16), (1000, 510, 128), (777, 100, 0), (50, 7, 6)],
)
def test_plan_windows_covers_every_token(n, window, overlap):
    windows = plan_windows(n, window, overlap)
    assert windows[0][0] == 0
    assert windows[-1][1] == n
    covered = set()
    for s, e in windows:
        assert 0 <= s < e <= n
        assert e - s <= window
        covered.update(range(s, e))
    assert covered == set(range(n))
    for (s0, e0), (s1, e1) in pairwise(windows):
        assert s0 < s1 and e0 < e1
        assert e0 - s1 >= overlap  # consecutive windows share at least `overlap` tokens
    if n > window:
        assert all(e - s == window for s, e in windows)


def test_plan_windows_exact_layout():
    assert plan_windows(300, 64, 16) == [
        (0, 64),
        (48, 112),
        (96, 160),
        (144, 208),
        (192, 256),
        (236, 300),
    ]


def test_plan_windows_single_window():
    assert plan_windows(5, 510, 128) == [(0, 5)]
    assert plan_windows(510, 510, 128) == [(0, 510)]
    assert len(plan_windows(511, 510, 128)) == 2


@pytest.mark.parametrize(
    ("n", "window", "overlap"), [(0, 8, 2), (10, 8, 8), (10, 8, -1), (10, 0, 0)]
)
def test_plan_windows_rejects_bad_arguments(n, window, overlap):
    with pytest.raises(ValueError):
        plan_windows(n, window, overlap)


def test_window_weights_are_linear_in_distance_from_centre():
    assert window_weights(5).tolist() == [1, 2, 3, 2, 1]
    assert window_weights(4).tolist() == [1, 2, 2, 1]
    assert window_weights(1).tolist() == [1]


def test_blend_identical_outputs_gives_them_back():
    torch.manual_seed(0)
    base = torch.randn(300, 7)
    windows = plan_windows(300, 64, 16)
    blended = blend_windows([base[s:e] for s, e in windows], windows, 300)
    assert torch.allclose(blended, base, atol=1e-6)


def test_blend_hand_computed_two_windows():
    # windows [0,4) and [2,6); weights per window position: [1, 2, 2, 1]
    windows = [(0, 4), (2, 6)]
    a = torch.full((4, 1), 1.0)
    b = torch.full((4, 1), 3.0)
    blended = blend_windows([a, b], windows, 6).squeeze(1)
    # token 2: a at k=2 (w=2), b at k=0 (w=1) -> (2*1 + 1*3)/3 ; token 3: (1*1 + 2*3)/3
    expected = torch.tensor([1.0, 1.0, 5 / 3, 7 / 3, 3.0, 3.0])
    assert torch.allclose(blended, expected, atol=1e-6)


def test_blend_single_window_is_unchanged():
    out = torch.randn(10, 3)
    assert torch.equal(blend_windows([out], [(0, 10)], 10), out)


def test_blend_rejects_uncovered_tokens_and_bad_shapes():
    with pytest.raises(ValueError, match="covered by no window"):
        blend_windows([torch.zeros(2, 1), torch.zeros(2, 1)], [(0, 2), (3, 5)], 5)
    with pytest.raises(ValueError, match="rows"):
        blend_windows([torch.zeros(3, 1)], [(0, 2)], 2)
