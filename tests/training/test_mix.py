"""Mixed training sources (``mix``): config errors before any data is loaded, per-epoch draws
that follow the weights, the primary's dev set only, namespaced ids, end-to-end training
with the frozen encoder and with LoRA windows. The demo corpus (primary) is mixed with tiny
SQuAD-format files written to a temporary folder (real loaders, real encoder)."""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from gralc.config import CONFIG_DIR, ConfigError, load_config
from gralc.training.config import TrainConfig, validate
from gralc.training.datamodule import (
    GraLCDataModule,
    NoDuplicateDocBatchSampler,
    TrainBatch,
    epoch_draw,
)
from gralc.training.run import train

REPO = Path(__file__).resolve().parents[2]

#: (title, disease, agent, group) of the tiny SQuAD articles
TOPICS = [
    ("Influenza vaccination", "influenza", "haemagglutinin", "older adults"),
    ("Malaria transmission", "malaria", "Anopheles mosquitoes", "children under five"),
    ("Tuberculosis treatment", "tuberculosis", "rifampicin", "household contacts"),
    ("Dengue surveillance", "dengue", "Aedes aegypti", "urban residents"),
    ("Cholera outbreaks", "cholera", "contaminated water", "refugee camps"),
    ("Measles immunity", "measles", "maternal antibodies", "infants"),
    ("Hepatitis B screening", "hepatitis B", "surface antigen", "blood donors"),
]


def _article(title: str, disease: str, agent: str, group: str) -> str:
    return "\n\n".join([
        f"{title}\n\nBackground. {disease.capitalize()} remains a major public health problem. "
        f"Studies of {disease} in {group} show that {agent} plays a central role. " * 3,
        f"Methods. We reviewed cohort studies of {disease} published between 2000 and 2020 and "
        f"extracted the incidence among {group}. The exposure to {agent} was recorded. " * 3,
        f"Results. The incidence of {disease} among {group} fell by 40 percent when {agent} "
        f"was controlled. Secondary outcomes were hospital admissions and deaths. " * 3,
    ])


def write_squad(path: Path, articles: list[tuple[str, tuple[str, str, str, str]]]) -> Path:
    """A SQuAD-format file: one context per ``(document_id, topic)``, two questions each."""
    data = []
    for doc_id, topic in articles:
        ctx = _article(*topic)
        qas = []
        for n, (question, answer) in enumerate([
            (f"How did the incidence of {topic[1]} change among {topic[3]}?", "fell by 40 percent"),
            (f"Which years did the {topic[1]} cohort studies cover?", "between 2000 and 2020"),
        ]):
            qas.append({"id": f"{doc_id}-{n}", "question": question,
                        "answers": [{"text": answer, "answer_start": ctx.index(answer)}]})
        data.append({"title": topic[0], "paragraphs": [{"document_id": doc_id, "context": ctx,
                                                        "qas": qas}]})
    path.write_text(json.dumps({"data": data}))
    return path


@pytest.fixture(scope="module")
def squad_files(tmp_path_factory) -> dict[str, Path]:
    """``a``: four articles; ``b``: the id ``art0`` again (another article), a copy of a's
    ``art0`` text under a new id, two more articles; ``bad``: not a SQuAD file (a source
    that is loaded fails)."""
    tmp = tmp_path_factory.mktemp("mix")
    a = write_squad(tmp / "a.json", [(f"art{i}", TOPICS[i]) for i in range(4)])
    b = write_squad(tmp / "b.json", [("art0", TOPICS[4]), ("b_copy", TOPICS[0]),
                                     ("art5", TOPICS[5]), ("art6", TOPICS[6])])
    bad = tmp / "bad.json"
    bad.write_text("{}")
    return {"a": a, "b": b, "bad": bad}


def _mix(*entries: tuple[str, Path | None, float]) -> str:
    items = ", ".join(
        "{" + ", ".join([f"name: {n}", *([f"path: {p}"] if p else []), f"weight: {w}"]) + "}"
        for n, p, w in entries
    )
    return f"mix=[{items}]"


@pytest.fixture(scope="module")
def mixed(make_cfg, squad_files, tmp_path_factory, caplog_module) -> GraLCDataModule:
    """Demo primary + a (0.5) + b (0.25) + bad (0: switched off, never read)."""
    cfg = make_cfg(tmp_path_factory.mktemp("mixed"), _mix(
        ("squad", squad_files["a"], 0.5), ("squad", squad_files["b"], 0.25),
        ("squad", squad_files["bad"], 0.0)))
    dm = GraLCDataModule(validate(cfg))
    dm.setup("fit")
    return dm


