"""Gradients, a short run that learns, export round trip, resume, NaN guard."""

from __future__ import annotations

import csv
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from gralc.config import ConfigError
from gralc.model.gralc_model import GraLCModel
from gralc.model.persistence import export, load_model
from gralc.model.soft_pooling import soft_chunk_pool
from gralc.retrieval.indexes.bm25 import BM25Index
from gralc.training.config import validate
from gralc.training.datamodule import GraLCDataModule
from gralc.training.lit_module import GraLCLitModule, NonFiniteLossError, info_nce
from gralc.training.run import train

#: Every learnable group of the model, by parameter-name prefix.
GROUPS = [
    "gat.",
    "fusion.mlp.",
    "fusion.lam",
    "boundary.alpha",
    "boundary.gamma",
    "boundary.tau",
    "hybrid.beta_logit",
    "lexical.logit",
]

#: The learned lexical term is on in these tests (it is off by default).
LEXICAL = "model.use_lexical=true"


def _model(dm: GraLCDataModule, cfg) -> GraLCModel:
    torch.manual_seed(0)
    return GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, dm.token_dim, dm.concept_dim)


def _group(model: GraLCModel, prefix: str) -> list[torch.Tensor]:
    params = [p for n, p in model.named_parameters() if n.startswith(prefix)]
    assert params, prefix
    return params


def _mean_loss(lit: GraLCLitModule, dm: GraLCDataModule) -> float:
    lit.model.eval()
    with torch.no_grad():
        losses = [lit.batch_loss(b)[0].item() for b in dm.train_dataloader()]
    lit.model.train()
    return sum(losses) / len(losses)


