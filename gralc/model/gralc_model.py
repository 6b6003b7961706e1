"""The trainable GraLC model: GAT over G_k, lambda-gated token fusion, learned boundaries,
soft / hard chunk pooling and the hybrid score, composed from :mod:`gralc.model` parts.

Query entities. A question's linked concepts get their own small concept graph G_q (same
knowledge base, co-occurrence in the one question sentence) and go through the SAME GAT as
the document concepts (a siamese concept encoder), so kg_proximity compares u'_q with u'_c in
one space at every step of training. (The GAT has no residual, so comparing raw u_q with
u'_c would compare two different spaces; routing u_q through the fusion MLP would map it to
token space instead of concept space.) Without the KG (``use_kg=False``) both sides use the
raw concept embeddings u.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from gralc.chunking.boundaries import BoundaryConfig, cut_allowed_mask
from gralc.chunking.decoders import InteriorScoreCohesion, dp_decode, peak_decode, spans_from_cuts
from gralc.model.boundary_scorer import BoundaryScorer
from gralc.model.chunk_set import ChunkSet, Spans
from gralc.model.gat_infusion import GATInfusion
from gralc.model.hybrid_scorer import HybridScorer, LexicalTerm, normalise_lexical
from gralc.model.late_interaction import chunk_tokens, maxsim, with_late_interaction
from gralc.model.model_config import ModelConfig
from gralc.model.scoring_config import BOUNDARY_KEYS, ScoringConfig
from gralc.model.sentence_evidence import overlap_pairs, sentence_unit_spans, with_sentence_evidence
from gralc.model.soft_pooling import soft_chunk_pool
from gralc.model.token_fusion import TokenFusion

if TYPE_CHECKING:
    from gralc.model.doc_features import DocFeatures


class GraLCModel(nn.Module):
    """``GraLCModel(config, boundary, token_dim d, concept_dim d_k, scoring)``: ``boundary``
    gives the initial alpha / gamma / tau and the hard decoder's settings, ``scoring`` the
    inference-only settings (:class:`~gralc.model.scoring_config.ScoringConfig`, default: off;
    ``model.scoring``); ``model(docs, soft)`` turns
    :class:`~gralc.model.doc_features.DocFeatures` into a :class:`ChunkSet`, :meth:`score_parts`
    scores queries against it: the same code in training, validation and inference."""

    def __init__(
        self, config: ModelConfig, boundary: BoundaryConfig, token_dim: int, concept_dim: int,
        scoring: ScoringConfig | None = None,
    ) -> None:
        super().__init__()
        self.config, self.boundary_config = config, boundary
        #: the inference-only scoring (late interaction, IDF-weighted kg_prox); never trained
        self.scoring = scoring or ScoringConfig()
        if self.scoring.overrides:
            raise ValueError(f"scoring overrides {dict(self.scoring.overrides)} belong in the "
                             "ModelConfig / BoundaryConfig (ScoringConfig.apply), not the model's scoring")
        self.token_dim, self.concept_dim = token_dim, concept_dim
        c, bc = config, boundary
        self.gat: GATInfusion | None = None
        self.fusion: TokenFusion | None = None
        if c.use_kg:
            self.gat = GATInfusion(
                concept_dim, c.gat_out_dim, c.gat_heads, c.gat_dropout, c.gat_version
            )
            self.fusion = TokenFusion(
                c.gat_out_dim,
                token_dim,
                c.mlp_hidden,
                c.lambda_init,
                c.lambda_per_dimension,
                c.mlp_dropout,
                c.learn_lambda,
            )
        self.boundary = BoundaryScorer(
            (bc.alpha_struct, bc.alpha_sem, bc.alpha_entity),
            bc.gamma,
            bc.tau,
            c.cut_temperature,
            c.learn_alpha,
            c.learn_gamma,
            c.learn_tau,
        )
        self.hybrid = HybridScorer(c.beta_init, c.learn_beta) if c.use_kg_prox else None
        self.lexical = LexicalTerm(c.lexical_init, c.learn_lexical) if c.use_lexical else None

    # ----- representations ------------------------------------------------------------------
    def concepts(self, u: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """u (C, d_k) -> u' (C, d'): the GAT, or u itself without the KG."""
        return self.gat(u, edge_index) if self.gat is not None else u

    def enrich(self, f: DocFeatures) -> tuple[torch.Tensor, torch.Tensor]:
        """``(H' (N, d), u' (C, d'))``: H' = H + lambda * MLP(u') on mention tokens (Eq. 4)."""
        u_prime = self.concepts(f.u, f.edge_index)
        if self.fusion is None:
            return f.H, u_prime
        return self.fusion(f.H, u_prime, f.token_entity), u_prime

    def boundaries(self, f: DocFeatures) -> torch.Tensor:
        """b (N,) with the learned alpha and gamma (Eq. 8)."""
        return self.boundary(f.b_struct, f.b_sem, f.entity_cross)

    def cut_allowed(self, f: DocFeatures) -> torch.Tensor:
        """(N,) bool on ``f``'s device: tokens a cut may precede, word starts or (``boundary
        cut_unit=sentence``) sentence starts (:func:`gralc.chunking.boundaries.cut_allowed_mask`)."""
        if self.boundary_config.cut_unit == "word":
            return f.word_start
        return cut_allowed_mask(f.doc, f.offsets, self.boundary_config.cut_unit).to(f.word_start.device)

    def forbidden(self, f: DocFeatures, allowed: torch.Tensor | None = None) -> torch.Tensor:
        """(N,) bool: cuts the hard decoders never make (inside a mention, a word, or with
        ``cut_unit=sentence`` a sentence); ``allowed``: :meth:`cut_allowed` when known."""
        return f.entity_cross | ~(self.cut_allowed(f) if allowed is None else allowed)

    def hard_spans(
        self,
        f: DocFeatures,
        decoder: str | None = None,
        min_tokens: int | None = None,
        max_tokens: int | None = None,
        b: torch.Tensor | None = None,
        allowed: torch.Tensor | None = None,
    ) -> Spans:
        """Token spans tiling the document, decoded from b (default :meth:`boundaries`, the
        learned alpha / gamma) with the learned tau, cuts only where ``allowed`` (default
        :meth:`cut_allowed`); never differentiated."""
        c = self.boundary_config
        decoder = decoder or c.decoder
        lo, hi = min_tokens or c.min_tokens, max_tokens or c.max_tokens
        n = f.n_tokens
        if n == 0:
            return []
        with torch.no_grad():
            b = self.boundaries(f) if b is None else b
            b = b.detach().cpu().double().numpy()
        forbidden = self.forbidden(f, allowed).cpu().numpy()
        if decoder == "peak":
            cuts = peak_decode(b, float(self.boundary.tau.detach()), lo, hi, forbidden,
                               fallback=f.word_start.cpu().numpy())
        elif decoder == "dp":
            cuts = dp_decode(
                b,
                allowed=~forbidden,
                min_len=lo,
                max_len=hi,
                target_len=c.dp_target_tokens,
                length_weight=c.dp_length_weight,
                cohesion=InteriorScoreCohesion(f.b_sem.detach().cpu().numpy()),
                cohesion_weight=c.dp_cohesion_weight,
            )
        else:
            raise ValueError(f"decoder must be 'peak' or 'dp', got {decoder!r}")
        return spans_from_cuts([int(x) for x in cuts], n)

    def forward(self, docs: list[DocFeatures], soft: bool, units: bool = False,
                tokens: bool = False, token_grad: bool = False) -> ChunkSet:
        """Chunk and embed ``docs``: the one path of training (``soft=True``) and inference.

        Per document: H', u' (:meth:`enrich`), b (:meth:`boundaries`), hard spans decoded from
        b, chunk vectors pooled from H' over the spans (``soft``: under soft cuts
        ``sigmoid((b - tau) / T)``, so gradients reach alpha, gamma, tau; else plain means,
        the paper's late chunking), and the u' of every concept with a mention entirely
        inside a chunk (as ``make_chunk`` fills ``Chunk.entity_ids``). ``units``: also the
        sentence units (``evidence_sentences`` per unit, plain means of H') in
        ``ChunkSet.units`` with their overlap pairs. ``tokens``: also the chunks' token
        vectors for late interaction (:func:`~gralc.model.late_interaction.chunk_tokens`;
        ``token_grad``: exact, with their gradient, for a training loss)."""
        vecs, ent_vecs, ent_rows, spans_per, bs = [], [], [], [], []
        tok_vecs: list[torch.Tensor] = []
        tok_rows: list[torch.Tensor] = []
        unit_parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, Spans]] = []
        pairs: list[torch.Tensor] = []
        k = n_units = 0
        for f in docs:
            h_prime, u_prime = self.enrich(f)
            b = self.boundaries(f)
            allowed = self.cut_allowed(f)  # once per document: hard and soft cuts share it
            spans = self.hard_spans(f, b=b, allowed=allowed)
            if not spans:
                vecs.append(h_prime.new_zeros(0, h_prime.shape[1]))
            elif soft:
                p = self.boundary.cut_probability(b)
                p = p * allowed.to(p.dtype)  # never a soft cut where a hard one cannot be
                vecs.append(soft_chunk_pool(h_prime, p, spans, extend=self.config.soft_extend))
            else:
                vecs.append(torch.stack([h_prime[s:e].mean(0) for s, e in spans]))
            if tokens:
                tv, tr = chunk_tokens(h_prime, spans, k, exact=token_grad)
                tok_vecs.append(tv)
                tok_rows.append(tr)
            concepts, chunk_of = span_concepts(f.mention_tokens, spans)
            ent_vecs.append(u_prime[concepts.to(u_prime.device)])
            ent_rows.append(chunk_of + k)
            if units:
                u_spans = sentence_unit_spans(f.doc, f.offsets, self.config.evidence_sentences)
                unit_parts.append(self._pooled(h_prime, u_prime, f, u_spans, n_units))
                p = overlap_pairs(spans, u_spans)
                pairs.append(torch.stack([p[0] + k, p[1] + n_units]))
                n_units += len(u_spans)
            spans_per.append(spans)
            bs.append(b.detach())
            k += len(spans)
        device = self.boundary.tau.device
        dim = self.config.concept_out_dim or self.concept_dim
        unit_set = None
        if units:
            empty = ([], [], [], [])
            u_vecs, u_ent, u_rows, u_spans = zip(*unit_parts) if unit_parts else empty
            unit_set = ChunkSet(
                vectors=torch.cat(u_vecs) if u_vecs else torch.zeros(0, self.token_dim, device=device),
                entity_vectors=torch.cat(u_ent) if u_ent else torch.zeros(0, dim, device=device),
                entity_chunk=torch.cat(u_rows).to(device) if u_rows
                else torch.zeros(0, dtype=torch.long, device=device),
                spans=list(u_spans),
            )
        return ChunkSet(
            vectors=torch.cat(vecs) if vecs else torch.zeros(0, self.token_dim, device=device),
            entity_vectors=torch.cat(ent_vecs) if ent_vecs else torch.zeros(0, dim, device=device),
            entity_chunk=torch.cat(ent_rows).to(device)
            if ent_rows
            else torch.zeros(0, dtype=torch.long, device=device),
            spans=spans_per,
            boundaries=bs,
            units=unit_set,
            unit_pairs=torch.cat(pairs, dim=1).to(device) if pairs else None,
            token_vectors=(torch.cat(tok_vecs) if tok_vecs else torch.zeros(0, self.token_dim, device=device))
            if tokens else None,
            token_chunk=(torch.cat(tok_rows) if tok_rows else torch.zeros(0, dtype=torch.long, device=device))
            if tokens else None,
        )

    @staticmethod
    def _pooled(h_prime: torch.Tensor, u_prime: torch.Tensor, f: DocFeatures, spans: Spans,
                first_row: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Spans]:
        """``(vectors (S, d), entity vectors (M, d'), entity rows (M,), spans)`` of plain-mean
        pooled ``spans`` of H' (entity rows numbered from ``first_row``)."""
        if not spans:
            return (h_prime.new_zeros(0, h_prime.shape[1]), u_prime.new_zeros(0, u_prime.shape[1]),
                    torch.zeros(0, dtype=torch.long), spans)
        vecs = torch.stack([h_prime[s:e].mean(0) for s, e in spans])
        concepts, rows = span_concepts(f.mention_tokens, spans)
        return vecs, u_prime[concepts.to(u_prime.device)], rows + first_row, spans

    def query_entities(
        self, items: list[tuple[torch.Tensor, torch.Tensor]]
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(q_ent (Q, Emax, d'), q_mask (Q, Emax))`` from each query's ``(u_q (Cq, d_k),
        edge_index_q (2, Eq))`` through the same concept encoder as the documents."""
        encoded = [self.concepts(u, ei) for u, ei in items]
        dim = self.config.concept_out_dim or self.concept_dim
        return pad_stack(encoded, dim, device=self.boundary.tau.device)

    # ----- scoring --------------------------------------------------------------------------
    def score_parts(
        self,
        q: torch.Tensor,
        q_ent: torch.Tensor | None,
        q_mask: torch.Tensor | None,
        chunks: ChunkSet,
        lexical: torch.Tensor | None = None,
        unit_lexical: torch.Tensor | None = None,
        q_tokens: tuple[torch.Tensor, torch.Tensor] | None = None,
        phrase: torch.Tensor | None = None,
        late_interaction: float | None = None,
        late: torch.Tensor | None = None,
        concepts: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(score, cos, kg_prox)``, each (Q, K), of queries q (Q, d) with entities
        ``q_ent`` (Q, Eq, d') / ``q_mask`` against ``chunks``: dense = beta cos + (1 - beta)
        kg_prox (hybrid), else cos (kg_prox then 0); with the lexical term (``use_lexical``)
        score = (1 - w_lex) dense + w_lex lex, ``lexical`` (Q, K) the raw BM25 of each
        question against each chunk (required then, ignored otherwise). With
        ``sentence_evidence`` > 0 and ``chunks.units``, the score mixes in each chunk's best
        unit (scored the same way, ``unit_lexical`` (Q, U) their BM25); cos and kg_prox
        stay the chunks' own. With ``late_interaction`` > 0 and ``chunks.token_vectors``,
        the score then mixes in the MaxSim of ``q_tokens`` (``(Q, L, d)`` word-piece vectors,
        ``(Q, L)`` bool mask; required then) with each chunk's tokens (weight
        ``self.scoring.late_interaction``, or ``late_interaction`` when given: training passes
        ``optim.late_interaction``); ``late`` (Q, K):
        the MaxSim already computed (e.g. from compressed token codes,
        :mod:`gralc.retrieval.trained.token_store`), used instead of ``q_tokens`` and the chunks'
        token vectors. With
        ``phrase_weight`` g > 0, ``g * normalise_lexical(phrase)`` is added last, ``phrase``
        (Q, K) the raw term-pair BM25 (required then); with ``concept_weight`` c > 0,
        ``c * concepts`` after it, ``concepts`` (Q, K) the concept match in its fixed unit
        (:mod:`gralc.retrieval.trained.concept_match`; required then): one order of terms for training
        and inference."""
        score, cos, prox = self._score_parts(q, q_ent, q_mask, chunks, lexical)
        w = self.config.sentence_evidence
        if w > 0 and chunks.units is not None:
            unit_score = self._score_parts(q, q_ent, q_mask, chunks.units, unit_lexical,
                                           "unit_lexical=(Q, U): the units")[0]
            score = with_sentence_evidence(score, unit_score, chunks.unit_pairs, w)
        m = self.scoring.late_interaction if late_interaction is None else late_interaction
        if m > 0 and late is not None:
            if late.shape != score.shape:
                raise ValueError(f"late=(Q, K) MaxSim of shape {tuple(late.shape)}, the scores "
                                 f"{tuple(score.shape)}")
            score = with_late_interaction(score, late.to(score.device, score.dtype), m)
        elif m > 0 and chunks.token_vectors is not None:
            if q_tokens is None:
                raise ValueError(
                    f"this model scores with late interaction (scoring.late_interaction={m}): pass "
                    "the questions' word-piece vectors (q_tokens=(Q, L, d), (Q, L) mask)")
            late = maxsim(*q_tokens, chunks.token_vectors, chunks.token_chunk, chunks.n_chunks)
            score = with_late_interaction(score, late.to(score.dtype), m)
        g = self.config.phrase_weight
        if g > 0:
            if phrase is None or phrase.shape != score.shape:
                raise ValueError(
                    f"this model adds a term-pair BM25 (model.phrase_weight={g}): pass phrase=(Q, K), "
                    f"the raw BM25Config(ngram=2) scores of the questions against the chunks "
                    f"(got {None if phrase is None else tuple(phrase.shape)}, scores {tuple(score.shape)})")
            score = score + g * normalise_lexical(phrase.to(score.device, score.dtype))
        c = self.config.concept_weight
        if c > 0:
            if concepts is None or concepts.shape != score.shape:
                raise ValueError(
                    f"this model adds the concept match (model.concept_weight={c}): pass "
                    f"concepts=(Q, K), the raw concept-id BM25 of the questions against the chunks "
                    f"(got {None if concepts is None else tuple(concepts.shape)}, scores {tuple(score.shape)})")
            score = score + c * concepts.to(score.device, score.dtype)
        return score, cos, prox

    def late_replaced(self, score: torch.Tensor, before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
        """:meth:`score_parts`' score with the MaxSim ``before`` replaced by ``after`` (same
        shape), without scoring again: the late term enters once, linearly, with weight
        ``scoring.late_interaction`` m (every term after it is added), so the new score is
        ``score + m (after - before)``. Two-stage search scores every candidate with centroid
        MaxSim, then decodes the best few (:mod:`gralc.retrieval.trained.search`).

        Example: with m = 0.8, a score of 0.5 whose MaxSim goes from 0.6 to 0.7 becomes 0.58.
        """
        m = self.scoring.late_interaction
        return score + m * (after.to(score.dtype) - before.to(score.dtype))

    def _score_parts(self, q, q_ent, q_mask, chunks: ChunkSet, lexical,
                     what: str = "lexical=(Q, K): the chunks"):
        if self.hybrid is None:
            cos = F.normalize(q, dim=-1) @ F.normalize(chunks.vectors, dim=-1).T
            dense, prox = cos, torch.zeros_like(cos)
        else:
            dense, cos, prox = self.hybrid(
                q, chunks.vectors, q_ent, q_mask, chunks.entity_vectors, chunks.entity_chunk
            )
        if self.lexical is None:
            return dense, cos, prox
        if lexical is None:
            raise ValueError(
                "this model scores with a learned lexical term (model.use_lexical=true): pass "
                f"the BM25 scores of the questions against {what.split(': ')[1]} ({what.split(': ')[0]})"
            )
        return self.lexical(dense, lexical.to(dense.device))[0], cos, prox

    def set_scoring(self, settings: Mapping[str, Any]) -> None:
        """Apply flat export settings (keys of :func:`~gralc.model.scoring_config.scoring_keys`,
        validated; None: kept) in place, as ``gralc export`` writes them: the inference-only
        ones to :attr:`scoring`, the trained score terms to :attr:`config` /
        :attr:`boundary_config`. Research drivers use it to score one model several ways.

        >>> model.set_scoring({"late_interaction": 0.8, "sentence_evidence": 0.3})  # doctest: +SKIP
        """
        scoring = self.scoring.updated(settings)
        over = scoring.overrides
        self.config = replace(self.config, **{k: v for k, v in over.items() if k not in BOUNDARY_KEYS})
        boundary = {k: v for k, v in over.items() if k in BOUNDARY_KEYS}
        if boundary:
            self.boundary_config = replace(self.boundary_config, **boundary)
        self.scoring = scoring.own()

    def learned_values(self) -> dict[str, float]:
        """Current alpha (3 entries), gamma, tau, beta, the lexical weight and lambda (mean
        when per-dimension)."""
        a = self.boundary.alpha.detach().cpu()
        out = {
            "alpha_struct": float(a[0]),
            "alpha_sem": float(a[1]),
            "alpha_entity": float(a[2]),
            "gamma": float(self.boundary.gamma.detach()),
            "tau": float(self.boundary.tau.detach()),
        }
        if self.hybrid is not None:
            out["beta"] = float(self.hybrid.beta.detach())
        if self.lexical is not None:
            out["lexical_weight"] = float(self.lexical.weight.detach())
        if self.fusion is not None:
            out["lambda"] = float(self.fusion.lam.detach().mean())
        return out


def span_concepts(mention_tokens: torch.Tensor, spans: Spans) -> tuple[torch.Tensor, torch.Tensor]:
    """``(concept rows (M,), chunk index (M,))``: each concept with a mention (rows
    ``(token_start, token_end, concept row)`` of ``mention_tokens`` (n, 3)) entirely inside
    a span, once per span, in order of first mention."""
    mt = mention_tokens.cpu()
    concepts: list[int] = []
    chunk_of: list[int] = []
    for i, (s, e) in enumerate(spans):
        inside = mt[(mt[:, 0] >= s) & (mt[:, 1] <= e), 2].tolist() if len(mt) else []
        rows = list(dict.fromkeys(inside))
        concepts.extend(rows)
        chunk_of.extend([i] * len(rows))
    return torch.tensor(concepts, dtype=torch.long), torch.tensor(chunk_of, dtype=torch.long)


def pad_stack(
    items: list[torch.Tensor], dim: int, device=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack (n_i, dim) tensors into (len, max n_i, dim) with a bool mask (zeros where empty)."""
    width = max([int(x.shape[0]) for x in items] + [1])
    out = torch.zeros(len(items), width, dim, device=device)
    mask = torch.zeros(len(items), width, dtype=torch.bool, device=device)
    rows = []
    for i, x in enumerate(items):
        if x.shape[0]:
            mask[i, : x.shape[0]] = True
            rows.append(F.pad(x, (0, 0, 0, width - x.shape[0])))
        else:
            rows.append(torch.zeros(width, dim, device=device))
    return (torch.stack(rows) if rows else out), mask


__all__ = ["ChunkSet", "GraLCModel", "ModelConfig", "pad_stack", "span_concepts"]
