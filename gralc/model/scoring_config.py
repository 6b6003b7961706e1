"""How a trained model scores at inference: settings chosen by cross-validation, never learned.

:class:`ScoringConfig` is the one home of the inference-only settings (``late_interaction``,
``kg_prox_idf``): a model holds one (``GraLCModel.scoring``), exports and checkpoints save it
beside ``model_config``. An export may also replace the trained score terms that
:func:`export_keys` names (the :class:`~gralc.model.gralc_model.ModelConfig` fields marked
``export``, and ``cut_unit`` of the BoundaryConfig): ``overrides``, written into the export's
``model_config`` / ``pipeline_config.chunking.boundary``. One flat spelling for both:
``gralc export RUN --out DIR scoring.late_interaction=0.8 scoring.sentence_evidence=0.3``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from gralc.chunking.boundaries import BoundaryConfig
from gralc.model.model_config import ModelConfig

#: ScoringConfig override keys stored in the BoundaryConfig (``pipeline.chunking.boundary``)
BOUNDARY_KEYS = ("cut_unit",)


def export_keys() -> tuple[str, ...]:
    """The trained settings an export may replace: the ModelConfig fields marked
    ``metadata={"export": True}``, then :data:`BOUNDARY_KEYS`.

    >>> export_keys()
    ('sentence_evidence', 'evidence_sentences', 'phrase_weight', 'concept_weight', 'cut_unit')
    """
    return (*(f.name for f in fields(ModelConfig) if f.metadata.get("export")), *BOUNDARY_KEYS)


def _own_keys() -> tuple[str, ...]:
    return tuple(f.name for f in fields(ScoringConfig) if f.name != "overrides")


def scoring_keys() -> tuple[str, ...]:
    """Every key ``scoring.KEY=value`` takes: the ScoringConfig's own fields, then
    :func:`export_keys`.

    >>> scoring_keys()[:2]
    ('late_interaction', 'kg_prox_idf')
    """
    return (*_own_keys(), *export_keys())


@dataclass(frozen=True)
class ScoringConfig:
    """The inference-only scoring of a trained model, validated at construction.

    ``late_interaction`` (m in [0, 1), 0 = off): the score mixes in the MaxSim of the question's
    word-piece vectors with the chunk's token vectors (:mod:`gralc.model.late_interaction`;
    chunks made with ``model(docs, soft=False, tokens=True)``); the training loss's own weight
    is ``optim.late_interaction``. ``kg_prox_idf``: kg_prox weighs each question concept by its
    IDF over the chunks searched (the concept match's statistics) instead of averaging them
    equally (a search passes the weights as the question's entity mask). ``overrides``: the
    trained score terms an export replaces (keys of :func:`export_keys`); a loaded model's are
    already in its ModelConfig / BoundaryConfig, so empty.

    >>> ScoringConfig.from_dict({"late_interaction": 0.8, "phrase_weight": 0.05})
    ScoringConfig(late_interaction=0.8, kg_prox_idf=False, overrides={'phrase_weight': 0.05})
    """

    #: weight m of the token-level MaxSim mixed into the score (0: off)
    late_interaction: float = 0.0
    #: weigh kg_prox's question concepts by their IDF over the chunks searched
    kg_prox_idf: bool = False
    overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.late_interaction, bool) or not isinstance(self.late_interaction, int | float):
            raise ValueError(f"scoring.late_interaction must be a number in [0, 1), got "
                             f"{self.late_interaction!r}")
        object.__setattr__(self, "late_interaction", float(self.late_interaction))
        if not 0.0 <= self.late_interaction < 1.0:
            raise ValueError(
                f"scoring.late_interaction must lie in [0, 1) (0: no token-level MaxSim), got "
                f"{self.late_interaction}")
        if not isinstance(self.kg_prox_idf, bool):
            raise ValueError(f"scoring.kg_prox_idf must be true or false, got {self.kg_prox_idf!r}")
        allowed = export_keys()
        unknown = sorted(set(self.overrides) - set(allowed))
        if unknown:
            raise ValueError(f"export settings {unknown}: only {list(scoring_keys())} may be set "
                             "at export (everything else is what the model was trained with)")
        object.__setattr__(self, "overrides", {k: self.overrides[k] for k in allowed
                                               if k in self.overrides})
        self.apply({}, {})  # a bad value fails here, with its key's name

    def __hash__(self) -> int:
        return hash((self.late_interaction, self.kg_prox_idf, tuple(sorted(self.overrides.items()))))

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any] | None) -> ScoringConfig:
        """From flat ``{key: value}`` (keys of :func:`scoring_keys`; None values: as
        trained; a nested ``overrides`` mapping is read too); an unknown key is an error.

        >>> ScoringConfig.from_dict({"kg_prox_idf": True}).kg_prox_idf
        True
        """
        flat = {k: v for k, v in dict(settings or {}).items() if v is not None}
        flat = {**dict(flat.pop("overrides", None) or {}), **flat}
        own = {k: flat.pop(k) for k in _own_keys() if k in flat}
        return cls(**own, overrides=flat)

    def updated(self, settings: Mapping[str, Any] | None) -> ScoringConfig:
        """This scoring with each key of flat ``settings`` replaced (None values: kept).

        >>> ScoringConfig(late_interaction=0.8).updated({"phrase_weight": 0.05}).settings()
        {'late_interaction': 0.8, 'kg_prox_idf': False, 'phrase_weight': 0.05}
        """
        given = {k: v for k, v in dict(settings or {}).items() if v is not None}
        return ScoringConfig.from_dict({**self.settings(), **given})

    def settings(self) -> dict[str, Any]:
        """Flat ``{key: value}``: the own fields, then the overrides that are set."""
        return {**{k: getattr(self, k) for k in _own_keys()}, **self.overrides}

    def own(self) -> ScoringConfig:
        """The inference-only fields alone (no overrides): what a model holds once they are applied."""
        return ScoringConfig(self.late_interaction, self.kg_prox_idf)

    def apply(self, model_config: Mapping[str, Any], boundary: Mapping[str, Any]
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(model_config, boundary)`` (saved dicts) with the overrides in; each value is
        validated by its dataclass (a bad one is a ValueError naming its key)."""
        from omegaconf import OmegaConf
        from omegaconf.errors import OmegaConfBaseException

        model_part = {k: v for k, v in self.overrides.items() if k not in BOUNDARY_KEYS}
        boundary_part = {k: v for k, v in self.overrides.items() if k in BOUNDARY_KEYS}
        for schema, part in ((ModelConfig, model_part), (BoundaryConfig, boundary_part)):
            try:
                OmegaConf.merge(OmegaConf.structured(schema), part)
            except OmegaConfBaseException as exc:
                raise ValueError(f"scoring.{getattr(exc, 'full_key', '')}: "
                                 f"{str(exc.msg).splitlines()[0]}") from None
            schema(**part)  # range checks, with the key's name
        return {**model_config, **model_part}, {**boundary, **boundary_part}


__all__ = ["BOUNDARY_KEYS", "ScoringConfig", "export_keys", "scoring_keys"]