def test_every_learnable_parameter_gets_a_gradient(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(tmp_path, LEXICAL)
    model = _model(datamodule, cfg)
    lit = GraLCLitModule(model, cfg.optim)
    batch = next(iter(datamodule.train_dataloader()))
    loss, _ = lit.batch_loss(batch)
    assert torch.isfinite(loss) and loss > 0
    loss.backward()
    for prefix in GROUPS:
        for p in _group(model, prefix):
            assert p.grad is not None and p.grad.abs().sum() > 0, f"{prefix} gets no gradient"
    for n, p in model.named_parameters():
        assert p.grad is not None, n


def test_sentence_cut_unit_cuts_and_soft_cuts_only_at_sentence_starts(datamodule, make_cfg, tmp_path):
    """``pipeline.chunking.boundary.cut_unit=sentence``: hard cuts (peak and DP) fall on
    sentence starts only, and the soft cut probability training pools under is 0 elsewhere."""
    from gralc.chunking.sentence_spans import sentence_token_spans

    small = ["pipeline.chunking.boundary.min_tokens=16", "pipeline.chunking.boundary.max_tokens=96"]
    model = _model(datamodule, make_cfg(tmp_path, *small, "pipeline.chunking.boundary.cut_unit=sentence")).eval()
    assert model.boundary_config.cut_unit == "sentence"
    word = _model(datamodule, make_cfg(tmp_path, *small)).eval()
    mid_sentence = 0
    for f in list(datamodule.data.features.values())[:3]:
        starts = {u.tok_start for u in sentence_token_spans(f.doc, f.offsets.numpy())}
        for decoder in ("peak", "dp"):
            spans = model.hard_spans(f, decoder=decoder)
            assert spans[0][0] == 0 and spans[-1][1] == f.n_tokens
            assert {s for s, _ in spans} <= starts
            mid_sentence += sum(s not in starts for s, _ in word.hard_spans(f, decoder=decoder))
        allowed = model.cut_allowed(f)
        assert set(allowed.nonzero().flatten().tolist()) <= starts
        p = model.boundary.cut_probability(model.boundaries(f)) * allowed
        assert float(p[~allowed].abs().sum()) == 0.0 and float(p.sum()) > 0
    assert mid_sentence > 0  # the word-level decoder does cut inside sentences here


def test_hard_chunks_tile_the_document_and_respect_constraints(datamodule, make_cfg, tmp_path):
    model = _model(datamodule, make_cfg(tmp_path)).eval()
    for f in list(datamodule.data.features.values())[:3]:
        for decoder in ("peak", "dp"):
            spans = model.hard_spans(f, decoder=decoder)
            assert spans[0][0] == 0 and spans[-1][1] == f.n_tokens
            assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
            cuts = torch.tensor([s for s, _ in spans[1:]], dtype=torch.long)
            assert not model.forbidden(f)[cuts].any()
        # with 0/1 cut probabilities soft pooling equals the plain mean (paper's late chunking)
        h_prime, _ = model.enrich(f)
        made = model([f], soft=False)
        spans = made.spans[0]
        assert spans == model.hard_spans(f)
        cuts = torch.tensor([s for s, _ in spans[1:]], dtype=torch.long)
        hard = made.vectors
        assert hard.shape == (len(spans), f.H.shape[1])
        p = torch.zeros(f.n_tokens)
        p[cuts] = 1.0
        soft = soft_chunk_pool(h_prime, p, spans)
        assert torch.allclose(soft, hard, atol=1e-4)


@pytest.fixture(scope="module")
def short_run(datamodule, make_cfg, tmp_path_factory):
    """Three epochs on the demo subset; returns (cfg, model, lit, initial copy, result, loss0)."""
    out = tmp_path_factory.mktemp("short_run")
    cfg = make_cfg(out, "trainer.max_epochs=3", "callbacks.early_stopping.enabled=false")
    model = _model(datamodule, cfg)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    loss0 = _mean_loss(GraLCLitModule(model, cfg.optim), datamodule)
    result = train(cfg, model=model)
    return cfg, model, initial, result, loss0


@pytest.fixture(scope="module")
def lexical_run(datamodule, make_cfg, tmp_path_factory):
    """Two epochs with the learned lexical term; returns (cfg, model, initial copy, result)."""
    out = tmp_path_factory.mktemp("lexical_run")
    cfg = make_cfg(out, "trainer.max_epochs=2", "callbacks.early_stopping.enabled=false", LEXICAL)
    model = _model(datamodule, cfg)
    initial = {n: p.detach().clone() for n, p in model.named_parameters()}
    return cfg, model, initial, train(cfg, model=model)


def test_short_run_lowers_the_loss_and_moves_every_parameter(short_run, datamodule):
    cfg, model, initial, result, loss0 = short_run
    loss1 = _mean_loss(GraLCLitModule(model, cfg.optim), datamodule)
    assert loss1 < loss0 - 0.01, (loss0, loss1)
    named = dict(model.named_parameters())
    for prefix in GROUPS[:-1]:  # all but the lexical term (off by default)
        moved = [not torch.equal(named[n], initial[n]) for n in named if n.startswith(prefix)]
        assert all(moved), f"{prefix} did not change"
    assert result["global_step"] > 0 and result["best_val_mrr"] is not None
    assert set(result["learned_values"]) == {
        "alpha_struct",
        "alpha_sem",
        "alpha_entity",
        "gamma",
        "tau",
        "beta",
        "lambda",
    }
    out = Path(cfg.paths.output_dir)
    assert (out / "config.yaml").is_file() and (out / "run.json").is_file()
    rows = list(csv.DictReader(open(next((out / "csv").rglob("metrics.csv")))))
    assert any(r.get("learned/tau") for r in rows) and any(r.get("val/mrr") for r in rows)


def test_lexical_weight_is_learned_and_survives_export(lexical_run, datamodule, tmp_path):
    """w_lex changes in training and comes back identical from the checkpoint and the export;
    the reloaded model scores the dev corpus exactly as the trained one (BM25 included)."""
    cfg, model, initial, result = lexical_run
    assert not torch.equal(model.lexical.logit, initial["lexical.logit"])
    learned = result["final_learned_values"]["lexical_weight"]
    assert learned != pytest.approx(cfg.model.lexical_init, abs=1e-4)
    last = Path(result["last_checkpoint"])
    export(last, tmp_path / "export")
    batch = datamodule.val_batch()
    scores = []
    for m in (model.eval(), load_model(last)[0], load_model(tmp_path / "export")[0]):
        assert m.learned_values()["lexical_weight"] == pytest.approx(learned, abs=0)
        scores.append(GraLCLitModule(m, cfg.optim).retrieval_scores(batch)[0])
    assert torch.equal(scores[0], scores[1]) and torch.equal(scores[1], scores[2])
    without = GraLCLitModule(load_model(tmp_path / "export")[0], cfg.optim)
    without.model.lexical = None  # the same model minus its lexical term ranks differently
    assert not torch.equal(without.retrieval_scores(batch)[0], scores[0])


def test_checkpoint_export_reload_give_identical_scores(short_run, datamodule, tmp_path):
    cfg, model, _, result, _ = short_run
    last = Path(result["last_checkpoint"])
    assert last.is_file() and not last.is_symlink()
    ckpt = torch.load(last, weights_only=True)
    assert ckpt["global_step"] == result["global_step"]
    assert ckpt["gralc"]["run"]["git_hash"] and ckpt["gralc"]["train_config"]["seed"] == cfg.seed
    export(last, tmp_path / "export")
    assert (tmp_path / "export" / "inference.yaml").read_text().count("tau") >= 1
    batch = datamodule.val_batch()
    scores = []
    for m in (model.eval(), load_model(last)[0], load_model(tmp_path / "export")[0]):
        scores.append(GraLCLitModule(m, cfg.optim).retrieval_scores(batch)[0])
    assert torch.equal(scores[0], scores[1]) and torch.equal(scores[1], scores[2])
    pipeline_cfg = load_model(tmp_path / "export")[1]
    assert pipeline_cfg.encoder.model == cfg.pipeline.encoder.model


def test_old_layout_export_loads_with_the_same_scores(short_run, datamodule, tmp_path):
    """An export written before the boundary settings moved into pipeline.chunking.boundary
    (alpha_init, gamma_init, tau_init, decoder, bounds and temperature in model_config)."""
    from omegaconf import OmegaConf

    cfg, model, _, result, _ = short_run
    export(Path(result["last_checkpoint"]), tmp_path / "export")
    doc = OmegaConf.to_container(OmegaConf.load(tmp_path / "export" / "inference.yaml"))
    b = doc["pipeline_config"]["chunking"]["boundary"]
    doc["model_config"].update(
        alpha_init=[b["alpha_struct"], b["alpha_sem"], b["alpha_entity"]], gamma_init=b["gamma"],
        tau_init=b["tau"], decoder=b["decoder"], min_tokens=b["min_tokens"],
        max_tokens=b["max_tokens"], temperature=doc["model_config"].pop("cut_temperature"))
    doc["pipeline_config"]["chunking"]["boundary"] = {"window": b["window"]}  # baseline defaults
    OmegaConf.save(OmegaConf.create(doc), tmp_path / "export" / "inference.yaml")
    from gralc.artefacts import MARKER, _write_marker

    (tmp_path / "export" / MARKER).unlink()  # as an older GraLC wrote it, manifest and all
    _write_marker(tmp_path / "export", "export")
    old = load_model(tmp_path / "export")[0]
    assert old.boundary_config.min_tokens == cfg.pipeline.chunking.boundary.min_tokens == 64
    batch = datamodule.val_batch()
    a = GraLCLitModule(model.eval(), cfg.optim).retrieval_scores(batch)[0]
    assert torch.equal(a, GraLCLitModule(old, cfg.optim).retrieval_scores(batch)[0])


def test_a_trained_model_keeps_its_own_settings(short_run, tmp_path):
    """gralc.index --model with an override that contradicts the model: an error naming both
    values; runtime settings may differ."""
    from gralc.data.demo import DEMO_DIR
    from gralc.inference import Retriever

    _, _, _, result, _ = short_run
    article = DEMO_DIR / "articles" / "PMC9000001.nxml"
    with pytest.raises(ValueError, match=r"chunking.boundary.window: saved=16, given=8"):
        Retriever.build(article, model=result["last_checkpoint"],
                        overrides=["chunking.boundary.window=8"])
    r = Retriever.build(article, model=result["last_checkpoint"], overrides=["encoder.batch_size=2"])
    assert r.pipeline.config.encoder.batch_size == 2 and len(r.index) > 0


class Kill(RuntimeError):
    pass


class KillAt(pl.Callback):
    """Simulates a crash in the middle of epoch ``epoch`` (after last.ckpt of the previous)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if trainer.current_epoch == self.epoch and batch_idx == 1:
            raise Kill("simulated kill")


class FirstStep(pl.Callback):
    def __init__(self) -> None:
        self.first: tuple[int, int] | None = None

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.first is None:
            self.first = (trainer.global_step, trainer.current_epoch)


def test_killed_run_resumes_with_its_global_step(datamodule, make_cfg, tmp_path):
    args = ("trainer.limit_train_batches=3", "callbacks.early_stopping.enabled=false")
    with pytest.raises(FileNotFoundError, match="last.ckpt does not exist"):
        train(make_cfg(tmp_path, "resume=last", *args))
    with pytest.raises(Kill):
        train(make_cfg(tmp_path, "trainer.max_epochs=3", *args), callbacks=[KillAt(epoch=1)])
    last = tmp_path / "checkpoints" / "last.ckpt"
    assert torch.load(last, weights_only=True)["global_step"] == 3  # epoch 0 done
    first = FirstStep()
    result = train(
        make_cfg(tmp_path, "trainer.max_epochs=2", "resume=last", *args), callbacks=[first]
    )
    assert first.first == (3, 1)  # continues at step 3 in epoch 1, not from scratch
    assert result["global_step"] == 6


class LearningRates(pl.Callback):
    """Every parameter group's learning rate at each optimiser step."""

    def __init__(self) -> None:
        self.steps: list[list[float]] = []

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self.steps.append([g["lr"] for g in optimizer.param_groups])


def test_linear_schedule_warms_up_decays_and_resumes_where_it_stopped(datamodule, make_cfg, tmp_path):
    """``optim.schedule=linear``: over 2 epochs x 3 steps with warm-up over a third of them,
    every group's rate (the scalars' at lr * scalar_lr_scale) rises over 2 steps, then falls
    linearly toward 0 at the end; a run killed in epoch 1 resumes on the same schedule; the
    default keeps the rate constant; a bad schedule is refused at load."""
    args = ("trainer.limit_train_batches=3", "trainer.max_epochs=2", "optim.warmup_fraction=0.34",
            "callbacks.early_stopping.enabled=false", "optim.schedule=linear")  # keep schedule last
    whole = LearningRates()
    train(make_cfg(tmp_path / "whole", *args), callbacks=[whole])
    lr, scale = 0.003, 10.0  # SMALL's optim.lr and the default scalar_lr_scale
    factors = [0.0, 0.5, 1.0, 0.75, 0.5, 0.25]  # step / 2 while warming, then (6 - step) / 4
    assert len(whole.steps) == 6 and all(len(groups) == 2 for groups in whole.steps)
    assert [g[0] for g in whole.steps] == pytest.approx([lr * f for f in factors])
    assert [g[1] for g in whole.steps] == pytest.approx([lr * scale * f for f in factors])

    with pytest.raises(Kill):
        train(make_cfg(tmp_path / "killed", *args), callbacks=[KillAt(epoch=1)])
    resumed = LearningRates()
    train(make_cfg(tmp_path / "killed", *args, "resume=last"), callbacks=[resumed])
    assert np.allclose(resumed.steps, whole.steps[3:])

    constant = LearningRates()
    train(make_cfg(tmp_path / "constant", *args[:-1]), callbacks=[constant])
    assert np.allclose(constant.steps, [[lr, lr * scale]] * 6)
    with pytest.raises(ConfigError, match="optim.schedule must be one of constant, linear"):
        validate(make_cfg(tmp_path, "optim.schedule=cosine"))
    with pytest.raises(ConfigError, match="optim.warmup_fraction"):
        validate(make_cfg(tmp_path, "optim.warmup_fraction=1"))


def test_nan_loss_stops_training_without_a_broken_checkpoint(datamodule, make_cfg, tmp_path):
    cfg = make_cfg(tmp_path, "trainer.max_epochs=2")
    model = _model(datamodule, cfg)
    with torch.no_grad():
        model.boundary.tau.fill_(float("nan"))
    with pytest.raises(NonFiniteLossError, match="boundary.tau"):
        train(cfg, model=model)
    for path in (
        (tmp_path / "checkpoints").glob("*.ckpt") if (tmp_path / "checkpoints").exists() else []
    ):
        state = torch.load(path, weights_only=True)["state_dict"]
        assert all(torch.isfinite(v).all() for v in state.values()), path
    lit = GraLCLitModule(model, cfg.optim)
    with pytest.raises(NonFiniteLossError, match="refusing to checkpoint"):
        lit.on_save_checkpoint({})


def test_feature_cache_round_trips_real_training_data(datamodule, tmp_path):
    """The JSON + safetensors cache gives back the same records and tensors it was given."""
    from dataclasses import fields

    from gralc.training.features import load_features, save_features

    data = datamodule.data
    save_features(data, tmp_path / "cache")
    back = load_features(tmp_path / "cache")
    assert type(back) is type(data) and back.train_doc_ids == data.train_doc_ids
    doc_id = data.train[0].doc_id
    a, b = data.features[doc_id], back.features[doc_id]
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, torch.Tensor):
            assert x.dtype == y.dtype and torch.equal(x, y), f.name
        else:
            assert x == y, f.name
    e, e2 = data.train[0], back.train[0]
    assert e.positives.char_ranges == e2.positives.char_ranges
    assert all(isinstance(r, tuple) for r in e2.positives.char_ranges)
    assert torch.equal(e.q_vec, e2.q_vec) and e.q_concepts == e2.q_concepts and e.text == e2.text


