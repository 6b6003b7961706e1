"""Record folders (the training feature cache): a folder whose tensors changed since they were
written is refused by the digest records.json keeps (issue 58, class 4: negated training
features were trained on), so the feature cache rebuilds it."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file, save_file

from gralc.record_store import TENSORS, load_records, save_records


def test_changed_tensors_are_refused(tmp_path):
    path = save_records({"vectors": torch.ones(3, 4), "ids": ["a", "b"]}, tmp_path / "features")
    assert torch.equal(load_records(path)["vectors"], torch.ones(3, 4))
    tensors = load_file(str(path / TENSORS))
    save_file({k: -v for k, v in tensors.items()}, str(path / TENSORS))  # negated, same shapes
    with pytest.raises(ValueError, match="SHA-256 differs"):
        load_records(path)
