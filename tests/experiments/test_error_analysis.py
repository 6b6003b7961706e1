"""gralc.experiments.error_analysis: every cause heuristic on hand-built misses, the order in
which they are tried, a miss read from hand-made rankings, and the Markdown report."""

from __future__ import annotations

from gralc.chunking.chunk import Chunk
from gralc.data.benchmarks import Benchmark
from gralc.documents.plaintext import document_from_text
from gralc.documents.question import Question
from gralc.evaluation.methods import RunSettings
from gralc.experiments.error_analysis import (
    CAUSES,
    MissFacts,
    answer_elsewhere,
    content_terms,
    is_table_or_caption,
    lexical_mismatch,
    main,
    miss_cause,
    odd_annotation,
    question_misses,
    report,
    section_path,
    split_across_chunks,
    summary_of,
    wrong_article,
)
from gralc.runinfo import write_json_atomic


def facts(**kw) -> MissFacts:
    """A miss none of whose heuristics holds (cause ``other``), with ``kw`` changed."""
    base = dict(gold_doc_id="d1", evidence=[(100, 110)], answer="ten days", at_offset="ten days",
                answer_pieces=2, budget=512, paragraph="The incubation period was ten days.",
                section_titles=["Results"], gold_chunk_spans=[(0, 200), (200, 400)],
                above=[("d1", (200, 300), "Unrelated text.")], top_doc_ids=["d1", "d2", "d2"],
                question_terms={"incub", "period"}, evidence_terms={"incub", "period", "ten", "day"},
                top_sentence_terms=[{"incub"}])
    base.update(kw)
    return MissFacts(**base)


# one change per cause, each making that heuristic (and only it) hold
CHANGES = {
    "table_or_caption": dict(paragraph="Table 2: Incubation period by country."),
    "split_across_chunks": dict(evidence=[(190, 210)]),
    "answer_elsewhere": dict(above=[("d2", (0, 50), "Quarantine lasted Ten\n days.")]),
    "wrong_article": dict(top_doc_ids=["d2", "d3", "d2"]),
    "lexical_mismatch": dict(evidence_terms={"ten", "day"}, top_sentence_terms=[{"incub", "period", "x"}]),
    "long_or_odd_annotation": dict(answer_pieces=600),
}


def test_each_cause_is_reachable_and_the_base_case_is_other():
    assert miss_cause(facts()) == "other"
    for cause, change in CHANGES.items():
        assert miss_cause(facts(**change)) == cause, cause
    assert set(CHANGES) | {"other"} == set(CAUSES)


def test_the_first_cause_in_order_wins():
    for i, cause in enumerate(CAUSES[:-1]):
        merged = {}
        for later in CAUSES[i:-1]:
            merged.update(CHANGES[later])
        assert miss_cause(facts(**merged)) == cause, cause


def test_caption_and_table_cues():
    assert is_table_or_caption("FIGURE 1 | Types of immune responses.")
    assert is_table_or_caption("Figure S1 Specificity controls for binding.")
    assert is_table_or_caption("Fig. 3. Survival curves.")
    assert is_table_or_caption("Table l: Posterior model estimates.")  # OCR'd "1"
    assert is_table_or_caption("Country %\nAustria 1.1%\nBelgium 3.7%\nDenmark 1.1%\nFrance 3.0%")
    assert is_table_or_caption("Some text.", ["Results", "Table 1"])
    assert not is_table_or_caption("Table 2 shows total forecasted deaths.")
    assert not is_table_or_caption("Figure 6 shows the infection-to-death distribution.")
    assert not is_table_or_caption("One line of body text here.\nTwo lines of body text here.\nThree.\nFour words here.")


def test_split_needs_a_span_no_chunk_holds_and_longer_than_the_overlap():
    chunks = [(0, 100), (80, 200)]  # overlap 20
    assert not split_across_chunks([(85, 99)], chunks)  # inside both
    assert not split_across_chunks([(70, 110)], [(0, 100), (60, 200)])  # inside the second
    assert split_across_chunks([(70, 130)], chunks)  # 60 > 20, in neither
    assert split_across_chunks([(95, 105)], [(0, 100), (98, 200)])  # 10 > 2
    assert not split_across_chunks([(90, 120)], [(0, 100), (20, 100), (100, 200)])  # 30 <= 80
    assert not split_across_chunks([(10, 20)], [])  # no chunks: no evidence of a split


def test_answer_elsewhere_ignores_pieces_touching_the_evidence_and_blank_answers():
    assert not answer_elsewhere("ten days", "d1", [(5, 13)], [("d1", (0, 20), "xx ten days")])
    assert answer_elsewhere("ten days", "d1", [(5, 13)], [("d1", (40, 60), "TEN   days later")])
    assert not answer_elsewhere("  ", "d1", [(5, 13)], [("d2", (0, 20), "  ")])
    assert not answer_elsewhere("ten days", "d1", [(5, 13)], [("d2", (0, 20), "nine days")])


