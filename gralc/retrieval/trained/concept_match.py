"""The concept match: BM25 over linked concept ids, the IDF-weighted concept term of the score.

``kg_prox`` weighs every question concept alike, so with the full MeSH vocabulary generic
concepts (Infections, Viruses, Cells) dominate it; the concept match scores a chunk by BM25
over the set of its concept ids instead (``Chunk.entity_ids``), so a shared rare concept
counts and a shared ubiquitous one almost does not.

One code path: an index or an evaluation builds ``BM25Index(CONCEPT_BM25)`` over its chunks
(:func:`concept_index`); training scores a batch's chunks with the same BM25 core; both feed
:mod:`gralc.model.score_inputs` and the model adds ``model.concept_weight`` times the scores in
a fixed unit (:func:`idf_scale`). The pure parts (:data:`CONCEPT_BM25`, :func:`concept_terms`,
:func:`idf_scale`, :func:`concept_matrix`, :func:`question_concepts`) live in
:mod:`gralc.model` and are re-exported here; the candidate stage of a search adds the concept
match's best chunks (``search.concepts``). Details: docs/inference.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gralc.model.lexical import CONCEPT_BM25, concept_matrix, concept_terms, idf_scale
from gralc.model.query_features import question_concepts
from gralc.retrieval.indexes.bm25 import BM25Index

if TYPE_CHECKING:
    from gralc.chunking.chunk import Chunk


def concept_index(chunks: Sequence[Chunk]) -> BM25Index:
    """The concept match's index over ``chunks`` (their ``entity_ids``).

    >>> from gralc.chunking.chunk import Chunk
    >>> len(concept_index([Chunk("d1", "c0", "x", 0, 1, entity_ids=["D008687"])]))
    1
    """
    index = BM25Index(CONCEPT_BM25)
    index.index(chunks)
    return index


def concept_scores(index: BM25Index, ids: Sequence[str]) -> np.ndarray:
    """(K,) concept match of one question (its concept ``ids``) against ``index``'s chunks:
    BM25 over concept ids divided by :func:`idf_scale` of the index's chunk count.

    >>> from gralc.chunking.chunk import Chunk
    >>> index = concept_index([Chunk("d1", "c0", "x", 0, 1, entity_ids=["D008687"]), Chunk("d2", "c0", "y", 0, 1)])
    >>> (concept_scores(index, ["D008687"]) > 0).tolist()
    [True, False]
    """
    query = concept_terms(ids)
    return index.scores(query) / idf_scale(len(index)) if query else np.zeros(len(index))


def concept_idf(index: BM25Index, ids: Sequence[str]) -> np.ndarray:
    """(len(ids),) IDF of each concept over ``index``'s chunks, BM25's (Lucene)
    ``ln(1 + (N - df + 0.5) / (df + 0.5))``; a concept no chunk holds has df = 0.

    >>> from gralc.chunking.chunk import Chunk
    >>> index = concept_index([Chunk("d1", "c0", "x", 0, 1, entity_ids=["D008687"]), Chunk("d2", "c0", "y", 0, 1)])
    >>> concept_idf(index, ["D008687", "D000001"]).round(3).tolist()
    [0.693, 1.792]
    """
    n = len(index)
    vocab, indptr = index.retriever.vocab_dict, np.asarray(index.retriever.scores["indptr"])
    out = np.zeros(len(ids))
    for j, cid in enumerate(ids):
        term = concept_terms([cid])
        k = vocab.get(term)
        df = 0 if k is None else int(indptr[k + 1] - indptr[k])
        out[j] = np.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


__all__ = ["CONCEPT_BM25", "concept_idf", "concept_index", "concept_matrix", "concept_scores", "concept_terms",
           "idf_scale", "question_concepts"]
