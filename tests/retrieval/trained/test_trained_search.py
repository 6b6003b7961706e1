"""Two-stage search with a trained model (gralc.retrieval.trained.search): every candidate gets
the score the exhaustive pass gives it, candidates hold every source's best, batches equal
single questions, and an index built in shards answers as one build does."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from gralc.model.gralc_model import GraLCModel
from gralc.pipeline import Pipeline
from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index
from gralc.retrieval.indexes.dense import ChunkIndex
from gralc.retrieval.trained.candidates import CandidateConfig, candidate_mask, top_rows
from gralc.retrieval.trained.concept_match import concept_index, concept_scores, question_concepts
from gralc.retrieval.trained.scorer import TrainedScorer
from gralc.retrieval.trained.search import TrainedSearch
from gralc.retrieval.trained.token_codec import TokenCodecConfig

QUESTIONS = [
    "Did metformin titration reduce gastrointestinal adverse events in type 2 diabetes?",
    "What was the primary outcome of the trial?",
    "Which adverse events were reported?",
    "How was HbA1c measured at baseline?",
]
#: every score term a search gathers per candidate: kg_prox, lexical, sentence units, MaxSim, term
#: pairs, concept match
FULL = dict(sentence_evidence=0.3, late_interaction=0.4, phrase_weight=0.1, concept_weight=0.2)


def _searchable(cfg, datamodule, codec: TokenCodecConfig):
    """(scorer of an untrained model using every score term, pipeline, chunks, index, BM25,
    term-pair BM25, concept match) over the datamodule's corpus."""
    torch.manual_seed(0)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary,
                       datamodule.token_dim, datamodule.concept_dim).eval()
    model.set_scoring(FULL)
    scorer = TrainedScorer(model, cfg.pipeline)
    scorer.token_codec = codec
    pipeline = Pipeline(cfg.pipeline)
    docs = [datamodule.data.features[d].doc for d in datamodule.data.corpus_doc_ids]
    chunks = scorer.chunk(pipeline, pipeline.prepare(docs, progress=False))
    index = ChunkIndex(pipeline.encoder.dim)
    index.add(chunks)
    bm25, pairs = BM25Index(), BM25Index(BM25Config(ngram=2))
    bm25.index(chunks)
    pairs.index(chunks)
    return scorer, pipeline, chunks, index, bm25, pairs, concept_index(chunks)


def _every_chunk(scorer, pipeline, index, bm25, pairs, concepts):
    """The same search with every chunk a candidate: the model's score of every chunk."""
    return TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(exhaustive=True), concepts)


def _check_inputs(q, i, text, bm25, pairs, concepts, ids):
    """Question ``i``'s score inputs equal the indexes' own scores (an oracle independent of
    the model's input builder): BM25, term-pair BM25 and concept match, held sparsely."""
    assert np.array_equal(q.inputs.lexical[i].toarray(), bm25.scores(text))
    assert np.array_equal(q.inputs.phrase[i].toarray(), pairs.scores(text))
    assert np.array_equal(q.inputs.concepts[i].toarray(), concept_scores(concepts, ids))


@pytest.fixture(scope="module")
def exact(make_cfg, datamodule, tmp_path_factory):
    cfg = make_cfg(tmp_path_factory.mktemp("ts"), "model.use_lexical=true")
    return _searchable(cfg, datamodule, TokenCodecConfig(kind="float16"))


