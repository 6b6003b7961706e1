"""The first stage of a trained model's search: which chunks its full score is computed for.

A trained model's score (cosine, kg_prox, learned BM25 term, sentence evidence, MaxSim,
term-pair BM25) is too costly for every chunk of a large corpus, so a search scores the
union of cheap candidate lists only: the ``dense`` nearest chunk vectors (the FAISS index),
the ``lexical`` best chunks by BM25, the ``phrase`` best by the term-pair BM25 (a model with
``phrase_weight`` > 0), the ``concepts`` best by the concept match (a model with
``concept_weight`` > 0; :mod:`gralc.retrieval.trained.concept_match`, in a fixed unit, so for recall
only), and the chunks holding the ``units`` best sentence units by their BM25
(a model with sentence evidence and the lexical term). Then the ``exact`` best candidates by the
full score with MaxSim read from token centroids get their tokens decoded and their exact
MaxSim (0: every candidate; :mod:`gralc.retrieval.trained.token_store`).

The score normalises BM25 by the question's best BM25 *among the chunks (units) scored*;
since each list that feeds a normalised term contributes its own best chunk, the candidates
always hold the corpus's best and every candidate gets exactly the score an exhaustive pass
gives it. ``exhaustive=True`` scores every chunk (decoding every token), for checking.
Training's validation ranks with the same candidate rule (:func:`candidate_mask`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class CandidateConfig:
    """Candidates per source (see the module docstring), chosen by measurement
    (``gralc.experiments.two_stage_cv``, ``bench.scale_search``; docs/scaling.md#two-stage-search)."""

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

    def __post_init__(self) -> None:
        for name in ("dense", "lexical", "phrase", "concepts", "units", "exact"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"search.{name} must be an integer >= 0, got {getattr(self, name)!r}")

    def depth(self, k: int) -> int:
        """Candidates decoded exactly for a top-``k`` search: ``exact`` whatever ``k`` (0: all),
        so a ranking's first hits do not depend on how many are asked for (``gralc.search -k
        20`` and eval.py's deeper rows rank alike); hits past ``exact`` keep their centroid
        MaxSim and rank after the decoded ones."""
        return self.exact


def top_rows(scores: np.ndarray | torch.Tensor, n: int, positive: bool = False) -> np.ndarray:
    """Rows of the ``n`` highest ``scores`` (K,) (``positive``: only those above 0, e.g. BM25
    rows sharing a term with the question), unordered."""
    s = scores.detach().cpu().numpy() if isinstance(scores, torch.Tensor) else np.asarray(scores)
    if n <= 0 or not len(s):
        return np.zeros(0, np.int64)
    rows = np.arange(len(s)) if n >= len(s) else np.argpartition(-s, n - 1)[:n]
    return (rows[s[rows] > 0] if positive else rows).astype(np.int64)


def union_rows(*lists: np.ndarray) -> np.ndarray:
    """Sorted unique rows of the lists."""
    parts = [np.asarray(x, dtype=np.int64) for x in lists if x is not None and len(x)]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def unit_chunk_rows(unit_scores: np.ndarray | torch.Tensor, n: int, chunks_of_unit) -> np.ndarray:
    """Chunk rows holding the ``n`` best units by ``unit_scores`` (U,) (> 0);
    ``chunks_of_unit(unit rows) -> chunk rows``."""
    best = top_rows(unit_scores, n, positive=True)
    return chunks_of_unit(best) if len(best) else np.zeros(0, np.int64)


def candidate_mask(config: CandidateConfig, cos: torch.Tensor, lexical: torch.Tensor | None = None,
                   phrase: torch.Tensor | None = None, unit_lexical: torch.Tensor | None = None,
                   unit_pairs: torch.Tensor | None = None, concepts: torch.Tensor | None = None
                   ) -> torch.Tensor:
    """(Q, K) bool: each question's candidates among all K chunks, from full score matrices
    (Q, K) (``unit_lexical`` (Q, U) with ``unit_pairs`` (2, P) chunk / unit rows): the rule of
    a search, for training's validation, whose chunks all have their scores already."""
    n_q, n_k = cos.shape
    mask = torch.zeros(n_q, n_k, dtype=torch.bool)
    if config.exhaustive:
        return mask.fill_(True)
    pairs = None if unit_pairs is None else unit_pairs.cpu().numpy()
    for i in range(n_q):
        rows = [top_rows(cos[i], config.dense)]
        if lexical is not None:
            rows.append(top_rows(lexical[i], config.lexical, positive=True))
        if phrase is not None:
            rows.append(top_rows(phrase[i], config.phrase, positive=True))
        if concepts is not None:
            rows.append(top_rows(concepts[i], config.concepts, positive=True))
        if unit_lexical is not None and pairs is not None:
            rows.append(unit_chunk_rows(unit_lexical[i], config.units,
                                        lambda u: pairs[0][np.isin(pairs[1], u)]))
        mask[i, torch.from_numpy(union_rows(*rows))] = True
    return mask


__all__ = ["CandidateConfig", "candidate_mask", "top_rows", "union_rows", "unit_chunk_rows"]
