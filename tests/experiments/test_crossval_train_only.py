"""``crossval --train --train-only`` trains the folds and scores nothing: no untrained row and no
document preparation runs before or after the folds (a resumed e5 CV spent 18 minutes
re-encoding the articles for a BM25 row it never printed)."""

from __future__ import annotations

import pytest

from gralc.experiments import crossval


def test_train_only_trains_each_fold_and_prepares_no_untrained_row(tmp_path, monkeypatch, shared_data):
    data = tmp_path / "squad.json"
    data.write_text('{"data": []}')
    trained: list[tuple[int, str]] = []

    def refuse(*args, **kwargs):
        raise AssertionError("--train-only prepared the untrained rows' documents")

    monkeypatch.setattr(crossval, "covidqa_setup", refuse)
    monkeypatch.setattr(crossval, "train_fold",
                        lambda args, k, variant: (trained.append((k, variant)), ("ckpt", []))[1])
    assert crossval.main(["--data", str(data), "--train", "--train-only", "--train-folds", "1", "3",
                          "--variants", "lora_lexical_small_late", "--out", str(tmp_path / "cv")]) == 0
    assert trained == [(1, "lora_lexical_small_late"), (3, "lora_lexical_small_late")]
    with pytest.raises(AssertionError, match="prepared the untrained"):  # scoring still prepares them
        crossval.main(["--data", str(data), "--train", "--train-folds", "1",
                       "--variants", "lora_lexical_small_late", "--out", str(tmp_path / "cv2")])
