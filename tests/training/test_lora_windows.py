"""LoRA training on encoder windows (``lora.windows_per_doc``): a step encodes the window that
holds each question's evidence, other windows of the same document and one window of each
extra document, instead of whole documents; the cropped features resolve evidence and chunk
texts as the whole document does. Real MiniLM, real peft, demo features."""

from __future__ import annotations

import pytest
import torch

from gralc.encoding.lora import LoraEncoder
from gralc.encoding.precision import native_bf16, resolve_precision
from gralc.encoding.windows import plan_windows
from gralc.model.doc_windows import crop_features, evidence_window, lexical_window
from gralc.model.gralc_model import GraLCModel
from gralc.training.datamodule import TrainBatch
from gralc.training.lit_module import GraLCLitModule


@pytest.fixture(scope="module")
def lora(make_cfg, tmp_path_factory):
    cfg = make_cfg(tmp_path_factory.mktemp("lw"), "lora.enabled=true")
    torch.manual_seed(0)
    enc = LoraEncoder.build(cfg.pipeline.encoder, 8, 16, 0.0, ["query", "value"], precision="fp32")
    with torch.no_grad():  # non-zero adapters, so adapted and cached vectors differ
        for n, p in enc.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    return cfg, enc.eval()


def _long_example(datamodule):
    """A training example whose gold document spans several encoder windows."""
    for e in datamodule.data.train:
        f = datamodule.data.features[e.doc_id]
        if f.n_tokens > 1200 and e.positives.char_ranges:
            return e, f
    raise AssertionError("the demo training set lost its multi-window documents with evidence")


def test_crop_keeps_characters_and_mentions(datamodule):
    e, f = _long_example(datamodule)
    s, t = 300, 810
    c = crop_features(f, s, t)
    assert c.n_tokens == t - s and torch.equal(c.H, f.H[s:t])
    assert c.char_span(0, 10) == f.char_span(s, s + 10)  # characters of the whole document
    rows = f.token_entity[0]
    assert c.token_entity.shape[1] == int(((rows >= s) & (rows < t)).sum())
    assert (c.token_entity[0] >= 0).all() and (c.token_entity[0] < t - s).all()
    assert (c.mention_tokens[:, 0] >= 0).all() and (c.mention_tokens[:, 1] <= t - s).all()
    assert crop_features(f, 0, f.n_tokens) is f
    with pytest.raises(ValueError, match="outside"):
        crop_features(f, 0, f.n_tokens + 1)


def test_evidence_window_holds_the_evidence(datamodule):
    e, f = _long_example(datamodule)
    windows = plan_windows(f.n_tokens, 510, 128)
    k = evidence_window(f, e.positives.char_ranges, windows)
    s, t = windows[k]
    cs, ce = e.positives.char_ranges[0]
    assert int(f.offsets[s, 0]) <= cs and ce <= int(f.offsets[t - 1, 1])
    # the chunks of that window resolve the evidence as positives
    c = crop_features(f, s, t)
    assert e.positives.resolve(c, [(0, 100), (100, t - s)])
    assert evidence_window(f, [], windows) == len(windows) // 2


def test_windowed_views_encode_windows_with_gradient(datamodule, lora):
    cfg, enc = lora
    e, f = _long_example(datamodule)
    other = next(d for d in datamodule.data.train_doc_ids if d != e.doc_id)
    batch = TrainBatch([e], [f, datamodule.data.features[other]])
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim)
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=2)
    cached, adapted = lit.training_views(batch)
    # gold evidence window, one more window of the gold document, one of the extra document
    assert [c.doc_id for c in cached] == [f.doc_id, f.doc_id, other]
    assert all(c.n_tokens <= enc.encoder.window for c in cached)
    assert all(a.H.requires_grad for a in adapted)
    windows = enc.plan(f.n_tokens)
    k = evidence_window(f, e.positives.char_ranges, windows)
    assert int(cached[0].offsets[0, 0]) == int(f.offsets[windows[k][0], 0])
    assert not torch.equal(cached[0].offsets, cached[1].offsets)  # another window
    # inside a window, away from its overlaps, the windowed pass IS the whole-document pass
    with torch.no_grad():
        whole = enc.encode_document(f.doc.text)
    s, t = windows[k]
    covered = torch.zeros(f.n_tokens, dtype=torch.int)
    for ws, wt in windows:
        covered[ws:wt] += 1
    only = (covered[s:t] == 1).nonzero().flatten()
    assert len(only) > 0
    assert torch.allclose(adapted[0].H[only].detach(), whole[s:t][only], atol=1e-5)
    # a training step backpropagates into the adapters
    lit.batch_loss(batch)[0].backward()
    grads = [p.grad for n, p in enc.named_parameters() if "lora_B" in n]
    assert all(g is not None and g.abs().sum() > 0 for g in grads)
    # windows_per_doc = 0: whole documents
    whole_lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=0)
    cached0, adapted0 = whole_lit.training_views(batch)
    assert cached0 is batch.docs and adapted0[0].n_tokens == f.n_tokens


