"""An article-level stage screened on the trained model's own rankings (issue 57's targeted
design for the misses whose top 3 chunks are all from other articles):

    python -m gralc.experiments.article_stage --rankings EA_DIR --out DIR [--publish NAME]

``EA_DIR`` is a ``gralc.experiments.error_analysis`` output: its ``rankings_foldK.json`` hold
every held-out question's whole exhaustive ranking with the model's scores. A chunk's score s
becomes ``s + w * a(article)``, ``a`` one of :data:`AGGREGATORS` (the article's best chunk,
mean of its best three, a soft maximum over its chunks, BM25 of the question over the whole
article text scaled to the question's best article) and ``w`` from :data:`WEIGHTS`. No model
is loaded: evidence metrics come from the same function and word-piece counter as the
harness, and the base ranking (w = 0) is checked to reproduce the error analysis's own
per-question values. Per held-out fold, (aggregator, w) is chosen on the other folds'
questions (mean of ev R@512wp and ev MRR), so the reported gain is cross-validated; gains are
paired by question with a bootstrap over articles. Writes ``DIR/article_stage.json``."""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from gralc.chunking.chunk import Chunk

#: the grid of article-score weights (w = 0 is the model's own ranking)
WEIGHTS = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
#: soft maximum temperature of the ``softmax`` aggregator (scores are cosines-scale mixes)
SOFT_TEMPERATURE = 0.05
BASE = "model's own ranking"


def _top_mean(scores: list[float], n: int = 3) -> float:
    return statistics.fmean(sorted(scores, reverse=True)[:n])


def _soft_max(scores: list[float]) -> float:
    top = max(scores)
    return top + SOFT_TEMPERATURE * math.log(sum(math.exp((s - top) / SOFT_TEMPERATURE) for s in scores))


#: article score from its chunks' scores (``bm25`` is computed from the article text instead)
AGGREGATORS: dict[str, Callable[[list[float]], float]] = {"max": max, "top3": _top_mean,
                                                          "softmax": _soft_max}


def rerank(run: Sequence[tuple[Chunk, float]], bonus: dict[str, float], w: float) -> list[tuple[Chunk, float]]:
    """``run`` re-ranked by ``score + w * bonus[...]``, ``bonus`` keyed by a chunk's id, else
    its article's (stable: ties keep the model's order).

    >>> a, b = Chunk("d1", "d1::0", "x", 0, 1), Chunk("d2", "d2::0", "y", 0, 1)
    >>> [c.chunk_id for c, _ in rerank([(a, 0.5), (b, 0.4)], {"d1": 0.0, "d2": 1.0}, 0.2)]
    ['d2::0', 'd1::0']
    """
    scored = [(c, s + w * bonus.get(c.chunk_id, bonus.get(c.doc_id, 0.0))) for c, s in run]
    return sorted(scored, key=lambda cs: -cs[1])


def chunk_aggregates(run: Sequence[tuple[Chunk, float]]) -> dict[str, dict[str, float]]:
    """``{aggregator: {doc id: article score}}`` from one question's chunk scores.

    >>> a, b = Chunk("d1", "d1::0", "x", 0, 1), Chunk("d1", "d1::1", "y", 1, 2)
    >>> chunk_aggregates([(a, 0.5), (b, 0.1)])["max"]
    {'d1': 0.5}
    """
    by_doc: dict[str, list[float]] = {}
    for c, s in run:
        by_doc.setdefault(c.doc_id, []).append(s)
    return {name: {d: fn(v) for d, v in by_doc.items()} for name, fn in AGGREGATORS.items()}


def article_bm25(documents, questions) -> list[dict[str, float]]:
    """Per question, BM25 of its text over each whole article, divided by its best article's
    (0 where no article shares a term)."""
    from gralc.retrieval.indexes.bm25 import BM25Index

    index = BM25Index()
    index.index([Chunk(d.id, d.id, d.text, 0, len(d.text)) for d in documents])
    out = []
    for hits in index.search([q.text for q in questions], len(documents)):
        top = max((s for _, s in hits), default=0.0)
        out.append({c.doc_id: (s / top if top > 0 else 0.0) for c, s in hits})
    return out


def article_terms(test, table: list[Chunk]) -> Callable[[int, list], dict[str, dict[str, float]]]:
    """The article stage's terms: for question i and its run, ``{aggregator: {doc id: score}}``
    (:func:`chunk_aggregates`) and ``bm25`` (:func:`article_bm25`)."""
    bm25 = article_bm25(test.documents, test.questions)
    return lambda i, run: {**chunk_aggregates(run), "bm25": bm25[i]}


