"""The LightningModule: contrastive (multi-positive InfoNCE) training of a GraLCModel.

Per step, ``model(docs, soft=True)`` (:meth:`GraLCModel.forward`, the path inference takes
with ``soft=False``) chunks every document of the batch: hard spans from the CURRENT learned
boundaries (no gradient), soft chunk vectors under ``sigmoid((b - tau) / T)`` cuts (gradients
reach alpha, gamma, tau). Scores (B, K_total) = hybrid score / temperature over ALL chunks of
the batch (in-batch, same-document and extra negatives); loss per question =
``-log sum_pos exp(s) + log sum_all exp(s)``. With LoRA adapters (``encoder``, a
:class:`~gralc.encoding.lora.LoraEncoder`) each step re-encodes through them, by windows
(:meth:`GraLCLitModule.training_views`); ``optim.late_interaction`` and
``model.phrase_weight`` add their terms as inference does, and validation scores the same way.

A non-finite loss or gradient raises :class:`NonFiniteLossError` inside the step, before the
optimiser or any checkpoint can store the broken state; ``on_save_checkpoint`` refuses to
write non-finite parameters as a last guard. The step in full: docs/training.md."""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple

import pytorch_lightning as pl
import torch

from gralc.chunking.boundaries import BoundaryConfig, semantic_signal
from gralc.model.chunk_set import ChunkSet
from gralc.model.doc_features import DocFeatures, adapted_features
from gralc.model.doc_windows import crop_features, evidence_window, lexical_window
from gralc.model.gralc_model import GraLCModel
from gralc.model.lexical import TermStats
from gralc.model.score_inputs import batch_inputs, chunk_texts
from gralc.retrieval.rank_metrics import mrr, reciprocal_rank
from gralc.retrieval.ranking import rank_matrix
from gralc.retrieval.trained.candidates import CandidateConfig, candidate_mask
from gralc.training.config import OptimConfig
from gralc.training.datamodule import TrainBatch, ValBatch
from gralc.training.pairs import TrainingExample

if TYPE_CHECKING:
    from gralc.encoding.lora import LoraEncoder

#: Parameters trained as scalars: own learning rate, no weight decay.
SCALAR_PARAMS = (
    "boundary.alpha",
    "boundary.gamma",
    "boundary.tau",
    "hybrid.beta_logit",
    "lexical.logit",
    "fusion.lam",
)

#: Temperature of the validation ``val/nll`` (the default training temperature).
NLL_TEMPERATURE = 0.05


class Queries(NamedTuple):
    """A batch's questions as the scorer reads them: ``vectors`` (B, d), their concept
    mentions ``entities`` (B, Eq, d') with ``entity_mask`` (B, Eq), and, for late
    interaction, their word-piece vectors ``tokens`` (B, L, d) with ``token_mask`` (B, L)
    (None otherwise)."""

    vectors: torch.Tensor
    entities: torch.Tensor
    entity_mask: torch.Tensor
    tokens: torch.Tensor | None = None
    token_mask: torch.Tensor | None = None


class NonFiniteLossError(RuntimeError):
    """The loss or a gradient became NaN / inf: training stops, no checkpoint of it."""


