"""Late interaction in a chunk's score (gralc.model.late_interaction): toy vectors by hand."""

import pytest
import torch

from gralc.model.late_interaction import chunk_tokens, maxsim, with_late_interaction
from gralc.model.scoring_config import ScoringConfig


def test_maxsim_is_the_mean_over_question_pieces_of_their_best_token_in_the_chunk():
    e = torch.eye(3)
    tokens = torch.stack([e[0], e[1], e[2], (e[0] + e[1]) / 2 ** 0.5])
    chunk_of = torch.tensor([0, 0, 1, 2])
    # question 0: pieces along e0 and e2; question 1: one piece along e1 (second slot is padding)
    q = torch.stack([torch.stack([e[0], e[2]]), torch.stack([2 * e[1], e[0]])])
    mask = torch.tensor([[True, True], [True, False]])
    got = maxsim(q, mask, tokens, chunk_of, 4)
    r = 2 ** -0.5
    expected = torch.tensor([[(1 + 0) / 2, (0 + 1) / 2, (r + 0) / 2, -1.0],  # chunk 3: no tokens
                             [1.0, 0.0, r, -1.0]])
    assert torch.allclose(got, expected, atol=1e-6)
    assert torch.equal(with_late_interaction(expected, got, 0.0), expected)
    assert torch.allclose(with_late_interaction(torch.zeros(2, 4), got, 0.25), 0.25 * got)


def test_chunk_tokens_are_unit_rows_in_float16_precision_numbered_from_the_first_row():
    torch.manual_seed(0)
    h = torch.randn(7, 5)
    vecs, rows = chunk_tokens(h, [(0, 3), (3, 7)], first_row=10)
    assert rows.tolist() == [10, 10, 10, 11, 11, 11, 11]
    assert vecs.dtype == torch.float32 and torch.equal(vecs, vecs.half().float())
    assert torch.allclose(vecs, torch.nn.functional.normalize(h, dim=-1), atol=1e-3)
    empty, no_rows = chunk_tokens(h, [], 0)
    assert empty.shape == (0, 5) and no_rows.shape == (0,)


def test_late_interaction_weight_is_validated():
    with pytest.raises(ValueError, match="late_interaction"):
        ScoringConfig(late_interaction=1.0)
    with pytest.raises(ValueError, match="late_interaction"):
        ScoringConfig(late_interaction=-0.1)
