import math

import pytest
import torch
from torch_geometric.data import Batch, Data

from gralc.model.boundary_scorer import BoundaryScorer
from gralc.model.gat_infusion import GATInfusion
from gralc.model.hybrid_scorer import HybridScorer, LexicalTerm, kg_proximity, normalise_lexical
from gralc.model.soft_pooling import soft_chunk_pool
from gralc.model.token_fusion import TokenFusion


def toy_graph():
    # 4 concepts; 0-1, 1-2 edges (both directions); 3 isolated
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    return torch.randn(4, 8, generator=torch.Generator().manual_seed(0)), edge_index


@pytest.mark.parametrize("version", ["gat", "gatv2"])
def test_gat_shapes_attention_and_gradient(version):
    u, ei = toy_graph()
    gat = GATInfusion(8, out_dim=12, heads=3, dropout=0.0, version=version)
    out, (att_ei, att) = gat(u, ei, return_attention=True)
    assert out.shape == (4, 12)
    assert torch.all((att >= 0) & (att <= 1))
    # isolated node 3 attends only to itself: its attention weight is 1
    self3 = (att_ei[0] == 3) & (att_ei[1] == 3)
    assert torch.allclose(att[self3], torch.ones_like(att[self3]))
    out.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in gat.parameters())


def test_gat_batched_equals_separate():
    u, ei = toy_graph()
    gat = GATInfusion(8, out_dim=8, heads=2, dropout=0.0).eval()
    batch = Batch.from_data_list([Data(x=u, edge_index=ei, num_nodes=4), Data(x=u[:2], edge_index=ei[:, :2], num_nodes=2)])
    both = gat(batch.x, batch.edge_index)
    assert torch.allclose(both[:4], gat(u, ei), atol=1e-6)
    assert torch.allclose(both[4:], gat(u[:2], ei[:, :2]), atol=1e-6)


def test_empty_concept_graph():
    gat = GATInfusion(8, out_dim=8, heads=2)
    assert gat(torch.zeros(0, 8), torch.zeros(2, 0, dtype=torch.long)).shape == (0, 8)


def test_token_fusion_lambda_zero_is_identity_and_spans():
    h = torch.randn(6, 5)
    u = torch.randn(2, 3)
    fusion = TokenFusion(3, 5, hidden_dim=4, lambda_init=0.0, dropout=0.0)
    te = torch.tensor([[1, 2, 4], [0, 0, 1]])  # tokens 1-2 -> entity 0, token 4 -> entity 1
    assert torch.equal(fusion(h, u, te), h)
    fusion.lam.data.fill_(0.5)
    out = fusion(h, u, te)
    proj = fusion.mlp(u)
    assert torch.allclose(out[1], h[1] + 0.5 * proj[0])
    assert torch.allclose(out[4], h[4] + 0.5 * proj[1])
    untouched = [0, 3, 5]
    assert torch.equal(out[untouched], h[untouched])


def test_token_fusion_gradients_reach_lambda_mlp():
    fusion = TokenFusion(3, 5, hidden_dim=4, per_dimension=True, dropout=0.0)
    out = fusion(torch.randn(6, 5), torch.randn(2, 3), torch.tensor([[1, 4], [0, 1]]))
    out.pow(2).sum().backward()
    assert fusion.lam.shape == (5,) and fusion.lam.grad.abs().sum() > 0
    assert all(p.grad.abs().sum() > 0 for p in fusion.mlp.parameters())


def test_boundary_scorer_values_and_grads():
    scorer = BoundaryScorer()
    b_struct = torch.tensor([0.0, 1.0, 0.4, 0.0])
    b_sem = torch.tensor([0.0, 0.2, 0.1, 0.5])
    cross = torch.tensor([False, False, True, False])
    b = scorer(b_struct, b_sem, cross)
    # 0.5*b_struct + 0.3*b_sem - 1.0*0.5*cross
    assert torch.allclose(b, torch.tensor([0.0, 0.56, 0.2 + 0.03 - 0.5, 0.15]))
    scorer.cut_probability(b).sum().backward()
    for p in (scorer.alpha, scorer.gamma, scorer.tau):
        assert p.grad is not None and p.grad.abs().sum() > 0


def test_soft_pool_with_hard_cuts_is_mean_pool():
    h = torch.randn(10, 4)
    p = torch.zeros(10)
    p[4] = 1.0  # a certain cut before token 4
    vec = soft_chunk_pool(h, p, [(0, 4), (4, 10)], extend=3)
    assert torch.allclose(vec[0], h[0:4].mean(0), atol=1e-4)
    assert torch.allclose(vec[1], h[4:10].mean(0), atol=1e-4)


def test_soft_pool_gradient_reaches_cut_probabilities():
    h = torch.randn(10, 4)
    logits = torch.zeros(10, requires_grad=True)
    soft_chunk_pool(h, torch.sigmoid(logits), [(0, 5), (5, 10)]).sum().backward()
    assert logits.grad.abs().sum() > 0


