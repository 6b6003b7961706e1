"""Why the trained model misses COVID-QA evidence (held-out questions with ev_recall@512wp = 0):
``python -m gralc.experiments.error_analysis --run RUN_VARIANT --out DIR [--budget 512]``.

Per fold of a ``gralc.experiments.crossval`` run the selected model (export settings of record,
exhaustive search) ranks the held-out questions (rankings kept in ``DIR/rankings_foldK.json``);
each miss goes to ``DIR/error_analysis.json`` with its top chunks and the first cause of: 1
``table_or_caption``: the evidence paragraph opens with a caption label (``Table 2:``,
``FIGURE 1 |``, ``Figure S1 Text``) or is tabular (>= 4 lines, >= 75 % of <= 4 words), or a
section title on its path is Table/Figure/References; 2 ``split_across_chunks``: no chunk of
the gold article contains an evidence span that is longer than the biggest chunk overlap;
3 ``answer_elsewhere``: a chunk in the budget, ranked above the first evidence chunk and not
touching the evidence, holds the answer (case and whitespace folded); 4 ``wrong_article``: the
top 3 are all other articles; 5 ``lexical_mismatch``: BM25-term Jaccard of question and evidence
sentences < 0.1 and below the top chunk's best sentence's; 6 ``long_or_odd_annotation``: answer
over the budget, blank, or not the text at its offset; 7 ``other``."""

from __future__ import annotations

import argparse
import logging
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gralc.chunking.chunk import Chunk
from gralc.evaluation.evidence import budget_pieces, evidence_metrics, hit_spans, resolve_evidence

Span = tuple[int, int]
CAUSES = ("table_or_caption", "split_across_chunks", "answer_elsewhere", "wrong_article",
          "lexical_mismatch", "long_or_odd_annotation", "other")
#: question / evidence-sentence term Jaccard under which the wording counts as mismatched
LEXICAL_JACCARD = 0.1
#: a caption's opening label: Table 2:, Fig. 3., FIGURE 1 |, Figure S1 Text (not "Table 2 shows")
_CAPTION = re.compile(r"\s*(?i:supplementary\s+)?(?i:table|fig(?:ure)?\.?)\s*S?[\dIl]{1,3}[A-Za-z]?"
                      r"(?:\s*[.:|]|\s+(?=[A-Z(\[]))")
_NON_BODY_TITLE = re.compile(r"(?i)\b(tables?|fig(ures?)?|references?|bibliography)\b")
TEXT_CHARS = 300


def fold_text(text: str) -> str:
    """Case and whitespace folded, for verbatim answer matching.

    >>> fold_text("  Ten\\n DAYS ")
    'ten days'
    """
    return " ".join(text.lower().split())


def is_table_or_caption(paragraph: str, section_titles: Sequence[str] = ()) -> bool:
    """Whether evidence in ``paragraph`` (under ``section_titles``) sits in a table, a figure
    caption or a similar non-body block (module docstring, cause 1).

    >>> is_table_or_caption("Table 2: Deaths by country."), is_table_or_caption("Table 2 shows deaths.")
    (True, False)
    """
    if _CAPTION.match(paragraph) or any(_NON_BODY_TITLE.search(t) for t in section_titles):
        return True
    lines = [line for line in paragraph.split("\n") if line.strip()]
    return len(lines) >= 4 and sum(len(line.split()) <= 4 for line in lines) >= 0.75 * len(lines)


def biggest_overlap(chunk_spans: Sequence[Span]) -> int:
    """The most characters any two of one article's chunks share (0: a partition).

    >>> biggest_overlap([(0, 100), (80, 200), (150, 300)])
    50
    """
    spans = sorted(chunk_spans)
    return max((max(0, min(a[1], b[1]) - max(a[0], b[0])) for i, a in enumerate(spans)
                for b in spans[i + 1:]), default=0)


