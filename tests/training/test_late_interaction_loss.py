"""Late interaction in the training loss (``optim.late_interaction``, ColBERT-style): the
questions' word-pieces, re-encoded through the adapters, against the chunks' exact token
vectors, mixed into the InfoNCE score as inference mixes it; gradient reaches the adapters
through both sides. Real MiniLM, real peft, demo features."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from gralc.config import ConfigError
from gralc.encoding.lora import LoraEncoder
from gralc.model.gralc_model import GraLCModel
from gralc.model.hybrid_scorer import normalise_lexical
from gralc.model.late_interaction import maxsim
from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index
from gralc.training.config import validate
from gralc.training.datamodule import TrainBatch, ValBatch
from gralc.training.lit_module import GraLCLitModule, info_nce


@pytest.fixture(scope="module")
def lora(make_cfg, tmp_path_factory):
    cfg = make_cfg(tmp_path_factory.mktemp("li"), "lora.enabled=true", "model.use_lexical=true",
                   "optim.late_interaction=0.5")
    torch.manual_seed(0)
    enc = LoraEncoder.build(cfg.pipeline.encoder, 8, 16, 0.0, ["query", "value"], precision="fp32")
    return cfg, enc.eval()


def test_query_tokens_match_the_inference_path(lora):
    """The padded, differentiable batch gives the word-piece vectors that the inference path
    (``DocumentEncoder.encode_query_tokens``, one question at a time, through the same adapted
    weights) gives."""
    _, enc = lora
    questions = ["What is the incubation period of SARS-CoV-2?", "ACE2?", "How do bats shed it?"]
    vecs, mask = enc.encode_questions(questions)[1:]
    with torch.no_grad():
        ref, ref_mask = enc.encoder.encode_query_tokens(questions)
    assert vecs.requires_grad and torch.equal(mask.sum(1), ref_mask.sum(1))
    for i in range(len(questions)):  # the same word-pieces, in order (positions may differ)
        assert torch.allclose(vecs[i][mask[i]].detach(), ref[i][ref_mask[i]], atol=1e-4)


def test_one_encoder_pass_gives_both_question_views(datamodule, lora):
    """With late interaction a training step reads the questions' pooled vectors and their
    word-pieces from one adapted pass (not two), equal to the two views read separately."""
    cfg, enc = lora
    train = datamodule.data.train[:3]
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim).eval()
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=1)
    calls = []
    forward = enc._hidden
    enc._hidden = lambda *a: calls.append(1) or forward(*a)
    try:
        qs = lit.queries(train, tokens=True)
    finally:
        del enc._hidden
    assert len(calls) == -(-len(train) // enc.encoder.config.batch_size)
    assert qs.tokens.requires_grad and qs.vectors.requires_grad  # the loss trains the adapters through both
    texts = [e.text for e in train]
    pooled, tokens, mask = enc.encode_questions(texts)
    assert torch.allclose(qs.vectors, pooled, atol=1e-6)
    assert torch.equal(qs.token_mask, mask) and torch.allclose(qs.tokens, tokens, atol=1e-6)
    assert lit.queries(train).tokens is None


def test_the_loss_mixes_maxsim_and_trains_both_sides(datamodule, lora):
    cfg, enc = lora
    with torch.no_grad():  # non-zero adapters: gradient reaches lora_A as well as lora_B
        for n, p in enc.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    train = [e for e in datamodule.data.train if e.positives.char_ranges][:2]
    docs = [datamodule.data.features[e.doc_id] for e in train]
    batch = TrainBatch(train, docs)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim).eval()
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=1)
    loss = lit.batch_loss(batch)[0]
    # by hand: the plain score, MaxSim of adapted question word-pieces vs exact chunk tokens
    cached, views = lit.training_views(batch)
    chunks = model(views, soft=True, tokens=True, token_grad=True)
    assert chunks.token_vectors.requires_grad
    q, q_ent, q_mask = lit.queries(train)[:3]
    lexical = lit.score_inputs(train, views, chunks)[0]
    plain = model.score_parts(q, q_ent, q_mask, chunks, lexical)[0]
    q_tok, q_tok_mask = enc.encode_questions([e.text for e in train])[1:]
    q_tok.retain_grad()
    chunks.token_vectors.retain_grad()
    sim = maxsim(q_tok, q_tok_mask, chunks.token_vectors, chunks.token_chunk, chunks.n_chunks)
    positive = torch.zeros_like(plain, dtype=torch.bool)
    for i, (e, f) in enumerate(zip(train, cached)):
        for k in e.positives.resolve(f, chunks.spans[i]):
            positive[i, chunks.starts[i] + k] = True
    expected = info_nce(0.5 * plain + 0.5 * sim, positive, cfg.optim.temperature)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-4)
    lit.optim = replace(cfg.optim, late_interaction=0.0)
    assert lit.batch_loss(batch)[0].item() != pytest.approx(loss.item(), rel=1e-4)
    # MaxSim alone backpropagates into the adapters, from the question side and the chunk side
    enc.zero_grad()
    sim.sum().backward()
    assert q_tok.grad[q_tok_mask].abs().sum(-1).gt(0).all()  # every question word-piece
    assert chunks.token_vectors.grad.abs().sum() > 0
    for n, p in enc.named_parameters():
        if p.requires_grad:
            assert p.grad is not None and p.grad.abs().sum() > 0, n


def test_validation_selects_on_the_trained_mix(datamodule, lora):
    """With ``optim.late_interaction`` = m, validation (``val/ev_mrr``, hence the checkpoint
    and the initial-vs-trained choice) scores ``(1 - m) * score + m * MaxSim`` with the
    inference path's question word-pieces and token vectors, not the plain score."""
    cfg, enc = lora
    gold = datamodule.data.dev[0].doc_id  # its document and another of the corpus
    doc_ids = [gold, next(d for d in datamodule.data.corpus_doc_ids if d != gold)]
    batch = ValBatch([e for e in datamodule.data.dev if e.doc_id == gold][:4],
                     [datamodule.data.features[d] for d in doc_ids])
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim).eval()
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=1)
    plain_lit = GraLCLitModule(model, replace(cfg.optim, late_interaction=0.0), encoder=enc,
                               windows_per_doc=1)
    with torch.no_grad():
        scores, doc_of = lit.retrieval_scores(batch)
        plain = plain_lit.retrieval_scores(batch)[0]
        chunks = model(lit.features(batch.docs), soft=False, tokens=True)
        q_tok, q_mask = enc.encoder.encode_query_tokens([e.text for e in batch.examples])
        sim = maxsim(q_tok, q_mask, chunks.token_vectors, chunks.token_chunk, chunks.n_chunks)
    assert len(doc_of) == chunks.n_chunks and len(set(doc_of)) == 2
    assert torch.allclose(scores, 0.5 * plain + 0.5 * sim, atol=1e-4)
    assert not torch.allclose(scores, plain, atol=1e-3)