@pytest.mark.parametrize("settings, match", [({"cut_unit": "token"}, "cut_unit"),
                                             ({"phrase_weight": 2.0}, "phrase_weight"),
                                             ({"min_tokens": 8}, "min_tokens")])
def test_export_refuses_bad_settings_before_writing(short_run, tmp_path, settings, match):
    """A bad export-time setting (or one that is not an export-time setting) is one error
    naming it, raised before anything is read or written: a user's --out folder is untouched."""
    result = short_run[3]
    out = tmp_path / "export"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=match):
        export(Path(result["last_checkpoint"]), out, settings=settings)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


PHRASE_AND_SENTENCE_CUTS = {"phrase_weight": 0.2, "cut_unit": "sentence"}


@pytest.mark.parametrize("run, sentences, late, extra", [("short_run", None, None, {}),
                                                         pytest.param("lexical_run", None, None, {},
                                                                      marks=pytest.mark.slow),
                                                         ("lexical_run", 0.3, None, {}),
                                                         # the late-interaction cases (~30 s each) run
                                                         # with make test-all (CI)
                                                         pytest.param("lexical_run", 0.3, 0.4, {},
                                                                      marks=pytest.mark.slow),
                                                         pytest.param("lexical_run", 0.3, 0.4,
                                                                      PHRASE_AND_SENTENCE_CUTS,
                                                                      marks=pytest.mark.slow)])