def fold_metrics(test, rankings: dict, settings, variants: dict,
                 terms: Callable = article_terms) -> dict[str, dict]:
    """Per variant (name -> ``(term, w)``, ``(None, 0)`` the model's own ranking), the fold's
    per-question ev metrics in the two_stage_cv row layout (``questions``: metric -> values,
    ``articles``). ``terms(test, chunk table)`` gives the per-question score terms
    (``{term: {chunk or doc id: value}}``), :func:`article_terms` by default."""
    from gralc.evaluation.evidence import evidence_metrics, resolve_evidence
    from gralc.experiments.paired_runs import METRICS

    docs = {d.id: d for d in test.documents}
    table = [Chunk(d, cid, docs[d].text[s:e], s, e) for d, cid, s, e in rankings["chunks"]]
    settings.pieces.prime(table)
    saved = {q["question_id"]: q for q in rankings["questions"]}
    term_of = terms(test, table)
    out = {name: {"questions": {m: [] for m in METRICS}, "articles": [], "question_ids": []} for name in variants}
    for i, q in enumerate(test.questions):
        spans = resolve_evidence(q, docs[q.gold_doc_id])
        if not spans:
            continue
        rec = saved[q.id]
        run = [(table[r], s) for r, s in zip(rec["rows"], rec["scores"])]
        values = term_of(i, run)
        for name, (term, w) in variants.items():
            ranked = run if term is None else rerank(run, values[term], w)
            ev = evidence_metrics(ranked[:settings.depth], q.gold_doc_id, spans, settings.ks,
                                  settings.evidence.budgets, settings.pieces,
                                  min_coverage=settings.evidence.min_coverage)
            within = [c for c in ranked if c[0].doc_id == q.gold_doc_id]
            ev["wa_ndcg@10"] = evidence_metrics(within, q.gold_doc_id, spans, (1,), (),
                                                min_coverage=settings.evidence.min_coverage)["ev_ndcg@10"]
            for m in METRICS:
                out[name]["questions"][m].append(float(ev[m]))
            out[name]["articles"].append(q.gold_doc_id)
            out[name]["question_ids"].append(q.id)
    return out


def objective(row: dict) -> float:
    """What a variant is chosen by: the mean of ev R@512wp and ev MRR over ``row``'s questions."""
    q = row["questions"]
    return (sum(q["ev_recall@512wp"]) + sum(q["ev_mrr"])) / (2 * max(1, len(q["ev_mrr"])))


def choose(folds: list[dict[str, dict]], held_out: int) -> str:
    """The variant with the best :func:`objective` over every fold but ``held_out`` (pooled
    questions; ties keep the earlier variant, the base first)."""
    def pooled(name):
        rows = [f[name] for k, f in enumerate(folds) if k != held_out]
        n = sum(len(r["questions"]["ev_mrr"]) for r in rows)
        return sum(objective(r) * len(r["questions"]["ev_mrr"]) for r in rows) / max(1, n)

    names = list(folds[0])
    return max(names, key=lambda name: (pooled(name), -names.index(name)))