def test_kg_proximity_hand_case():
    e = torch.eye(3)
    q_ent = torch.stack([e[[0, 1]], torch.zeros(2, 3)])  # query 0: entities x, y; query 1: none
    q_mask = torch.tensor([[True, True], [False, False]])
    # chunk 0: x, z; chunk 1: z; chunk 2: no entity
    entity_vectors, entity_chunk = e[[0, 2, 2]], torch.tensor([0, 0, 1])
    prox = kg_proximity(q_ent, q_mask, entity_vectors, entity_chunk, 3)
    # q0-c0: x->1, y->0 => 0.5 ; q0-c1: 0 ; q0-c2: no entities => 0 ; q1: no entities => 0
    assert torch.allclose(prox, torch.tensor([[0.5, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    assert torch.equal(kg_proximity(q_ent, q_mask, torch.zeros(0, 3), torch.zeros(0, dtype=torch.long), 2),
                       torch.zeros(2, 2))


def test_kg_proximity_takes_the_max_and_passes_gradient():
    q_ent = torch.tensor([[[1.0, 0.0]]], requires_grad=True)
    ev = torch.tensor([[1.0, 1.0], [-1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    prox = kg_proximity(q_ent, torch.ones(1, 1, dtype=torch.bool), ev, torch.tensor([0, 0, 1]), 2)
    assert torch.allclose(prox, torch.tensor([[2**-0.5, 0.0]]), atol=1e-6)
    prox.sum().backward()
    assert ev.grad[0].abs().sum() > 0 and ev.grad[1].abs().sum() == 0  # only the max counts
    assert q_ent.grad.abs().sum() > 0


def test_hybrid_beta_init_bounds_and_grad():
    scorer = HybridScorer(beta_init=0.7)
    assert math.isclose(float(scorer.beta.detach()), 0.7, rel_tol=1e-6)
    q, c = torch.randn(2, 4), torch.randn(3, 4)
    e = torch.randn(2, 1, 4)
    m = torch.ones(2, 1, dtype=torch.bool)
    score, cos, prox = scorer(q, c, e, m, torch.randn(3, 4), torch.arange(3))
    assert torch.allclose(score, scorer.beta * cos + (1 - scorer.beta) * prox)
    score.sum().backward()
    assert scorer.beta_logit.grad.abs() > 0
    with pytest.raises(ValueError):
        HybridScorer(beta_init=1.0)


def test_lexical_term_normalises_per_query_and_learns_its_weight():
    raw = torch.tensor([[4.0, 2.0, 0.0], [0.0, 0.0, 0.0]])
    assert torch.equal(normalise_lexical(raw), torch.tensor([[1.0, 0.5, 0.0], [0.0, 0.0, 0.0]]))
    term = LexicalTerm(weight_init=0.25)
    dense = torch.tensor([[0.2, 0.4, 0.9], [0.1, 0.3, 0.5]])
    score, lex = term(dense, raw)
    assert torch.allclose(score, 0.75 * dense + 0.25 * lex)  # (1 - w) dense + w lex
    assert torch.argmax(score[1]) == 2  # no shared term: the dense order stands
    (-score[0, 0]).backward()
    assert term.logit.grad is not None and term.logit.grad != 0
    with pytest.raises(ValueError, match="one BM25 score per"):
        term(dense, raw[:, :2])
    with pytest.raises(ValueError, match="lexical_init"):
        LexicalTerm(weight_init=1.0)


def test_a_lexical_model_refuses_to_score_without_bm25():
    from gralc.chunking.boundaries import BoundaryConfig
    from gralc.model.chunk_set import ChunkSet
    from gralc.model.gralc_model import GraLCModel, ModelConfig

    model = GraLCModel(ModelConfig(use_kg=False, use_lexical=True), BoundaryConfig(), 8, 8)
    chunks = ChunkSet(torch.randn(3, 8), torch.zeros(0, 8), torch.zeros(0, dtype=torch.long))
    q, q_ent, q_mask = torch.randn(2, 8), torch.zeros(2, 1, 8), torch.zeros(2, 1, dtype=torch.bool)
    with pytest.raises(ValueError, match="use_lexical"):
        model.score_parts(q, q_ent, q_mask, chunks)[0]
    lexical = torch.tensor([[0.0, 3.0, 0.0], [1.0, 0.0, 0.0]])
    with_lex = model.score_parts(q, q_ent, q_mask, chunks, lexical)[0]
    dense = GraLCModel(ModelConfig(use_kg=False), BoundaryConfig(), 8, 8).score_parts(q, q_ent, q_mask, chunks)[0]
    assert torch.allclose(with_lex, 0.5 * dense + 0.5 * normalise_lexical(lexical), atol=1e-6)
