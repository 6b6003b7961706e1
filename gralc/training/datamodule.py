"""Training data: benchmark -> frozen features (cached) -> batches without duplicate documents.

``GraLCDataModule(cfg).setup()`` loads the benchmark, splits the questions
(:func:`gralc.training.pairs.split_questions`), prepares and featurises every corpus document
ONCE (encoder cache + one JSON + safetensors folder of all features and question encodings,
keyed by a hash of everything they depend on; a cache hit does not even load the encoder), then serves

* train batches (:class:`TrainBatch`): ``batch_size`` questions of DISTINCT documents
  (:class:`NoDuplicateDocBatchSampler`) plus ``extra_negative_docs`` random training documents;
* one validation batch (:class:`ValBatch`): every dev question against the whole val corpus.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytorch_lightning as pl
from torch.utils.data import DataLoader, Sampler

from gralc.config import to_dict
from gralc.data.benchmarks import Benchmark, load_benchmarks
from gralc.model.doc_features import DocFeatures, build_features
from gralc.model.query_features import QueryEncoder
from gralc.training.config import TrainConfig
from gralc.training.features import load_features, save_features
from gralc.training.pairs import (
    PAIR_SOURCES,
    Positives,
    TrainingExample,
    split_questions,
)

logger = logging.getLogger(__name__)
CACHE_VERSION = 4  # 2: TrainingExample.text; 3: DocFeatures moved; 4: JSON + safetensors folder


@dataclass
class TrainBatch:
    """``docs[:len(examples)]`` are the examples' gold documents (in order, all distinct);
    the rest are extra negative documents."""

    examples: list[TrainingExample]
    docs: list[DocFeatures]


@dataclass
class ValBatch:
    examples: list[TrainingExample]
    docs: list[DocFeatures]


@dataclass
class TrainingData:
    features: dict[str, DocFeatures]
    train: list[TrainingExample]
    dev: list[TrainingExample]
    train_doc_ids: list[str]
    corpus_doc_ids: list[str]


class NoDuplicateDocBatchSampler(Sampler[list[int]]):
    """Batches of example indices in which no two examples share a document.

    Each epoch (``set_epoch``, called by Lightning) shuffles with ``seed + epoch``; an example
    whose document is already in the batch waits for the next batch. ``__len__`` is exact.
    DDP: ``num_replicas`` ranks each take every ``num_replicas``-th batch from ``rank``; the
    list is padded by repeating its first batches so every rank gets the same count.
    """

    def __init__(
        self,
        doc_ids: list[str],
        batch_size: int,
        seed: int = 0,
        shuffle: bool = True,
        num_replicas: int = 1,
        rank: int = 0,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in [0, {num_replicas}), got {rank}")
        self.doc_ids, self.batch_size, self.seed, self.shuffle = doc_ids, batch_size, seed, shuffle
        self.num_replicas, self.rank = num_replicas, rank
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def batches(self) -> list[list[int]]:
        order = list(range(len(self.doc_ids)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        out: list[list[int]] = []
        while order:
            batch, seen, rest = [], set(), []
            for i in order:
                if len(batch) < self.batch_size and self.doc_ids[i] not in seen:
                    batch.append(i)
                    seen.add(self.doc_ids[i])
                else:
                    rest.append(i)
            out.append(batch)
            order = rest
        if self.num_replicas > 1 and out:
            per_rank = -(-len(out) // self.num_replicas)
            out = (out * self.num_replicas)[: per_rank * self.num_replicas][self.rank :: self.num_replicas]
        return out

    def __iter__(self) -> Iterator[list[int]]:
        return iter(self.batches())

    def __len__(self) -> int:
        return len(self.batches())


class TrainCollator:
    """Examples -> :class:`TrainBatch` with ``k_extra`` negative documents drawn (seeded by
    the batch's question ids, so a resumed run sees the same batches) from ``pool``."""

    def __init__(
        self, features: dict[str, DocFeatures], pool: list[str], k_extra: int, seed: int = 0
    ):
        self.features, self.pool, self.k_extra, self.seed = features, pool, k_extra, seed

    def __call__(self, examples: list[TrainingExample]) -> TrainBatch:
        gold = [e.doc_id for e in examples]
        if len(set(gold)) != len(gold):
            raise ValueError(f"a batch holds two questions of one document: {gold}")
        rng = random.Random(
            zlib.crc32("|".join(e.question_id for e in examples).encode()) + self.seed
        )
        candidates = [d for d in self.pool if d not in set(gold)]
        extra = rng.sample(candidates, min(self.k_extra, len(candidates)))
        return TrainBatch(examples, [self.features[d] for d in gold + extra])


def _limit_docs(bench: Benchmark, max_docs: int | None) -> Benchmark:
    if max_docs is None or len(bench.documents) <= max_docs:
        return bench
    docs = bench.documents[:max_docs]
    keep = {d.id for d in docs}
    return Benchmark(bench.name, docs, [q for q in bench.questions if q.gold_doc_id in keep])


def _cache_key(cfg: TrainConfig, bench: Benchmark) -> str:
    pipe = to_dict(cfg.pipeline)
    for k in ("cache_dir", "device", "batch_size"):
        pipe["encoder"].pop(k, None)
    payload = {
        "version": CACHE_VERSION,
        "data": to_dict(cfg.data),
        "pipeline": {k: pipe[k] for k in ("encoder", "knowledge")},
        "boundary": [pipe["chunking"]["boundary"][k] for k in ("window", "struct_weights")],
        "split": [cfg.loader.dev_fraction, cfg.loader.split_seed],
        "docs": [(d.id, hashlib.sha1(d.text.encode()).hexdigest()) for d in bench.documents],
        "questions": [
            (
                q.id,
                q.text,
                q.gold_doc_id,
                q.split,
                q.long_answer,
                q.gold_section_types,
                q.gold_paragraph_ids,
            )
            for q in bench.questions
        ],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[
        :20
    ]


def build_training_data(cfg: TrainConfig, bench: Benchmark) -> TrainingData:
    """Encode, link and featurise the non-test corpus and the train/dev questions."""
    from gralc.knowledge.concept_embeddings import ConceptEmbedder
    from gralc.pipeline import Pipeline

    train_q, dev_q = split_questions(
        bench.questions, cfg.data.name, cfg.loader.dev_fraction, cfg.loader.split_seed
    )
    test_docs = {q.gold_doc_id for q in bench.questions if q.split == "test"}
    corpus = [d for d in bench.documents if d.id not in test_docs]
    pipe_cfg = cfg.pipeline
    if pipe_cfg.encoder.cache_dir is None:
        pipe_cfg = replace(
            pipe_cfg,
            encoder=replace(
                pipe_cfg.encoder, cache_dir=str(Path(cfg.paths.cache_dir) / "encodings")
            ),
        )
    pipeline = Pipeline(pipe_cfg)
    model_tag = "".join(c if c.isalnum() else "_" for c in pipeline.encoder.model_id)
    embedder = ConceptEmbedder(
        pipeline.encoder.encode_texts,
        Path(cfg.paths.cache_dir) / f"concepts-{model_tag}.safetensors",
    )
    prepared = pipeline.prepare(corpus, progress=cfg.trainer.enable_progress_bar)
    feats = build_features(pipeline, prepared, embedder, cfg.pipeline.chunking.boundary)
    by_id = {f.doc_id: f for f in feats}
    source = PAIR_SOURCES.get(cfg.data.name)
    if source is None:
        raise ValueError(
            f"no pair source for data.name={cfg.data.name!r}; known: {sorted(PAIR_SOURCES)}"
        )
    enc = QueryEncoder(pipeline, embedder)
    train, dev = source(train_q, by_id, enc), source(dev_q, by_id, enc)
    embedder.save()
    train_docs = sorted({e.doc_id for e in train})
    assert not test_docs & set(train_docs), "a PubMedQA test document reached training"
    return TrainingData(by_id, train, dev, train_docs, [d.id for d in corpus])


def load_training_data(cfg: TrainConfig) -> TrainingData:
    """:func:`build_training_data`, from the folder ``paths.cache_dir/train_features/KEY/``
    (``records.json`` + ``tensors.safetensors``) when there."""
    linker = None
    if cfg.data.name == "pmc" and not cfg.data.questions:
        from gralc.knowledge.linker import EntityLinker
        from gralc.pipeline import load_knowledge

        linker = EntityLinker(
            load_knowledge(cfg.pipeline.knowledge)[0], cfg.pipeline.knowledge.linker
        )
    bench = _limit_docs(load_benchmarks(cfg.data, linker, cv_side="train")[0], cfg.data.max_docs)
    path = Path(cfg.paths.cache_dir) / "train_features" / _cache_key(cfg, bench)
    if path.is_dir():
        try:
            data = load_features(path)
            logger.info("training features from %s", path)
            return data
        except ValueError as exc:  # a corrupt or foreign cache entry is a miss, not a crash
            logger.warning("ignoring the feature cache %s (%s); rebuilding it", path, exc)
    data = build_training_data(cfg, bench)
    save_features(data, path)
    return data


def holdout_train_documents(data: TrainingData, fraction: float, seed: int = 0) -> TrainingData:
    """``data`` with ``round(fraction * n)`` of its n training documents (shuffled by ``seed``
    from their sorted ids) and all their questions moved to the dev set, appended after the
    original dev questions. Held-out documents leave ``train_doc_ids`` too (the pool of extra
    negatives), so no part of training sees them; they stay in the validation corpus."""
    docs = sorted({e.doc_id for e in data.train})
    random.Random(seed).shuffle(docs)
    held = set(docs[: round(fraction * len(docs))])
    if not held:
        return data
    train = [e for e in data.train if e.doc_id not in held]
    dev = data.dev + [e for e in data.train if e.doc_id in held]
    train_docs = [d for d in data.train_doc_ids if d not in held]
    return replace(data, train=train, dev=dev, train_doc_ids=train_docs)


class GraLCDataModule(pl.LightningDataModule):
    def __init__(self, cfg: TrainConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.data: TrainingData | None = None

    def setup(self, stage: str | None = None) -> None:
        if self.data is not None:
            return
        data = load_training_data(self.cfg)
        if self.cfg.pairs.positives == "document":  # after the cache: it stores "evidence"
            for e in data.train + data.dev:
                e.positives = Positives()
        if self.cfg.loader.holdout_fraction > 0:
            data = holdout_train_documents(
                data, self.cfg.loader.holdout_fraction, self.cfg.loader.split_seed
            )
        if self.cfg.loader.max_train_questions is not None:
            data.train = data.train[: self.cfg.loader.max_train_questions]
        if not data.train or not data.dev:
            raise ValueError(
                f"{self.cfg.data.name}: {len(data.train)} train / {len(data.dev)} dev questions; need both"
            )
        self.data = data
        logger.info(
            "train %d questions (%d docs), dev %d, corpus %d docs",
            len(data.train),
            len(data.train_doc_ids),
            len(data.dev),
            len(data.corpus_doc_ids),
        )

    @property
    def token_dim(self) -> int:
        return int(next(iter(self.data.features.values())).H.shape[1])

    @property
    def concept_dim(self) -> int:
        return int(next(iter(self.data.features.values())).u.shape[1])

    def batch_sampler(self) -> NoDuplicateDocBatchSampler:
        """This rank's share of the batches (all of them without DDP)."""
        trainer = self.trainer
        return NoDuplicateDocBatchSampler(
            [e.doc_id for e in self.data.train],
            self.cfg.loader.batch_size,
            self.cfg.seed,
            num_replicas=trainer.world_size if trainer is not None else 1,
            rank=trainer.global_rank if trainer is not None else 0,
        )

    def train_dataloader(self) -> DataLoader:
        collate = TrainCollator(
            self.data.features,
            self.data.train_doc_ids,
            self.cfg.loader.extra_negative_docs,
            self.cfg.seed,
        )
        return DataLoader(self.data.train, batch_sampler=self.batch_sampler(), collate_fn=collate)

    def val_batch(self) -> ValBatch:
        return ValBatch(self.data.dev, [self.data.features[d] for d in self.data.corpus_doc_ids])

    def val_dataloader(self) -> DataLoader:
        return DataLoader([0], batch_size=1, collate_fn=lambda _: self.val_batch())

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        """Move features without Lightning's default deep copy of dataclasses (a no-op on CPU)."""
        if isinstance(batch, (TrainBatch, ValBatch)):
            return type(batch)(batch.examples, [f.to(device) for f in batch.docs])
        return super().transfer_batch_to_device(batch, device, dataloader_idx)


__all__ = [
    "GraLCDataModule",
    "NoDuplicateDocBatchSampler",
    "TrainBatch",
    "TrainCollator",
    "TrainingData",
    "ValBatch",
    "holdout_train_documents",
]