def test_exported_model_ranks_alike_in_index_search_and_eval(run, sentences, late, extra, request, tmp_path):
    """One trained model, three entry points: gralc.index --model + gralc.search, and eval.py
    models=[...] (its gralc row) return the same ranking for a question (with the
    lexical term too: BM25 saved with the index; exported with sentence evidence: the
    sentence units saved with the index; with late interaction: the token vectors; with a
    term-pair BM25 and cuts at sentence starts only: the term-pair BM25 in ``phrase/``)."""
    from gralc.data.benchmarks import demo_benchmark
    from gralc.data.demo import DEMO_DIR
    from gralc.evaluation.evidence import PieceCounter
    from gralc.evaluation.methods import RunSettings
    from gralc.evaluation.trained_rows import evaluate_trained
    from gralc.inference import Retriever
    from gralc.pipeline import Pipeline
    from gralc.retrieval.trained.scorer import TrainedScorer

    result = request.getfixturevalue(run)[3]
    settings = {k: v for k, v in (("sentence_evidence", sentences), ("late_interaction", late))
                if v is not None}
    out = export(Path(result["last_checkpoint"]), tmp_path / "export", settings={**settings, **extra})
    Retriever.build(DEMO_DIR / "articles", model=out).save(tmp_path / "index")
    assert TrainedScorer.load(out).uses_units == (sentences is not None)
    loaded = TrainedScorer.load(out)
    assert loaded.model.boundary_config.cut_unit == extra.get("cut_unit", "word")
    assert loaded.model.config.phrase_weight == extra.get("phrase_weight", 0.0)
    assert (tmp_path / "index" / "phrase").is_dir() == bool(extra)
    assert (tmp_path / "index" / "trained" / "units").is_dir() == (sentences is not None)
    assert (tmp_path / "index" / "trained" / "tokens").is_dir() == (late is not None)
    bench = demo_benchmark()
    bench.questions = bench.questions[:3]
    searched = [[h.chunk.chunk_id for h in Retriever.load(tmp_path / "index").search(q.text, k=10)]
                for q in bench.questions]
    scorer = TrainedScorer.load(out)
    pipeline = Pipeline(scorer.pipeline_config)
    rows = evaluate_trained(out, bench, pipeline.prepare(bench.documents, progress=False), pipeline,
                            RunSettings((1, 10), pieces=PieceCounter(pipeline.encoder.tokenizer)),
                            scorer=scorer)
    graph = next(r for r in rows if r.method == "gralc")
    evaluated = [q["top"] for q in graph.per_query]
    assert searched == evaluated and all(len(s) == 10 for s in searched)
    if extra:  # an index that lost its term-pair BM25 says what is missing and the fix
        import shutil

        shutil.rmtree(tmp_path / "index" / "phrase")
        with pytest.raises(FileNotFoundError, match=r"phrase/.* is missing.*rebuild it"):
            Retriever.load(tmp_path / "index")


