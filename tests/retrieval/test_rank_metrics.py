"""The ranking metrics exist once, below training and evaluation: the reports
(gralc.evaluation.metrics) and the validation MRR of training use the same functions."""

from __future__ import annotations

import torch

from gralc.evaluation import metrics
from gralc.retrieval import rank_metrics
from gralc.training.lit_module import GraLCLitModule


def test_evaluation_reexports_the_one_implementation():
    for name in ("reciprocal_rank", "mrr", "recall_at_k", "ndcg_at_k"):
        assert getattr(metrics, name) is getattr(rank_metrics, name)


def test_ids_of_any_kind_and_lazy_runs():
    assert rank_metrics.reciprocal_rank(iter([4, 7, 2]), [2, 9]) == 1 / 3
    assert rank_metrics.mrr([map(str, [1, 2]), []], ["2", "1"]) == 0.25


def test_validation_mrr_is_the_metric_of_the_ranked_documents():
    doc_of = ["a", "a", "b", "c"]
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.5], [0.3, 0.2, 0.2, 0.9]])

    class Example:
        def __init__(self, doc_id):
            self.doc_id = doc_id

    got = GraLCLitModule.mean_reciprocal_rank(scores, doc_of, [Example("c"), Example("b")])
    # ties order by doc id descending: row 0 a, then c before b at 0.5; row 1 c, a, then b before a
    assert got == rank_metrics.mrr([["a", "c", "b", "a"], ["c", "a", "b", "a"]], ["c", "b"])
    assert got == (1 / 2 + 1 / 3) / 2