def test_every_candidate_gets_its_exhaustive_score(exact):
    """With a few candidates per source the BM25 terms are still normalised by the question's
    best chunk / unit over the whole corpus: each candidate's score equals the exhaustive one."""
    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    assert scorer.lexical and scorer.phrase and scorer.uses_units and scorer.uses_tokens and scorer.concept
    config = CandidateConfig(dense=3, lexical=2, phrase=1, units=1, concepts=1, exact=0)
    search = TrainedSearch(scorer, pipeline, index, bm25, pairs, config, concepts)
    q = search.encode(QUESTIONS)
    rows = search.candidates(q)
    every = _every_chunk(scorer, pipeline, index, bm25, pairs, concepts)
    full_scores = every.scores(every.encode(QUESTIONS)).score
    ids = question_concepts(pipeline.linker, QUESTIONS)
    assert sum(concept_scores(concepts, i).max() > 0 for i in ids) >= 2, "the concept match is untested"
    for i, text in enumerate(QUESTIONS):
        cm = concept_scores(concepts, ids[i])
        _check_inputs(q, i, text, bm25, pairs, concepts, ids[i])
        full = full_scores[i]
        got = search.search_encoded(q, len(chunks))[i]
        assert 3 <= len(got) == len(rows[i]) < len(chunks)  # a search, not an exhaustive pass
        pos = {(c.doc_id, c.chunk_id): j for j, c in enumerate(chunks)}
        for h in got:
            assert h.score == pytest.approx(float(full[pos[(h.chunk.doc_id, h.chunk.chunk_id)]]), abs=1e-5)
        # the candidates hold each source's best: the dense 3, the best BM25 and term-pair chunks
        dense = set(index.search_rows(q.vectors[i : i + 1].numpy(), 3)[0].tolist())
        best = {int(np.argmax(bm25.scores(text))), int(np.argmax(pairs.scores(text)))}
        if cm.max() > 0:
            best.add(int(np.argmax(cm)))
        assert dense | best <= set(rows[i].tolist())
    ranked = search.search_batch(QUESTIONS, 5)
    assert [[h.chunk.chunk_id for h in r] for r in ranked] == \
        [[h.chunk.chunk_id for h in search.search(t, 5)] for t in QUESTIONS]  # batch = one by one
    assert all(set(h.components) == {"cos", "kg_prox", "bm25", "phrase_bm25", "concept_bm25", "maxsim"}
               for h in ranked[0])


def test_exhaustive_search_is_the_model_ranking_of_every_chunk(exact):
    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    search = _every_chunk(scorer, pipeline, index, bm25, pairs, concepts)
    text = QUESTIONS[0]
    q = search.encode([text])
    _check_inputs(q, 0, text, bm25, pairs, concepts, question_concepts(pipeline.linker, [text])[0])
    full = search.scores(q)
    assert full.score.shape == full.late.shape == (1, len(chunks))
    hits = search.search(text, len(chunks))
    assert len(hits) == len(chunks)
    assert [h.score for h in hits] == np.sort(full.score[0].numpy())[::-1].tolist()  # the same pass
    with pytest.raises(ValueError, match="search.lexical=0"):
        TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(lexical=0), concepts)
    with pytest.raises(ValueError, match="term-pair BM25"):
        TrainedSearch(scorer, pipeline, index, bm25, None, concepts=concepts)
    with pytest.raises(ValueError, match="concept match"):
        TrainedSearch(scorer, pipeline, index, bm25, pairs)


def test_an_exhaustive_pass_in_blocks_scores_as_one_pass(exact, monkeypatch):
    """A corpus scored a block of chunks at a time (a million chunks' inputs do not fit at once)
    gives every chunk the score of one pass: each block is normalised by the whole corpus's
    best chunk, term pair and sentence unit."""
    import gralc.retrieval.trained.search as search_module

    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    search = _every_chunk(scorer, pipeline, index, bm25, pairs, concepts)
    q = search.encode(QUESTIONS)
    one = search.scores(q)
    monkeypatch.setattr(search_module, "EXACT_BLOCK", 7)
    assert len(chunks) > 3 * 7
    blocks = search.scores(q)
    for a, b in ((one.score, blocks.score), (one.cos, blocks.cos), (one.late, blocks.late)):
        assert torch.allclose(a, b, atol=1e-6)
    hits = search.search(QUESTIONS[0], 5)
    assert [h.score for h in hits] == pytest.approx(np.sort(one.score[0].numpy())[::-1][:5].tolist(), abs=1e-6)