def test_evidence_cut_loss_teaches_boundaries_to_keep_evidence_whole(datamodule, make_cfg, tmp_path):
    """optim.evidence_cut_weight: the boundary loss from evidence reaches alpha and tau, and a
    few steps on it make cuts inside evidence rarer relative to the rest of the document."""
    cfg = make_cfg(tmp_path, "optim.evidence_cut_weight=1.0")
    model = _model(datamodule, cfg)
    lit = GraLCLitModule(model, cfg.optim)
    examples = [e for e in datamodule.data.train if e.positives.char_ranges][:6]
    assert examples
    docs = [datamodule.data.features[e.doc_id] for e in examples]
    start = lit.evidence_cut_loss(examples, docs)
    start.backward()
    b = model.boundary
    assert b.alpha.grad.abs().sum() > 0 and b.tau.grad.abs() > 0
    opt = torch.optim.Adam([b.alpha, b.gamma, b.tau], lr=0.05)
    for _ in range(20):
        opt.zero_grad()
        loss = lit.evidence_cut_loss(examples, docs)
        loss.backward()
        opt.step()
    assert float(lit.evidence_cut_loss(examples, docs)) < float(start) - 0.01
    batch = next(iter(datamodule.train_dataloader()))  # and it is part of the training loss
    with_term = lit.batch_loss(batch)[0]
    lit.optim = cfg.optim.__class__(**{**vars(cfg.optim), "evidence_cut_weight": 0.0})
    assert not torch.equal(with_term, lit.batch_loss(batch)[0])
    with pytest.raises(ConfigError, match="evidence_cut_weight"):
        validate(make_cfg(tmp_path, "optim.evidence_cut_weight=-1"))