def test_lexical_window_is_the_most_confusable_other_window():
    doc = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 50, 51, 52, 1, 2]
    windows = [(0, 6), (4, 10), (8, 14), (12, 17)]
    # pieces 50, 51 (two windows) and 9 (two windows) all sit in window 2
    assert lexical_window([50, 51, 9], doc, windows, evidence=0) == 2
    # 1 and 2 also occur inside the evidence window; only window 3 holds them outside it
    assert lexical_window([1, 2], doc, windows, evidence=0) == 3
    # a piece the question shares with no window, or with every window, picks none
    assert lexical_window([99], doc, windows, evidence=0) is None
    assert lexical_window([5, 6], [5, 6] * 9, [(0, 6), (4, 10), (8, 14), (12, 18)], evidence=1) is None


def test_hard_windows_take_the_lexical_window_first(datamodule, lora, monkeypatch):
    cfg, enc = lora
    e, f = _long_example(datamodule)
    batch = TrainBatch([e], [f])
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim)
    windows = enc.plan(f.n_tokens)
    k = evidence_window(f, e.positives.char_ranges, windows)
    hard = lexical_window(enc.token_ids(e.text), enc.token_ids(f.doc.text), windows, k)
    assert hard is not None and hard != k
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=2, hard_windows=True)
    cached, _ = lit.training_views(batch)
    assert int(cached[1].offsets[0, 0]) == int(f.offsets[windows[hard][0], 0])
    # off, the second window is drawn at random: over steps it is not always the hard one
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=2)
    assert len(windows) > 2, "the demo's long document lost its third window"
    starts = set()
    for step in range(8):
        monkeypatch.setattr(GraLCLitModule, "global_step", property(lambda self, s=step: s))
        starts.add(int(lit.training_views(batch)[0][1].offsets[0, 0]))
    assert len(starts) > 1


def test_auto_precision_follows_the_hardware(monkeypatch):
    import gralc.encoding.precision as precision

    cpu = torch.device("cpu")
    assert resolve_precision("fp32", cpu) == "fp32" and resolve_precision("bf16", cpu) == "bf16"
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))
    # the flags allow bf16; the measured speed decides (bf16 is slower on some such CPUs)
    monkeypatch.setattr(precision, "bf16_speedup", lambda: 2.5)
    assert resolve_precision("auto", cpu) == "bf16"
    monkeypatch.setattr(precision, "bf16_speedup", lambda: 0.73)
    assert resolve_precision("auto", cpu) == "fp32"
    assert "0.73x" in precision.explain_precision("auto", cpu)[1]
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2", "fma"}))
    assert resolve_precision("auto", cpu) == "fp32"
    assert "5x slower" in native_bf16(cpu)[1]
    with pytest.raises(ValueError, match="precision"):
        resolve_precision("fp16", cpu)


def test_identity_adapters_reuse_the_frozen_features(datamodule, make_cfg, tmp_path):
    """Before the first step the adapters are the identity: validation keeps the cached
    features (the adapted pass would give the same vectors), and stops as soon as B moves."""
    from gralc.model.doc_features import adapted_features

    cfg = make_cfg(tmp_path, "lora.enabled=true")
    enc = LoraEncoder.build(cfg.pipeline.encoder, 8, 16, 0.0, ["query", "value"]).eval()
    assert enc.identity() and enc.matches_frozen
    _, f = _long_example(datamodule)
    window = cfg.pipeline.chunking.boundary.window
    fresh = adapted_features(f, enc, window)  # what validation computed before
    assert torch.allclose(fresh.H, f.H, atol=1e-5) and torch.allclose(fresh.b_sem, f.b_sem, atol=1e-5)
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                       datamodule.concept_dim)
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, sem_window=window)
    with torch.no_grad():
        assert lit.features([f])[0] is f
    assert lit.features([f])[0] is not f  # training (with gradient) always runs the adapters
    with torch.no_grad():
        next(p for n, p in enc.named_parameters() if "lora_B" in n)[0, 0] = 1e-3
        assert not enc.identity() and lit.features([f])[0] is not f
    other = "bf16" if resolve_precision(cfg.pipeline.encoder.precision, torch.device("cpu")) == "fp32" else "fp32"
    assert not LoraEncoder.build(cfg.pipeline.encoder, 8, 16, 0.0, ["query", "value"],
                                 precision=other).matches_frozen