@pytest.mark.slow  # ~30 s: make test-all (CI)
def test_token_codes_rank_like_the_exact_tokens(make_cfg, datamodule, exact, tmp_path):
    """An IVF-PQ codec (trained on the corpus's tokens): MaxSim read from the centroids ranks
    the candidates, the best ``exact`` are decoded; their scores equal an exhaustive pass over
    the same codes, and the first hits agree with the exact (float16) tokens' ranking."""
    cfg = make_cfg(tmp_path, "model.use_lexical=true")
    scorer, pipeline, chunks, index, bm25, pairs, concepts = _searchable(
        cfg, datamodule, TokenCodecConfig(pq_bytes=48, centroids=64))
    assert scorer.table.finish().tokens.codec.code_size == 61  # centroid id + 48 x 10 bits: 12.6x smaller than float16
    codes = TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(exact=4), concepts)
    every = TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(exhaustive=True), concepts)
    e_scorer, *_ = exact
    reference = TrainedSearch(e_scorer, pipeline, index, bm25, pairs, CandidateConfig(exhaustive=True), concepts)
    top1 = 0
    for text in QUESTIONS:
        got, full = codes.search(text, 4), {h.chunk.chunk_id: h.score for h in every.search(text, len(chunks))}
        assert all(h.score == pytest.approx(full[h.chunk.chunk_id], abs=1e-5) for h in got)
        top1 += got[0].chunk.chunk_id == reference.search(text, 1)[0].chunk.chunk_id
        # a deeper search ranks its first hits alike (eval.py asks for 100, gralc.search for k)
        deeper = codes.search(text, len(chunks))
        assert [h.chunk.chunk_id for h in deeper[:4]] == [h.chunk.chunk_id for h in got]
        assert [h.score for h in deeper[:4]] == pytest.approx([h.score for h in got], abs=1e-6)
    assert top1 >= len(QUESTIONS) - 1


def test_a_replaced_maxsim_scores_as_a_second_pass_would(exact):
    """Two-stage search decodes its best candidates' tokens and moves their scores by the late
    term's change (``GraLCModel.late_replaced``) instead of scoring them again: the same score
    as a pass with the new MaxSim, every other term included."""
    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    search = _every_chunk(scorer, pipeline, index, bm25, pairs, concepts)
    q = search.encode(QUESTIONS[:1])
    rows = np.arange(len(chunks))
    gathered, unit_rows = search.table.gather(index.vectors, rows)
    inputs = q.inputs.select(0, rows, unit_rows).tensors(dtype=torch.float32)
    g = torch.Generator().manual_seed(0)
    before, after = torch.rand(1, len(rows), generator=g), torch.rand(1, len(rows), generator=g)
    model = scorer.model

    def scored(late):
        return model.score_parts(q.vectors, q.entities, q.entity_mask, gathered, late=late, **inputs)[0]

    first, second = scored(before), scored(after)
    assert not torch.allclose(first, second)
    assert torch.allclose(model.late_replaced(first, before, after), second, atol=1e-6)


def test_padded_questions_rank_as_one_pass_each(exact):
    """search.padded_questions=true reads a batch of questions in padded passes: the same hits,
    scores within float noise; one question alone is read identically; a non-boolean value is
    refused naming the key."""
    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    one = TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(), concepts)
    padded = TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(padded_questions=True), concepts)
    for a, b in zip(one.search_batch(QUESTIONS, 5), padded.search_batch(QUESTIONS, 5)):
        assert [h.chunk.chunk_id for h in a] == [h.chunk.chunk_id for h in b]
        assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
    assert [h.score for h in one.search(QUESTIONS[0], 5)] == [h.score for h in padded.search(QUESTIONS[0], 5)]
    with pytest.raises(ValueError, match="search.padded_questions must be true or false"):
        CandidateConfig(padded_questions="yes")