def test_validation_reports_the_evidence_level_mrr(datamodule, make_cfg, tmp_path):
    """val/ev_mrr ranks the chunks holding the evidence; with every chunk of the gold
    document positive (pairs.positives=document) it is the document-level val/mrr."""
    ranked = torch.tensor([[0.9, 0.8, 0.7, 0.1], [0.2, 0.9, 0.3, 0.4]])
    doc_of = ["a", "a", "b", "b"]
    assert GraLCLitModule.evidence_reciprocal_rank(ranked, doc_of, [[2], [3]]) == pytest.approx(
        (1 / 3 + 1 / 2) / 2)
    assert GraLCLitModule.evidence_reciprocal_rank(ranked, doc_of, [[], [1]]) == 0.5
    cfg = make_cfg(tmp_path)
    lit = GraLCLitModule(_model(datamodule, cfg).eval(), cfg.optim)
    batch = datamodule.val_batch()
    m = lit.retrieval_metrics(batch)
    assert 0 < m["ev_mrr"] <= m["mrr"] + 1e-9  # a gold document's chunk ranks first, at best
    from gralc.training.pairs import Positives

    whole = [replace(e, positives=Positives()) for e in batch.examples]
    m_doc = lit.retrieval_metrics(type(batch)(whole, batch.docs))
    assert m_doc["ev_mrr"] == pytest.approx(m_doc["mrr"])


class TermStatsSpy(pl.Callback):
    """Records the module's term statistics when training starts."""

    def on_train_start(self, trainer, pl_module) -> None:
        self.stats = pl_module.term_stats


