"""Trained-model inference: the model's score of every chunk (reference pitfall 9), from the one
trained search with every chunk a candidate (``TrainedSearch.scores``), checked by brute force;
its two stages (tests/retrieval/trained/test_trained_search.py) must reproduce it for their
candidates."""

from __future__ import annotations

import numpy as np
import torch

from gralc.model.gralc_model import GraLCModel
from gralc.pipeline import Pipeline
from gralc.retrieval.indexes.dense import ChunkIndex
from gralc.retrieval.trained.candidates import CandidateConfig
from gralc.retrieval.trained.scorer import TrainedScorer
from gralc.retrieval.trained.search import TrainedSearch


def _untrained(cfg, datamodule):
    """``(model at its initial values (seed 0), pipeline, three prepared corpus documents)``."""
    torch.manual_seed(0)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim).eval()
    pipeline = Pipeline(cfg.pipeline)
    docs = [datamodule.data.features[d].doc for d in datamodule.data.corpus_doc_ids[:3]]
    return model, pipeline, pipeline.prepare(docs, progress=False)


QUESTION = "Did metformin titration reduce gastrointestinal adverse events in type 2 diabetes?"


def every_chunk(scorer, pipeline, chunks, **indexes) -> TrainedSearch:
    """The trained search over ``chunks`` (just made by ``scorer.chunk``) with every chunk a
    candidate; ``indexes``: the BM25 indexes its model reads (``phrase=...``)."""
    index = ChunkIndex(pipeline.encoder.dim)
    index.add(chunks)
    return TrainedSearch(scorer, pipeline, index, config=CandidateConfig(exhaustive=True), **indexes)


def scores(scorer, pipeline, chunks, question=QUESTION, **indexes):
    """``(score (K,), cos (K,), kg_prox (K,))`` of ``question`` against every chunk."""
    search = every_chunk(scorer, pipeline, chunks, **indexes)
    got = search.scores(search.encode([question]))
    return got.score[0], got.cos[0], got.kg_prox[0]


def table(scorer, vecs):
    """Every chunk of the scorer's table as one ChunkSet, token vectors decoded."""
    return scorer.table.gather(np.asarray(vecs), None, tokens=True)[0]


def test_hybrid_scores_every_chunk_exactly(make_cfg, datamodule, tmp_path):
    cfg = make_cfg(tmp_path)
    torch.manual_seed(0)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim, datamodule.concept_dim).eval()
    scorer = TrainedScorer(model, cfg.pipeline)
    pipeline = Pipeline(cfg.pipeline)
    docs = [datamodule.data.features[d].doc for d in datamodule.data.corpus_doc_ids[:3]]
    chunks = scorer.chunk(pipeline, pipeline.prepare(docs, progress=False))
    vecs = torch.from_numpy(np.stack([c.embedding for c in chunks]))
    score, cos, prox = scores(scorer, pipeline, chunks)
    assert score.shape == cos.shape == prox.shape == (len(chunks),)  # every chunk, not a top-k

    # brute force: kg_prox from the per-chunk entity lists, by hand
    q_ent, q_mask = scorer.query_entities_batch(pipeline, [QUESTION])
    q_ent = torch.nn.functional.normalize(q_ent[0][q_mask[0]], dim=-1)
    assert q_ent.shape[0] > 0  # the question mentions linked concepts (metformin, diabetes)
    expected = torch.zeros(len(chunks))
    every = table(scorer, vecs)
    for k in range(len(chunks)):
        ents = torch.nn.functional.normalize(every.entity_vectors[every.entity_chunk == k], dim=-1)
        if ents.shape[0]:
            expected[k] = (q_ent @ ents.T).max(dim=1).values.mean()
    assert torch.allclose(prox, expected, atol=1e-5)
    assert (prox > 0).any() and (prox == 0).any()  # chunks without the concepts get 0
    beta = float(model.hybrid.beta.detach())
    assert torch.allclose(score, beta * cos + (1 - beta) * prox, atol=1e-6)
    # entity ids on chunks agree with the entity table the scorer keeps
    for k, c in enumerate(chunks):
        assert (every.entity_chunk == k).sum() == len(set(c.entity_ids))


def test_chunking_in_batches_equals_one_pass(make_cfg, datamodule, tmp_path):
    """gralc.index streams documents in batches; the entity table must not depend on it."""
    cfg = make_cfg(tmp_path)
    model, pipeline, prepared = _untrained(cfg, datamodule)
    whole = TrainedScorer(model, cfg.pipeline)
    one = whole.chunk(pipeline, prepared)
    parts = TrainedScorer(model, cfg.pipeline)
    two = parts.chunk(pipeline, prepared[:1]) + parts.chunk(pipeline, prepared[1:], reset=False)
    assert [c.chunk_id for c in one] == [c.chunk_id for c in two]
    vecs = np.stack([c.embedding for c in one])
    a, b = table(whole, vecs), table(parts, vecs)
    assert torch.equal(a.entity_chunk, b.entity_chunk)
    assert torch.allclose(a.entity_vectors, b.entity_vectors)


