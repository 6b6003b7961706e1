"""The first stage of a trained model's search: which chunks its full score is computed for.

A search scores the union of cheap candidate lists only (:func:`candidate_rows`, the one
rule, also training's validation's: :func:`candidate_mask`): the ``dense`` nearest chunk
vectors (FAISS), the ``lexical`` best chunks by BM25, the ``phrase`` best by the term-pair BM25
(``phrase_weight`` > 0), the ``concepts`` best by the concept match (``concept_weight`` > 0),
and the chunks of the ``units`` best sentence units by their BM25 (sentence evidence). Then
the ``exact`` best candidates get their tokens decoded for the exact MaxSim
(:mod:`gralc.retrieval.trained.token_store`).

The score normalises BM25 by the question's best *among the chunks (units) scored*; each
list feeding a normalised term contributes its own best, so every candidate gets exactly the
score an exhaustive pass gives it. ``exhaustive=True`` makes every chunk a candidate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from gralc.model.sparse_scores import PostingsRow
from gralc.retrieval.rerank.diversity import DIVERSE_METHODS


@dataclass
class CandidateConfig:
    """Candidates per source (see the module docstring), chosen by measurement
    (``gralc.experiments.two_stage_cv``, ``bench.scale_search``; docs/scaling.md#two-stage-search).

    >>> CandidateConfig(exhaustive=True).dense
    100
    """

    #: nearest chunk vectors (FAISS) among the candidates
    dense: int = 100
    #: best chunks by BM25
    lexical: int = 100
    #: best chunks by the term-pair BM25 (a model with phrase_weight > 0)
    phrase: int = 20
    #: best chunks by the concept match (a model with concept_weight > 0)
    concepts: int = 20
    #: chunks holding the best sentence units by their BM25 (sentence evidence)
    units: int = 20
    #: candidates whose token codes are decoded for the exact MaxSim (0: every candidate)
    exact: int = 32
    #: score every chunk, decoding every token (for checking; cost grows with the corpus)
    exhaustive: bool = False
    #: encode a batch of questions in padded passes (3.5x faster here, ``gralc serve``'s
    #: throughput) instead of one pass each; a question's vectors then move by ~1e-6 with its
    #: batch-mates, so near-ties may swap; one question alone is read the same either way
    padded_questions: bool = False
    #: section coverage: off, round_robin or complete_tail (best hits kept, last 6 slots for
    #: unseen sections: the one that keeps evidence recall); re-ranks the best ``diverse_pool``
    #: with :func:`~gralc.retrieval.rerank.diversity.section_diverse` (round_robin: the
    #: ``*_diverse`` rows' re-ranker, -0.06 evidence recall on COVID-QA); hits then carry rank
    #: scores, the model's score in ``components["retrieval"]`` (docs/inference.md)
    diverse: str = "off"
    #: how many of the best hits ``diverse`` re-ranks (at least k)
    diverse_pool: int = 100

    def __post_init__(self) -> None:
        for name in ("dense", "lexical", "phrase", "concepts", "units", "exact"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"search.{name} must be an integer >= 0, got {getattr(self, name)!r}")
        if not isinstance(self.diverse_pool, int) or self.diverse_pool < 1:
            raise ValueError(f"search.diverse_pool must be an integer >= 1, got {self.diverse_pool!r}")
        if self.diverse not in ("off", *DIVERSE_METHODS):
            raise ValueError(f"search.diverse must be one of off, {', '.join(DIVERSE_METHODS)}; "
                             f"got {self.diverse!r}")
        for name in ("exhaustive", "padded_questions"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"search.{name} must be true or false, got {getattr(self, name)!r}")

    def depth(self, k: int) -> int:
        """Candidates decoded exactly for a top-``k`` search: ``exact`` whatever ``k`` (0: all),
        so a ranking's first hits do not depend on how many are asked for (``gralc.search -k
        20`` and eval.py's deeper rows rank alike); hits past ``exact`` keep their centroid
        MaxSim and rank after the decoded ones."""
        return self.exact


def top_rows(scores: np.ndarray | torch.Tensor | PostingsRow, n: int, positive: bool = False) -> np.ndarray:
    """Rows of the ``n`` highest ``scores`` (K,) (``positive``: only those above 0, e.g. BM25
    rows sharing a term with the question), unordered; a sparse row reads its posted rows only
    (:meth:`~gralc.model.sparse_scores.PostingsRow.top`).

    >>> sorted(top_rows(np.array([0.1, 0.0, 0.7, 0.3]), 2).tolist())
    [2, 3]
    """
    if isinstance(scores, PostingsRow):
        return scores.top(n, positive)
    s = scores.detach().cpu().numpy() if isinstance(scores, torch.Tensor) else np.asarray(scores)
    if n <= 0 or not len(s):
        return np.zeros(0, np.int64)
    rows = np.arange(len(s)) if n >= len(s) else np.argpartition(-s, n - 1)[:n]
    return (rows[s[rows] > 0] if positive else rows).astype(np.int64)


def union_rows(*lists: np.ndarray) -> np.ndarray:
    """Sorted unique rows of the lists.

    >>> union_rows(np.array([3, 1]), np.array([1, 5]))
    array([1, 3, 5])
    """
    parts = [np.asarray(x, dtype=np.int64) for x in lists if x is not None and len(x)]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def unit_chunk_rows(unit_scores: np.ndarray | torch.Tensor, n: int, chunks_of_unit) -> np.ndarray:
    """Chunk rows holding the ``n`` best units by ``unit_scores`` (U,) (> 0);
    ``chunks_of_unit(unit rows) -> chunk rows``.

    >>> unit_chunk_rows(np.array([0.0, 0.8, 0.2]), 1, lambda units: units * 10)
    array([10])
    """
    best = top_rows(unit_scores, n, positive=True)
    return chunks_of_unit(best) if len(best) else np.zeros(0, np.int64)


def candidate_rows(config: CandidateConfig, dense: np.ndarray | None,
                   lexical: np.ndarray | torch.Tensor | None = None,
                   phrase: np.ndarray | torch.Tensor | None = None,
                   concepts: np.ndarray | torch.Tensor | None = None,
                   unit_lexical: np.ndarray | torch.Tensor | None = None,
                   chunks_of_units=None) -> np.ndarray:
    """The candidate rule: one question's sorted candidate chunk rows, the union of its
    ``dense`` rows (the ``config.dense`` nearest chunk vectors, found by the caller) and the
    best rows of each score row given ((K,) BM25, term-pair BM25, concept match; (U,) the
    sentence units' BM25, mapped to chunk rows by ``chunks_of_units(unit rows)``).

    >>> candidate_rows(CandidateConfig(lexical=1), np.array([3]), lexical=np.array([0.0, 2.0, 1.0, 0.0]))
    array([1, 3])
    """
    parts = [dense]
    if lexical is not None:
        parts.append(top_rows(lexical, config.lexical, positive=True))
    if phrase is not None:
        parts.append(top_rows(phrase, config.phrase, positive=True))
    if concepts is not None:
        parts.append(top_rows(concepts, config.concepts, positive=True))
    if unit_lexical is not None and chunks_of_units is not None:
        parts.append(unit_chunk_rows(unit_lexical, config.units, chunks_of_units))
    return union_rows(*parts)


def candidate_mask(config: CandidateConfig, cos: torch.Tensor, lexical: torch.Tensor | None = None,
                   phrase: torch.Tensor | None = None, unit_lexical: torch.Tensor | None = None,
                   unit_pairs: torch.Tensor | None = None, concepts: torch.Tensor | None = None
                   ) -> torch.Tensor:
    """(Q, K) bool: each question's candidates among all K chunks (:func:`candidate_rows`), from
    full score matrices (Q, K) (``unit_lexical`` (Q, U) with ``unit_pairs`` (2, P) chunk / unit
    rows; the dense rows: the best ``cos``), for training's validation, whose chunks all have
    their scores already.

    >>> candidate_mask(CandidateConfig(dense=1), torch.tensor([[0.1, 0.9, 0.5]])).tolist()
    [[False, True, False]]
    """
    n_q, n_k = cos.shape
    mask = torch.zeros(n_q, n_k, dtype=torch.bool)
    if config.exhaustive:
        return mask.fill_(True)
    pairs = None if unit_pairs is None else unit_pairs.cpu().numpy()
    for i in range(n_q):
        rows = candidate_rows(
            config, top_rows(cos[i], config.dense),
            *(None if x is None else x[i] for x in (lexical, phrase, concepts, unit_lexical)),
            chunks_of_units=None if pairs is None else (lambda u: pairs[0][np.isin(pairs[1], u)]))
        mask[i, torch.from_numpy(rows)] = True
    return mask


__all__ = ["CandidateConfig", "candidate_mask", "candidate_rows", "top_rows", "union_rows", "unit_chunk_rows"]
