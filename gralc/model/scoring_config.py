"""How a trained model scores at inference: the settings an export may change, never its weights.

``gralc export RUN --out DIR scoring.sentence_evidence=0.3 scoring.late_interaction=0.8
scoring.phrase_weight=0.05 scoring.cut_unit=sentence`` stores them in ``DIR/inference.yaml`` where training stored its
own: the :class:`~gralc.model.gralc_model.ModelConfig` keys in ``model_config``, ``cut_unit``
in ``pipeline_config.chunking.boundary`` (so every export, old or new, reads the same way).
Each is chosen by cross-validation, not learned.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from gralc.chunking.boundaries import BoundaryConfig
from gralc.model.gralc_model import ModelConfig

#: ScoringConfig fields stored in the BoundaryConfig (``pipeline.chunking.boundary``)
BOUNDARY_KEYS = ("cut_unit",)


@dataclass(frozen=True)
class ScoringConfig:
    """Export-time scoring settings; None keeps the checkpoint's value. ``sentence_evidence``,
    ``evidence_sentences``, ``late_interaction``, ``phrase_weight``, ``concept_weight``,
    ``kg_prox_idf``: the :class:`ModelConfig` fields of those names; ``cut_unit``: where the
    hard cuts of the learned boundary scores may fall (``BoundaryConfig.cut_unit``). Validated
    at construction, before any file is read or written."""

    sentence_evidence: float | None = None
    evidence_sentences: int | None = None
    late_interaction: float | None = None
    phrase_weight: float | None = None
    concept_weight: float | None = None
    kg_prox_idf: bool | None = None
    cut_unit: str | None = None

    def __post_init__(self) -> None:
        ModelConfig(**self.model_settings())  # a bad value fails here, with its key's name
        BoundaryConfig(**self.boundary_settings())

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any] | None) -> ScoringConfig:
        """From ``{key: value}`` (None values: as trained); an unknown key is an error."""
        settings = dict(settings or {})
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(settings) - set(allowed))
        if unknown:
            raise ValueError(f"export settings {unknown}: only {allowed} may be set "
                             "at export (everything else is what the model was trained with)")
        return cls(**settings)

    def settings(self) -> dict[str, Any]:
        """Every field that is set."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def model_settings(self) -> dict[str, Any]:
        """The :class:`ModelConfig` fields that are set."""
        return {k: v for k, v in self.settings().items() if k not in BOUNDARY_KEYS}

    def boundary_settings(self) -> dict[str, Any]:
        """The :class:`BoundaryConfig` fields that are set."""
        return {k: v for k, v in self.settings().items() if k in BOUNDARY_KEYS}


__all__ = ["BOUNDARY_KEYS", "ScoringConfig"]
