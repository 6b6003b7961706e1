"""The training feature cache: :class:`TrainingData`, every document's
:class:`~gralc.model.doc_features.DocFeatures` and the question encodings, saved once as JSON
records + safetensors (never a pickle). Features themselves are built in
:mod:`gralc.model.doc_features`, the cache is filled and read by
:func:`gralc.training.datamodule.load_training_data`."""

from __future__ import annotations

from dataclasses import dataclass

from gralc.model.doc_features import DocFeatures
from gralc.training.pairs import Positives, TrainingExample


@dataclass
class TrainingData:
    """What one cache entry holds: the features of every non-test corpus document by id, the
    train and dev examples, the ids of the documents with training examples and of the whole
    non-test corpus.

    Example: ``load_training_data(cfg).features["PMC9000001"]`` -> that document's
    :class:`~gralc.model.doc_features.DocFeatures`.
    """

    features: dict[str, DocFeatures]
    train: list[TrainingExample]
    dev: list[TrainingExample]
    train_doc_ids: list[str]
    corpus_doc_ids: list[str]


def record_types() -> list[type]:
    """The GraLC record classes a feature cache may hold (and nothing else).

    >>> "TrainingData" in [t.__name__ for t in record_types()]
    True
    """
    from gralc.documents import model as dm
    from gralc.knowledge.mention import EntityMention

    return [DocFeatures, TrainingData, TrainingExample, Positives, EntityMention,
            *(getattr(dm, n) for n in ("Document", "Section", "Paragraph", "Sentence", "Citation",
                                       "CrossRef", "ListBlock", "Caption", "Reference"))]


def save_features(payload: object, path) -> None:
    """Write ``payload`` (tensors, plain values, :func:`record_types`) as the folder ``path``:
    ``records.json`` + ``tensors.safetensors``, renamed into place in one step.

    Example: ``save_features(data, Path("data/cache/train_features/KEY"))`` writes
    ``records.json`` and ``tensors.safetensors`` there.
    """
    from gralc.record_store import save_records

    save_records(payload, path, record_types())


def load_features(path) -> object:
    """Inverse of :func:`save_features`; nothing is unpickled, a record type outside
    :func:`record_types` or a damaged folder is a ``ValueError`` naming ``path``.

    Example: ``load_features(Path("data/cache/train_features/KEY"))`` -> the
    :class:`TrainingData` :func:`save_features` wrote there.
    """
    from gralc.record_store import load_records

    return load_records(path, record_types(), what="training feature cache")