def test_a_diverse_search_is_its_plain_pool_re_ranked_as_the_diverse_rows_are(exact):
    """search.diverse=round_robin / complete_tail: the plain search's best diverse_pool hits
    re-ranked as the *_diverse rows' re-ranker does with those settings (round_robin: what
    gralc_diverse was measured with), the model's score kept in components; the top-k covers
    more sections than the plain top-k on these questions; complete_tail keeps the plain head."""
    from gralc.evaluation.methods import DIVERSE, diverse_reranker
    from gralc.retrieval.rerank.diversity import DIVERSE_METHODS, section_diverse, section_key

    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    plain = TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(), concepts)
    tops, flats = plain.search_batch(QUESTIONS, 12), plain.search_batch(QUESTIONS, 8)
    for name in DIVERSE_METHODS:
        diverse = TrainedSearch(scorer, pipeline, index, bm25, pairs,
                                CandidateConfig(diverse=name, diverse_pool=12), concepts)
        more = 0
        for top, got, flat in zip(tops, diverse.search_batch(QUESTIONS, 8), flats):
            want = section_diverse([(h.chunk, h.score) for h in top], 8, name)
            assert [h.chunk.chunk_id for h in got] == [h.chunk.chunk_id for h in want]
            if name == "round_robin":  # the *_diverse rows' own re-ranker
                rows = diverse_reranker(8, DIVERSE)([(h.chunk, h.score) for h in top], "")
                assert [h.chunk.chunk_id for h in got] == [c.chunk_id for c, _ in rows]
            assert {h.chunk.chunk_id: h.components["retrieval"] for h in got} == pytest.approx(
                {h.chunk.chunk_id: h.score for h in top if h.chunk.chunk_id in {g.chunk.chunk_id for g in got}})
            more += len({section_key(h.chunk) for h in got}) - len({section_key(h.chunk) for h in flat})
            if name == "complete_tail":  # the plain head untouched: 8 - int(0.3 * 8) = 6 ranks
                assert [h.chunk.chunk_id for h in got[:6]] == [h.chunk.chunk_id for h in flat[:6]]
        assert more > 0, name
    with pytest.raises(ValueError, match="search.diverse_pool must be an integer >= 1"):
        CandidateConfig(diverse_pool=0)
    with pytest.raises(ValueError, match="search.diverse must be one of off, round_robin, complete_tail"):
        CandidateConfig(diverse=True)


