"""TREC runs and qrels (issue 55): scores written so that every TREC tool keeps our order,
files that read back, evidence qrels by the evidence rule, and THE check: on the demo corpus
ranx (and pytrec_eval when installed) scoring our TREC files give exactly our metrics."""

from __future__ import annotations

import io
import random
import statistics
from dataclasses import replace

import numpy as np
import pytest

from gralc.chunking.chunk import Chunk
from gralc.data.benchmarks import demo_benchmark
from gralc.documents.model import Document
from gralc.documents.question import Question
from gralc.evaluation.evidence import hit_spans, resolve_evidence
from gralc.evaluation.methods import RunSettings, Searcher, score_runs
from gralc.evaluation.metrics import aggregate, query_metrics, rank_chunks
from gralc.evaluation.trec import evidence_qrels, one_to_one
from gralc.pipeline import Pipeline
from gralc.retrieval.hits import Hit
from gralc.retrieval.trec import (
    doc_hits,
    document_qrels,
    read_trec_qrels,
    read_trec_run,
    trec_scores,
    write_trec_qrels,
    write_trec_run,
)


def chunk(doc: str, i: int, start: int = 0, end: int = 0) -> Chunk:
    return Chunk(doc_id=doc, chunk_id=f"{doc}::{i}", text="", char_start=start, char_end=end)


# ----- the run file --------------------------------------------------------------------------
def trec_eval_order(lines: list[str]) -> list[str]:
    """Docnos in the order trec_eval and pytrec_eval rank them: the score stored as a 32-bit
    float, descending, ties by docno descending (trec_eval's form_res_rels.c)."""
    rows = [line.split() for line in lines]
    rows.sort(key=lambda r: r[2], reverse=True)
    rows.sort(key=lambda r: -np.float32(float(r[4])))
    return [r[2] for r in rows]


def test_written_scores_keep_our_order_for_every_tool():
    rng = random.Random(0)
    for _ in range(200):
        # tie-heavy scores on a coarse grid, some lists re-ranked (scores not decreasing)
        pairs = [(chunk(f"d{rng.randrange(9)}", i), rng.choice([0.1, 0.2, 0.3, 0.3 + 1e-12, -0.0, 0.0]))
                 for i in range(rng.randrange(1, 30))]
        ranked = rng.random() < 0.7
        hits = rank_chunks(pairs) if ranked else pairs
        out = io.StringIO()
        write_trec_run([("q1", hits)], out)
        lines = out.getvalue().splitlines()
        ours = [c.chunk_id for c, _ in hits]
        assert [line.split()[2] for line in lines] == ours
        assert [int(line.split()[3]) for line in lines] == list(range(1, len(ours) + 1))
        written = [line.split()[4] for line in lines]
        as64 = [float(s) for s in written]  # ranx, Python
        as32 = [np.float32(float(s)) for s in written]  # trec_eval, pytrec_eval
        assert all(a > b for a, b in zip(as64, as64[1:])) and all(a > b for a, b in zip(as32, as32[1:]))
        assert trec_eval_order(lines) == ours
        if ranked:  # ties nudged by a few 32-bit steps at most
            for (_, s), w in zip(hits, as32):
                assert abs(float(w) - s) <= 1e-7 * len(hits)


def test_scores_that_do_not_fall_are_nudged_down():
    assert [str(s) for s in trec_scores([2.0, 2.0, 3.0, 1.0])] == ["2.0", "1.9999999", "1.9999998", "1.0"]
    with pytest.raises(ValueError, match="not a finite number"):
        trec_scores([1.0, float("nan")])


