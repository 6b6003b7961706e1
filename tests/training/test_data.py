"""Batching without duplicate documents, question splits, positives, config validation."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gralc.config import CONFIG_DIR, ConfigError, load_config
from gralc.documents.question import Question
from gralc.training.config import TrainConfig, validate
from gralc.training.datamodule import NoDuplicateDocBatchSampler, TrainBatch
from gralc.training.pairs import Positives, split_questions

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("batch_size", [1, 3, 8])
def test_batch_sampler_never_repeats_a_document(batch_size):
    rng = random.Random(1)
    docs = [f"d{rng.randrange(6)}" for _ in range(40)]  # many questions per document
    sampler = NoDuplicateDocBatchSampler(docs, batch_size, seed=3)
    for epoch in range(4):
        sampler.set_epoch(epoch)
        batches = list(sampler)
        assert len(batches) == len(sampler)
        for b in batches:
            assert 1 <= len(b) <= batch_size
            assert len({docs[i] for i in b}) == len(b), "two questions of one document"
        assert sorted(i for b in batches for i in b) == list(range(40))  # each example once
    sampler.set_epoch(0)
    first = list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != first  # reshuffled per epoch
    sampler.set_epoch(0)
    assert list(sampler) == first  # and reproducible


def test_train_batches_of_the_demo_corpus(datamodule):
    data = datamodule.data
    assert len(data.train) > len(data.dev) > 0
    assert not {e.doc_id for e in data.train} & {e.doc_id for e in data.dev}  # split by article
    n_batches = 0
    for batch in datamodule.train_dataloader():
        assert isinstance(batch, TrainBatch)
        gold = [e.doc_id for e in batch.examples]
        assert [f.doc_id for f in batch.docs[: len(gold)]] == gold
        assert len(set(gold)) == len(gold)
        extra = [f.doc_id for f in batch.docs[len(gold) :]]
        assert len(extra) == 1 and not set(extra) & set(gold)
        n_batches += 1
    assert n_batches == len(datamodule.batch_sampler())


def _q(i: int, split: str, doc: str | None = None) -> Question:
    return Question(id=str(i), text="q", gold_doc_id=doc or f"p{i}", split=split)


def test_pubmedqa_split_never_trains_on_test():
    qs = [_q(i, s) for i, s in enumerate(["train"] * 6 + ["dev"] * 2 + ["test"] * 3)]
    train, dev = split_questions(qs, "pubmedqa")
    assert [q.split for q in train] == ["train"] * 6 and [q.split for q in dev] == ["dev"] * 2
    with pytest.raises(ValueError, match="official train/dev split"):
        split_questions([_q(0, "test"), _q(1, "train")], "pubmedqa")


def test_pubmedqa_real_split_excludes_the_official_test_pmids(shared_data):
    import json

    from gralc.documents.pubmedqa import load_pqal

    path = shared_data / "pubmedqa" / "ori_pqal.json"
    assert path.is_file(), f"{path} missing from the shared data"
    test_ids = set(json.loads((path.parent / "test_ground_truth.json").read_text()))
    train, dev = split_questions(load_pqal(path).questions, "pubmedqa")
    assert len(test_ids) == 500 and train and dev
    assert not test_ids & {q.id for q in train + dev}
    assert not test_ids & {q.gold_doc_id for q in train + dev}


def test_document_split_is_by_article():
    qs = [_q(i, "", doc=f"a{i % 5}") for i in range(20)]
    train, dev = split_questions(qs, "demo", dev_fraction=0.2, seed=0)
    assert len({q.gold_doc_id for q in dev}) == 1 and len(train) + len(dev) == 20
    assert not {q.gold_doc_id for q in train} & {q.gold_doc_id for q in dev}


def test_positives_follow_the_current_spans(datamodule):
    f = next(iter(datamodule.data.features.values()))
    n = f.n_tokens
    spans = [(0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n)]
    mid_chars = f.char_span(n // 3 + 5, n // 3 + 10)
    assert Positives(char_ranges=[mid_chars]).resolve(f, spans) == [1]
    answer = f.H[2 * n // 3 :].mean(0)  # the last chunk's own mean vector
    assert Positives(answer_vec=answer).resolve(f, spans) == [2]
    assert Positives().resolve(f, spans) == [0, 1, 2]
    # the same gold range maps onto new spans after boundaries move
    assert Positives(char_ranges=[mid_chars]).resolve(f, [(0, n // 2), (n // 2, n)]) == [0]


def test_unknown_config_key_names_the_key():
    with pytest.raises(ConfigError, match="gat_hedas"):
        load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["model.gat_hedas=2"])
    with pytest.raises(ConfigError, match="max_epoch"):
        load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["trainer.max_epoch=2"])


def test_config_groups_and_lora_validation():
    cfg = load_config(
        TrainConfig, CONFIG_DIR / "train.yaml", ["model=no_kg", "data=pubmedqa"]
    )
    assert not cfg.model.use_kg and cfg.pipeline.chunking.boundary.min_tokens == 64 and cfg.data.name == "pubmedqa"
    cfg.lora.enabled = True
    assert validate(cfg) is cfg  # LoRA is supported (tests/training/test_lora.py)
    for key, bad in (("r", 0), ("alpha", 0), ("dropout", 1.0), ("target_modules", [])):
        cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["lora.enabled=true"])
        setattr(cfg.lora, key, bad)
        with pytest.raises(ConfigError, match=f"lora.{key}"):
            validate(cfg)


def test_train_script_reports_a_bad_key(capsys):
    import runpy

    script = runpy.run_path(str(REPO / "train.py"))
    assert script["main"](["optim.learning_rate=1"]) == 2
    assert "learning_rate" in capsys.readouterr().err