@pytest.fixture(scope="module")
def caplog_module():
    """Warnings logged while the module's fixtures load (caplog is function-scoped)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.WARNING)
    logging.getLogger("gralc.training.datamodule").addHandler(handler)
    yield records
    logging.getLogger("gralc.training.datamodule").removeHandler(handler)


# ----- config ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{name: squad, path: A, weight: -0.5}", r"mix\[0\]\.weight must be >= 0"),
        ("{name: pubmed, path: A, weight: 1}", r"mix\[0\]\.name='pubmed' is not a training source"),
        ("{name: pubmedqa, weight: 1}", r"mix\[0\]\.path is missing.*ori_pqal\.json"),
        ("{name: squad, path: /no/such/file.json}", r"mix\[0\]\.path=/no/such/file\.json does not exist"),
        ("{name: squad, path: A, split: test}", r"mix\[0\]\.split='test'"),
        ("{name: demo}", r"mix\[0\] is the primary source"),
        ("{name: squad, path: A}, {name: squad, path: A, weight: 2}", r"mix\[1\] repeats mix\[0\]"),
    ],
)
def test_a_bad_mix_entry_is_one_config_error_naming_the_key(entry, message, squad_files):
    entry = entry.replace("path: A", f"path: {squad_files['a']}")
    with pytest.raises(ConfigError, match=message):
        validate(load_config(TrainConfig, CONFIG_DIR / "train.yaml", [f"mix=[{entry}]"]))


def test_a_bad_mix_entry_fails_before_any_data_is_loaded(tmp_path):
    with pytest.raises(ConfigError, match=r"mix\[0\]\.path"):  # refused as the config is built
        train(load_config(TrainConfig, CONFIG_DIR / "train.yaml", [
            "mix=[{name: pubmedqa, weight: 0.5}]", f"paths.cache_dir={tmp_path / 'cache'}",
            f"paths.output_dir={tmp_path / 'out'}"]))
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_an_unknown_key_in_a_mix_entry_lists_the_entry_keys():
    with pytest.raises(ConfigError, match=r"'wieght' \(a MixSource entry\).*weight"):
        load_config(TrainConfig, CONFIG_DIR / "train.yaml", ["mix=[{name: squad, wieght: 1}]"])


# ----- per-epoch draws ------------------------------------------------------------------------
def test_epoch_draw_is_without_replacement_while_possible():
    rng = random.Random(0)
    assert sorted(epoch_draw(10, 10, rng)) == list(range(10))
    few = epoch_draw(10, 4, rng)
    assert len(few) == len(set(few)) == 4
    many = Counter(epoch_draw(10, 25, rng))  # two full passes, then 5 distinct
    assert sorted(many) == list(range(10)) and sorted(many.values()) == [2] * 5 + [3] * 5
    assert epoch_draw(10, 0, rng) == [] and epoch_draw(0, 5, rng) == []


def test_sampler_takes_every_fixed_example_and_the_weighted_draws():
    rng = random.Random(1)
    n_fixed, n_a, n_b = 30, 12, 4
    docs = [f"p{rng.randrange(8)}" for _ in range(n_fixed)] + [f"a{i % 6}" for i in range(n_a)] \
        + [f"b{i % 2}" for i in range(n_b)]
    draws = [(n_fixed, n_fixed + n_a, 15), (n_fixed + n_a, n_fixed + n_a + n_b, 6)]
    picked = []
    for epoch in range(3):
        s = NoDuplicateDocBatchSampler(docs, 4, seed=7, n_fixed=n_fixed, draws=draws, epoch=epoch)
        batches = list(s)
        assert len(batches) == len(s)
        for b in batches:
            assert len({docs[i] for i in b}) == len(b), "two questions of one document"
        seen = Counter(i for b in batches for i in b)
        assert all(seen[i] == 1 for i in range(n_fixed))  # every primary question, once
        assert sum(v for i, v in seen.items() if n_fixed <= i < n_fixed + n_a) == 15
        assert sum(v for i, v in seen.items() if i >= n_fixed + n_a) == 6
        assert all(seen[i] in (1, 2) for i in range(n_fixed, n_fixed + n_a))  # 15 of 12: 3 twice
        picked.append(sorted(seen.items()))
    assert picked[0] != picked[1]  # a new draw each epoch (seed + epoch) ...
    again = NoDuplicateDocBatchSampler(docs, 4, seed=7, n_fixed=n_fixed, draws=draws, epoch=1)
    assert sorted(Counter(i for b in again for i in b).items()) == picked[1]  # ... reproducible


# ----- the mixed datamodule -------------------------------------------------------------------
def test_the_dev_set_and_validation_corpus_are_the_primary_only(mixed, datamodule):
    assert [e.question_id for e in mixed.data.dev] == [e.question_id for e in datamodule.data.dev]
    assert mixed.data.corpus_doc_ids == datamodule.data.corpus_doc_ids
    assert [e.question_id for e in mixed.data.train] == [e.question_id for e in datamodule.data.train]
    val = mixed.val_batch()
    assert [f.doc_id for f in val.docs] == datamodule.data.corpus_doc_ids


def test_mix_ids_are_namespaced_never_collide_and_copies_are_dropped(mixed, caplog_module):
    assert [p.prefix for p in mixed.mix] == ["squad[0]:", "squad[1]:"]  # the weight-0 one: off
    primary = set(mixed.data.features) - {d for p in mixed.mix for d in p.doc_ids}
    for p in mixed.mix:
        assert all(d.startswith(p.prefix) for d in p.doc_ids)
        assert all(e.doc_id.startswith(p.prefix) and e.question_id.startswith(p.prefix)
                   for e in p.examples)
        for d in p.doc_ids:
            f = mixed.data.features[d]
            assert f.doc_id == d == f.doc.id
    a, b = (set(p.doc_ids) for p in mixed.mix)
    assert not a & b and not (a | b) & primary
    # the document split (split_seed 0) makes art2 a's dev document, art6 b's: dropped
    assert a == {"squad[0]:art0", "squad[0]:art1", "squad[0]:art3"}
    assert b == {"squad[1]:art0", "squad[1]:art5"}  # b's art0 is another article than a's
    texts = Counter(mixed.data.features[d].doc.text for d in a | b | set(mixed.data.train_doc_ids))
    assert max(texts.values()) == 1, "one text trained under two ids"
    dropped = [r.getMessage() for r in caplog_module if "has the text of" in r.getMessage()]
    assert dropped == ["mix source squad[1]: document squad[1]:b_copy has the text of "
                       "squad[0]:art0; dropped with its questions"]
    assert "squad[1]:b_copy" not in mixed.data.features


def test_epoch_batches_follow_the_weights(mixed):
    n = len(mixed.data.train)
    per_epoch = [p.per_epoch for p in mixed.mix]
    assert per_epoch == [round(0.5 * n), round(0.25 * n)]
    assert len(mixed.mix[1].examples) < per_epoch[1]  # b is drawn with replacement beyond
    train_docs = set(mixed.data.train_doc_ids) | {d for p in mixed.mix for d in p.doc_ids}
    dev_docs = {e.doc_id for e in mixed.data.dev}
    for epoch in range(2):
        loader = mixed.train_dataloader()
        loader.batch_sampler.set_epoch(epoch)
        counts: Counter = Counter()
        for batch in loader:
            gold = [e.doc_id for e in batch.examples]
            assert len(set(gold)) == len(gold)
            extra = [f.doc_id for f in batch.docs[len(gold):]]
            assert set(extra) <= train_docs - dev_docs and not set(extra) & set(gold)
            for e in batch.examples:
                counts[next((p.prefix for p in mixed.mix if e.doc_id.startswith(p.prefix)), "")] += 1
        assert counts == {"": n, "squad[0]:": per_epoch[0], "squad[1]:": per_epoch[1]}


# ----- end to end -----------------------------------------------------------------------------
class RecordBatches(pl.Callback):
    def __init__(self) -> None:
        self.by_epoch: dict[int, list[list[str]]] = {}

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.by_epoch.setdefault(trainer.current_epoch, []).append(
            [e.question_id for e in batch.examples])


def test_mixed_training_runs_and_draws_anew_each_epoch(make_cfg, squad_files, tmp_path):
    cfg = make_cfg(tmp_path, _mix(("squad", squad_files["a"], 2.0)), "trainer.max_epochs=2",
                   "trainer.validate_before_fit=false", "model.use_lexical=true")
    rec = RecordBatches()
    result = train(cfg, callbacks=[rec])
    assert result["mix"][0]["per_epoch"] == 2 * result["n_train_questions"]
    assert result["epochs"] == 2 and torch.isfinite(torch.tensor(result["best_score"]))
    first, second = rec.by_epoch[0], rec.by_epoch[1]
    assert any(q.startswith("squad:") for b in first for q in b)
    # the sampler is built anew with the epoch: another order and another draw in epoch 1
    assert first != second


def test_a_mixed_batch_trains_lora_on_windows_of_each_examples_own_document(mixed, make_cfg,
                                                                            tmp_path):
    """LoRA with windows: every example's windows are cut from its own (namespaced) document,
    whose tokens the adapted encoder re-reads; the step backpropagates into the adapters."""
    from gralc.encoding.lora import LoraEncoder
    from gralc.model.gralc_model import GraLCModel
    from gralc.training.lit_module import GraLCLitModule

    cfg = make_cfg(tmp_path, "lora.enabled=true")
    torch.manual_seed(0)
    enc = LoraEncoder.build(cfg.pipeline.encoder, 8, 16, 0.0, ["query", "value"], precision="fp32")
    model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, mixed.token_dim, mixed.concept_dim)
    lit = GraLCLitModule(model, cfg.optim, encoder=enc, windows_per_doc=2)
    # one primary and one mix question (each encodes its windows: kept small for the CPU)
    mine, theirs = mixed.data.train[0], mixed.mix[0].examples[0]
    batch = TrainBatch([mine, theirs], [mixed.data.features[e.doc_id] for e in (mine, theirs)])
    cached, adapted = lit.training_views(batch)
    n_q = len(batch.examples)
    assert [c.doc_id for c in cached[:n_q]] == [e.doc_id for e in batch.examples]
    assert {c.doc_id for c in cached} <= {f.doc_id for f in batch.docs}
    for c, a in zip(cached, adapted):
        assert a.doc_id == c.doc_id and a.n_tokens == c.n_tokens and a.H.requires_grad
    loss, _ = lit.batch_loss(batch)
    assert torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0
               for n, p in enc.named_parameters() if "lora_B" in n)
