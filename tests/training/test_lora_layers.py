"""``lora.layers=N``: adapters on the last N transformer layers only, the states below them
computed once per window (:class:`~gralc.encoding.lora.LowerStates`).

What must hold: the split pass computes exactly what one full pass of the same adapted encoder
computes (fp32), with gradient into the adapters only; a window's kept states are reused, in
any batch; a trained model with ``layers`` exports and reloads with the same encoder; a bad
``layers`` is refused naming the key. Real MiniLM, real peft, real Lightning: ~40 s.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from gralc.config import ConfigError
from gralc.encoding.encoder import DocumentEncoder, EncoderConfig
from gralc.encoding.lora import LoraEncoder, LoraTargetError, adapter_digest
from gralc.model.persistence import export, load_trained
from gralc.training.run import train

TEXT = "The ACE2 receptor binds the SARS-CoV-2 spike protein in the airway epithelium. " * 40


def pair() -> tuple[LoraEncoder, LoraEncoder]:
    """An encoder with adapters on every layer and one on the last two, the shared adapters
    equal and non-zero, the others zero: both compute one and the same function."""
    every = LoraEncoder.build(EncoderConfig(), 8, 16, 0.0, ["query", "value"], precision="fp32")
    top = LoraEncoder.build(EncoderConfig(), 8, 16, 0.0, ["query", "value"], 2, precision="fp32")
    torch.manual_seed(0)
    with torch.no_grad():
        mine = dict(top.named_parameters())
        for p in mine.values():
            if p.requires_grad:
                p.normal_(0, 0.05)
        for name, p in every.named_parameters():
            if p.requires_grad:
                p.copy_(mine[name] if name in mine else torch.zeros_like(p))
    return every, top


def test_split_pass_equals_the_full_pass_and_trains_only_the_top():
    every, top = pair()
    trained = [n for n, p in top.named_parameters() if p.requires_grad]
    assert len(trained) == 8 and all(".layer.4." in n or ".layer.5." in n for n in trained)
    ids = every.token_ids(TEXT)
    windows = [ids[0:300], ids[100:510], ids[5:40]]
    full = every.encode_windows(windows)
    split = top.encode_windows(windows)
    assert top.lower is not None and len(top.lower.kept) == 3
    assert all(torch.equal(a, b) for a, b in zip(full, split))
    # kept states reused in another batch (another padding width: other kernel blocking, so
    # equal up to float rounding) give the same vectors
    again = top.encode_windows([windows[2], windows[0]])
    assert torch.allclose(again[0], split[2], atol=1e-5) and torch.allclose(again[1], split[0], atol=1e-5)
    assert len(top.lower.kept) == 3
    sum(t.sum() for t in top.encode_windows(windows)).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for n, p in top.named_parameters()
               if p.requires_grad)
    # the whole-document path goes through the same windows
    assert torch.allclose(every.encode_document(TEXT[:3000]), top.encode_document(TEXT[:3000]), atol=1e-6)


def test_kept_states_are_bounded():
    _, top = pair()
    assert top.lower is not None
    ids = top.token_ids(TEXT)
    top.lower.max_bytes = 1
    top.encode_windows([ids[0:50], ids[50:100]])
    assert len(top.lower.kept) == 1  # the newest one; the oldest dropped first


def test_layers_out_of_range_are_refused():
    with pytest.raises(LoraTargetError, match="layers=7.*6 transformer layers"):
        LoraEncoder.build(EncoderConfig(), 8, 16, 0.0, ["query", "value"], 7)


def test_digest_of_every_layer_adapters_is_unchanged():
    state = {"a": torch.ones(2)}
    base = adapter_digest(state, "m", 8, 16.0, ("query", "value"))
    assert adapter_digest(state, "m", 8, 16.0, ("query", "value"), None) == base
    assert adapter_digest(state, "m", 8, 16.0, ("query", "value"), 2) != base


def test_bad_layers_value_names_the_key(make_cfg, tmp_path):
    with pytest.raises(ConfigError, match=r"lora\.layers must be >= 1"):
        make_cfg(tmp_path, "lora.enabled=true", "lora.layers=0")
    with pytest.raises(ConfigError, match=r"lora\.layers=9: .*6 transformer layers"):
        train(make_cfg(tmp_path, "lora.enabled=true", "lora.layers=9"))


def test_a_top_layer_model_trains_exports_and_reloads(make_cfg, tmp_path):
    out = tmp_path / "run"
    train(make_cfg(out, "lora.enabled=true", "lora.layers=2", "data.max_docs=2",
                            "loader.batch_size=1", "loader.extra_negative_docs=0",
                            "trainer.limit_train_batches=2", "trainer.max_epochs=1",
                            "callbacks.early_stopping.enabled=false", "lora.precision=fp32",
                            "trainer.num_threads=1"))
    ckpt = torch.load(out / "checkpoints" / "last.ckpt", weights_only=True)
    adapters = [k for k in ckpt["state_dict"] if ".lora_" in k]
    assert len(adapters) == 8 and all(".layer.4." in k or ".layer.5." in k for k in adapters)
    exp = export(out / "checkpoints" / "last.ckpt", tmp_path / "export")
    loaded = load_trained(exp)
    assert "layers: 2" in (exp / "inference.yaml").read_text()
    assert "layers 2" in (exp / "MODEL_CARD.md").read_text(encoding="utf-8")
    direct = load_trained(out / "checkpoints" / "last.ckpt")
    a = DocumentEncoder(replace(loaded.pipeline_config.encoder, cache_dir=None, device="cpu"))
    b = DocumentEncoder(replace(direct.pipeline_config.encoder, cache_dir=None, device="cpu"))
    assert a.model_id == b.model_id
    base = DocumentEncoder(EncoderConfig(cache_dir=None, device="cpu")).encode_document(TEXT[:2000]).vectors
    got = a.encode_document(TEXT[:2000]).vectors
    assert torch.allclose(got, b.encode_document(TEXT[:2000]).vectors, atol=1e-6)
    assert (got - base).abs().max() > 1e-4  # the trained top layers changed the encoder
