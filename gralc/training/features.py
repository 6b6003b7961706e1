"""The training feature cache: every document's :class:`~gralc.model.doc_features.DocFeatures`
and the question encodings, saved once as JSON records + safetensors (never a pickle).
Features themselves are built in :mod:`gralc.model.doc_features`."""

from __future__ import annotations


def record_types() -> list[type]:
    """The GraLC record classes a feature cache may hold (and nothing else)."""
    from gralc.documents import model as dm
    from gralc.knowledge.mention import EntityMention
    from gralc.model.doc_features import DocFeatures
    from gralc.training.datamodule import TrainingData
    from gralc.training.pairs import Positives, TrainingExample

    return [DocFeatures, TrainingData, TrainingExample, Positives, EntityMention,
            *(getattr(dm, n) for n in ("Document", "Section", "Paragraph", "Sentence", "Citation",
                                       "CrossRef", "ListBlock", "Caption", "Reference"))]


def save_features(payload: object, path) -> None:
    """Write ``payload`` (tensors, plain values, :func:`record_types`) as the folder ``path``:
    ``records.json`` + ``tensors.safetensors``, renamed into place in one step."""
    from gralc.record_store import save_records

    save_records(payload, path, record_types())


def load_features(path) -> object:
    """Inverse of :func:`save_features`; nothing is unpickled, a record type outside
    :func:`record_types` or a damaged folder is a ``ValueError`` naming ``path``."""
    from gralc.record_store import load_records

    return load_records(path, record_types(), what="training feature cache")
