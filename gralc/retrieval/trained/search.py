"""The trained model's search, the one path from a question to its score of chunks: candidates
from cheap indexes (stage one, :mod:`gralc.retrieval.trained.candidates`), then the model's full
score (:meth:`GraLCModel.score_parts`, the score of training and validation) over the
candidates' rows of the :class:`~gralc.retrieval.trained.chunk_table.ChunkTable`, MaxSim first
from the tokens' centroids, decoded exactly for the best ``exact`` (PLAID's order).

    search = TrainedSearch(scorer, pipeline, index, lexical=bm25, phrase=pairs)
    hits = search.search_batch(["What dose ...?", ...], k=10)

Every candidate gets the score an exhaustive pass gives it (up to the token codes' error).
``CandidateConfig.exhaustive`` makes every chunk a candidate, for checking, and
:meth:`TrainedSearch.scores` gives that pass's (Q, K) scores; ``rows`` restricts a search to
some chunks (e.g. one article's), all scored exactly. Questions are encoded as one batch
(:meth:`TrainedSearch.encode`), candidates scored one question at a time.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch

from gralc.encoding.encoder import ONE_BY_ONE, PADDED
from gralc.model.score_inputs import ScoreInputs
from gralc.model.sparse_scores import SparseScores
from gralc.pipeline import Pipeline
from gralc.retrieval.hits import Hit
from gralc.retrieval.indexes.bm25 import BM25Index
from gralc.retrieval.indexes.dense import ChunkIndex
from gralc.retrieval.ranking import rank_order
from gralc.retrieval.rerank.diversity import section_diverse
from gralc.retrieval.trained.candidates import CandidateConfig, candidate_rows
from gralc.retrieval.trained.concept_match import concept_idf, question_concepts
from gralc.retrieval.trained.scorer import ScoreIndexes, TrainedScorer


@dataclass
class Questions:
    """One batch of questions as the score reads them: ``vectors`` (Q, d), word-piece
    ``tokens`` (Q, L, d) + ``token_mask`` (Q, L) (late interaction), concept vectors
    ``entities`` (Q, E, d') + ``entity_mask`` (hybrid score), and their lexical ``inputs``
    against every chunk (:class:`~gralc.model.score_inputs.ScoreInputs`: BM25 over the chunks,
    term-pair BM25, concept match (Q, K) and BM25 over the sentence units (Q, U), each None
    when the model does not use it)."""

    texts: list[str]
    vectors: torch.Tensor
    tokens: torch.Tensor | None
    token_mask: torch.Tensor | None
    entities: torch.Tensor | None
    entity_mask: torch.Tensor | None
    inputs: ScoreInputs


@dataclass
class Scores:
    """Each question's exact score of every chunk (:meth:`TrainedSearch.scores`): ``score``,
    ``cos`` and ``kg_prox`` (Q, K), and the ``late`` MaxSim (Q, K) of a model with late
    interaction (None otherwise)."""

    score: torch.Tensor
    cos: torch.Tensor
    kg_prox: torch.Tensor
    late: torch.Tensor | None


#: chunks an exhaustive pass gathers and scores at once (their vectors, units, tokens by blocks)
EXACT_BLOCK = 16384
_WORKER: list[ThreadPoolExecutor] = []


def _worker() -> ThreadPoolExecutor:
    """One thread beside the caller's for stage one's BM25 (numpy releases the GIL in its loops:
    1.6x on two cores)."""
    if not _WORKER:
        _WORKER.append(ThreadPoolExecutor(1, thread_name_prefix="gralc-bm25"))
    return _WORKER[0]


class TrainedSearch:
    """A trained model's search over an index's chunks (see the module docstring)."""

    def __init__(self, scorer: TrainedScorer, pipeline: Pipeline, index: ChunkIndex,
                 lexical: BM25Index | None = None, phrase: BM25Index | None = None,
                 config: CandidateConfig | None = None, concepts: BM25Index | None = None) -> None:
        """``concepts``: the concept match's index of the same chunks
        (:func:`~gralc.retrieval.trained.concept_match.concept_index`), for a model with
        ``concept_weight`` > 0."""
        self.scorer, self.pipeline, self.index = scorer, pipeline, index
        self.lexical, self.phrase, self.concepts = lexical, phrase, concepts
        self.config = config or CandidateConfig()
        self.table = scorer.table.finish()
        self.timings: dict[str, float] = defaultdict(float)
        n = len(index)
        if self.table.n_chunks != n:
            raise ValueError(f"the model's chunk table holds {self.table.n_chunks} chunks, the index {n}")
        if scorer.lexical and (lexical is None or len(lexical) != n):
            raise ValueError("the model scores with its lexical term: pass the BM25 index of the same chunks")
        if scorer.phrase and (phrase is None or len(phrase) != n):
            raise ValueError("the model adds a term-pair BM25: pass the BM25Config(ngram=2) index of the same chunks")
        if scorer.concept and (concepts is None or len(concepts) != n):
            raise ValueError("the model adds the concept match: pass the concept_index of the same chunks")
        if not self.config.exhaustive:
            needs = [("lexical", scorer.lexical), ("phrase", scorer.phrase),
                     ("units", scorer.uses_units and scorer.lexical)]
            bad = [name for name, used in needs if used and getattr(self.config, name) < 1]
            if bad:
                raise ValueError(f"search.{bad[0]}=0, but the model normalises that BM25 by the "
                                 "question's best chunk, which must then be a candidate: set it >= 1")

    # ----- questions ------------------------------------------------------------------------
    @torch.no_grad()
    def encode(self, questions: Sequence[str]) -> Questions:
        """Everything the score reads of ``questions``, computed as one batch."""
        t0 = time.perf_counter()
        texts = list(questions)
        s, enc = self.scorer, self.pipeline.encoder
        tokens = mask = None
        if s.uses_tokens:  # the vector and the word-pieces from one encoder pass
            vectors, tokens, mask = enc.encode_questions(
                texts, PADDED if self.config.padded_questions else ONE_BY_ONE)
            vectors = vectors.float()
        else:
            vectors = enc.encode_queries(texts).float()
        ents = emask = None
        ids: list[list[str]] | None = None
        if s.model.hybrid is not None:
            ents, emask, ids = s.query_entities_batch(self.pipeline, texts, with_ids=True)
        if s.concept and ids is None:
            ids = question_concepts(self.pipeline.linker, texts)
        if s.model.scoring.kg_prox_idf and emask is not None:  # each concept weighed by its IDF
            if self.concepts is None:
                raise ValueError("scoring.kg_prox_idf needs the concept match's index of the same chunks")
            weights = torch.zeros(emask.shape)
            for i, q_ids in enumerate(ids):
                weights[i, : len(q_ids)] = torch.as_tensor(concept_idf(self.concepts, q_ids))
            emask = emask.float() * weights
        t1 = time.perf_counter()
        inputs = s.score_inputs(texts, ScoreIndexes(self.lexical, self.phrase, self.concepts), ids,
                                sparse=True)  # only the chunks (units) sharing a term
        self.timings["encode_s"] += t1 - t0
        self.timings["bm25_s"] += time.perf_counter() - t1
        return Questions(texts, vectors, tokens, mask, ents, emask, inputs)

    # ----- searching ------------------------------------------------------------------------
    def search_batch(self, questions: Sequence[str], k: int = 10,
                     rows: Sequence[np.ndarray] | None = None) -> list[list[Hit]]:
        """Top-``k`` hits of each question (``rows``: per question the chunk rows to search
        among, all scored exactly; None: the candidates of stage one)."""
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        q = self.encode(questions)
        return self.search_encoded(q, k, rows)

    @property
    def candidates_per_question(self) -> float:
        """Mean number of candidates of the stage-one searches so far."""
        return self.timings["candidates"] / max(1.0, self.timings["searched"])

    def search(self, question: str, k: int = 10) -> list[Hit]:
        """Top-``k`` hits of one question (:meth:`search_batch`)."""
        return self.search_batch([question], k)[0]

    def search_encoded(self, q: Questions, k: int, rows: Sequence[np.ndarray] | None = None
                       ) -> list[list[Hit]]:
        """:meth:`search_batch` of questions already encoded by :meth:`encode`."""
        t0 = time.perf_counter()
        given = rows is not None
        if rows is None:
            rows = self.candidates(q)
            self.timings["candidates"] += sum(len(r) for r in rows)
            self.timings["searched"] += len(rows)
        t1 = time.perf_counter()
        cfg = self.config
        diverse = cfg.diverse != "off"
        pool = max(k, cfg.diverse_pool) if diverse else k
        out = [self._score(q, i, np.asarray(r, dtype=np.int64), pool, exact_all=given)
               for i, r in enumerate(rows)]
        if diverse:  # the best `pool` re-ranked for section coverage
            out = [section_diverse(hits, k, cfg.diverse) if hits else hits for hits in out]
        self.timings["candidates_s"] += t1 - t0
        self.timings["score_s"] += time.perf_counter() - t1
        self.timings["questions"] += len(q.texts)
        return out

    def candidates(self, q: Questions) -> list[np.ndarray]:
        """Stage one: each question's candidate chunk rows (sorted;
        :func:`~gralc.retrieval.trained.candidates.candidate_rows`), every row when
        ``exhaustive``."""
        n, cfg = len(self.index), self.config
        if cfg.exhaustive:
            return [np.arange(n, dtype=np.int64)] * len(q.texts)
        x = q.inputs
        units = None  # the sentence units' best, the largest BM25, on the second core meanwhile
        if isinstance(x.unit_lexical, SparseScores) and cfg.units:
            units = _worker().submit(lambda: [r.top(cfg.units, True) for r in x.unit_lexical.rows])
        dense = self.index.search_rows(q.vectors.numpy(), cfg.dense) if cfg.dense else None
        for scores, k in ((x.lexical, cfg.lexical), (x.phrase, cfg.phrase), (x.concepts, cfg.concepts)):
            if isinstance(scores, SparseScores):
                for r in scores.rows:
                    r.top(k, True)
        if units is not None:
            units.result()
        return [candidate_rows(cfg, None if dense is None else dense[i],
                               *(None if v is None else v[i]
                                 for v in (x.lexical, x.phrase, x.concepts, x.unit_lexical)),
                               chunks_of_units=lambda u: self.table.units.chunks.gather(u)[0])
                for i in range(len(q.texts))]

    @torch.no_grad()
    def scores(self, q: Questions) -> Scores:
        """Every question's exact score of every chunk, in the index's order: what a search
        with ``exhaustive`` ranks (every row a candidate, every token decoded), as (Q, K)
        matrices, for probes that need each chunk's score rather than a top-k."""
        if not q.texts:
            raise ValueError("no questions to score")
        rows = np.arange(len(self.index), dtype=np.int64)
        score, cos, prox, late = zip(*(self._exact(q, i, rows) for i in range(len(q.texts))))
        return Scores(torch.stack(score), torch.stack(cos), torch.stack(prox),
                      None if late[0] is None else torch.stack(late))

    def _exact(self, q: Questions, i: int, rows: np.ndarray):
        """``(score, cos, kg_prox, MaxSim or None)`` of question ``i`` over ``rows``, every
        row's tokens decoded; more than :data:`EXACT_BLOCK` rows a block at a time, each block
        scored with the rows holding each normalised BM25's best (chunk, term pair, sentence
        unit), so every row gets the score one pass gives it and memory does not grow with N."""
        if len(rows) <= EXACT_BLOCK:
            return self._exact_block(q, i, rows)
        x = q.inputs
        anchors = candidate_rows(CandidateConfig(dense=0, lexical=1, phrase=1, units=1, concepts=0), None,
                                 *(None if v is None else v[i] for v in (x.lexical, x.phrase, None, x.unit_lexical)),
                                 chunks_of_units=lambda u: self.table.units.chunks.gather(u)[0])
        parts = []
        for start in range(0, len(rows), EXACT_BLOCK):
            block = rows[start : start + EXACT_BLOCK]
            scored = np.union1d(block, anchors)
            at = torch.from_numpy(np.searchsorted(scored, block))
            parts.append([None if t is None else t[at] for t in self._exact_block(q, i, scored)])
        return tuple(None if p[0] is None else torch.cat(p) for p in zip(*parts))

    def _exact_block(self, q: Questions, i: int, rows: np.ndarray):
        late = None
        if self.scorer.uses_tokens:
            late = self.table.tokens.maxsim(q.tokens[i, q.token_mask[i]], rows)
        return (*self._parts(q, i, rows, late), late)

    def _parts(self, q: Questions, i: int, rows: np.ndarray, late: torch.Tensor | None):
        s = self.scorer
        chunks, unit_rows = self.table.gather(self.index.vectors, rows)
        ents = None if q.entities is None else (q.entities[i : i + 1], q.entity_mask[i : i + 1])
        score, cos, prox = s.model.score_parts(
            q.vectors[i : i + 1], *(ents or (None, None)), chunks,
            late=None if late is None else late[None],
            **q.inputs.select(i, rows, unit_rows).tensors(dtype=torch.float32))
        return score[0], cos[0], prox[0]

    @torch.no_grad()
    def _score(self, q: Questions, i: int, rows: np.ndarray, k: int, exact_all: bool = False) -> list[Hit]:
        """Stage two for question ``i`` over chunk ``rows`` (``exact_all``: every row's tokens
        decoded)."""
        if not len(rows):
            return []
        s, store = self.scorer, self.table.tokens
        exact = np.ones(len(rows), dtype=bool)
        depth = self.config.depth(k) if s.uses_tokens else 0
        if depth and depth < len(rows) and not (self.config.exhaustive or exact_all):
            pieces = q.tokens[i, q.token_mask[i]]
            late = store.centroid_maxsim(pieces, rows)  # every candidate, from centroids
            score, cos, prox = self._parts(q, i, rows, late)
            best = torch.topk(score, depth).indices.numpy()
            exact[:] = False
            exact[best] = True
            centroid = late[best].clone()
            late[best] = store.maxsim(pieces, rows[best])
            score[best] = s.model.late_replaced(score[best], centroid, late[best])  # no second pass
        else:
            score, cos, prox, late = self._exact(q, i, rows)
        chunks = _Rows(self.index.chunks, rows)  # a record read only where the order needs it
        # the exactly scored candidates first, the rest (centroid MaxSim) after them
        key = score.numpy() + np.where(exact, 0.0, -1e6)
        order = rank_order(chunks, key, k)
        x = q.inputs
        hits = []
        for j in order:
            parts = {"cos": float(cos[j]), "kg_prox": float(prox[j])}
            if x.lexical is not None:
                parts["bm25"] = float(x.lexical[i, rows[j]])
            if x.phrase is not None:
                parts["phrase_bm25"] = float(x.phrase[i, rows[j]])
            if x.concepts is not None:
                parts["concept_bm25"] = float(x.concepts[i, rows[j]])
            if late is not None:
                parts["maxsim"] = float(late[j])
            hits.append(Hit(chunks[j], float(score[j]), parts))
        return hits


class _Rows:
    """Chunk records of ``rows`` of ``records``, each read when first asked for (a search
    reads those of its top k and their ties, not of every candidate)."""

    def __init__(self, records, rows: np.ndarray) -> None:
        self.records, self.rows, self._read = records, rows, {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, j: int):
        if j not in self._read:
            self._read[j] = self.records[int(self.rows[j])]
        return self._read[j]


__all__ = ["Questions", "Scores", "TrainedSearch"]