def report(saved: dict) -> str:
    """Markdown: the cross-validated choice per fold, its gain over the model's own ranking,
    and each fixed variant's pooled means."""
    from gralc.experiments.paired_runs import BAR_METRICS

    cv = saved["cross_validated"]
    lines = [f"{saved.get('design', 'An article-level stage')} over the trained model's own exhaustive rankings "
             f"(`{saved['args']['rankings']}`, five COVID-QA dev folds, "
             f"{saved['questions']} held-out questions); git {saved.get('git_hash')}. Base = the "
             f"model's ranking, reproduced (max abs difference to the error analysis's values: "
             f"{saved['base_check']:.2g}).", "",
             f"Chosen per held-out fold on the other four: {', '.join(cv['chosen'])}.", "",
             "| | " + " | ".join(BAR_METRICS) + " |", "|---|" + "---|" * len(BAR_METRICS),
             "| model's own ranking | " + " | ".join(f"{saved['means'][BASE][m]:.4f}" for m in BAR_METRICS) + " |",
             f"| {saved.get('design_short', 'article stage')}, chosen by CV | " + " | ".join(f"{cv['means'][m]:.4f}" for m in BAR_METRICS) + " |",
             "| gain [95 % CI] | " + " | ".join(
                 f"{g['gain']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}]" for g in (cv["gain"][m] for m in BAR_METRICS))
             + " |", "", "Every fixed variant, five-fold means (not a verdict: chosen with hindsight):", "",
             "| variant | " + " | ".join(BAR_METRICS) + " |", "|---|" + "---|" * len(BAR_METRICS)]
    for name, m in saved["means"].items():
        lines.append(f"| {name} | " + " | ".join(f"{m[k]:.4f}" for k in BAR_METRICS) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """The command line (``--help``); writes ``--out/article_stage.json``; 0 on success, 2 when
    the rankings are missing or do not match the data."""
    variants = {f"{a} w={w}": (a, w) for a in (*AGGREGATORS, "bm25") for w in WEIGHTS}
    return screen(argv, __doc__, variants, lambda args: article_terms, "article_stage.json",
                  ("An article-level stage", "article stage"))


def screen(argv, doc: str, variants: dict, make_terms: Callable, filename: str,
           design: tuple[str, str], extra: Sequence[tuple[str, str]] = ()) -> int:
    """A screen's command line: ``variants`` (name -> ``(term, w)``) and the model's own
    ranking on every fold's saved rankings, per-fold choice on the other folds, gains paired;
    ``make_terms(args)`` gives :func:`fold_metrics`'s ``terms`` (after the arguments are
    parsed and the rankings found, so a design may load what it needs; a FileNotFoundError
    there exits 2 with its message); ``extra``: more ``(--flag, help)`` arguments. Writes
    ``--out/filename``.

    Example: ``screen(["--rankings", "EA", "--out", "o"], __doc__, {"bm25 w=0.1": ("bm25", 0.1)},
    lambda args: article_terms, "a.json", ("Article BM25", "bm25"))`` -> ``0``."""
    from gralc.data.benchmarks import squad_benchmark
    from gralc.data.folds import cv_side
    from gralc.encoding.budget import budget_counter
    from gralc.evaluation.methods import RunSettings
    from gralc.experiments.crossval import DEFAULT_DATA
    from gralc.experiments.paired_runs import gain, means
    from gralc.experiments.published import finish_result, report_arguments
    from gralc.runinfo import run_metadata
    from gralc.safe_load import read_json_untrusted

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--rankings", help="a gralc.experiments.error_analysis output folder")
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help=f"folder for {filename}")
    for flag, help_ in extra:
        ap.add_argument(flag, help=help_)
    report_arguments(ap, filename)
    args = ap.parse_args(argv)
    if args.report:
        from gralc.experiments.published import print_report

        return print_report(args.report, args.publish, report)
    if not args.rankings or not args.out:
        ap.error("--rankings and --out are required (or --report)")
    t0 = time.perf_counter()
    folder = Path(args.rankings)
    paths = [folder / f"rankings_fold{k}.json" for k in range(args.folds)]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        ap.exit(2, f"error: --rankings: no {', '.join(missing)} (run gralc.experiments.error_analysis "
                   "--out there first)\n")
    reference = read_json_untrusted(folder / "error_analysis.json", "error analysis", allow_interpolation=True,
                                    expect=dict)
    bench = squad_benchmark(args.data)
    settings = RunSettings((1, 5, 10, 20), pieces=budget_counter())
    variants = {BASE: (None, 0.0), **variants}
    try:
        terms = make_terms(args)
    except FileNotFoundError as exc:
        ap.exit(2, f"error: {exc}\n")
    folds, check = [], 0.0
    for k, path in enumerate(paths):
        rankings = read_json_untrusted(path, "rankings", allow_interpolation=True, expect=dict)
        test = cv_side(bench, args.folds, k, args.seed, "test")
        try:
            rows = fold_metrics(test, rankings, settings, variants, terms)
        except KeyError as exc:
            ap.exit(2, f"error: {path}: question or chunk {exc} not in its rankings: score it with the same "
                       "--data, --folds and --seed\n")
        ref = reference["folds"][k]["exhaustive, float16"]["questions"]
        check = max(check, *(abs(a - b) for m in ("ev_recall@512wp", "ev_mrr")
                             for a, b in zip(rows[BASE]["questions"][m], ref[m], strict=True)))
        folds.append(rows)
        print(f"fold {k}: {len(rows[BASE]['articles'])} questions ({time.perf_counter() - t0:.0f} s)", flush=True)
    chosen = [choose(folds, k) for k in range(len(folds))]
    picked = [f[name] for f, name in zip(folds, chosen)]
    base = [f[BASE] for f in folds]
    saved = run_metadata({
        "args": vars(args), "questions": sum(len(b["articles"]) for b in base), "base_check": check,
        "means": {name: means([f[name] for f in folds]) for name in variants},
        "cross_validated": {"chosen": chosen, "means": means(picked), "gain": gain(picked, base)},
        "folds": [{BASE: f[BASE], f"{design[1]} (CV)": p} for f, p in zip(folds, picked)],
        "design": design[0], "design_short": design[1], "seconds": time.perf_counter() - t0})
    return finish_result(saved, args.out, filename, args.publish, report)


if __name__ == "__main__":
    raise SystemExit(main())
