"""Training data: benchmark -> frozen features (cached) -> batches without duplicate documents.

``GraLCDataModule(cfg).setup()`` loads the benchmark, splits the questions
(:func:`gralc.training.pairs.split_questions`), prepares and featurises every corpus document
ONCE (encoder cache + one feature cache entry keyed by a hash of everything it depends on; a
hit does not even load the encoder), then serves train batches (:class:`TrainBatch`:
``batch_size`` questions of DISTINCT documents, :class:`NoDuplicateDocBatchSampler`, plus
``extra_negative_docs`` random training documents) and one validation batch
(:class:`ValBatch`: every dev question against the whole val corpus).

Mixed sources (``mix``, :class:`gralc.training.config.MixSource`): the primary ``data`` alone
supplies the dev set and the validation corpus; each mix source adds its training questions
and documents (ids prefixed ``NAME:``, :func:`load_mix_sources`), ``round(w * n_primary_train)``
questions an epoch (:func:`epoch_draw`), its documents negatives in proportion
(:class:`TrainCollator`). The rules in full: docs/training.md."""

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
from gralc.training.config import TrainConfig, has_dev_split
from gralc.training.features import TrainingData, load_features, save_features
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
    the rest are extra negative documents.

    Example: ``batch = next(iter(dm.train_dataloader()))`` -> ``batch.docs[:len(batch.examples)]``
    are the questions' gold documents, the rest extra negatives.
    """

    examples: list[TrainingExample]
    docs: list[DocFeatures]


@dataclass
class ValBatch:
    """The validation set as one batch: the dev questions (``examples``) and the features of every
    corpus document (``docs``), each question ranked against all of them.

    Example: ``dm.val_batch().examples`` -> the dev questions, each ranked against every document
    of ``dm.val_batch().docs``.
    """
    examples: list[TrainingExample]
    docs: list[DocFeatures]


def epoch_draw(n: int, k: int, rng: random.Random) -> list[int]:
    """``k`` indices of ``range(n)`` for one epoch: distinct while ``k <= n``; beyond, every
    index ``k // n`` times plus ``k % n`` distinct ones (whole shuffled passes, the last one
    cut), so no question repeats before every other has been drawn.

    >>> import random
    >>> sorted(epoch_draw(3, 5, random.Random(0)))
    [0, 1, 1, 2, 2]
    """
    if n <= 0 or k <= 0:
        return []
    out: list[int] = []
    while len(out) < k:
        perm = list(range(n))
        rng.shuffle(perm)
        out += perm[: k - len(out)]
    return out


class NoDuplicateDocBatchSampler(Sampler[list[int]]):
    """Batches of example indices in which no two examples share a document.

    Each epoch (``set_epoch``; :class:`GraLCDataModule` builds the sampler anew every epoch
    with the trainer's epoch) shuffles with ``seed + epoch``; an example whose document is
    already in the batch waits for the next batch. ``__len__`` is exact for the epoch.
    DDP: ``num_replicas`` ranks each take every ``num_replicas``-th batch from ``rank``; the
    list is padded by repeating its first batches so every rank gets the same count.

    Mixed sources: ``n_fixed`` (default: all) leading examples are in every epoch; each
    ``(start, stop, k)`` of ``draws`` adds ``k`` examples of ``[start, stop)`` drawn by
    :func:`epoch_draw` with ``random.Random(seed + epoch)`` (the draws in order).

    >>> sampler = NoDuplicateDocBatchSampler(["d1", "d1", "d2", "d3"], batch_size=2, shuffle=False)
    >>> sampler.batches()
    [[0, 2], [1, 3]]
    """

    def __init__(
        self,
        doc_ids: list[str],
        batch_size: int,
        seed: int = 0,
        shuffle: bool = True,
        num_replicas: int = 1,
        rank: int = 0,
        n_fixed: int | None = None,
        draws: list[tuple[int, int, int]] = (),
        epoch: int = 0,
    ):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in [0, {num_replicas}), got {rank}")
        self.doc_ids, self.batch_size, self.seed, self.shuffle = doc_ids, batch_size, seed, shuffle
        self.num_replicas, self.rank = num_replicas, rank
        self.n_fixed = len(doc_ids) if n_fixed is None else n_fixed
        self.draws = list(draws)
        for start, stop, k in self.draws:
            if not self.n_fixed <= start <= stop <= len(doc_ids) or k < 0:
                raise ValueError(f"draw {(start, stop, k)} outside the {len(doc_ids)} examples")
        self.epoch = epoch

    def set_epoch(self, epoch: int) -> None:
        """Set the epoch that seeds the shuffle and the mix draws."""
        self.epoch = epoch

    def epoch_indices(self) -> list[int]:
        """The examples of this epoch, before shuffling (a drawn one may repeat)."""
        order = list(range(self.n_fixed))
        rng = random.Random(self.seed + self.epoch)
        for start, stop, k in self.draws:
            order += [start + i for i in epoch_draw(stop - start, k, rng)]
        return order

    def batches(self) -> list[list[int]]:
        """This epoch's batches of example indices for this rank (no document twice in a batch)."""
        order = self.epoch_indices()
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
    the batch's question ids, so a resumed run sees the same batches) from ``pool``.

    ``mix_pools``: ``(document ids, weight)`` of further sources (mixed training); then each
    extra slot first picks a source, ``pool`` with weight ``pool_weight`` or a mix pool with
    its weight (the sources' questions per epoch), then a document of it (never a gold one of
    the batch nor one already picked). Without ``mix_pools`` the draw is as before them."""

    def __init__(
        self,
        features: dict[str, DocFeatures],
        pool: list[str],
        k_extra: int,
        seed: int = 0,
        mix_pools: list[tuple[list[str], float]] = (),
        pool_weight: float = 1.0,
    ):
        self.features, self.pool, self.k_extra, self.seed = features, pool, k_extra, seed
        self.pools = [(pool, pool_weight), *((p, w) for p, w in mix_pools if p and w > 0)]

    def __call__(self, examples: list[TrainingExample]) -> TrainBatch:
        gold = [e.doc_id for e in examples]
        if len(set(gold)) != len(gold):
            raise ValueError(f"a batch holds two questions of one document: {gold}")
        rng = random.Random(
            zlib.crc32("|".join(e.question_id for e in examples).encode()) + self.seed
        )
        if len(self.pools) == 1:
            candidates = [d for d in self.pool if d not in set(gold)]
            extra = rng.sample(candidates, min(self.k_extra, len(candidates)))
        else:
            extra, taken = [], set(gold)
            for _ in range(self.k_extra):
                open_ = [(p, w) for p, w in self.pools if any(d not in taken for d in p)]
                if not open_:
                    break
                p = rng.choices([p for p, _ in open_], weights=[w for _, w in open_])[0]
                extra.append(rng.choice([d for d in p if d not in taken]))
                taken.add(extra[-1])
        return TrainBatch(examples, [self.features[d] for d in gold + extra])


def _limit_docs(bench: Benchmark, max_docs: int | None) -> Benchmark:
    if max_docs is None or len(bench.documents) <= max_docs:
        return bench
    docs = bench.documents[:max_docs]
    keep = {d.id for d in docs}
    return Benchmark(bench.name, docs, [q for q in bench.questions if q.gold_doc_id in keep])


def _content_digests(cfg: TrainConfig) -> dict:
    """SHA-256s of the encoder folder and the knowledge files ``cfg`` reads."""
    from gralc.encoding.models import encoder_digest, file_digests
    from gralc.pipeline import knowledge_files

    return {"encoder": encoder_digest(cfg.pipeline.encoder.model),
            "knowledge": file_digests(knowledge_files(cfg.pipeline.knowledge))}


def _cache_key(cfg: TrainConfig, bench: Benchmark) -> str:
    pipe = to_dict(cfg.pipeline)
    for k in ("cache_dir", "device", "batch_size"):
        pipe["encoder"].pop(k, None)
    payload = {
        "version": CACHE_VERSION,
        "data": to_dict(cfg.data),
        "pipeline": {k: pipe[k] for k in ("encoder", "knowledge")},
        # the encoder's and the knowledge files' content, not only their names: features
        # built with a file since edited in place are never read back
        "content": _content_digests(cfg),
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
    """Encode, link and featurise the non-test corpus and the train/dev questions.

    Example: ``build_training_data(cfg, load_benchmarks(cfg.data)[0]).train[0].question_id`` ->
    the first training question's id (its features and positives built).
    """
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
    prepared = pipeline.prepare(corpus, progress=cfg.trainer.enable_progress_bar is not False)
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
    (``records.json`` + ``tensors.safetensors``) when there.

    Example: ``load_training_data(cfg)`` -> the :class:`TrainingData` of ``cfg.data``, built once
    and then read from ``paths.cache_dir/train_features/``.
    """
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
    save_features(build_training_data(cfg, bench), path)
    # read back what was written: a first run trains on exactly the features a cache hit
    # serves, so two runs of one seed agree whether or not the cache was warm
    return load_features(path)


@dataclass
class MixPool:
    """One mix source's training questions (ids namespaced with ``prefix``), their documents
    and the number of its questions each epoch draws (``round(weight * n_primary_train)``).

    Example: ``load_mix_sources(cfg, data)[0].prefix`` -> ``'pubmedqa:'`` for
    ``mix=[{name: pubmedqa, path: ..., weight: 0.5}]``.
    """

    name: str
    prefix: str
    weight: float
    examples: list[TrainingExample]
    doc_ids: list[str]
    per_epoch: int = 0


def mix_prefixes(cfg: TrainConfig) -> list[str]:
    """The id prefix of each ``mix`` entry: ``NAME:``, or ``NAME[i]:`` when names repeat.

    Example: ``mix_prefixes(cfg)`` -> ``['pubmedqa[0]:', 'pubmedqa[1]:', 'squad:']`` for
    ``mix=[{name: pubmedqa, ...}, {name: pubmedqa, ...}, {name: squad, ...}]``.
    """
    names = [m.name for m in cfg.mix]
    return [f"{n}:" if names.count(n) == 1 else f"{n}[{i}]:" for i, n in enumerate(names)]


def _namespaced(data: TrainingData, prefix: str) -> tuple[list[TrainingExample], dict[str, DocFeatures]]:
    """``data``'s training examples and their documents' features, ids prefixed."""
    keep = set(data.train_doc_ids)
    feats = {
        prefix + d: replace(f, doc_id=prefix + d, doc=replace(f.doc, id=prefix + d))
        for d, f in data.features.items() if d in keep
    }
    examples = [replace(e, question_id=prefix + e.question_id, doc_id=prefix + e.doc_id)
                for e in data.train]
    return examples, feats


def load_mix_sources(cfg: TrainConfig, primary: TrainingData) -> list[MixPool]:
    """Every ``cfg.mix`` source with weight > 0, loaded through :func:`load_training_data` as
    if trained alone (its own cache entry), reduced to its training questions, ids prefixed
    (:func:`mix_prefixes`); its documents' features are added to ``primary.features``. A mix
    document whose text equals an already loaded document's (any of the primary's, or an
    earlier source's) is dropped with its questions (logged); an id that still collides is a
    ``ValueError``. ``per_epoch`` is filled in by :meth:`GraLCDataModule.setup`.

    Example: ``[p.per_epoch for p in load_mix_sources(cfg, data)]`` -> ``[0]`` before
    :meth:`GraLCDataModule.setup` fills in each source's draw per epoch.
    """
    seen_text = {hashlib.sha1(f.doc.text.encode()).hexdigest(): d
                 for d, f in primary.features.items()}
    pools = []
    for m, prefix in zip(cfg.mix, mix_prefixes(cfg)):
        if m.weight == 0:
            continue
        data = load_training_data(replace(cfg, data=m.data_config(), mix=[]))
        examples, feats = _namespaced(data, prefix)
        clash = sorted(set(feats) & set(primary.features))
        if clash:
            raise ValueError(f"mix source {prefix[:-1]}: document ids {clash[:3]} collide with "
                             "documents already loaded; rename the documents of one source")
        dropped = set()
        for d, f in feats.items():
            h = hashlib.sha1(f.doc.text.encode()).hexdigest()
            if h in seen_text:
                dropped.add(d)
                logger.warning("mix source %s: document %s has the text of %s; dropped with its "
                               "questions", prefix[:-1], d, seen_text[h])
            else:
                seen_text[h] = d
        examples = [e for e in examples if e.doc_id not in dropped]
        doc_ids = sorted({e.doc_id for e in examples})
        if not examples:
            raise ValueError(f"mix source {prefix[:-1]} ({m.path or m.name}) has no training "
                             "questions left; drop it from mix or set its weight to 0")
        primary.features.update({d: feats[d] for d in doc_ids})
        pools.append(MixPool(m.name, prefix, m.weight, examples, doc_ids))
    return pools


def holdout_train_documents(data: TrainingData, fraction: float, seed: int = 0) -> TrainingData:
    """``data`` with ``round(fraction * n)`` of its n training documents (shuffled by ``seed``
    from their sorted ids) and all their questions moved to the dev set, appended after the
    original dev questions. Held-out documents leave ``train_doc_ids`` too (the pool of extra
    negatives), so no part of training sees them; they stay in the validation corpus.

    Example: ``holdout_train_documents(data, 0.1)`` -> ``data`` with 10% of its training documents
    and their questions moved to ``dev``.
    """
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
    """Lightning data module of a :class:`~gralc.training.config.TrainConfig`: the training and
    dev questions with their documents' features (:func:`load_training_data`), the mix
    sources, batches without duplicate documents, and the dev set as one validation batch.

    Example: ``dm = GraLCDataModule(load_config(TrainConfig, CONFIG_DIR / "train.yaml")); dm.setup("fit")``
    -> ``len(dm.data.train)`` training questions, batched by ``dm.train_dataloader()``.
    """
    def __init__(self, cfg: TrainConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.data: TrainingData | None = None
        self.mix: list[MixPool] = []

    def setup(self, stage: str | None = None) -> None:
        """Load the training data once (any ``stage``): document-level positives with
        ``pairs.positives=document``, held-out training documents moved to dev, the
        ``max_train_questions`` cap, then the mix sources; ValueError without training (or needed
        dev) questions."""
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
        needs_dev = has_dev_split(self.cfg)
        if not data.train or (needs_dev and not data.dev):
            raise ValueError(
                f"{self.cfg.data.name}: {len(data.train)} train / {len(data.dev)} dev questions; "
                f"need {'both' if needs_dev else 'training questions'}"
            )
        mix = load_mix_sources(self.cfg, data)
        for pool in mix:
            if self.cfg.pairs.positives == "document":
                for e in pool.examples:
                    e.positives = Positives()
            pool.per_epoch = round(pool.weight * len(data.train))
        self.data, self.mix = data, mix
        logger.info(
            "train %d questions (%d docs), dev %d, corpus %d docs",
            len(data.train),
            len(data.train_doc_ids),
            len(data.dev),
            len(data.corpus_doc_ids),
        )
        for pool in mix:
            logger.info("mix %s (weight %g): %d of its %d training questions (%d docs) per epoch",
                        pool.prefix[:-1], pool.weight, pool.per_epoch, len(pool.examples),
                        len(pool.doc_ids))

    @property
    def train_examples(self) -> list[TrainingExample]:
        """The train dataloader's dataset: the primary's training questions, then each mix
        source's (the batch sampler picks an epoch's share of the latter)."""
        return self.data.train + [e for pool in self.mix for e in pool.examples]

    def epoch_draws(self) -> list[tuple[int, int, int]]:
        """``(start, stop, per_epoch)`` of each mix source in :attr:`train_examples`."""
        out, start = [], len(self.data.train)
        for pool in self.mix:
            out.append((start, start + len(pool.examples), pool.per_epoch))
            start += len(pool.examples)
        return out

    def corpus_features(self) -> list[DocFeatures]:
        """Every document training sees: the primary's corpus (training and dev documents of
        the training folds) and each mix source's documents."""
        ids = list(self.data.corpus_doc_ids) + [d for pool in self.mix for d in pool.doc_ids]
        return [self.data.features[d] for d in dict.fromkeys(ids)]

    @property
    def token_dim(self) -> int:
        """Width d of the documents' token vectors."""
        return int(next(iter(self.data.features.values())).H.shape[1])

    @property
    def concept_dim(self) -> int:
        """Width d_k of the documents' concept vectors."""
        return int(next(iter(self.data.features.values())).u.shape[1])

    def batch_sampler(self) -> NoDuplicateDocBatchSampler:
        """This rank's share of the batches (all of them without DDP)."""
        trainer = self.trainer
        return NoDuplicateDocBatchSampler(
            [e.doc_id for e in self.train_examples],
            self.cfg.loader.batch_size,
            self.cfg.seed,
            num_replicas=trainer.world_size if trainer is not None else 1,
            rank=trainer.global_rank if trainer is not None else 0,
            n_fixed=len(self.data.train),
            draws=self.epoch_draws(),
            # Lightning's set_epoch reaches only a DataLoader's sampler (or batch_sampler.sampler),
            # never a batch sampler: run.build_trainer reloads the train dataloader every epoch
            epoch=trainer.current_epoch if trainer is not None else 0,
        )

    def train_dataloader(self) -> DataLoader:
        """This epoch's training batches (:meth:`batch_sampler`), collated by :class:`TrainCollator`
        with extra negative documents."""
        collate = TrainCollator(
            self.data.features,
            self.data.train_doc_ids,
            self.cfg.loader.extra_negative_docs,
            self.cfg.seed,
            mix_pools=[(p.doc_ids, p.per_epoch) for p in self.mix],
            pool_weight=len(self.data.train),
        )
        return DataLoader(self.train_examples, batch_sampler=self.batch_sampler(), collate_fn=collate)

    def val_batch(self) -> ValBatch:
        """The dev questions against every corpus document, as one :class:`ValBatch`."""
        return ValBatch(self.data.dev, [self.data.features[d] for d in self.data.corpus_doc_ids])

    def val_dataloader(self) -> DataLoader:
        """A loader of the one batch :meth:`val_batch`."""
        return DataLoader([0], batch_size=1, collate_fn=lambda _: self.val_batch())

    def transfer_batch_to_device(self, batch, device, dataloader_idx: int):
        """Move features without Lightning's default deep copy of dataclasses (a no-op on CPU)."""
        if isinstance(batch, (TrainBatch, ValBatch)):
            return type(batch)(batch.examples, [f.to(device) for f in batch.docs])
        return super().transfer_batch_to_device(batch, device, dataloader_idx)


__all__ = [
    "GraLCDataModule",
    "MixPool",
    "NoDuplicateDocBatchSampler",
    "TrainBatch",
    "TrainCollator",
    "TrainingData",
    "ValBatch",
    "epoch_draw",
    "holdout_train_documents",
    "load_mix_sources",
]