def test_trained_rows_rank_to_one_depth_with_evidence_and_hybrid(make_cfg, datamodule, tmp_path):
    """eval.py's trained rows: kg, graph and both fused with BM25, scored at evidence level."""
    from gralc.data.benchmarks import demo_benchmark
    from gralc.evaluation.evidence import PieceCounter
    from gralc.evaluation.methods import RunSettings
    from gralc.evaluation.trained_rows import evaluate_trained

    cfg = make_cfg(tmp_path)
    torch.manual_seed(0)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim, datamodule.concept_dim).eval()
    scorer = TrainedScorer(model, cfg.pipeline)
    pipeline = Pipeline(cfg.pipeline)
    bench = demo_benchmark()
    bench.questions = bench.questions[:6]
    prepared = pipeline.prepare(bench.documents, progress=False)
    settings = RunSettings((1, 5), pieces=PieceCounter(pipeline.encoder.tokenizer))
    rows = evaluate_trained("", bench, prepared, pipeline, settings, scorer=scorer)
    assert [r.method for r in rows] == ["gralc_cosine", "gralc", "gralc_cosine_hybrid", "gralc_hybrid"]
    for r in rows:
        assert all(len(q["top"]) == 5 for q in r.per_query)  # every row ranks to max(ks)
        assert r.metrics["n_evidence_questions"] == 6
        assert 0 <= r.metrics["ev_recall@512wp"] <= 1 and 0 <= r.metrics["wa_ndcg@10"] <= 1
    kg, _, kg_hybrid, _ = rows
    assert [q["top"] for q in kg.per_query] != [q["top"] for q in kg_hybrid.per_query]
    assert 0 < rows[1].metrics["search/candidates_per_question"] <= 136
    # search.exhaustive=true: every chunk a candidate; a probe's (Q, K) scores rank alike
    from dataclasses import replace

    from gralc.retrieval.ranking import rank_order

    exhaustive = evaluate_trained("", bench, prepared, pipeline,
                                  replace(settings, search=CandidateConfig(exhaustive=True)), scorer=scorer)
    chunks = scorer.chunk(pipeline, prepared)
    search = every_chunk(scorer, pipeline, chunks)
    every = search.scores(search.encode([q.text for q in bench.questions]))
    assert every.score.shape == every.cos.shape == (6, len(chunks)) and every.late is None
    assert [[chunks[j].chunk_id for j in rank_order(chunks, s.numpy(), 5)] for s in every.score] == \
        [q["top"] for q in exhaustive[1].per_query]
    # two stages rank the first chunks as the exhaustive pass does
    assert [q["top"][:3] for q in rows[1].per_query] == [q["top"][:3] for q in exhaustive[1].per_query]


def test_sentence_evidence_mixes_each_chunk_best_sentence_into_its_score(make_cfg, datamodule, tmp_path):
    """model.sentence_evidence=w: every chunk's score is (1 - w) * its own + w * the best score
    of the sentence units overlapping it (brute force over the unit records' char spans); the
    units are late-pooled from the same enriched tokens; chunking in batches changes nothing."""

    from gralc.model.chunk_set import ChunkSet

    cfg = make_cfg(tmp_path, "model.sentence_evidence=0.4")
    model, pipeline, prepared = _untrained(cfg, datamodule)
    scorer = TrainedScorer(model, cfg.pipeline)
    chunks = scorer.chunk(pipeline, prepared)
    units = scorer.table.unit_chunks
    assert units and all(u.level == "sentences" for u in units)
    assert len({c.chunk_id for c in chunks + units}) == len(chunks) + len(units)
    vecs = torch.from_numpy(np.stack([c.embedding for c in chunks]))
    q = pipeline.encoder.encode_queries([QUESTION])[0]
    score, cos, prox = scores(scorer, pipeline, chunks)

    alone = TrainedScorer(replace_model(model, sentence_evidence=0.0), cfg.pipeline)
    alone_chunks = alone.chunk(pipeline, prepared)
    assert [c.chunk_id for c in alone_chunks] == [c.chunk_id for c in chunks]
    own, cos0, prox0 = scores(alone, pipeline, alone_chunks)
    assert torch.equal(cos, cos0) and torch.equal(prox, prox0)
    q_ent, q_mask = scorer.query_entities_batch(pipeline, [QUESTION])
    every = table(scorer, vecs)
    unit_score = model.score_parts(q[None].float(), q_ent, q_mask, ChunkSet(
        every.units.vectors, every.units.entity_vectors, every.units.entity_chunk))[0][0]
    expected = own.clone()
    for k, c in enumerate(chunks):
        hit = [unit_score[j] for j, u in enumerate(units) if u.doc_id == c.doc_id
               and u.token_start < c.token_end and c.token_start < u.token_end]
        if hit:
            expected[k] = 0.6 * own[k] + 0.4 * max(hit)
    assert torch.allclose(score, expected, atol=1e-6)
    assert not torch.allclose(score, own)

    # a unit vector is the mean of the enriched token vectors over its span
    f = datamodule.data.features[units[0].doc_id]
    h_prime = model.enrich(f)[0]
    u0 = torch.nn.functional.normalize(h_prime[units[0].token_start:units[0].token_end].mean(0), dim=0)
    assert torch.allclose(every.units.vectors[0], u0, atol=1e-3)  # stored as float16

    parts = TrainedScorer(model, cfg.pipeline)
    parts.chunk(pipeline, prepared[:1])
    parts.chunk(pipeline, prepared[1:], reset=False)
    assert torch.equal(table(parts, vecs).unit_pairs, every.unit_pairs)
    assert torch.allclose(scores(parts, pipeline, chunks)[0], score, atol=1e-6)