def split_across_chunks(evidence: Sequence[Span], chunk_spans: Sequence[Span]) -> bool:
    """Cause 2: some evidence span lies whole in no chunk of the gold article and is longer
    than the biggest overlap of its chunks (so no overlap setting could have kept it whole).

    >>> split_across_chunks([(90, 120)], [(0, 100), (100, 200)]), split_across_chunks([(10, 20)], [(0, 100)])
    (True, False)
    """
    big = biggest_overlap(chunk_spans)
    return bool(chunk_spans) and any(not any(cs <= s and e <= ce for cs, ce in chunk_spans) and e - s > big
               for s, e in evidence)


def answer_elsewhere(answer: str, gold_doc_id: str, evidence: Sequence[Span],
                     above: Sequence[tuple[str, Span, str]]) -> bool:
    """Cause 3: a chunk piece ranked above the first evidence chunk within the budget
    (``above``: ``(doc_id, span, text)``) holds the folded answer and does not touch the evidence.

    >>> answer_elsewhere("ten days", "d1", [(5, 13)], [("d2", (0, 30), "It lasts Ten  days.")])
    True
    """
    wanted = fold_text(answer)
    if not wanted:
        return False
    for doc_id, (s, e), text in above:
        touches = doc_id == gold_doc_id and any(min(e, ee) > max(s, es) for es, ee in evidence)
        if not touches and wanted in fold_text(text):
            return True
    return False


def wrong_article(gold_doc_id: str, top_doc_ids: Sequence[str]) -> bool:
    """Cause 4: every one of the top chunks (the top 3) is from another article.

    >>> wrong_article("d1", ["d2", "d3", "d2"]), wrong_article("d1", ["d2", "d1"])
    (True, False)
    """
    return bool(top_doc_ids) and all(d != gold_doc_id for d in top_doc_ids)


def jaccard(a: set[str], b: set[str]) -> float:
    """Jaccard similarity of two term sets (0 when both are empty).

    >>> jaccard({"a", "b"}, {"b", "c"})
    0.3333333333333333
    """
    return len(a & b) / len(a | b) if a | b else 0.0


def lexical_mismatch(question: set[str], evidence: set[str], top_sentences: Sequence[set[str]],
                     threshold: float = LEXICAL_JACCARD) -> bool:
    """Cause 5: the question's terms overlap the evidence sentences' under ``threshold``
    (Jaccard) and less than they overlap the top chunk's best sentence.

    >>> lexical_mismatch({"incub", "period"}, {"day", "five"}, [{"incub", "period", "long"}])
    True
    """
    ev = jaccard(question, evidence)
    return ev < threshold and max((jaccard(question, t) for t in top_sentences), default=0.0) > ev


def odd_annotation(answer: str, at_offset: str, answer_pieces: int, budget: int) -> bool:
    """Cause 6: the answer is longer than ``budget`` word-pieces, blank, or not (folded) the
    document text at its offset.

    >>> odd_annotation("5 days", "5  Days", 2, 512), odd_annotation(" ", " ", 0, 512)
    (False, True)
    """
    return answer_pieces > budget or not answer.strip() or fold_text(answer) != fold_text(at_offset)


@dataclass
class MissFacts:
    """What the cause heuristics read of one miss, as plain data (no model needed).

    Example: ``miss_cause(MissFacts("d1", [(5, 13)], "ten days", "ten days", 2, 512))`` -> ``'other'``.
    """

    gold_doc_id: str
    evidence: list[Span]
    answer: str
    at_offset: str
    answer_pieces: int
    budget: int
    paragraph: str = ""
    section_titles: list[str] = field(default_factory=list)
    gold_chunk_spans: list[Span] = field(default_factory=list)
    above: list[tuple[str, Span, str]] = field(default_factory=list)
    top_doc_ids: list[str] = field(default_factory=list)
    question_terms: set[str] = field(default_factory=set)
    evidence_terms: set[str] = field(default_factory=set)
    top_sentence_terms: list[set[str]] = field(default_factory=list)