def test_bad_weights_are_refused(make_cfg, tmp_path):
    with pytest.raises(ConfigError, match=r"optim.late_interaction must be in \[0, 1\)"):
        validate(make_cfg(tmp_path, "lora.enabled=true", "optim.late_interaction=1.0"))
    with pytest.raises(ConfigError, match="lora.enabled=true"):
        validate(make_cfg(tmp_path, "optim.late_interaction=0.5"))


def test_the_term_pair_bm25_is_in_the_training_score_as_at_inference(datamodule, lora):
    """With ``model.phrase_weight`` = g the training score (and so the loss, and validation)
    adds ``g * normalise_lexical(term-pair BM25)`` of the batch's chunk texts AFTER the MaxSim
    mix, the order inference composes it in (not scaled by ``1 - m``)."""
    cfg, enc = lora
    train = [e for e in datamodule.data.train if e.positives.char_ranges][:3]
    batch = TrainBatch(train, [datamodule.data.features[e.doc_id] for e in train])
    model = GraLCModel(replace(cfg.model, phrase_weight=0.25), cfg.pipeline.chunking.boundary,
                       datamodule.token_dim, datamodule.concept_dim).eval()
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=1)
    with torch.no_grad():
        _, views = lit.training_views(batch)
        chunks = model(views, soft=True, tokens=True)
        qs = lit.queries(train, tokens=True)
        score = lit.batch_scores(train, views, chunks, qs)[0]
        model.config.phrase_weight = 0.0
        plain = lit.batch_scores(train, views, chunks, qs)[0]
        model.config.phrase_weight = 0.25
    # by hand: an index of the chunk texts over pairs of consecutive stemmed terms
    idx = BM25Index(BM25Config(ngram=2))
    idx._index_texts(lit.chunk_texts(views, chunks))
    raw = torch.from_numpy(np.stack([idx.scores(e.text) for e in train]))
    assert raw.gt(0).any(), "no question shares a term pair with a chunk: the test cannot fail"
    assert torch.allclose(score, plain + 0.25 * normalise_lexical(raw.float()), atol=1e-5)
    # validation scores the same way
    gold = train[0].doc_id
    val = ValBatch([e for e in datamodule.data.dev if e.doc_id == gold][:4] or train[:1],
                   [datamodule.data.features[gold]])
    with torch.no_grad():
        with_phrase = lit.retrieval_scores(val)[0]
        model.config.phrase_weight = 0.0
        without = lit.retrieval_scores(val)[0]
    assert not torch.allclose(with_phrase, without, atol=1e-4)
