"""Edited, truncated or corrupt files inside GraLC artefacts are detected and named."""

from __future__ import annotations

import logging

import pytest

from gralc import index as index_cli
from gralc.config import CONFIG_DIR
from gralc.encoding.encoder import DocumentEncoder, EncoderConfig
from gralc.inference import Retriever


@pytest.fixture
def built(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in (("a", "Ferrets coughed for four days."), ("b", "Mice had fever for two days.")):
        (corpus / f"{name}.txt").write_text(f"Study {name}\n\n{text} Nothing else happened.\n",
                                            encoding="utf-8")
    out = tmp_path / "index"
    assert index_cli.main([str(corpus), "--out", str(out), "--strategy", "late"]) == 0
    return out


def test_reordered_chunk_metadata_is_detected(built):
    lines = (built / "chunks.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) >= 2
    (built / "chunks.jsonl").write_text("".join(reversed(lines)), encoding="utf-8")
    with pytest.raises(ValueError, match="chunks.jsonl was changed after GraLC wrote it"):
        Retriever.load(built)


def test_truncated_retriever_json_names_the_file(built):
    spec = built / "retriever.json"
    spec.write_text(spec.read_text()[:20])
    with pytest.raises(ValueError, match="retriever.json was changed after GraLC wrote it"):
        Retriever.load(built)


def test_corrupt_token_cache_entry_is_a_warning_and_a_miss(tmp_path, caplog):
    encoder = DocumentEncoder(EncoderConfig(cache_dir=str(tmp_path / "cache")))
    text = "Ferrets coughed for four days after infection."
    first = encoder.encode_document(text)
    (entry,) = list((tmp_path / "cache").rglob("*.safetensors"))
    entry.write_bytes(b"\x00garbage")
    with caplog.at_level(logging.WARNING):
        again = DocumentEncoder(EncoderConfig(cache_dir=str(tmp_path / "cache"))).encode_document(text)
    assert "is not usable" in caplog.text and str(entry) in caplog.text
    assert (again.vectors - first.vectors).abs().max() < 1e-5


def test_truncated_resume_checkpoint_is_named_before_any_work(tmp_path, monkeypatch, capsys):
    """train.py resume=last on a half-written last.ckpt: exit 2 naming the file, before the
    data or encoder are touched; resume=auto falls back to the newest readable checkpoint."""
    import os

    import torch

    from gralc import train as train_script
    from gralc.config import load_config
    from gralc.training.config import TrainConfig
    from gralc.training.run_folder import resolve_resume

    ckpts = tmp_path / "checkpoints"
    ckpts.mkdir()
    good = tmp_path / "hpc_ckpt_1.ckpt"
    torch.save({"state_dict": {"w": torch.ones(2)}, "global_step": 3}, good)
    os.utime(good, (1, 1))  # older than last.ckpt
    (ckpts / "last.ckpt").write_bytes(good.read_bytes()[:100])  # killed while writing

    monkeypatch.chdir(os.path.dirname(train_script.__file__))
    rc = train_script.main([f"paths.output_dir={tmp_path}", "resume=last"])
    err = capsys.readouterr().err
    assert rc == 2 and "last.ckpt" in err and "truncated" in err and "resume=PATH" in err
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [f"paths.output_dir={tmp_path}", "resume=auto"])
    assert resolve_resume(cfg) == str(good.resolve())