def miss_cause(f: MissFacts) -> str:
    """The first cause of :data:`CAUSES` whose heuristic holds (module docstring).

    >>> miss_cause(MissFacts("d1", [(0, 8)], "ten days", "ten days", 2, 512, top_doc_ids=["d2"] * 3))
    'wrong_article'
    """
    checks = (is_table_or_caption(f.paragraph, f.section_titles),
              split_across_chunks(f.evidence, f.gold_chunk_spans),
              answer_elsewhere(f.answer, f.gold_doc_id, f.evidence, f.above),
              wrong_article(f.gold_doc_id, f.top_doc_ids),
              lexical_mismatch(f.question_terms, f.evidence_terms, f.top_sentence_terms),
              odd_annotation(f.answer, f.at_offset, f.answer_pieces, f.budget))
    return next((cause for cause, hit in zip(CAUSES, checks) if hit), "other")


def content_terms(texts: Sequence[str]) -> list[set[str]]:
    """Each text's BM25 terms (the index's tokeniser: lowercase, English stopwords out, stemmed).

    >>> sorted(content_terms(["The incubation periods of the virus"])[0])
    ['incub', 'period', 'virus']
    """
    from gralc.model.lexical import BM25Scorer

    tokens = BM25Scorer().tokenizer.tokenize(list(texts), update_vocab=True, return_as="string",
                                             show_progress=False)
    return [set(t) for t in tokens]


def section_path(doc, pos: int) -> list[dict[str, str]]:
    """Titles and types of the sections holding character ``pos``, outermost first (an untitled
    section is named by its type).

    >>> from gralc.documents.plaintext import document_from_text
    >>> section_path(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1"), 20)
    [{'title': 'Methods', 'type': 'methods'}]
    """
    path, level = [], doc.sections
    while True:
        inside = [s for s in level if s.start <= pos < s.end]
        if not inside:
            return path
        path.append({"title": inside[0].title or inside[0].imrad_type.title(), "type": inside[0].imrad_type})
        level = inside[0].subsections


def _within(doc, span: Span, paragraphs: bool = False) -> list[Span]:
    """Spans of the sentences (or paragraphs) of ``doc`` that overlap ``span``."""
    units = doc.paragraphs if paragraphs else [s for p in doc.paragraphs for s in p.sentences]
    return [(u.start, u.end) for u in units if min(u.end, span[1]) > max(u.start, span[0])]