def test_corpus_term_stats_give_the_batch_the_corpus_index_scores(datamodule, make_cfg, tmp_path):
    """optim.lexical_stats=corpus: fitting starts by taking BM25 term statistics from the
    model's chunks of every training-corpus document, and a batch's lexical term then equals
    what a BM25 index of those chunks gives the batch's chunks (not the batch's own BM25)."""
    cfg = make_cfg(tmp_path, LEXICAL, "optim.lexical_stats=corpus", "trainer.max_epochs=1",
                   "trainer.limit_train_batches=1", "trainer.validate_before_fit=false")
    spy = TermStatsSpy()
    train(cfg, model=_model(datamodule, cfg), callbacks=[spy])
    assert spy.stats is not None and spy.stats.n_docs > 0
    model = _model(datamodule, cfg).eval()
    lit = GraLCLitModule(model, cfg.optim)
    corpus = datamodule.corpus_features()
    stats = lit.corpus_term_stats(corpus)
    texts = lit.chunk_texts(corpus, model(corpus, soft=False))
    assert stats.n_docs == len(texts)
    index = BM25Index()
    index._index_texts(texts)
    batch = next(iter(datamodule.train_dataloader()))
    chunks = model(batch.docs, soft=False)
    questions = [e.text for e in batch.examples]
    rows = [texts.index(t) for t in lit.chunk_texts(batch.docs, chunks)]
    corpus_scores = index.score_matrix(questions)[:, rows]
    got = lit.score_inputs(batch.examples, batch.docs, chunks, stats)[0].numpy()
    assert np.allclose(got, corpus_scores, atol=1e-4)
    assert not np.allclose(lit.score_inputs(batch.examples, batch.docs, chunks)[0].numpy(),
                           corpus_scores, atol=1e-2)
    with pytest.raises(ConfigError, match="lexical_stats"):
        validate(make_cfg(tmp_path, "optim.lexical_stats=global"))


def test_export_sets_only_inference_settings_and_validates_them_first(short_run, make_cfg, tmp_path):
    """gralc export scoring.sentence_evidence=W: stored in the export; any other key, or a bad value,
    is refused before anything is written."""
    from gralc.model.persistence import load_trained

    ckpt = Path(short_run[3]["last_checkpoint"])
    out = export(ckpt, tmp_path / "ok", settings={"sentence_evidence": 0.25, "evidence_sentences": 2})
    cfg = load_trained(out).model.config
    assert (cfg.sentence_evidence, cfg.evidence_sentences) == (0.25, 2)
    assert load_trained(ckpt).model.config.sentence_evidence == 0.0  # the checkpoint's own
    with pytest.raises(ValueError, match="only"):
        export(ckpt, tmp_path / "bad_key", settings={"beta_init": 0.1})
    with pytest.raises(ValueError, match="sentence_evidence"):
        export(ckpt, tmp_path / "bad_value", settings={"sentence_evidence": 1.5})
    with pytest.raises(ValueError, match="late_interaction"):
        export(ckpt, tmp_path / "bad_late", settings={"late_interaction": 1.0})
    assert not any((tmp_path / d).exists() for d in ("bad_key", "bad_value", "bad_late"))
    late = export(ckpt, tmp_path / "late", settings={"late_interaction": 0.4})
    assert load_trained(late).model.scoring.late_interaction == 0.4
    # training never applies it: GraLC 0.2's model.late_interaction= is the experiment's scoring
    assert validate(make_cfg(tmp_path, "model.late_interaction=0.4")).scoring == {"late_interaction": 0.4}
    with pytest.raises(ConfigError, match="scoring.late_interaction"):
        validate(make_cfg(tmp_path, "scoring.late_interaction=1.0"))


def test_training_scores_chunks_with_sentence_evidence_when_set(datamodule, make_cfg, tmp_path):
    """model.sentence_evidence > 0 in training: the batch loss and the dev metrics score chunks
    with their best sentence unit mixed in (units pooled from H', their own BM25), and the loss
    reaches the learned parts through the units."""
    cfg = make_cfg(tmp_path, LEXICAL, "model.sentence_evidence=0.5")
    model = _model(datamodule, cfg)
    lit = GraLCLitModule(model, cfg.optim)
    assert lit.uses_units
    batch = next(iter(datamodule.train_dataloader()))
    loss = lit.batch_loss(batch)[0]
    loss.backward()
    assert torch.isfinite(loss) and model.lexical.logit.grad.abs() > 0
    assert model.fusion.lam.grad.abs().sum() > 0
    docs = lit.training_views(batch)[1]
    chunks = model(docs, soft=True, units=True)
    assert chunks.units is not None and chunks.units.n_chunks > chunks.n_chunks
    assert lit.score_inputs(batch.examples, docs, chunks)[1].shape == (len(batch.examples), chunks.units.n_chunks)
    model.config = replace(model.config, sentence_evidence=0.0)
    assert not lit.uses_units and not torch.allclose(lit.batch_loss(batch)[0], loss)
    model.config = replace(model.config, sentence_evidence=0.5)
    with torch.no_grad():
        m = lit.retrieval_metrics(datamodule.val_batch())
    assert 0 < m["ev_mrr"] <= 1


