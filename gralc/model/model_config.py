"""What a GraLC model is built and trained with: :class:`ModelConfig` (``model.*``), the
architecture and the score terms training learns with. Its home is apart from the model
(:mod:`gralc.model.gralc_model`, which re-exports it) so that the inference-only scoring
(:mod:`gralc.model.scoring_config`) can name the fields an export may replace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: field metadata of the trained score terms an export may replace (ScoringConfig.overrides)
EXPORT = {"export": True}


@dataclass
class ModelConfig:
    """Learnable parts and their initial values (the paper's hand-set values by default). The
    boundary weights' initial values (alpha, gamma, tau) and the hard decoder's settings are
    NOT here: they are the one :class:`~gralc.chunking.boundaries.BoundaryConfig`
    (``pipeline.chunking.boundary``) the baselines use too.

    ``use_kg=False`` is "structure-aware without KG" (no GAT, no fusion); ``use_kg_prox=False``
    scores by cosine alone (no beta: the score ``beta cos + (1 - beta) kg_prox`` of Eq. 9, the
    paper's "hybrid" score; GraLC keeps "hybrid" for BM25 + dense fusion, and the key was
    ``use_hybrid`` in 0.1). ``use_lexical=True`` adds the learned lexical term
    (BM25 over the same chunks, weight ``lexical_init``, learned unless ``learn_lexical=False``;
    see :mod:`gralc.model.hybrid_scorer`): every caller of :meth:`GraLCModel.score_parts` must then
    pass the (Q, K) BM25 scores. ``learn_*=False`` keeps that part at its initial value
    (``lambda_init=0`` with ``learn_lambda=False``: no token fusion, the GAT then serves the
    score's kg_prox alone). ``cut_temperature`` is T of the soft cuts
    ``sigmoid((b - tau) / T)`` in training; ``soft_extend`` how far (tokens) a soft chunk may
    reach past its hard span.

    ``sentence_evidence`` (w in [0, 1), 0 = off) and ``evidence_sentences`` (k >= 1): a
    chunk's score mixes in the score of its best group of k sentences
    (:mod:`gralc.model.sentence_evidence`) wherever chunks are made with their units
    (``model(docs, soft, units=True)``: training, validation, the trained scorer, an index and
    eval.py alike). The weight is not learned but chosen by cross-validation; an export may
    change it (``gralc export scoring.sentence_evidence=...``).

    Example: ``ModelConfig(use_kg=False, use_lexical=True)`` is the structure-aware model
    without the graph, scoring with the learned lexical term.

    ``phrase_weight`` (g >= 0, 0 = off): the final score adds ``g * phrase``, ``phrase`` the
    BM25 over pairs of consecutive terms (``BM25Config(ngram=2)``) of the question against
    each chunk, normalised like the lexical term (:func:`~gralc.model.hybrid_scorer.normalise_lexical`); a phrase-match
    feature beside the unigram BM25, chosen by cross-validation and set at export
    (``gralc export scoring.phrase_weight=...``), or trained with it in the score.

    ``concept_weight`` (c >= 0, 0 = off): the final score adds ``c * concepts``, ``concepts``
    the concept match, BM25 over linked concept ids of the question against each chunk
    (:mod:`gralc.retrieval.trained.concept_match`), in a fixed unit (the IDF of a concept held by one
    chunk) so that the IDF counts; unlike kg_prox, a common concept adds almost nothing. Chosen by cross-validation and set at export (``gralc export
    scoring.concept_weight=...``), or trained with it in the score.

    The fields marked ``export`` are the trained score terms an export may replace
    (:func:`~gralc.model.scoring_config.export_keys`); the inference-only settings
    (late interaction, IDF-weighted kg_prox) are the model's
    :class:`~gralc.model.scoring_config.ScoringConfig`, not here.
    """

    #: KG infusion: a GAT over the concept graph, its output fused into the tokens of mentions
    use_kg: bool = True
    #: score beta cos + (1 - beta) kg_prox (false: cosine alone)
    use_kg_prox: bool = True
    #: attention heads of the GAT
    gat_heads: int = 4
    #: width of the GAT's output (all heads)
    gat_out_dim: int = 256
    #: dropout on the GAT's attention
    gat_dropout: float = 0.1
    #: gat (GATConv) or gatv2 (GATv2Conv)
    gat_version: str = "gat"
    #: hidden width of the MLP mapping concepts into token space
    mlp_hidden: int = 384
    #: dropout of that MLP
    mlp_dropout: float = 0.1
    #: initial lambda of h' = h + lambda MLP(u')
    lambda_init: float = 0.1
    #: one lambda per token dimension instead of one scalar
    lambda_per_dimension: bool = False
    #: learn lambda (false: keep lambda_init)
    learn_lambda: bool = True
    #: learn the boundary weights alpha
    learn_alpha: bool = True
    #: learn gamma
    learn_gamma: bool = True
    #: learn the peak threshold tau
    learn_tau: bool = True
    #: initial beta of beta cos + (1 - beta) kg_prox
    beta_init: float = 0.7
    #: learn beta
    learn_beta: bool = True
    #: add a learned BM25 term over the same chunks to the score
    use_lexical: bool = False
    lexical_init: float = 0.5
    #: learn the lexical term's weight (false: keep lexical_init)
    learn_lexical: bool = True
    cut_temperature: float = 0.05
    soft_extend: int = 64
    #: weight w of each chunk's best group of sentences in its score (0: off)
    sentence_evidence: float = field(default=0.0, metadata=EXPORT)
    #: sentences k per group of sentence evidence
    evidence_sentences: int = field(default=1, metadata=EXPORT)
    #: weight g of the term-pair BM25 added to the score (0: off)
    phrase_weight: float = field(default=0.0, metadata=EXPORT)
    #: weight c of the concept match added to the score (0: off)
    concept_weight: float = field(default=0.0, metadata=EXPORT)

    def __post_init__(self) -> None:
        if not 0.0 <= self.concept_weight <= 1.0:
            raise ValueError(
                f"model.concept_weight must lie in [0, 1] (0: no concept match), got {self.concept_weight}")
        if not 0.0 <= self.phrase_weight <= 1.0:
            raise ValueError(
                f"model.phrase_weight must lie in [0, 1] (0: no term-pair BM25), got {self.phrase_weight}")
        if not 0.0 <= self.sentence_evidence < 1.0:
            raise ValueError(
                f"model.sentence_evidence must lie in [0, 1) (0: chunks scored alone), got "
                f"{self.sentence_evidence}")
        if self.evidence_sentences < 1:
            raise ValueError(f"model.evidence_sentences must be >= 1, got {self.evidence_sentences}")
        if self.cut_temperature <= 0:
            raise ValueError(f"model.cut_temperature must be > 0, got {self.cut_temperature}")
        if not 0.0 < self.lexical_init < 1.0:
            raise ValueError(f"model.lexical_init must lie in (0, 1), got {self.lexical_init}")

    @property
    def concept_out_dim(self) -> int | None:
        """Width d' of u' (the GAT output) with the KG; None without (u itself)."""
        return self.gat_out_dim if self.use_kg else None


__all__ = ["EXPORT", "ModelConfig"]