def test_chunk_and_document_levels(tmp_path):
    a0, b0, a1, c0 = chunk("a", 0), chunk("b", 0), chunk("a", 1), chunk("c", 0)
    rows = [("q1", [Hit(a0, 0.9), Hit(b0, 0.8), Hit(a1, 0.7), Hit(c0, 0.7)]), ("q2", []), ("q3", [(c0, 1.5)])]
    n = write_trec_run(rows, tmp_path / "chunks.trec", "gralc-minilm")
    assert n == 5
    text = (tmp_path / "chunks.trec").read_text().splitlines()
    assert text[0] == "q1 Q0 a::0 1 0.9 gralc-minilm" and text[-1] == "q3 Q0 c::0 1 1.5 gralc-minilm"
    assert read_trec_run(tmp_path / "chunks.trec")["q1"] == {
        "a::0": pytest.approx(0.9), "b::0": pytest.approx(0.8), "a::1": pytest.approx(0.7),
        "c::0": pytest.approx(0.7)}
    write_trec_run(rows, tmp_path / "docs.trec", level="doc")
    # each document once, at its first chunk
    assert [line.split()[2:4] for line in (tmp_path / "docs.trec").read_text().splitlines()] == [
        ["a", "1"], ["b", "2"], ["c", "3"], ["c", "1"]]
    assert [c.chunk_id for c, _ in doc_hits(rows[0][1])] == ["a::0", "b::0", "c::0"]


@pytest.mark.parametrize(("rows", "level", "says"), [
    ([("q 1", [(chunk("a", 0), 1.0)])], "chunk", "question id 'q 1' is empty or holds whitespace"),
    ([("q1", [(chunk("a b", 0), 1.0)])], "chunk", "chunk id 'a b::0'"),
    ([("q1", [(chunk("a b", 0), 1.0)])], "doc", "document id 'a b'"),
    ([("q1", [(chunk("a", 0), 1.0), (chunk("a", 0), 0.5)])], "chunk", "retrieved twice"),
    ([("q1", []), ("q1", [])], "chunk", "twice in one run"),
    ([("q1", [(chunk("a", 0), float("inf"))])], "chunk", "not a finite number"),
    ([], "passage", "level='passage'"),
])  # fmt: skip
def test_run_errors(rows, level, says):
    with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
        write_trec_run(rows, io.StringIO(), level=level)


def test_qrels_round_trip_and_reader_errors(tmp_path):
    questions = [Question("q1", "x", "d2", relevance={"d2": 2, "d7": 1}), Question("q2", "y", "d3")]
    qrels = document_qrels(questions)
    assert qrels == {"q1": {"d2": 2, "d7": 1}, "q2": {"d3": 1}}
    assert write_trec_qrels(qrels, tmp_path / "qrels.txt") == 3
    assert (tmp_path / "qrels.txt").read_text() == "q1 0 d2 2\nq1 0 d7 1\nq2 0 d3 1\n"
    assert read_trec_qrels(tmp_path / "qrels.txt") == qrels
    bad = {"qrels": ("q1 0 d1 1\nq1 0 d2\n", 2, "3 columns"), "qrels2": ("q1 0 d1 x\n", 1, "not an integer"),
           "qrels3": ("q1 0 d1 1\n\nq1 0 d1 0\n", 3, "judged again (first on line 1)"),
           "run": ("q1 Q0 a 1 0.5 r\nq1 Q0 b 2 r\n", 2, "5 columns"),
           "run2": ("q1 Q0 a 1 high r\n", 1, "not a number"),
           "run3": ("q1 Q0 a 1 0.5 r\nq1 Q0 a 2 0.4 r\n", 2, "(q1, a) listed again (first on line 1)")}
    for name, (content, line, says) in bad.items():
        path = tmp_path / name
        path.write_text(content)
        reader = read_trec_run if name.startswith("run") else read_trec_qrels
        with pytest.raises(ValueError, match=rf"{name}:{line}: .*{says.replace('(', '.').replace(')', '.')}"):
            reader(path)
    with pytest.raises(ValueError, match="twice"):
        document_qrels(questions + questions[:1])


# ----- evidence qrels ----------------------------------------------------------------------
def test_evidence_qrels_follow_the_evidence_rule():
    doc = Document("d1", "x" * 1000)
    # the 2nd span lies mostly between two chunks: neither holds half of it
    q_span = Question("q1", "a", "d1", evidence_spans=[[10, 50], [500, 510]])
    q_para = Question("q2", "b", "d1", evidence_spans=[[100, 400]])  # held by 2 chunks
    q_none = Question("q3", "c", "d1")  # no evidence: no evidence metrics, no qrels
    chunks = [chunk("d1", 0, 0, 200), chunk("d1", 1, 200, 503), chunk("d1", 3, 507, 1000),
              chunk("d2", 0, 0, 1000)]
    qrels = evidence_qrels([q_span, q_para, q_none], chunks, [doc])
    assert qrels == {"q1": {"d1::0": 1, "q1#evidence1-in-no-chunk": 1},
                     "q2": {"d1::0": 1, "d1::1": 1}}
    for q in (q_span, q_para):  # exactly the chunks the evidence metrics count as hits
        spans = resolve_evidence(q, doc)
        assert {c.chunk_id for c in chunks if hit_spans(c, q.gold_doc_id, spans)} == {
            d for d in qrels[q.id] if "#" not in d}
    assert one_to_one([q_span, q_para, q_none], chunks, [doc]) == {"q1": True, "q2": False}
    with pytest.raises(ValueError, match="not among the documents"):
        evidence_qrels([Question("q", "x", "d9", evidence_spans=[[0, 1]])], chunks, [doc])