def question_misses(test, chunks, ranked: list[list], settings, budget: int) -> tuple[list[dict], int]:
    """The misses of ``test``'s questions (``ranked``: each question's chunks, best first, at
    least ``settings.depth`` deep) and the number of questions with evidence.

    Example: ``question_misses(test, chunks, ranked, settings, 512)`` -> ``([{"question_id": ..., "cause":
    "wrong_article", ...}, ...], 126)``.
    """
    docs = {d.id: d for d in test.documents}
    by_doc: dict[str, list] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    cov, pieces = settings.evidence.min_coverage, settings.pieces
    misses, n = [], 0
    for q, run in zip(test.questions, ranked, strict=True):
        doc = docs[q.gold_doc_id]
        evidence = resolve_evidence(q, doc)
        if not evidence:
            continue
        n += 1
        cut = run[:settings.depth]
        if evidence_metrics(cut, q.gold_doc_id, evidence, ks=(1,), budgets=(budget,), piece_ends=pieces,
                            min_coverage=cov)[f"ev_recall@{budget}wp"] > 0:
            continue
        first = next((i for i, c in enumerate(run) if hit_spans(c, q.gold_doc_id, evidence, cov)), None)
        taken = budget_pieces(cut if first is None else cut[:first], budget, pieces)
        above = [(d, s, docs[d].text[s[0]:s[1]]) for d, s in taken]
        ev_span = evidence[0]
        answer = q.long_answer
        # the counter caches by (doc, chunk id, span): a chunk id per question
        answer_pieces = len(pieces(Chunk("", f"answer:{q.id}", answer, 0, len(answer)))) if answer else 0
        ev_sentences = _within(doc, ev_span)
        paragraph = "\n".join(doc.text[s:e] for s, e in _within(doc, ev_span, paragraphs=True))
        top = run[:3]
        top_doc = docs[top[0].doc_id] if top else doc
        top_sentences = _within(top_doc, (top[0].char_start, top[0].char_end)) if top else []
        terms = content_terms([q.text, " ".join(doc.text[s:e] for s, e in ev_sentences),
                               *(top_doc.text[s:e] for s, e in top_sentences)])
        path = section_path(doc, ev_span[0])
        facts = MissFacts(q.gold_doc_id, evidence, answer, doc.text[ev_span[0]:ev_span[1]], answer_pieces,
                          budget, paragraph, [p["title"] for p in path],
                          [(c.char_start, c.char_end) for c in by_doc.get(q.gold_doc_id, [])], above,
                          [c.doc_id for c in top], terms[0], terms[1], terms[2:])
        folded = fold_text(answer)
        misses.append({
            "question_id": q.id, "question": q.text, "gold_doc_id": q.gold_doc_id, "answer": answer,
            "answer_span": list(ev_span), "evidence_spans": [list(s) for s in evidence],
            "section_path": path, "cause": miss_cause(facts),
            "first_evidence": None if first is None else {"rank": first + 1, "chunk_id": run[first].chunk_id,
                                                          "text": run[first].text[:TEXT_CHARS]},
            "top": [{"rank": i + 1, "doc_id": c.doc_id, "chunk_id": c.chunk_id, "text": c.text[:TEXT_CHARS],
                     "in_gold_article": c.doc_id == q.gold_doc_id,
                     "has_answer": bool(folded) and folded in fold_text(c.text)} for i, c in enumerate(top)],
            "signals": {"question_evidence_jaccard": jaccard(terms[0], terms[1]),
                        "question_top_sentence_jaccard": max((jaccard(terms[0], t) for t in terms[2:]), default=0.0),
                        "biggest_chunk_overlap": biggest_overlap(facts.gold_chunk_spans),
                        "answer_pieces": answer_pieces},
        })
    return misses, n


def summary_of(folds: list[dict]) -> dict:
    """Counts of each cause over the folds' misses, their shares, and the totals.

    >>> summary_of([{"questions": 4, "misses": [{"cause": "other"}]}])["share"]["other"]
    1.0
    """
    counts = Counter(m["cause"] for f in folds for m in f["misses"])
    misses = sum(counts.values())
    return {"questions": sum(f["questions"] for f in folds), "misses": misses,
            "counts": {c: counts.get(c, 0) for c in CAUSES},
            "share": {c: counts.get(c, 0) / misses if misses else 0.0 for c in CAUSES}}


def _short(text: str, n: int) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= n else text[:n - 1] + "…"


def report(saved: dict) -> str:
    """Markdown of an ``error_analysis.json``: per cause its misses, share and two examples,
    then the counts.

    >>> print(report({"args": {"run": "r", "budget": 512}, "summary": summary_of([{"questions": 3,
    ...     "misses": [{"cause": "other", "question": "Why?", "answer": "Because."}]}]),
    ...     "folds": [{"fold": 0, "questions": 3, "misses": [{"cause": "other", "question": "Why?",
    ...     "answer": "Because."}]}]}).splitlines()[4])
    | other | 1 | 100 % | Why? → *Because.* |  |
    """
    a, s = saved["args"], saved["summary"]
    examples: dict[str, list[str]] = {}
    for f in saved["folds"]:
        for m in f["misses"]:
            examples.setdefault(m["cause"], []).append(f"{_short(m['question'], 100)} → *{_short(m['answer'], 60)}*")
    lines = [f"Misses (ev_recall@{a['budget']}wp = 0) of `{a['run']}`, git {saved.get('git_hash')}.", "",
             "| cause | misses | share | example 1 | example 2 |", "|---|---|---|---|---|"]
    for cause in CAUSES:
        if s["counts"].get(cause):
            ex = (examples.get(cause, []) + ["", ""])[:2]
            lines.append(f"| {cause} | {s['counts'][cause]} | {100 * s['share'][cause]:.0f} % | {ex[0]} | {ex[1]} |")
    per_fold = "; ".join(f"fold {f['fold']}: {len(f['misses'])} of {f['questions']}" for f in saved["folds"])
    lines += ["", f"{s['misses']} misses of {s['questions']} questions with evidence ({per_fold}); "
              + ", ".join(f"{c} {n}" for c, n in s["counts"].items()) + "."]
    return "\n".join(lines) + "\n"


