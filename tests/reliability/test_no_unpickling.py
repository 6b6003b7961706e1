"""Files a user or a data file names are loaded as weights only: a crafted pickle never runs."""

from __future__ import annotations

import logging

import pytest
import torch

from gralc import export as export_cli
from gralc.model.persistence import export
from gralc.safe_load import load_torch
from gralc.training.features import load_features, save_features


class Payload:
    """Unpickling this would create a file (the proof that code ran)."""

    def __init__(self, flag):
        self.flag = flag

    def __reduce__(self):
        return (open, (self.flag, "w"))


@pytest.fixture
def crafted(tmp_path):
    path = tmp_path / "last.ckpt"
    flag = tmp_path / "PWNED"
    torch.save({"gralc": {}, "state_dict": {}, "x": Payload(str(flag))}, path)
    return path, flag


def test_checkpoint_loaders_refuse_code(crafted, tmp_path, capsys):
    path, flag = crafted
    with pytest.raises(ValueError, match=r"refusing to load .*last.ckpt.*Unsupported global"):
        load_torch(path, what="training checkpoint")
    assert export_cli.main([str(path), "--out", str(tmp_path / "export")]) == 2
    assert "never unpickles code" in capsys.readouterr().err
    assert not flag.exists()


def test_export_cli_refuses_a_crafted_checkpoint(crafted, tmp_path):
    path, flag = crafted
    with pytest.raises(ValueError, match="never unpickles code"):
        export(path, tmp_path / "export")
    assert not flag.exists() and not (tmp_path / "export").exists()


def test_feature_cache_is_json_and_safetensors_never_a_pickle(crafted, tmp_path):
    """The cache is a folder of records.json + tensors.safetensors; a pickle put in its place,
    a record type outside the allow-list or a damaged file is refused, and nothing runs."""
    import json

    path, flag = crafted
    ok = tmp_path / "features"
    save_features({"H": torch.ones(2, 3), "ids": ["a", "b"], "span": (1, 2)}, ok)
    assert sorted(p.name for p in ok.iterdir()) == ["records.json", "tensors.safetensors"]
    back = load_features(ok)
    assert back["ids"] == ["a", "b"] and back["span"] == (1, 2) and torch.equal(back["H"], torch.ones(2, 3))

    (ok / "tensors.safetensors").write_bytes(path.read_bytes())  # a crafted pickle in its place
    with pytest.raises(ValueError, match="features: not a readable training feature cache"):
        load_features(ok)
    save_features({"H": torch.ones(1)}, ok)
    head = json.loads((ok / "records.json").read_text())
    head["root"] = {"$record": "Popen", "fields": {"args": ["touch", str(flag)]}}
    (ok / "records.json").write_text(json.dumps(head))
    with pytest.raises(ValueError, match="record type 'Popen' is not allowed"):
        load_features(ok)
    with pytest.raises(TypeError, match="Payload"):
        save_features({"x": Payload(str(flag))}, tmp_path / "other")
    assert not flag.exists() and not (tmp_path / "other").exists()


def test_truncated_files_name_the_file(tmp_path):
    bad = tmp_path / "half.ckpt"
    bad.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(ValueError, match="half.ckpt.*write it again"):
        load_torch(bad)
    with pytest.raises(FileNotFoundError, match="missing.ckpt"):
        load_torch(tmp_path / "missing.ckpt")


def test_corrupt_feature_cache_is_a_miss(tmp_path, caplog, monkeypatch):
    """load_training_data rebuilds instead of crashing on a bad cache entry."""
    from gralc.training import datamodule

    built = []
    monkeypatch.setattr(datamodule, "build_training_data", lambda cfg, bench: built.append(1) or "fresh")
    monkeypatch.setattr(datamodule, "load_benchmarks", lambda *a, **k: ["bench"])
    monkeypatch.setattr(datamodule, "_limit_docs", lambda b, n: b)
    monkeypatch.setattr(datamodule, "_cache_key", lambda cfg, bench: "key")
    saved = {}
    real_load = datamodule.load_features
    monkeypatch.setattr(datamodule, "save_features", lambda data, path: saved.update({path: data}))
    # the garbage entry is read (and refused) first; the rebuilt entry is read back from "disk"
    monkeypatch.setattr(datamodule, "load_features", lambda path: saved[path] if path in saved else real_load(path))
    from gralc.training.config import TrainConfig

    cfg = TrainConfig()
    cfg.paths.cache_dir = str(tmp_path)
    (tmp_path / "train_features" / "key").mkdir(parents=True)
    (tmp_path / "train_features" / "key" / "records.json").write_text("{garbage")
    with caplog.at_level(logging.WARNING):
        assert datamodule.load_training_data(cfg) == "fresh"
    assert built == [1] and "ignoring the feature cache" in caplog.text