# ----- THE check: TREC tools on our files give our metrics ------------------------------------
@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo corpus, structure-aware chunks, the bundled MiniLM, dense search over a FAISS
    ChunkIndex through eval.py's own Searcher, scored by eval.py's own score_runs; the TREC
    files of its runs (chunk and document level) and their qrels (evidence, document,
    graded document), and our metrics of the same runs."""
    pipeline = Pipeline()
    bench = demo_benchmark()
    prepared = pipeline.prepare(bench.documents, progress=False)
    chunks = [c for p in prepared for c in pipeline.chunker("structure_aware").chunk(p)]
    settings = RunSettings(ks=(1, 5, 10, 20))
    searcher = Searcher("dense", chunks, pipeline, [q.text for q in bench.questions], settings)
    runs = searcher.search(settings.depth)
    result = score_runs("structure_aware", bench, chunks, runs, settings, {})
    out = tmp_path_factory.mktemp("trec")
    qids = [q.id for q in bench.questions]
    write_trec_run(zip(qids, runs), out / "chunks.trec", "structure_aware", level="chunk")
    write_trec_run(zip(qids, runs), out / "docs.trec", "structure_aware", level="doc")
    write_trec_qrels(evidence_qrels(bench.questions, chunks, bench.documents), out / "evidence.qrels")
    write_trec_qrels(document_qrels(bench.questions), out / "docs.qrels")
    # graded relevance (BEIR qrels): the gold document 2, the first other document 1
    other = {q.id: next(d.id for d in bench.documents if d.id != q.gold_doc_id) for q in bench.questions}
    graded = [replace(q, relevance={q.gold_doc_id: 2, other[q.id]: 1}) for q in bench.questions]
    write_trec_qrels(document_qrels(graded), out / "graded.qrels")
    # our document-level metrics of each question's document ranking (each document once,
    # at its first chunk: what the level="doc" file lists)
    doc_level = aggregate([query_metrics(doc_hits(run), q.gold_doc_id, (5,), relevance=q.relevant_docs())
                           for q, run in zip(bench.questions, runs)])
    graded_level = aggregate([query_metrics(doc_hits(run), q.gold_doc_id, (5,), relevance=q.relevance)
                              for q, run in zip(graded, runs)])
    return {"bench": bench, "chunks": chunks, "result": result, "out": out, "qids": qids,
            "doc_level": doc_level, "graded_level": graded_level}


def _ranx(qrels_path, run_path, metrics, mean=True):
    import warnings

    import ranx

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety warnings inside ranx
        qrels = ranx.Qrels.from_file(str(qrels_path), kind="trec")
        run = ranx.Run.from_file(str(run_path), kind="trec")
        if not mean:  # per question, as ranx files them in the Run
            ranx.evaluate(qrels, run, metrics, make_comparable=True)
            return dict(run.scores[metrics])
        return {m: float(v) for m, v in ranx.evaluate(qrels, run, metrics, make_comparable=True).items()}


def test_ranx_on_our_trec_files_gives_our_metrics(demo):
    ours, out, qids = demo["result"].metrics, demo["out"], demo["qids"]
    assert ours["n_evidence_questions"] == len(qids)
    # evidence level: the chunk run against the evidence qrels
    theirs = _ranx(out / "evidence.qrels", out / "chunks.trec", ["mrr", "recall@5"])
    assert theirs["mrr"] == pytest.approx(ours["ev_mrr"], abs=1e-9)
    assert theirs["recall@5"] == pytest.approx(ours["ev_recall@5"], abs=1e-9)
    # recall per question: equal wherever chunks and evidence spans pair one to one (by
    # construction); the demo's few other questions happen to agree as well (above)
    paired = one_to_one(demo["bench"].questions, demo["chunks"], demo["bench"].documents)
    assert sum(paired.values()) >= 0.9 * len(qids)
    per_q = {row["question_id"]: row for row in demo["result"].per_query}
    per_ranx = _ranx(out / "evidence.qrels", out / "chunks.trec", "recall@5", mean=False)
    assert set(per_ranx) == set(qids)
    for qid, value in per_ranx.items():
        if paired[qid]:
            assert value == pytest.approx(per_q[qid]["ev_recall@5"], abs=1e-9), qid
    # document level: the document run against the document qrels, binary and graded
    for qrels_file, expect in (("docs.qrels", demo["doc_level"]), ("graded.qrels", demo["graded_level"])):
        theirs = _ranx(out / qrels_file, out / "docs.trec", ["mrr", "ndcg@10", "recall@5"])
        for metric in ("mrr", "ndcg@10", "recall@5"):
            assert theirs[metric] == pytest.approx(expect[metric], abs=1e-9), (qrels_file, metric)
    assert demo["graded_level"]["ndcg@10"] != demo["doc_level"]["ndcg@10"]  # the grades count
    # the report's document metrics rank by CHUNK position (a document seen in several chunks
    # pushes the gold one down): never above those of the document ranking
    assert ours["mrr"] <= demo["doc_level"]["mrr"] and ours["recall@5"] <= demo["doc_level"]["recall@5"]


def test_pytrec_eval_on_our_trec_files_gives_our_metrics(demo):
    """trec_eval's own code (32-bit scores, ties by docno) agrees; pytrec-eval-terrier is a
    dev dependency, so a plain install skips this."""
    pytrec_eval = pytest.importorskip(
        "pytrec_eval", reason="pytrec-eval-terrier is not installed (pip install -e '.[dev]')")
    ours, out, qids = demo["result"].metrics, demo["out"], demo["qids"]

    def score(qrels_file, run_file, measures):
        evaluator = pytrec_eval.RelevanceEvaluator(read_trec_qrels(out / qrels_file), set(measures))
        per_query = evaluator.evaluate(read_trec_run(out / run_file))
        return {m: statistics.fmean(per_query.get(q, {}).get(m, 0.0) for q in qids) for m in measures}

    ev = score("evidence.qrels", "chunks.trec", ["recip_rank", "recall_5"])
    assert ev["recip_rank"] == pytest.approx(ours["ev_mrr"], abs=1e-9)
    assert ev["recall_5"] == pytest.approx(ours["ev_recall@5"], abs=1e-9)
    for qrels_file, expect in (("docs.qrels", demo["doc_level"]), ("graded.qrels", demo["graded_level"])):
        te = score(qrels_file, "docs.trec", ["recip_rank", "ndcg_cut_10", "recall_5"])
        assert te["recip_rank"] == pytest.approx(expect["mrr"], abs=1e-9)
        assert te["ndcg_cut_10"] == pytest.approx(expect["ndcg@10"], abs=1e-9)
        assert te["recall_5"] == pytest.approx(expect["recall@5"], abs=1e-9)


def test_qrels_of_an_index_whose_chunks_cut_other_texts_are_refused():
    """gralc qrels --index: evidence spans index the benchmark's texts; chunks of the same
    documents parsed another way would be judged wrongly, so they are refused by name."""
    from gralc.chunking.chunk import Chunk
    from gralc.data.benchmark import Benchmark
    from gralc.documents.model import Document
    from gralc.qrels import check_same_texts

    bench = Benchmark("b", [Document("d1", "Metformin lowers HbA1c in adults.")], [])
    good = Chunk("d1", "d1::0", "Metformin lowers", 0, 16)
    check_same_texts([good], bench, "IDX")
    with pytest.raises(ValueError, match="d1::9 is not the text of d1"):
        check_same_texts([good, Chunk("d1", "d1::9", "metformin", 0, 9)], bench, "IDX")
    with pytest.raises(ValueError, match="none of its chunks"):
        check_same_texts([Chunk("other", "o::0", "x", 0, 1)], bench, "IDX")