def rankings_record(chunks: Sequence[Chunk], question_ids: Sequence[str],
                    runs: Sequence[Sequence[tuple[Chunk, float]]]) -> dict:
    """Each question's whole ranking as rows of ``chunks`` with their scores (5 decimals), the
    chunks as ``[doc id, chunk id, start, end]``: what an offline re-ranking of the model's own
    scores reads (an article-level stage, a fusion) without loading the model again.

    >>> c = [Chunk("d1", "d1::0", "x", 0, 5), Chunk("d2", "d2::0", "y", 0, 5)]
    >>> rankings_record(c, ["q1"], [[(c[1], 0.75), (c[0], 0.5)]])["questions"]
    [{'question_id': 'q1', 'rows': [1, 0], 'scores': [0.75, 0.5]}]
    """
    row = {c.chunk_id: i for i, c in enumerate(chunks)}
    return {"chunks": [[c.doc_id, c.chunk_id, c.char_start, c.char_end] for c in chunks],
            "questions": [{"question_id": q, "rows": [row[c.chunk_id] for c, _ in run],
                           "scores": [round(float(score), 5) for _, score in run]}
                          for q, run in zip(question_ids, runs)]}


def fold_misses(scorer, test, base_pipe, settings, budget: int, diverse: str = "off"
                ) -> tuple[list[dict], int, dict, dict]:
    """One fold: the model chunks every article (export settings already set), searches
    exhaustively and :func:`question_misses` reads the rankings; also the fold's
    ``exhaustive, float16`` row as ``gralc.experiments.two_stage_cv`` writes it (per-question
    metric values from the same chunks), so one scoring pass serves the paired verdicts too,
    and the rankings themselves (:func:`rankings_record`). ``diverse`` (not ``off``): the row is
    the search re-ranked for section coverage (``search.diverse=DIVERSE`` at the row's depth;
    the misses still read the plain ranking).

    Example: ``fold_misses(scorer, cv_side(bench, 5, 0, 0, "test"), pipe, settings, 512)`` -> ``(misses, 126, row, rankings)``.
    """
    from dataclasses import replace

    from gralc.evaluation.trained_rows import DIVERSE_ROW, PRODUCT, searchable, searched_rows
    from gralc.experiments.two_stage_cv import METRICS
    from gralc.pipeline import Pipeline, with_runtime
    from gralc.retrieval.trained.candidates import CandidateConfig
    from gralc.retrieval.trained.token_codec import TokenCodecConfig

    pipe = Pipeline(with_runtime(scorer.pipeline_config, base_pipe.config))
    prepared = pipe.prepare(test.documents, progress=False)
    scorer.token_codec = TokenCodecConfig(kind="float16")
    chunks = scorer.chunk(pipe, prepared)
    exhaustive = CandidateConfig(exhaustive=True)
    search = searchable(scorer, pipe, chunks, exhaustive)
    t0 = time.perf_counter()
    row_kind = PRODUCT if diverse == "off" else DIVERSE_ROW
    kept = [q for q in searched_rows(search, test, replace(settings, search=exhaustive), rows=(row_kind,),
                                     diverse="round_robin" if diverse == "off" else diverse)[0].per_query
            if "ev_mrr" in q]
    row = {"questions": {m: [float(q[m]) for q in kept] for m in METRICS},
           "articles": [q["gold_doc_id"] for q in kept], "question_ids": [q["question_id"] for q in kept],
           "ms_per_question": 1000 * (time.perf_counter() - t0) / max(1, len(test.questions)),
           "candidates_per_question": len(chunks), "n_chunks": len(chunks)}
    texts, runs = [q.text for q in test.questions], []
    for i in range(0, len(texts), 16):  # every chunk ranked (the first evidence chunk's rank), a batch at a time
        runs += [[(h.chunk, h.score) for h in run] for run in search.search_batch(texts[i:i + 16], len(chunks))]
    ranked = [[c for c, _ in run] for run in runs]
    settings.pieces.prime(chunks)
    rankings = rankings_record(chunks, [q.id for q in test.questions], runs)
    return (*question_misses(test, chunks, ranked, settings, budget), row, rankings)