class GraLCLitModule(pl.LightningModule):
    """``encoder``: LoRA adapters to train with the model (None: the frozen, cached encoder);
    ``sem_window``: ``BoundaryConfig.window`` of b_sem, recomputed from adapted H;
    ``windows_per_doc``, ``hard_windows``: see :meth:`training_views` (0: whole documents)."""

    def __init__(
        self,
        model: GraLCModel,
        optim: OptimConfig,
        extra_checkpoint: dict[str, Any] | None = None,
        encoder: LoraEncoder | None = None,
        sem_window: int = BoundaryConfig.window,
        windows_per_doc: int = 0,
        hard_windows: bool = False,
        search: CandidateConfig | None = None,
    ):
        super().__init__()
        self.model, self.optim = model, optim
        #: validation ranks as a search does: the model's score over each question's candidates
        self.search = search or CandidateConfig()
        self.extra_checkpoint = extra_checkpoint or {}
        self.encoder, self.sem_window = encoder, sem_window
        self.windows_per_doc, self.hard_windows = windows_per_doc, hard_windows
        self._token_ids: dict[str, list[int]] = {}  # doc id -> content-token ids (LoRA windows)
        self.term_stats: TermStats | None = None  # optim.lexical_stats=corpus, on_fit_start
        self.loss_parts: dict[str, float] = {}  # the last batch loss's weighted terms
        # the scalars' values at construction (the config's initial values, also on resume:
        # the checkpoint is loaded afterwards), the anchor of optim.scalar_anchor
        self.scalar_init = {
            n: p.detach().clone() for n, p in model.named_parameters() if n in SCALAR_PARAMS
        }

    # ----- shared ---------------------------------------------------------------------------
    def trainable(self) -> Iterator[tuple[str, torch.nn.Parameter]]:
        """(name, parameter) of the model, then of the encoder's adapters (``encoder.``...)."""
        yield from self.model.named_parameters()
        if self.encoder is not None:
            for name, p in self.encoder.named_parameters():
                if p.requires_grad:
                    yield f"encoder.{name}", p

    def features(self, docs: list[DocFeatures]) -> list[DocFeatures]:
        """``docs`` themselves, or with LoRA their copies with adapted H and b_sem.

        Without gradient (validation) and while the adapters are still the identity (the
        validation before the first step, :meth:`LoraEncoder.identity`) at the frozen
        features' precision, the adapted pass would recompute ``docs``' own vectors (equal up
        to float rounding, tests/training/test_lora_windows.py), so they are returned as they
        are: the initial validation encodes nothing (a third of validation's encoder time in
        the record's recipe, issue 57)."""
        if self.encoder is None:
            return docs
        if not torch.is_grad_enabled() and self.encoder.matches_frozen and self.encoder.identity():
            return docs
        return [adapted_features(f, self.encoder, self.sem_window) for f in docs]

    def training_views(self, batch: TrainBatch) -> tuple[list[DocFeatures], list[DocFeatures]]:
        """``(cached, adapted)``: what a training step chunks, the first ``len(examples)``
        entries being the examples' gold documents (or windows of them).

        Frozen encoder: the batch's documents, twice. LoRA with ``windows_per_doc = 0``:
        the documents and their whole-document adapted features. LoRA with ``n >= 1``:
        encoder windows cropped from the cached features (:func:`crop_features`) and the
        same windows encoded by the adapted encoder: each gold document's evidence window
        (:func:`evidence_window`), then ``n - 1`` other windows of each gold document (with
        ``hard_windows`` the first of them the lexically hardest, :func:`lexical_window`),
        then one window of each extra document; sampled with a seed of the step and
        questions, so a resumed run draws the same windows."""
        if self.encoder is None:
            return batch.docs, batch.docs
        if self.windows_per_doc == 0:
            return batch.docs, self.features(batch.docs)
        n_q = len(batch.examples)
        rng = random.Random(
            zlib.crc32(f"{self.global_step}|{'|'.join(e.question_id for e in batch.examples)}".encode())
        )
        first, rest = [], []
        for i, f in enumerate(batch.docs):
            windows = self.encoder.plan(f.n_tokens)
            if i < n_q:
                k = evidence_window(f, batch.examples[i].positives.char_ranges, windows)
                first.append((i, windows[k]))
                others = windows[:k] + windows[k + 1 :]
                want = min(self.windows_per_doc - 1, len(others))
                hard = (lexical_window(self.encoder.token_ids(batch.examples[i].text),
                                       self.doc_token_ids(f), windows, k)
                        if self.hard_windows and want else None)
                if hard is not None:
                    rest.append((i, windows[hard]))
                    others, want = [w for w in others if w != windows[hard]], want - 1
                rest += [(i, w) for w in rng.sample(others, want)]
            else:
                rest.append((i, rng.choice(windows)))
        picks = first + rest
        cached = [crop_features(batch.docs[i], s, e) for i, (s, e) in picks]
        ids = [self.doc_token_ids(batch.docs[i]) for i, _ in picks]
        hidden = self.encoder.encode_windows([t[s:e] for t, (_, (s, e)) in zip(ids, picks)])
        adapted = [
            replace(c, H=h.to(c.H.device), b_sem=semantic_signal(h, self.sem_window).float().to(c.H.device))
            for c, h in zip(cached, hidden)
        ]
        return cached, adapted

    def doc_token_ids(self, f: DocFeatures) -> list[int]:
        """The adapted encoder's content-token ids of ``f``'s text (memoised per document),
        checked against the cached features' token count."""
        ids = self._token_ids.get(f.doc_id)
        if ids is None:
            ids = self._token_ids[f.doc_id] = self.encoder.token_ids(f.doc.text)
        if len(ids) != f.n_tokens:
            raise ValueError(
                f"document {f.doc_id!r}: the adapted encoder's tokenizer gives {len(ids)} tokens, "
                f"the cached features {f.n_tokens}: the features were built with another encoder "
                "or tokenizer (check pipeline.encoder)"
            )
        return ids

    def queries(self, examples: list[TrainingExample], tokens: bool = False) -> Queries:
        """The batch's questions on this module's device (:class:`Queries`); with ``tokens``
        (late interaction, LoRA) also their adapted word-piece vectors, from the same encoder
        pass as the pooled vectors."""
        q_tok = q_tok_mask = None
        if self.encoder is None:
            if tokens:
                raise ValueError("question word-pieces need the adapted encoder (lora.enabled)")
            q = torch.stack([e.q_vec for e in examples]).to(self.device)
        else:
            if not all(e.text for e in examples):
                raise ValueError("LoRA training re-encodes questions but an example has no text")
            q, q_tok, q_tok_mask = self.encoder.encode_questions([e.text for e in examples])
            q = q.to(self.device)
            if not tokens:
                q_tok = q_tok_mask = None
        q_ent, q_mask = self.model.query_entities(
            [(e.q_u.to(self.device), e.q_edge_index.to(self.device)) for e in examples]
        )
        return Queries(q, q_ent, q_mask, q_tok, q_tok_mask)

    @staticmethod
    def chunk_texts(docs: list[DocFeatures], chunks: ChunkSet) -> list[str]:
        """The text of every chunk of ``chunks``, in chunk order."""
        return chunk_texts(docs, chunks.spans)

    def on_fit_start(self) -> None:
        """With ``optim.lexical_stats=corpus``: term statistics of the training corpus's chunks
        (the model's hard chunks of every document the data module trains on, cached
        features) for the training batches' lexical term."""
        if self.model.lexical is None or self.optim.lexical_stats != "corpus":
            return
        self.term_stats = self.corpus_term_stats(self.trainer.datamodule.corpus_features())

    @torch.no_grad()
    def corpus_term_stats(self, corpus: list[DocFeatures]) -> TermStats:
        """BM25 term statistics of the model's current hard chunks of ``corpus``."""
        docs = [f.to(self.device) for f in corpus]
        return TermStats.from_texts(self.chunk_texts(docs, self.model(docs, soft=False)))

    @property
    def uses_units(self) -> bool:
        """Chunks are scored with sentence evidence (``model.sentence_evidence`` > 0), in
        training and validation as at inference."""
        return self.model.config.sentence_evidence > 0

    # ----- training -------------------------------------------------------------------------
    def batch_loss(self, batch: TrainBatch) -> tuple[torch.Tensor, int]:
        """Multi-positive InfoNCE over the batch (mean over questions; the score of
        :meth:`batch_scores`) plus the optional terms
        (``optim.dense_weight``, ``scalar_anchor``, ``evidence_cut_weight``), and the chunk
        count; the weighted terms are kept in ``loss_parts`` for the logger."""
        examples = batch.examples
        cached, docs = self.training_views(batch)
        late = self.optim.late_interaction
        chunks = self.model(docs, soft=True, units=self.uses_units, tokens=late > 0,
                            token_grad=True)
        spans_per, starts = chunks.spans, chunks.starts
        qs = self.queries(examples, tokens=late > 0)
        scores, cos = self.batch_scores(examples, docs, chunks, qs, self.term_stats)
        positive = torch.zeros_like(scores, dtype=torch.bool)
        # docs[i] is example i's gold doc (or window); positives from the cached (fixed) features
        for i, (e, f) in enumerate(zip(examples, cached)):
            for k in e.positives.resolve(f, spans_per[i]):
                positive[i, starts[i] + k] = True
        temperature = self.optim.temperature
        parts = {"score": info_nce(scores, positive, temperature)}
        if self.optim.dense_weight > 0:
            parts["dense"] = self.optim.dense_weight * info_nce(cos, positive, temperature)
        if self.optim.scalar_anchor > 0:
            parts["anchor"] = self.optim.scalar_anchor * self.anchor_penalty()
        if self.optim.evidence_cut_weight > 0:
            parts["evidence_cut"] = self.optim.evidence_cut_weight * self.evidence_cut_loss(
                examples, docs[: len(examples)]
            )
        # the weighted terms, for the logger (train/loss_<term>) when there are several
        self.loss_parts = {k: float(v.detach()) for k, v in parts.items()} if len(parts) > 1 else {}
        return sum(parts.values()), chunks.n_chunks

    def score_inputs(
        self, examples: list[TrainingExample], docs: list[DocFeatures], chunks: ChunkSet,
        stats: TermStats | None = None,
    ) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
        """``(lexical (B, K), unit lexical (B, U), term-pair (B, K), concept match (B, K))``,
        the raw scores the model's score reads of the examples' questions against ``chunks``
        (each None where the model does not use it), built by the model's one builder
        (:func:`~gralc.model.score_inputs.batch_inputs`): term statistics from these chunks
        (units: from the units), or for the lexical term ``stats``."""
        if self.model.lexical is not None and not all(e.text for e in examples):
            raise ValueError(
                "the lexical term scores question texts but a training example has none: "
                "rebuild the feature cache (delete paths.cache_dir/train_features)"
            )
        inputs = batch_inputs(self.model.config, [e.text for e in examples], docs, chunks,
                              [e.q_concepts for e in examples], stats)
        return tuple(inputs.tensors(self.device).values())

    def batch_scores(
        self, examples: list[TrainingExample], docs: list[DocFeatures], chunks: ChunkSet,
        qs: Queries, stats: TermStats | None = None, inputs: tuple | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(score, cos)``, each (B, K): the score training optimises and validation selects
        on, composed by :meth:`GraLCModel.score_parts` as inference composes it: the hybrid with
        its lexical term (``stats``: its BM25 term statistics) and sentence units, MaxSim of the
        questions' adapted word-pieces (``qs.tokens``) against ``chunks``' token vectors at
        ``optim.late_interaction`` (ColBERT-style, gradient through both sides), then
        ``model.phrase_weight`` times the term-pair BM25 and ``model.concept_weight`` times the
        concept match (all of them :meth:`score_inputs`; ``inputs``: already computed)."""
        q_tokens = None if qs.tokens is None else (qs.tokens.to(self.device),
                                                   qs.token_mask.to(self.device))
        lexical, unit_lexical, phrase, concepts = inputs or self.score_inputs(examples, docs, chunks, stats)
        score, cos, _ = self.model.score_parts(
            qs.vectors, qs.entities, qs.entity_mask, chunks, lexical, unit_lexical,
            q_tokens=q_tokens, phrase=phrase, late_interaction=self.optim.late_interaction,
            concepts=concepts)
        return score, cos

    def evidence_cut_loss(
        self, examples: list[TrainingExample], docs: list[DocFeatures]
    ) -> torch.Tensor:
        """Boundaries learned from evidence: mean over the examples whose evidence spans two or
        more tokens of ``docs[i]`` (their gold documents or windows) of
        ``mean p(cut inside the evidence) - mean p(cut anywhere in the document)``, with
        ``p = sigmoid((b - tau) / T)`` from the learned alpha / gamma / tau (a cut at token c
        splits the evidence tokens [s, e) when s < c < e; only where a hard cut may fall). Below 0 when
        cuts are rarer inside evidence than elsewhere; 0 without usable evidence."""
        terms = []
        for e, f in zip(examples, docs):
            if not e.positives.char_ranges:
                continue
            cs, ce = e.positives.char_ranges[0]
            inside = ((f.offsets[:, 1] > cs) & (f.offsets[:, 0] < ce)).nonzero().flatten()
            if len(inside) < 2:
                continue
            s, t = int(inside[0]), int(inside[-1]) + 1
            p = self.model.boundary.cut_probability(self.model.boundaries(f))
            p = p * self.model.cut_allowed(f).to(p.dtype)
            terms.append(p[s + 1 : t].mean() - p.mean())
        if not terms:
            return torch.zeros((), device=self.device)
        return torch.stack(terms).mean()

    def anchor_penalty(self) -> torch.Tensor:
        """``sum (p - p_init)^2`` over the trainable scalars (see ``optim.scalar_anchor``)."""
        total = torch.zeros((), device=self.device)
        for n, p in self.model.named_parameters():
            if n in self.scalar_init and p.requires_grad:
                total = total + ((p - self.scalar_init[n].to(p.device)) ** 2).sum()
        return total

    def training_step(self, batch: TrainBatch, batch_idx: int) -> torch.Tensor:
        """The batch's loss, logged with its parts; NonFiniteLossError when it is not finite."""
        loss, n_chunks = self.batch_loss(batch)
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"training loss is {loss.item()} at global step {self.global_step} (epoch "
                f"{self.current_epoch}); stopping before it is checkpointed. Non-finite "
                f"parameters: {self.non_finite_parameters() or 'none'}; lower optim.lr or "
                "check the features"
            )
        n = len(batch.examples)
        self.log("train/loss", loss, on_step=True, on_epoch=True, batch_size=n, prog_bar=True)
        self.log("train/chunks_per_batch", float(n_chunks), batch_size=n)
        for name, value in self.loss_parts.items():
            self.log(f"train/loss_{name}", value, on_step=True, on_epoch=True, batch_size=n)
        return loss

    def on_before_optimizer_step(self, optimizer) -> None:
        """NonFiniteLossError when a trainable parameter has a non-finite gradient."""
        bad = [
            n
            for n, p in self.trainable()
            if p.grad is not None and not torch.isfinite(p.grad).all()
        ]
        if bad:
            raise NonFiniteLossError(
                f"non-finite gradients at global step {self.global_step} in {bad}"
            )

    def non_finite_parameters(self) -> list[str]:
        """Names of the trainable parameters holding a NaN or inf."""
        return [n for n, p in self.trainable() if not torch.isfinite(p).all()]

    def on_train_epoch_end(self) -> None:
        """Log the learned weights (``learned/*``)."""
        self.log_dict({f"learned/{k}": v for k, v in self.model.learned_values().items()})

    # ----- validation -----------------------------------------------------------------------
    @torch.no_grad()
    def retrieval_scores(
        self, batch: ValBatch, with_cosine: bool = False
    ) -> tuple[torch.Tensor, list[str]] | tuple[torch.Tensor, list[str], torch.Tensor]:
        """(Q, K) hybrid scores of every question against every corpus chunk, and each
        chunk's document id (``with_cosine``: also the (Q, K) cosine alone, the KG row)."""
        scores, cos, doc_of, _, _ = self._validation_pass(batch)
        if not with_cosine:
            return scores, doc_of
        return scores, doc_of, cos

    def _validation_pass(
        self, batch: ValBatch
    ) -> tuple[torch.Tensor, torch.Tensor, list[str], list[list[int]], torch.Tensor]:
        """``(scores (Q, K), cos (Q, K), doc id of each chunk, positive chunk rows of each
        question, candidates (Q, K) bool)``: every dev question against every chunk of the
        validation corpus, and each question's candidates by the rule of a two-stage search
        (:func:`~gralc.retrieval.trained.candidates.candidate_mask`, ``search``); the
        positives resolved as in training (evidence spans, else the whole gold document).
        With ``optim.late_interaction`` > 0 the scores mix in MaxSim as training's do (token
        vectors as inference keeps them), so checkpoints and the initial-vs-trained choice
        are judged on the score the model was trained for."""
        docs = self.features(batch.docs)
        late = self.optim.late_interaction > 0
        chunks = self.model(docs, soft=False, units=self.uses_units, tokens=late)
        qs = self.queries(batch.examples, tokens=late)
        doc_of = [f.doc_id for f, spans in zip(docs, chunks.spans) for _ in spans]
        inputs = self.score_inputs(batch.examples, docs, chunks)
        scores, cos = self.batch_scores(batch.examples, docs, chunks, qs, inputs=inputs)
        lexical, unit_lexical, phrase, concepts = inputs
        candidates = candidate_mask(self.search, cos, lexical, phrase, unit_lexical,
                                    chunks.unit_pairs, concepts).to(scores.device)
        where = {f.doc_id: i for i, f in enumerate(batch.docs)}
        positives = []
        for e in batch.examples:
            i = where.get(e.doc_id)
            local = [] if i is None else e.positives.resolve(batch.docs[i], chunks.spans[i])
            positives.append([chunks.starts[i] + k for k in local] if local else [])
        return scores, cos, doc_of, positives, candidates

    @staticmethod
    def mean_reciprocal_rank(
        scores: torch.Tensor, doc_of: list[str], examples: list[TrainingExample]
    ) -> float:
        """MRR of each example's gold document in the chunk ranking of its ``scores`` row."""
        # the one ranking rule; a document's chunk positions order its chunks like chunk ids
        order = rank_matrix(scores, [(d, j) for j, d in enumerate(doc_of)])
        return mrr([map(doc_of.__getitem__, row) for row in order.tolist()],
                   [e.doc_id for e in examples])

    @staticmethod
    def evidence_reciprocal_rank(
        scores: torch.Tensor, doc_of: list[str], positives: list[list[int]]
    ) -> float:
        """MRR of the first positive (evidence-holding) chunk in each row's ranking (a row
        without positives counts 0)."""
        order = rank_matrix(scores, [(d, j) for j, d in enumerate(doc_of)])
        rr = [reciprocal_rank(row, pos) if pos else 0.0 for row, pos in zip(order.tolist(), positives)]
        return sum(rr) / len(rr)

    def retrieval_metrics(self, batch: ValBatch) -> dict[str, float]:
        """``mrr``: MRR of the gold documents when every corpus chunk is ranked by the model's
        score; ``mrr_cos``: the same ranked by the cosine alone (the KG row); ``mrr_min``: the
        lower of the two (one checkpoint serves both rows); ``nll``: the document-level InfoNCE over the whole corpus (every chunk of the
        gold document positive, temperature :data:`NLL_TEMPERATURE`, fixed so runs with
        different ``optim.temperature`` compare), which keeps ranking models when the MRR
        saturates at 1 on an easy dev set; ``ev_mrr``: MRR of the first chunk holding the
        question's evidence (the positives of training; the evaluation's evidence level)."""
        scores, cos, doc_of, positives, candidates = self._validation_pass(batch)
        ranked = scores.masked_fill(~candidates, float("-inf"))  # as a search ranks them
        gold = torch.tensor(
            [[d == e.doc_id for d in doc_of] for e in batch.examples], device=scores.device
        )
        nll = info_nce(scores, gold, NLL_TEMPERATURE)
        mrr = self.mean_reciprocal_rank(ranked, doc_of, batch.examples)
        mrr_cos = self.mean_reciprocal_rank(cos, doc_of, batch.examples)
        ev_mrr = self.evidence_reciprocal_rank(ranked, doc_of, positives)
        return {"mrr": mrr, "mrr_cos": mrr_cos, "mrr_min": min(mrr, mrr_cos),
                "nll": float(nll), "ev_mrr": ev_mrr}

    def retrieval_mrr(self, batch: ValBatch) -> float:
        """``mrr`` of :meth:`retrieval_metrics`."""
        return self.retrieval_metrics(batch)["mrr"]

    def validation_step(self, batch: ValBatch, batch_idx: int) -> None:
        """Log :meth:`retrieval_metrics` as ``val/mrr``, ``val/mrr_cos``, ``val/mrr_min``,
        ``val/nll`` and ``val/ev_mrr``."""
        m = self.retrieval_metrics(batch)
        n = len(batch.examples)
        self.log("val/mrr", m["mrr"], batch_size=n, prog_bar=True)
        self.log("val/mrr_cos", m["mrr_cos"], batch_size=n)
        self.log("val/mrr_min", m["mrr_min"], batch_size=n)
        self.log("val/nll", m["nll"], batch_size=n)
        self.log("val/ev_mrr", m["ev_mrr"], batch_size=n)

    # ----- optimiser, checkpoints -----------------------------------------------------------
    def configure_optimizers(self) -> torch.optim.Optimizer | dict[str, Any]:
        """AdamW (see :class:`~gralc.training.config.OptimConfig`); with ``optim.schedule =
        linear`` also its per-step warm-up / linear-decay schedule over the run's steps."""
        scalars, others = [], []  # others: GAT, MLP and the LoRA adapters
        for name, p in self.trainable():
            if p.requires_grad:
                (scalars if name in SCALAR_PARAMS else others).append(p)
        groups = [{"params": others, "weight_decay": self.optim.weight_decay}]
        if scalars:
            groups.append(
                {
                    "params": scalars,
                    "weight_decay": 0.0,
                    "lr": self.optim.lr * self.optim.scalar_lr_scale,
                }
            )
        optimizer = torch.optim.AdamW(groups, lr=self.optim.lr)
        if self.optim.schedule == "constant":
            return optimizer
        from transformers import get_linear_schedule_with_warmup

        steps = int(self.trainer.estimated_stepping_batches)
        scheduler = get_linear_schedule_with_warmup(
            optimizer, round(self.optim.warmup_fraction * steps), steps)
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Add GraLC's entry ``checkpoint["gralc"]`` (the run's extras, model config, dimensions
        and learned values); NonFiniteLossError instead of saving non-finite parameters."""
        bad = self.non_finite_parameters()
        if bad:
            raise NonFiniteLossError(f"refusing to checkpoint non-finite parameters {bad}")
        checkpoint["gralc"] = {
            **self.extra_checkpoint,
            "model_config": _asdict(self.model.config),
            "scoring": self.model.scoring.settings(),
            "token_dim": self.model.token_dim,
            "concept_dim": self.model.concept_dim,
            "learned_values": self.model.learned_values(),
        }


def info_nce(scores: torch.Tensor, positive: torch.Tensor, temperature: float) -> torch.Tensor:
    """Multi-positive InfoNCE of ``scores`` (Q, K) at ``temperature``, mean over questions;
    ``positive`` (Q, K) bool marks each question's positive chunks."""
    logits = scores / temperature
    return (
        torch.logsumexp(logits, dim=1)
        - torch.logsumexp(logits.masked_fill(~positive, float("-inf")), dim=1)
    ).mean()


def _asdict(cfg) -> dict[str, Any]:
    from gralc.config import to_dict

    return to_dict(cfg)