def test_validation_ranks_the_candidates_a_search_would_score():
    cos = torch.tensor([[0.9, 0.1, 0.8, 0.2, 0.3], [0.1, 0.2, 0.3, 0.4, 0.5]])
    lex = torch.tensor([[0.0, 5.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    units = torch.tensor([[0.0, 0.0, 7.0], [0.0, 0.0, 0.0]])
    pairs = torch.tensor([[0, 3, 4], [0, 1, 2]])  # (chunk, unit): unit 2 lies in chunk 4
    mask = candidate_mask(CandidateConfig(dense=1, lexical=1, units=1), cos, lex, None, units, pairs)
    assert mask[0].tolist() == [True, True, False, False, True]  # dense best, BM25 best, unit's chunk
    assert mask[1].tolist() == [False, False, False, False, True]  # no BM25 match: dense only
    assert mask.equal(candidate_mask(CandidateConfig(dense=1, lexical=1, units=1), cos, lex, None, units, pairs))
    assert candidate_mask(CandidateConfig(exhaustive=True), cos).all()
    assert sorted(top_rows(np.array([0.0, 2.0, 1.0]), 5, positive=True).tolist()) == [1, 2]


def test_search_and_validation_choose_candidates_by_one_rule(exact):
    """A search's candidates (FAISS, BM25 indexes, unit rows) are the rows training's
    validation marks from the full score matrices (:func:`candidate_mask`)."""
    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    config = CandidateConfig(dense=3, lexical=2, phrase=1, units=2, concepts=1)
    search = TrainedSearch(scorer, pipeline, index, bm25, pairs, config, concepts)
    q = search.encode(QUESTIONS)
    vecs = torch.from_numpy(np.asarray(index.vectors))
    cos = torch.nn.functional.normalize(q.vectors, dim=-1) @ vecs.T
    x = q.inputs.tensors()  # the search's sparse rows, dense as validation's matrices
    table = scorer.table.gather(np.asarray(index.vectors), None)[0]
    mask = candidate_mask(config, cos, x["lexical"], x["phrase"], x["unit_lexical"], table.unit_pairs,
                          x["concepts"])
    assert [np.flatnonzero(m.numpy()).tolist() for m in mask] == [r.tolist() for r in search.candidates(q)]


@pytest.fixture(scope="module")
def exported(datamodule, make_cfg, tmp_path_factory):
    """A one-epoch model with the lexical term, exported with every inference term."""
    from gralc.model.persistence import export
    from gralc.training.run import train

    out = tmp_path_factory.mktemp("exported")
    cfg = make_cfg(out, "trainer.max_epochs=1", "callbacks.early_stopping.enabled=false",
                   "model.use_lexical=true")
    result = train(cfg)
    return export(result["last_checkpoint"], out / "export", settings=FULL)


def test_index_search_batch_and_cli_agree(exported, tmp_path, capsys):
    """gralc.index --model, then Retriever.search_batch = search one by one; the saved index
    memory-maps its tables; gralc.search --queries prints one JSON line per question, and
    --search exhaustive=true ranks every chunk."""
    from gralc import search as search_cli
    from gralc.data.demo import DEMO_DIR
    from gralc.inference import Retriever

    Retriever.build(DEMO_DIR / "articles", model=exported,
                    search=CandidateConfig(dense=5, lexical=5)).save(tmp_path / "index")
    r = Retriever.load(tmp_path / "index")
    assert r.concepts is not None and r.concepts.config.field == "concepts" and len(r.concepts) == len(r.index)
    assert isinstance(r.index.vectors, np.memmap)
    assert isinstance(r.scorer.table.tokens.codes.values, np.memmap)
    assert r.search_config.dense == 5
    batch = r.search_batch(QUESTIONS, 3)
    assert [[h.chunk.chunk_id for h in b] for b in batch] == \
        [[h.chunk.chunk_id for h in r.search(q, 3)] for q in QUESTIONS]
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(QUESTIONS)))
    assert search_cli.main([str(tmp_path / "index"), "--queries", str(queries), "-k", "3"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["id"] for x in lines] == ["q0", "q1", "q2", "q3"]
    assert [[h["chunk_id"] for h in x["hits"]] for x in lines] == [[h.chunk.chunk_id for h in b] for b in batch]
    n = len(r.index)
    assert search_cli.main([str(tmp_path / "index"), QUESTIONS[0], "-k", str(n), "--format", "json",
                            "search.exhaustive=true"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == n
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n')
    assert search_cli.main([str(tmp_path / "index"), "--queries", str(tmp_path / "bad.jsonl")]) == 2
    assert "bad.jsonl:1" in capsys.readouterr().err
    assert search_cli.main([str(tmp_path / "index"), "q", "search.dense=-1"]) == 2
    assert "dense" in capsys.readouterr().err


@pytest.mark.slow  # ~30 s: make test-all (CI)
def test_shards_of_a_trained_index_merge_into_the_single_build(exported, tmp_path, capsys):
    """codec once, two shards with it, merge: the same chunks, token codes, BM25 and answers
    as one build with that codec; a shard without the codec is refused before any encoding."""
    from gralc import index as index_cli
    from gralc import shard as shard_cli
    from gralc.data.demo import DEMO_DIR
    from gralc.inference import Retriever

    articles = DEMO_DIR / "articles"
    codec = tmp_path / "codec"
    assert shard_cli.main(["codec", str(articles), "--model", str(exported),
                             "--out", str(codec)]) == 0
    assert "bytes a token" in capsys.readouterr().out
    shards = [tmp_path / "shard_0", tmp_path / "deeper" / "shard_1"]  # at two depths
    for i, shard in enumerate(shards):
        assert shard_cli.main(["build", str(articles), "--shard", str(i), "--num-shards", "2",
                                 "--model", str(exported), "--codec", str(codec),
                                 "--out", str(shard)]) == 0
    assert shard_cli.main(["merge", str(shards[1]), str(shards[0]),
                             "--out", str(tmp_path / "merged")]) == 0
    # the merged index names the model relative to itself, as a single build does
    spec = json.loads((tmp_path / "merged" / "retriever.json").read_text())
    assert (tmp_path / "merged" / spec["model"]).resolve() == Path(exported).resolve()
    assert index_cli.main([str(articles), "--model", str(exported), "--codec", str(codec),
                           "--out", str(tmp_path / "single")]) == 0
    single, merged = Retriever.load(tmp_path / "single"), Retriever.load(tmp_path / "merged")
    assert [c.chunk_id for c in single.index.chunks] == [c.chunk_id for c in merged.index.chunks]
    a, b = single.scorer.table, merged.scorer.table
    assert np.array_equal(a.tokens.codes.values, b.tokens.codes.values)
    assert np.array_equal(a.tokens.codes.offsets, b.tokens.codes.offsets)
    assert np.array_equal(a.units.pairs.values, b.units.pairs.values)
    # float16 concept vectors: a shard's batches round a value's last float32 bits to either side
    assert np.allclose(a.concept_vectors(a.entities.values), b.concept_vectors(b.entities.values), atol=2e-3)
    assert np.allclose(single.lexical.scores(QUESTIONS[0]), merged.lexical.scores(QUESTIONS[0]))
    for q in QUESTIONS[:3]:  # the BM25 indexes a merge writes in blocks (term pairs, sentence units)
        assert np.allclose(single.phrase.scores(q), merged.phrase.scores(q))
        assert np.allclose(a.units.bm25.scores(q), b.units.bm25.scores(q)) and a.units.bm25.scores(q).max() > 0
    probe = " ".join(sorted(t for t in single.concepts.retriever.vocab_dict if t))
    assert np.allclose(single.concepts.scores(probe), merged.concepts.scores(probe))
    for x, y in zip(single.search_batch(QUESTIONS, 5), merged.search_batch(QUESTIONS, 5)):
        assert [h.chunk.chunk_id for h in x] == [h.chunk.chunk_id for h in y]
        assert np.allclose([h.score for h in x], [h.score for h in y], atol=1e-5)
    argv = ["build", str(articles), "--shard", "0", "--num-shards", "2",
            "--model", str(exported), "--out", str(tmp_path / "nocodec")]
    assert shard_cli.main(argv) == 2
    assert "--codec" in capsys.readouterr().err and not (tmp_path / "nocodec").exists()


@pytest.mark.slow  # ~40 s: make test-all (CI)
def test_a_grown_corpus_keeps_its_kept_indexes_and_copies_the_source(exported, tmp_path):
    """gralc.experiments.synthetic_corpus.grow_index (issue 59's corpora at scale): the kept
    index's chunks as they are, the source's and its copies' after them, joined streamed into
    one index that loads and searches; each copy's chunks are the source's with moved vectors
    and fewer words, under their own ids."""
    from gralc import index as index_cli
    from gralc.data.demo import DEMO_DIR
    from gralc.experiments.synthetic_corpus import grow_index
    from gralc.inference import Retriever

    articles = sorted((DEMO_DIR / "articles").glob("*.nxml"))
    for name, files in (("kept", articles[:3]), ("source", articles[3:6])):
        (tmp_path / name / "corpus").mkdir(parents=True)
        for f in files:
            (tmp_path / name / "corpus" / f.name).write_bytes(f.read_bytes())
        assert index_cli.main([str(tmp_path / name / "corpus"), "--model", str(exported),
                               "--out", str(tmp_path / name / "index")]) == 0
    kept, source = (Retriever.load(tmp_path / n / "index") for n in ("kept", "source"))
    got = grow_index(tmp_path / "source" / "index", 3, tmp_path / "grown", keep=[tmp_path / "kept" / "index"])
    grown = Retriever.load(tmp_path / "grown")
    n_kept, n_source = len(kept.index), len(source.index)
    assert got["n_chunks"] == len(grown.index) == n_kept + 3 * n_source
    assert [c.chunk_id for c in grown.index.chunks[: n_kept + n_source]] == \
        [c.chunk_id for c in kept.index.chunks] + [c.chunk_id for c in source.index.chunks]
    first, copy = source.index.chunks[0], grown.index.chunks[n_kept + n_source]
    assert copy.chunk_id == first.chunk_id + "~1" and len(copy.text.split()) < len(first.text.split())
    cos = float(np.dot(grown.index.vectors[n_kept + n_source], source.index.vectors[0]))
    assert 0.85 < cos < 0.999
    assert len(grown.scorer.table.units.vectors) == len(kept.scorer.table.units.vectors) + \
        3 * len(source.scorer.table.units.vectors)
    hits = grown.search(QUESTIONS[0], 10)  # a copy's tokens are moved, never NaN bytes
    assert len(hits) == 10 and all(np.isfinite(h.score) and np.isfinite(h.components["maxsim"]) for h in hits)
    assert any(h.chunk.doc_id.endswith(("~1", "~2")) for h in grown.search(QUESTIONS[0], 100))
    assert not (tmp_path / ".grown.parts").exists()


@pytest.mark.slow  # ~60 s: make test-all (CI)
def test_quality_at_scale_scores_the_held_out_questions_among_distractors(exported, tmp_path):
    """gralc.experiments.scale_quality end to end on the demo: the gold articles' index among
    distractor articles (demo articles under other ids) and their copies; each size's corpus
    holds the gold chunks once and the copies, the three searches are scored on the held-out
    questions at the evidence level, the two-stage search equals the exhaustive one on a corpus
    this small, and the gains are paired by article."""
    import json

    from gralc import index as index_cli
    from gralc.data.benchmarks import demo_benchmark
    from gralc.data.demo import DEMO_DIR
    from gralc.data.folds import cv_side
    from gralc.experiments import scale_quality

    articles = sorted((DEMO_DIR / "articles").glob("*.nxml"))
    (tmp_path / "dist").mkdir()
    for f in articles[:3]:  # other articles: the demo's text under other ids
        (tmp_path / "dist" / f.name.replace("PMC9", "PMC8")).write_text(
            f.read_text().replace(f.stem, f.stem.replace("PMC9", "PMC8")).replace(">9000", ">8000"))
    from gralc import shard as shard_cli

    codec = tmp_path / "codec"  # one codec for both, as the shards of one build share one
    assert shard_cli.main(["codec", str(DEMO_DIR / "articles"), "--model", str(exported), "--out", str(codec)]) == 0
    for name, corpus in (("gold", DEMO_DIR / "articles"), ("dist", tmp_path / "dist")):
        assert index_cli.main([str(corpus), "--model", str(exported), "--codec", str(codec),
                               "--out", str(tmp_path / f"{name}.idx")]) == 0
    bench = cv_side(demo_benchmark(), 5, 0, 0, "test")
    got = scale_quality.run(tmp_path / "gold.idx", tmp_path / "dist.idx", bench, [300], tmp_path / "out")
    size = got["sizes"]["300"]
    n_gold = json.loads((tmp_path / "gold.idx" / "config.json").read_text())["n_vectors"]
    n_dist = json.loads((tmp_path / "dist.idx" / "config.json").read_text())["n_vectors"]
    copies = max(1, round((300 - n_gold) / n_dist))
    assert size["n_chunks"] == n_gold + copies * n_dist and copies >= 2
    rows = size["rows"]
    assert rows["two_stage"]["metrics"]["n_evidence_questions"] == len(bench.questions) > 0
    assert rows["two_stage"]["metrics"]["ev_mrr"] > 0 and 0 <= rows["bm25"]["metrics"]["ev_mrr"] <= 1
    assert size["two_stage_minus_exhaustive"]["ev_mrr"]["gain"] == pytest.approx(0.0, abs=1e-9)
    assert size["trained_minus_bm25"]["ev_recall@512wp"]["questions"] == len(bench.questions)
    assert "| two_stage |" in scale_quality.report(got)


def test_kg_prox_idf_weighs_each_question_concept_by_its_idf(exact):
    """scoring.kg_prox_idf: the search's entity mask holds each question concept's IDF over the
    chunks (the concept index's), and the kg_prox it scores is that weighted mean, in two stages
    as with every chunk a candidate."""
    from gralc.retrieval.trained.concept_match import concept_idf

    scorer, pipeline, chunks, index, bm25, pairs, concepts = exact
    model = scorer.model
    base = model.scoring
    search = TrainedSearch(scorer, pipeline, index, bm25, pairs, CandidateConfig(exhaustive=True), concepts)
    plain = search.encode(QUESTIONS)
    model.scoring = replace(base, kg_prox_idf=True)
    try:
        weighted = search.encode(QUESTIONS)
        ids = question_concepts(pipeline.linker, QUESTIONS)
        assert any(len(set(concept_idf(concepts, i).round(6))) > 1 for i in ids), "equal IDFs: cannot fail"
        for i, q_ids in enumerate(ids):
            assert torch.allclose(weighted.entity_mask[i, : len(q_ids)],
                                  torch.as_tensor(concept_idf(concepts, q_ids)).float())
            assert not weighted.entity_mask[i, len(q_ids):].any()
        hits = search.search_encoded(weighted, len(chunks))
        base_hits = search.search_encoded(plain, len(chunks))
        assert any(h.components["kg_prox"] != b.components["kg_prox"] for h, b in zip(hits[0], base_hits[0]))
        # exhaustive search and two stages score it alike: every candidate its exhaustive score
        full = search.scores(weighted).score
        two = TrainedSearch(scorer, pipeline, index, bm25, pairs,
                            CandidateConfig(dense=3, lexical=2, phrase=1, units=1, concepts=1, exact=0), concepts)
        for i, got in enumerate(two.search_batch(QUESTIONS, len(chunks))):
            by_id = {c.chunk_id: float(full[i, j]) for j, c in enumerate(index.chunks)}
            assert 0 < len(got) < len(chunks)
            assert [h.score for h in got] == pytest.approx([by_id[h.chunk.chunk_id] for h in got], abs=1e-6)
    finally:
        model.scoring = base


def test_training_scores_the_concepts_an_index_gives_the_chunks(make_cfg, datamodule, tmp_path):
    """One concept match: training's (B, K) scores of a model's hard chunks equal the index's
    over the chunks gralc.index makes of the same documents (their entity_ids)."""
    from gralc.training.lit_module import GraLCLitModule

    cfg = make_cfg(tmp_path)
    torch.manual_seed(0)
    model = GraLCModel(replace(cfg.model, concept_weight=0.3), cfg.pipeline.chunking.boundary,
                       datamodule.token_dim, datamodule.concept_dim).eval()
    lit = GraLCLitModule(model, cfg.optim)
    examples = [e for e in datamodule.data.train if e.q_concepts][:4]
    assert examples, "no training question links a concept: the test cannot fail"
    doc_ids = list(dict.fromkeys(e.doc_id for e in examples))
    feats = [datamodule.data.features[d] for d in doc_ids]
    with torch.no_grad():
        chunks = model(feats, soft=False)
        got = lit.score_inputs(examples, feats, chunks)[3]
    scorer = TrainedScorer(model, cfg.pipeline)
    pipeline = Pipeline(cfg.pipeline)
    made = scorer.chunk(pipeline, pipeline.prepare([f.doc for f in feats], progress=False))
    assert len(made) == chunks.n_chunks
    index = concept_index(made)
    expected = np.stack([concept_scores(index, e.q_concepts) for e in examples])
    assert expected.max() > 0
    assert np.allclose(got.numpy(), expected, atol=1e-5)