def main(argv: list[str] | None = None) -> int:
    """The command line (``python -m gralc.experiments.error_analysis --help``): writes
    error_analysis.json; 0 on success.

    Example: ``main(["--report", "out/error_analysis.json"])`` -> ``0`` (prints the table).
    """
    from gralc.data.folds import cv_side
    from gralc.experiments.crossval import covidqa_setup, fold_run_arguments
    from gralc.experiments.inference_cv import selected_checkpoint
    from gralc.experiments.published import run_arguments
    from gralc.experiments.real_data import require_real_graph
    from gralc.experiments.two_stage_cv import with_export_settings
    from gralc.retrieval.trained.scorer import TrainedScorer
    from gralc.runinfo import run_metadata, write_json_atomic

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    fold_run_arguments(ap, "a gralc.experiments.crossval variant folder (fold0, ...)")
    ap.add_argument("--budget", type=int, default=512, help="word-piece budget of a hit (default 512)")
    ap.add_argument("--sentence-evidence", type=float, default=0.3)
    ap.add_argument("--late-interaction", type=float, default=0.8)
    ap.add_argument("--phrase-weight", type=float, default=0.05)
    ap.add_argument("--cut-unit", choices=["word", "sentence"], default="sentence")
    ap.add_argument("--diverse", choices=["off", "round_robin", "complete_tail"], default="off",
                    help="score the search re-ranked for section coverage (search.diverse=...) "
                         "instead of the plain ranking")
    run_arguments(ap, "error_analysis.json")
    args = ap.parse_args(argv)
    if args.report:
        return report_main(args.report, args.publish)
    if not args.out or not args.run:
        ap.error("--run and --out are required (or --report)")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    t0 = time.perf_counter()
    bench, base_pipe, _, settings = covidqa_setup(args.data, args.cache_dir)
    folds = []
    for k in args.train_folds:
        scorer = with_export_settings(TrainedScorer.load(selected_checkpoint(Path(args.run) / f"fold{k}")), args)
        require_real_graph(scorer.pipeline_config, f"gralc.experiments.error_analysis (fold {k} of {args.run})")
        test = cv_side(bench, args.folds, k, args.seed, "test")
        misses, n, row, rankings = fold_misses(scorer, test, base_pipe, settings, args.budget, args.diverse)
        write_json_atomic(Path(args.out) / f"rankings_fold{k}.json", rankings)
        folds.append({"fold": k, "questions": n, "misses": misses, "exhaustive, float16": row})
        print(f"fold {k}: {len(misses)} misses of {n} ({time.perf_counter() - t0:.0f} s)", flush=True)
    saved = run_metadata({"args": vars(args), "folds": folds, "summary": summary_of(folds),
                          "lexical_jaccard": LEXICAL_JACCARD, "seconds": time.perf_counter() - t0})
    write_json_atomic(Path(args.out) / "error_analysis.json", saved)
    print(report(saved))
    return 0


def report_main(path: Path, publish: str | None) -> int:
    """Print the table of a saved ``error_analysis.json`` (``publish``: also save it as
    docs/results/NAME.json); 0.

    Example: ``report_main(Path("out/error_analysis.json"), None)`` -> ``0`` (prints the table).
    """
    from gralc.experiments.published import print_report

    return print_report(path, publish, report)


if __name__ == "__main__":
    raise SystemExit(main())