def test_dense_loss_trains_the_cosine_on_its_own(datamodule, make_cfg, tmp_path):
    """optim.dense_weight: the batch loss adds an InfoNCE over the chunks' cosine alone, which
    reaches the token fusion but not the lexical weight (the cosine does not depend on it)."""
    cfg = make_cfg(tmp_path, LEXICAL, "optim.dense_weight=0.5")
    model = _model(datamodule, cfg).eval()  # no dropout: the three passes below see one model
    lit = GraLCLitModule(model, cfg.optim)
    batch = next(iter(datamodule.train_dataloader()))
    both = lit.batch_loss(batch)[0]
    assert set(lit.loss_parts) == {"score", "dense"}  # logged as train/loss_score, _dense
    assert sum(lit.loss_parts.values()) == pytest.approx(both.item(), rel=1e-5)
    lit.optim = replace(cfg.optim, dense_weight=0.0)
    hybrid = lit.batch_loss(batch)[0]
    assert lit.loss_parts == {}  # a single term: train/loss says it all
    # the added term, by hand: positives as the loss marks them, logits = cos / temperature
    examples = batch.examples
    cached, docs = lit.training_views(batch)
    chunks = model(docs, soft=True)
    q, q_ent, q_mask = lit.queries(examples)[:3]
    lexical = lit.score_inputs(examples, docs, chunks)[0]
    cos = model.score_parts(q, q_ent, q_mask, chunks, lexical)[1] / cfg.optim.temperature
    terms = []
    for i, (e, f) in enumerate(zip(examples, cached)):
        pos = [chunks.starts[i] + k for k in e.positives.resolve(f, chunks.spans[i])]
        terms.append(torch.logsumexp(cos[i], 0) - torch.logsumexp(cos[i, pos], 0))
    expected = torch.stack(terms).mean()
    assert float(both - hybrid) == pytest.approx(0.5 * expected.item(), rel=1e-4)
    model.zero_grad()
    info_nce(model.score_parts(q, q_ent, q_mask, chunks, lexical)[1],
             torch.ones_like(cos, dtype=torch.bool).tril(), 0.05).backward()
    assert model.fusion.lam.grad.abs().sum() > 0 and model.fusion.mlp[0].weight.grad.abs().sum() > 0
    assert model.lexical.logit.grad is None or model.lexical.logit.grad.abs() == 0
    with pytest.raises(ConfigError, match="dense_weight"):
        validate(make_cfg(tmp_path, "optim.dense_weight=-1"))


def test_every_epoch_logs_a_line_and_the_run_folder_gets_its_training_curve(train_once, tmp_path, caplog):
    """One INFO line per epoch (train loss, val/mrr, val/ev_mrr, seconds) and a valid
    training_curve.png in the run folder; the epoch's values travel in the checkpoint, so a
    resumed run's curve keeps the epochs before it."""
    import logging

    from matplotlib.image import imread

    from gralc.training.callbacks import CURVE_FILE

    caplog.set_level(logging.INFO, logger="gralc.training.callbacks")
    last = train_once(tmp_path / "run")
    lines = [r.getMessage() for r in caplog.records if r.name == "gralc.training.callbacks"]
    assert len(lines) == 1, lines
    assert re.fullmatch(r"epoch 1/1: train/loss \d+\.\d{4}, val/mrr \d\.\d{4}, val/ev_mrr \d\.\d{4} "
                        r"\(\d+\.\d s; \d+\.\d s in all\)", lines[0]), lines[0]
    curve = tmp_path / "run" / CURVE_FILE
    assert curve.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert imread(curve).shape[1] >= 800  # decodes: a whole image
    state = torch.load(last, weights_only=True)["callbacks"]["EpochReport"]
    assert [h["epoch"] for h in state["history"]] == [1.0]
    assert state["history"][0]["train/loss"] > 0 and state["initial"]["val/mrr"] is not None