def test_wrong_article_lexical_mismatch_and_odd_annotation():
    assert not wrong_article("d1", [])
    assert not lexical_mismatch({"a"}, {"b"}, [{"c"}])  # low, but the top chunk is no better
    assert not lexical_mismatch({"a", "b"}, {"a", "c"}, [{"a", "b"}])  # 0.33: not low
    assert odd_annotation("5 days", "6 days", 2, 512)
    assert not odd_annotation("5 days", "5\n Days", 2, 512)


def test_content_terms_drop_stopwords_and_stem():
    assert content_terms(["Is the incubation period of the virus long?"])[0] == {"incub", "period", "virus", "long"}


def _bench():
    text = ("# Incubation\n\n## Methods\n\nWe followed 40 patients for a month.\n\n## Results\n\n"
            "The incubation period was ten days. Symptoms were mild.")
    doc = document_from_text(text, "d1")
    other = document_from_text("# Quarantine\n\n## Results\n\nQuarantine lasted ten days.", "d2")
    start = doc.text.index("ten days")
    q = Question("q1", "How long is the incubation period?", "d1", long_answer="ten days",
                 evidence_spans=[[start, start + 8]])
    return Benchmark("toy", [doc, other], [q], {}), doc, other, start


def _chunk(doc, cid, s, e):
    return Chunk(doc.id, cid, doc.text[s:e], s, e)


def test_a_miss_is_read_from_rankings_with_its_fields():
    bench, doc, other, start = _bench()
    results = doc.text.index("Results")
    gold = [_chunk(doc, "d1::0", 0, results), _chunk(doc, "d1::1", results, len(doc.text))]
    elsewhere = _chunk(other, "d2::0", 0, len(other.text))
    pieces = lambda c: list(range(5, c.char_end - c.char_start + 1, 5))  # noqa: E731  a piece per 5 characters
    settings = RunSettings(ks=(1, 5), pieces=pieces)
    budget = len(pieces(elsewhere)) + len(pieces(gold[0]))  # the gold chunk falls just past the budget
    misses, n = question_misses(bench, [*gold, elsewhere], [[elsewhere, gold[0], gold[1]]], settings, budget)
    assert n == 1 and len(misses) == 1
    m = misses[0]
    assert m["cause"] == "answer_elsewhere" and m["answer_span"] == [start, start + 8]
    assert m["first_evidence"]["rank"] == 3 and m["first_evidence"]["chunk_id"] == "d1::1"
    assert [t["doc_id"] for t in m["top"]] == ["d2", "d1", "d1"]
    assert [t["in_gold_article"] for t in m["top"]] == [False, True, True]
    assert [t["has_answer"] for t in m["top"]] == [True, False, True]
    assert m["section_path"] == section_path(doc, start) and m["section_path"][-1]["title"] == "Results"
    # the evidence chunk first: a hit, no miss
    hit, _ = question_misses(bench, [*gold, elsewhere], [[gold[1], elsewhere]], settings, budget)
    assert hit == []


def _saved():
    misses = [{"cause": "wrong_article", "question": "Q" * 150, "answer": "A | b"},
              {"cause": "wrong_article", "question": "Second?", "answer": "yes"},
              {"cause": "other", "question": "Third?", "answer": "no"}]
    folds = [{"fold": 0, "questions": 10, "misses": misses}]
    return {"args": {"run": "runs/x", "budget": 512}, "git_hash": "abc", "folds": folds,
            "summary": summary_of(folds)}


def test_summary_and_report():
    saved = _saved()
    assert saved["summary"]["counts"]["wrong_article"] == 2 and saved["summary"]["misses"] == 3
    assert abs(saved["summary"]["share"]["other"] - 1 / 3) < 1e-9
    text = report(saved)
    assert "| cause | misses | share | example 1 | example 2 |" in text
    row = next(line for line in text.splitlines() if line.startswith("| wrong_article"))
    assert "| 2 | 67 % |" in row and "Second? → *yes*" in row and "A \\| b" in row and "Q" * 101 not in row
    assert "3 misses of 10 questions" in text and "fold 0: 3 of 10" in text
    assert "table_or_caption" not in text.split("\n\n")[1]  # causes without misses have no row


def test_report_flag_prints_a_saved_run(tmp_path, capsys):
    path = tmp_path / "error_analysis.json"
    write_json_atomic(path, _saved())
    assert main(["--report", str(path)]) == 0
    assert "| other | 1 | 33 % | Third? → *no* |  |" in capsys.readouterr().out


def test_rankings_record_keeps_whole_rankings_by_row():
    from gralc.experiments.error_analysis import rankings_record

    bench, doc, other, _ = _bench()
    chunks = [_chunk(doc, "d1::0", 0, 10), _chunk(doc, "d1::1", 10, 20), _chunk(other, "d2::0", 0, 10)]
    saved = rankings_record(chunks, ["q1", "q2"], [[(chunks[2], 0.9), (chunks[0], 0.123456789)],
                                                    [(chunks[1], 1.0)]])
    assert saved["chunks"][2] == ["d2", "d2::0", 0, 10]
    assert saved["questions"][0] == {"question_id": "q1", "rows": [2, 0], "scores": [0.9, 0.12346]}
    assert [saved["chunks"][r][1] for r in saved["questions"][1]["rows"]] == ["d1::1"]