def replace_model(model, **settings):
    """A copy of ``model`` with other export-time scoring settings (same weights)."""
    import copy

    m = copy.deepcopy(model)
    m.set_scoring(settings)
    return m


def test_late_interaction_mixes_each_chunk_maxsim_into_its_score(make_cfg, datamodule, tmp_path):
    """model.late_interaction=m: every chunk's score is (1 - m) * its score without it + m *
    the mean over the question's word-pieces of their best cosine with the chunk's enriched
    token vectors (brute force); chunking in batches changes nothing."""

    cfg = make_cfg(tmp_path)
    model, pipeline, prepared = _untrained(cfg, datamodule)
    scorer = TrainedScorer(replace_model(model, late_interaction=0.3), cfg.pipeline)
    chunks = scorer.chunk(pipeline, prepared)
    vecs = torch.from_numpy(np.stack([c.embedding for c in chunks]))
    score = scores(scorer, pipeline, chunks)[0]
    alone = TrainedScorer(model, cfg.pipeline)
    assert [c.chunk_id for c in alone.chunk(pipeline, prepared)] == [c.chunk_id for c in chunks]
    own = scores(alone, pipeline, chunks)[0]

    q_tok, q_mask = pipeline.encoder.encode_query_tokens([QUESTION])
    pieces = torch.nn.functional.normalize(q_tok[0, q_mask[0]], dim=-1)
    n_special = len(pipeline.encoder.tokenizer(QUESTION)["input_ids"]) - int(q_mask.sum())
    assert n_special == 2  # [CLS] and [SEP] are not matched
    expected = own.clone()
    for k, c in enumerate(chunks):
        h_prime = model.enrich(datamodule.data.features[c.doc_id])[0][c.token_start:c.token_end]
        h = torch.nn.functional.normalize(h_prime, dim=-1)
        expected[k] = 0.7 * own[k] + 0.3 * (pieces @ h.T).max(1).values.mean()
    assert torch.allclose(score, expected, atol=2e-3)  # token vectors kept in float16 precision
    assert not torch.allclose(score, own, atol=1e-3)

    parts = TrainedScorer(scorer.model, cfg.pipeline)
    parts.chunk(pipeline, prepared[:1])
    parts.chunk(pipeline, prepared[1:], reset=False)
    assert torch.equal(table(parts, vecs).token_chunk, table(scorer, vecs).token_chunk)
    assert torch.equal(scores(parts, pipeline, chunks)[0], score)
    # a question's word-piece vectors do not depend on the other questions asked with it
    both, mask2 = pipeline.encoder.encode_query_tokens([QUESTION, "Why?"])
    assert torch.equal(both[0][mask2[0]], q_tok[0][q_mask[0]])


def test_phrase_weight_adds_the_normalised_term_pair_bm25(make_cfg, datamodule, tmp_path):
    """model.phrase_weight=g: every chunk's score is its score without it + g * its term-pair
    BM25 divided by the question's best; without the term-pair scores the search refuses."""
    import pytest

    from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index

    cfg = make_cfg(tmp_path)
    model, pipeline, prepared = _untrained(cfg, datamodule)
    scorer = TrainedScorer(replace_model(model, phrase_weight=0.2), cfg.pipeline)
    assert scorer.phrase and not TrainedScorer(model, cfg.pipeline).phrase
    chunks = scorer.chunk(pipeline, prepared)
    pairs = BM25Index(BM25Config(ngram=2))
    pairs.index(chunks)
    phrase = pairs.scores(QUESTION)
    assert phrase.max() > 0 and (phrase == 0).any()
    inputs = scorer.score_inputs([QUESTION], scorer.indexes(chunks))  # the model builds its own
    assert np.array_equal(inputs.phrase[0], phrase)
    search = every_chunk(scorer, pipeline, chunks, phrase=pairs)
    score = search.scores(search.encode([QUESTION])).score[0]
    own = TrainedScorer(model, cfg.pipeline)
    expected = scores(own, pipeline, own.chunk(pipeline, prepared))[0] + \
        0.2 * torch.as_tensor(phrase / phrase.max()).float()
    assert torch.allclose(score, expected, atol=1e-6)
    hits = search.search(QUESTION, len(chunks))
    assert np.allclose([h.score for h in hits], sorted(float(x) for x in score)[::-1], atol=1e-6)
    assert {h.components["phrase_bm25"] for h in hits} == {float(x) for x in phrase}
    with pytest.raises(ValueError, match="term-pair BM25"):
        every_chunk(scorer, pipeline, chunks)
