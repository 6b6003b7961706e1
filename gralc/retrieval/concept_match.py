"""The concept match: BM25 over linked concept ids, the IDF-weighted concept term of the score.

``kg_prox`` averages, over a question's concepts, their best cosine to a chunk's concepts with
no weight for how common a concept is; with the full MeSH vocabulary the generic concepts
(Infections, Viruses, Cells, linked in most COVID-QA articles) then dominate it. The concept
match scores a chunk by BM25 over concept ids instead: every linked entry term is already its
descriptor (``2019-nCoV``, ``SARS-CoV-2`` and ``COVID-19 virus`` are one id), a chunk is the
set of its concepts (``Chunk.entity_ids``; each counted once), and IDF makes a shared rare
concept count and a shared ubiquitous one count for almost nothing.

One code path: an index or an evaluation builds ``BM25Index(CONCEPT_BM25)`` over its chunks
(:func:`concept_index`); training scores a batch's chunks with :func:`concept_matrix` (term
statistics from the batch, as the learned lexical term without corpus statistics); both feed
:meth:`GraLCModel.score_parts` ``concepts=`` and the model adds ``model.concept_weight`` times
the scores, in a fixed unit (:func:`idf_scale`), not divided by the question's best. The
candidate stage of a search adds the concept match's best chunks
(``search.concepts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from gralc.retrieval.bm25 import BM25Config, BM25Index, bm25_matrix, concept_terms

if TYPE_CHECKING:
    from gralc.chunking.chunk import Chunk
    from gralc.knowledge.linker import EntityLinker

#: BM25 over concept ids (Lucene BM25, k1 1.2 as for short fields; a chunk's concepts once
#: each; ids neither stemmed nor stopword-filtered)
CONCEPT_BM25 = BM25Config(k1=1.2, b=0.75, stemmer=None, stopwords=None, field="concepts")

def concept_index(chunks: Sequence[Chunk]) -> BM25Index:
    """The concept match's index over ``chunks`` (their ``entity_ids``)."""
    index = BM25Index(CONCEPT_BM25)
    index.index(chunks)
    return index


def question_concepts(linker: EntityLinker, texts: Sequence[str]) -> list[list[str]]:
    """Each question's linked concept ids (a pipeline's ``linker``: longest match, descriptor
    ids), in order of first mention."""
    return [list(dict.fromkeys(m.concept_id for m in linker.link(t))) for t in texts]


def idf_scale(n_chunks: int) -> float:
    """The concept match's fixed unit: the IDF of a concept held by one chunk of ``n_chunks``
    (the largest IDF there is), so a shared concept adds at most about its share of it. Not the
    question's best chunk, as the lexical terms are normalised: a question with one generic
    concept ("Infections") would then give every chunk holding it the full weight, and the IDF
    would count for nothing."""
    return float(np.log(1 + (max(n_chunks, 1) - 0.5) / 1.5))


def concept_scores(index: BM25Index, ids: Sequence[str]) -> np.ndarray:
    """(K,) concept match of one question (its concept ``ids``) against ``index``'s chunks:
    BM25 over concept ids divided by :func:`idf_scale` of the index's chunk count."""
    query = concept_terms(ids)
    return index.scores(query) / idf_scale(len(index)) if query else np.zeros(len(index))


def concept_idf(index: BM25Index, ids: Sequence[str]) -> np.ndarray:
    """(len(ids),) IDF of each concept over ``index``'s chunks, BM25's (Lucene)
    ``ln(1 + (N - df + 0.5) / (df + 0.5))``; a concept no chunk holds has df = 0."""
    n = len(index)
    vocab, indptr = index.retriever.vocab_dict, np.asarray(index.retriever.scores["indptr"])
    out = np.zeros(len(ids))
    for j, cid in enumerate(ids):
        term = concept_terms([cid])
        k = vocab.get(term)
        df = 0 if k is None else int(indptr[k + 1] - indptr[k])
        out[j] = np.log(1 + (n - df + 0.5) / (df + 0.5))
    return out


def concept_matrix(questions: Sequence[Sequence[str]], chunks: Sequence[Sequence[str]]) -> np.ndarray:
    """(Q, K) concept match of each question's ids against each chunk's ids, term statistics
    from these chunks (a training batch, whose chunks change with the learned boundaries), in
    the unit of :func:`concept_scores`."""
    return bm25_matrix([concept_terms(q) for q in questions], [concept_terms(c) for c in chunks],
                       CONCEPT_BM25) / idf_scale(len(chunks))


__all__ = ["CONCEPT_BM25", "concept_idf", "concept_index", "concept_matrix", "concept_scores", "concept_terms",
           "idf_scale", "question_concepts"]
