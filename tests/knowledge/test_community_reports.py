"""Community reports: extractive (central concepts, central sentences, word budget) and
generative through a summarise callable (an endpoint), falling back when it fails."""

from __future__ import annotations

import pytest
from _toy_corpus import A, B, spans

from gralc.knowledge.communities import Community
from gralc.knowledge.corpus_graph import build_corpus_graph
from gralc.retrieval.graph.communities import (
    ReportConfig,
    build_reports,
    load_reports,
    save_reports,
)

GRAPH = build_corpus_graph([A, B], [*spans(A[0], 1), *spans(B[0], 1)])
COMMS = [Community("L0-0", 0, ["D1", "D2", "D4", "D5"]), Community("L0-1", 0, ["X"])]


def test_extractive_report_lists_central_concepts_and_sentences_within_budget():
    (report,) = build_reports(GRAPH, COMMS[:1], [A, B], ReportConfig(words=4, top_concepts=2))
    # fatigue (D4) co-occurs with everything: the most central concept
    assert report.concepts[0] == "D4" and len(report.concepts) == 2
    assert report.title.startswith("Fatigue")
    assert report.chunk_ids == ["a:0", "b:0"] and report.centrality == 1.0
    body = report.text.split(". Key concepts: ")[1]
    assert sum(len(A[0].text[s:e].split()) for d, s, e in report.sentences if d == "a") + \
        sum(len(B[0].text[s:e].split()) for d, s, e in report.sentences if d == "b") <= 4
    assert body


def test_singletons_get_no_report_and_reports_round_trip(tmp_path):
    g = build_corpus_graph([A, B], [*spans(A[0], 1), *spans(B[0], 1)])
    reports = build_reports(g, [Community("L0-0", 0, ["D1", "D2"]), Community("L0-1", 0, ["D5"])], [A, B])
    assert [r.community_id for r in reports] == ["L0-0"]
    assert load_reports(save_reports(reports, tmp_path / "r.json")) == reports
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="bad.json"):
        load_reports(tmp_path / "bad.json")


def test_generative_reports_use_the_endpoint_and_survive_its_failure():
    prompts = []

    def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return "Tamoxifen and fatigue in breast cancer."

    (report,) = build_reports(GRAPH, COMMS[:1], [A, B], ReportConfig(mode="generative"), summarize)
    assert report.text.endswith("Tamoxifen and fatigue in breast cancer.")
    assert "Concepts: Fatigue" in prompts[0] and "Evidence sentences" in prompts[0]

    def broken(prompt: str) -> str:
        raise ConnectionError("no server")

    (kept,) = build_reports(GRAPH, COMMS[:1], [A, B], ReportConfig(mode="generative"), broken)
    assert "Key concepts" in kept.text  # the extractive report
    with pytest.raises(ValueError, match="generative"):
        build_reports(GRAPH, COMMS[:1], [A, B], ReportConfig(mode="generative"))
