"""Late interaction (``scoring.late_interaction``) on COVID-QA, by cross-validation by article.

    python -m gralc.experiments.inference_cv --run results/cv_rec01/lora_lexical_small \\
        --train-folds 0 1 --sentence-evidence 0.3

For each fold of an earlier ``gralc.experiments.crossval`` run (``--run``), the fold's
untrained and selected models score every chunk as the ``gralc`` row does, with sentence
evidence W, then mixed with MaxSim at each ``--weights`` m (:mod:`gralc.model.late_interaction`);
the ``m=cv`` rows choose m on each fold's dev split. Under the table, each trained row's gain
over the untrained one with a paired bootstrap interval; ``late_interaction.json`` keeps every
held-out question's values. ``--phrase-weight`` and ``--cut-unit`` set the export settings,
``--untrained RUN`` serves refit runs, ``--seed-mean RUN ...`` and ``--pool RUN ...`` only
tabulate earlier runs: docs/experiments.md.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from gralc.data.folds import cv_side
from gralc.evaluation.evidence import evidence_metrics, resolve_evidence
from gralc.evaluation.metrics import reciprocal_rank
from gralc.evaluation.significance import FoldPairs, paired_gain
from gralc.evaluation.trained_rows import searchable
from gralc.experiments.crossval import covidqa_setup, dev_side, fold_run_arguments
from gralc.experiments.published import print_report, report_arguments
from gralc.experiments.real_data import require_real_graph
from gralc.model.hybrid_scorer import normalise_lexical
from gralc.pipeline import Pipeline, with_runtime
from gralc.retrieval.ranking import rank_order
from gralc.retrieval.trained.candidates import CandidateConfig
from gralc.retrieval.trained.scorer import TrainedScorer
from gralc.retrieval.trained.token_codec import TokenCodecConfig
from gralc.runinfo import run_metadata, write_json_atomic
from gralc.safe_load import read_json_untrusted

GAIN_METRICS = ("ev_recall@512wp", "ev_mrr")  # the metrics of #14's bars
METRICS = ("ev_recall@256wp", "ev_recall@512wp", "ev_recall@1024wp", "ev_mrr", "ev_recall@5",
           "wa_ndcg@10", "mrr")


def scored(scorer: TrainedScorer, bench, base_pipe: Pipeline, weight: float, phrase_weight: float = 0.0,
           cut_unit: str | None = None):
    """``(chunks, model scores (Q, K) without late interaction, MaxSim (Q, K), g * normalised
    term-pair BM25 (Q, K))`` of every question of ``bench`` against its documents, sentence
    evidence ``weight``, from the product's search with every chunk a candidate
    (:meth:`~gralc.retrieval.trained.search.TrainedSearch.scores`, exact float16 tokens). With
    ``phrase_weight`` g the product adds the term-pair BM25 after the late interaction mix
    (:meth:`GraLCModel.score_parts`), so a row's score is ``(1 - m) * scores + m * MaxSim + g
    * phrase``, the three returned to mix. ``cut_unit``: the model's hard cuts at ``word`` or
    ``sentence`` starts (default: as trained)."""
    if cut_unit is not None:
        scorer.model.boundary_config = replace(scorer.model.boundary_config, cut_unit=cut_unit)
    # chunked with the late interaction and term pairs on: the chunks' tokens, the term-pair BM25
    scorer.model.set_scoring({"sentence_evidence": weight, "late_interaction": 0.5,
                              "phrase_weight": phrase_weight})
    scorer.token_codec = TokenCodecConfig(kind="float16")  # the exact token vectors
    pipe = Pipeline(with_runtime(scorer.pipeline_config, base_pipe.config))
    chunks = scorer.chunk(pipe, pipe.prepare(bench.documents, progress=False))
    search = searchable(scorer, pipe, chunks, CandidateConfig(exhaustive=True))
    texts = [q.text for q in bench.questions]
    mixed_q = search.encode(texts)
    mixed = search.scores(mixed_q)
    scorer.model.set_scoring({"late_interaction": 0.0, "phrase_weight": 0.0})
    graph = search.scores(search.encode(texts)).score
    phrase = torch.zeros_like(graph)
    if phrase_weight:
        phrase = phrase_weight * normalise_lexical(torch.as_tensor(np.asarray(mixed_q.inputs.phrase))).to(graph.dtype)
    # the product's score is this mix
    assert torch.allclose(mixed.score, 0.5 * graph + 0.5 * mixed.late + phrase, atol=1e-5), "mix differs"
    return chunks, graph.numpy(), mixed.late.numpy(), phrase.numpy()


def means(bench, chunks, score: np.ndarray, settings) -> dict[str, float]:
    """Evidence metrics of the ranking by ``score`` (Q, K), averaged over the questions."""
    return {m: statistics.fmean(v) for m, v in per_question(bench, chunks, score, settings).items()}


def per_question(bench, chunks, score: np.ndarray, settings) -> dict[str, list[float]]:
    """Evidence metrics of the ranking by ``score`` (Q, K): per metric, one value per question."""
    docs = {d.id: d for d in bench.documents}
    doc_of = np.array([c.doc_id for c in chunks])
    rows = []
    for i, q in enumerate(bench.questions):
        run = [chunks[j] for j in rank_order(chunks, score[i], settings.depth)]
        own = np.flatnonzero(doc_of == q.gold_doc_id)
        within = [chunks[own[j]] for j in rank_order([chunks[j] for j in own], score[i][own], 10)]
        m = evidence_metrics(run, q.gold_doc_id, resolve_evidence(q, docs[q.gold_doc_id]),
                             ks=(5,), budgets=(256, 512, 1024), piece_ends=settings.pieces,
                             within_article=within)
        m["mrr"] = reciprocal_rank([c.doc_id for c in run], q.gold_doc_id)
        rows.append(m)
    return {m: [float(r[m]) for r in rows] for m in METRICS}


def is_refit(folder: Path) -> bool:
    """The fold was trained without a dev split (``result.json``: ``selected`` = "last")."""

    result = folder / "result.json"
    return result.is_file() and read_json_untrusted(result, allow_interpolation=True).get("selected") == "last"


def selected_checkpoint(folder: Path) -> Path:
    """The fold's model as ``gralc.experiments.crossval`` selected it (``result.json``: the best trained
    epoch, or ``initial.ckpt`` where no trained epoch beat it on dev), so the ``trained`` rows
    follow the protocol's selection inside the training folds; a folder without ``result.json``,
    e.g. one ``gralc.experiments.average_folds`` wrote, holds its one model as ``checkpoints/best-*.ckpt``)."""
    from gralc.training.run_folder import run_selected_checkpoint

    if (folder / "result.json").is_file():
        try:
            return run_selected_checkpoint(folder)
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    best = sorted((folder / "checkpoints").glob("best-*.ckpt"))
    if not best:
        raise SystemExit(f"{folder}: no trained fold model (checkpoints/best-*.ckpt); --run must be "
                         "a gralc.experiments.crossval --train variant folder holding the folds asked for")
    return best[-1]


def follow_selection(run: str, folds: list[int], rows: dict[str, list[dict]]) -> None:
    """In ``rows`` (one entry per fold of ``folds``), the ``trained`` rows of every fold whose
    selection kept the initial model become that fold's ``untrained`` rows."""
    for i, k in enumerate(folds):
        if selected_checkpoint(Path(run) / f"fold{k}").name == "initial.ckpt":
            for name in [n for n in rows if n.startswith("trained ")]:
                rows[name][i] = rows["un" + name][i]


def print_table(table: dict[str, list[dict]]) -> None:
    """Markdown table: per row, mean ± std over its folds of every metric, and the m chosen."""
    print("| row | " + " | ".join(METRICS) + " | m chosen on dev |")
    print("|---|" + "---|" * (len(METRICS) + 1))
    for name, folds in table.items():
        vals = [[f[m] for f in folds] for m in METRICS]
        cells = [f"{statistics.fmean(v):.3f} ± {statistics.pstdev(v):.3f}" if len(v) > 1
                 else f"{v[0]:.4f}" for v in vals]
        chosen = [f["chosen"] for f in folds if "chosen" in f]
        print(f"| {name} | " + " | ".join(cells) + f" | {chosen or ''} |")


def print_gains(questions: dict[str, list[dict[str, list[float]]]], articles: list[list[str]],
                metrics: tuple[str, ...] = GAIN_METRICS) -> dict[str, dict[str, dict]]:
    """Markdown table: each ``trained`` row's gain over the ``untrained`` row of the same m, in
    the bars' ``metrics``, with a 95 % interval from a paired bootstrap over the held-out
    articles (:func:`gralc.evaluation.significance.paired_gain`); returns the gains."""
    gains: dict[str, dict[str, dict]] = {}
    print("\n| trained over untrained | " + " | ".join(
        f"{m} gain [95 % CI] (share <= 0)" for m in metrics) + " |")
    print("|---|" + "---|" * len(metrics))
    for name in [n for n in questions if n.startswith("trained ") and "un" + n in questions]:
        cells = []
        for metric in metrics:
            folds = [FoldPairs(a=t[metric], b=u[metric], clusters=arts) for t, u, arts in
                     zip(questions[name], questions["un" + name], articles, strict=True)]
            got = paired_gain(folds)
            gains.setdefault(name, {})[metric] = got.as_dict()
            cells.append(f"{got.gain:+.3f} [{got.low:+.3f}, {got.high:+.3f}] ({got.share_not_above:.4f})")
        print(f"| {name[len('trained '):]} | " + " | ".join(cells) + " |")
    return gains


def pool(runs: list[str]) -> int:
    """Print one table over the folds of every RUN's ``late_interaction.json``."""

    table: dict[str, list[dict]] = {}
    questions: dict[str, list[dict]] = {}
    articles: list[list[str]] = []
    folds: list[int] = []
    for run in runs:
        path = Path(run) / "late_interaction.json"
        if not path.is_file():
            raise SystemExit(f"--pool {run}: no {path} (run gralc.experiments.inference_cv --run {run} first)")
        saved = read_json_untrusted(path, allow_interpolation=True)
        overlap = sorted(set(folds) & set(saved["args"]["train_folds"]))
        if overlap:
            raise SystemExit(f"--pool {run}: fold(s) {overlap} already pooled from another run")
        follow_selection(run, saved["args"]["train_folds"], saved["rows"])
        folds += saved["args"]["train_folds"]
        for name, rows in saved["rows"].items():
            table.setdefault(name, []).extend(rows)
        if "questions" in saved:  # per-question values (runs since 2026-11-26): gains too
            follow_selection(run, saved["args"]["train_folds"], saved["questions"])
            articles += saved["articles"]
            for name, rows in saved["questions"].items():
                questions.setdefault(name, []).extend(rows)
    n = {len(v) for v in table.values()}
    if len(n) != 1:
        raise SystemExit(f"--pool: the runs do not share their rows (fold counts {sorted(n)}); "
                         "pool runs made with the same --weights")
    print(f"\n# pooled: folds {sorted(folds)} from {', '.join(runs)}\n")
    print_table(table)
    if questions and {len(v) for v in questions.values()} == {len(folds)}:
        print_gains(questions, articles)
    return 0


def report(saved: dict, metrics: tuple[str, ...] = ("ev_recall@512wp", "ev_mrr", "wa_ndcg@10")) -> str:
    """The generated table of a ``late_interaction.json``: each row's mean over the folds, the
    weight m each fold's dev split chose (``m=cv`` rows), and each trained row's gain over the
    untrained one.

    >>> print(report({"args": {"run": "RUN", "sentence_evidence": 0.3, "train_folds": [0]},
    ...               "rows": {"trained m=cv": [{"ev_mrr": 0.5, "chosen": 0.8}]}, "gains": {}}, ("ev_mrr",)))
    COVID-QA dev, folds [0] by article; sentence evidence W=0.3; models: `RUN` (`python -m gralc.experiments.inference_cv`, git None).
    <BLANKLINE>
    | row | ev_mrr | m chosen on dev, by fold |
    |---|---|---|
    | trained m=cv | 0.5000 | 0.8 |
    """
    a = saved.get("args", {})
    lines = [f"COVID-QA dev, folds {a.get('train_folds')} by article; sentence evidence W={a.get('sentence_evidence')}; "
             f"models: `{a.get('run')}` (`python -m gralc.experiments.inference_cv`, git {saved.get('git_hash')}).",
             "", "| row | " + " | ".join(metrics) + " | m chosen on dev, by fold |",
             "|---|" + "---|" * (len(metrics) + 1)]
    for name, folds in saved["rows"].items():
        cells = [f"{statistics.fmean(f[m] for f in folds):.4f}" if all(m in f for f in folds) else "" for m in metrics]
        chosen = ", ".join(f"{f['chosen']:g}" for f in folds if "chosen" in f)
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {chosen} |")
    gains = saved.get("gains") or {}
    if gains:
        lines += ["", "| trained over untrained | metric | gain [95 % CI] |", "|---|---|---|"]
        for name, per in gains.items():
            for m, g in per.items():
                if isinstance(g, dict) and "gain" in g:
                    lines.append(f"| {name} | {m} | {g['gain']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}] |")
    return "\n".join(lines)


def seed_mean(runs: list[str], metrics: tuple[str, ...] = ("ev_recall@512wp", "ev_mrr", "wa_ndcg@10")) -> dict:
    """One recipe trained under several seeds, each RUN's ``late_interaction.json`` scored on
    the same folds: per row, the five-fold mean of each seed, their mean and spread; then each
    trained row's gain over the untrained row of the same m with every question's values
    averaged over the seeds first (the recipe's expected gain, not one draw's), the interval
    from the same paired bootstrap over held-out articles. Returns the gains."""

    saved = []
    for run in runs:
        path = Path(run) / "late_interaction.json"
        if not path.is_file() or "questions" not in (got := read_json_untrusted(path, allow_interpolation=True)):
            raise SystemExit(f"--seed-mean {run}: no {path} with per-question values "
                             f"(run gralc.experiments.inference_cv --run ... --out {run} first)")
        saved.append(got)
    first = saved[0]
    for run, got in zip(runs[1:], saved[1:]):
        if got["articles"] != first["articles"] or set(got["questions"]) != set(first["questions"]):
            raise SystemExit(f"--seed-mean {run}: other folds, questions or rows than {runs[0]}; "
                             "average runs scored with the same folds and --weights")
    print(f"\n# {len(runs)} seeds: {', '.join(runs)}\n")
    print("| row | " + " | ".join(f"{m} mean ± std over seeds (each seed)" for m in metrics) + " |")
    print("|---|" + "---|" * len(metrics))
    for name in first["rows"]:
        cells = []
        for m in metrics:
            each = [statistics.fmean(f[m] for f in got["rows"][name]) for got in saved]
            spread = statistics.stdev(each) if len(each) > 1 else 0.0
            cells.append(f"{statistics.fmean(each):.3f} ± {spread:.3f} ("
                         + ", ".join(f"{v:.3f}" for v in each) + ")")
        print(f"| {name} | " + " | ".join(cells) + " |")
    averaged = {name: [{m: list(np.mean([got["questions"][name][i][m] for got in saved], axis=0))
                        for m in fold} for i, fold in enumerate(rows)]
                for name, rows in first["questions"].items()}
    print("\nGain with each question's values averaged over the seeds:")
    return print_gains(averaged, first["articles"])


def main(argv: list[str] | None = None) -> int:
    """The command line (``python -m gralc.experiments.inference_cv --help``): writes late_interaction.json; 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    fold_run_arguments(ap, "a gralc.experiments.crossval variant folder (fold0, ...)")
    ap.add_argument("--pool", nargs="+", metavar="RUN",
                    help="only print one table over these runs' late_interaction.json")
    ap.add_argument("--seed-mean", nargs="+", metavar="RUN",
                    help="only print the mean over seeds of these runs' late_interaction.json "
                         "(one recipe under several seeds, same folds) and the seed-averaged gains")
    ap.add_argument("--sentence-evidence", type=float, default=0.3)
    ap.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.2, 0.4, 0.6, 0.8])
    ap.add_argument("--phrase-weight", type=float, default=0.0, metavar="G",
                    help="add G x the term-pair BM25 (model.phrase_weight) to every row's score")
    ap.add_argument("--cut-unit", choices=["word", "sentence"], default=None,
                    help="the models' hard cuts at word or sentence starts (default: as trained)")
    ap.add_argument("--untrained", default=None, metavar="RUN",
                    help="take each fold's untrained model (initial.ckpt) from this run's folder "
                         "instead of --run's (required for a refit run, which has none)")
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--out", default=None, help="folder for late_interaction.json (default: --run)")
    report_arguments(ap, "late_interaction.json")
    args = ap.parse_args(argv)
    if args.report:
        return print_report(args.report, args.publish, report)
    if args.pool:
        return pool(args.pool)
    if args.seed_mean:
        seed_mean(args.seed_mean)
        return 0
    if not args.run:
        ap.error("--run (or --pool) is required")
    if 0.0 not in args.weights or any(not 0 <= m < 1 for m in args.weights):
        ap.error(f"--weights {args.weights}: each in [0, 1), 0 included (the row without it)")
    untrained = Path(args.untrained or args.run)
    missing = [str(Path(args.run) / f"fold{k}") for k in args.train_folds
               if not list((Path(args.run) / f"fold{k}" / "checkpoints").glob("best-*.ckpt"))]
    missing += [str(p) for k in args.train_folds
                for p in [untrained / f"fold{k}" / "initial.ckpt"] if not p.is_file()]
    if missing:
        ap.error(f"no finished fold at {', '.join(missing)} (--run: checkpoints/best-*.ckpt; "
                 "--untrained, default --run: initial.ckpt): run gralc.experiments.crossval --train first")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    t0 = time.perf_counter()
    bench, base_pipe, _, settings = covidqa_setup(args.data, args.cache_dir)
    table: dict[str, list[dict]] = {}
    questions: dict[str, list[dict[str, list[float]]]] = {}  # row -> per fold, metric -> (Q,)
    articles: list[list[str]] = []  # per fold, each held-out question's article
    for k in args.train_folds:
        folder = Path(args.run) / f"fold{k}"
        best = selected_checkpoint(folder)
        side = cv_side(bench, args.folds, k, args.seed, "train")
        dev = dev_side(side, side.documents, "lora_lexical_small", [])
        test = cv_side(bench, args.folds, k, args.seed, "test")
        articles.append([q.gold_doc_id for q in test.questions])
        refit = is_refit(folder)
        for tag, ckpt in (("untrained", untrained / f"fold{k}" / "initial.ckpt"), ("trained", best)):
            scorer = TrainedScorer.load(ckpt)
            require_real_graph(scorer.pipeline_config, f"gralc.experiments.inference_cv ({ckpt})")
            terms = (args.sentence_evidence, args.phrase_weight, args.cut_unit)
            choose = not (refit and tag == "trained")  # a refit trained on its dev articles
            if choose:
                chunks, graph, late, phrase = scored(scorer, dev, base_pipe, *terms)
                dev_mrr = {m: means(dev, chunks, (1 - m) * graph + m * late + phrase,
                                    settings)["ev_mrr"] for m in args.weights}
                chosen = max(sorted(dev_mrr), key=lambda m: dev_mrr[m])  # ties: the smaller
            chunks, graph, late, phrase = scored(scorer, test, base_pipe, *terms)
            for m in args.weights:
                values = per_question(test, chunks, (1 - m) * graph + m * late + phrase, settings)
                table.setdefault(f"{tag} m={m:g}", []).append(
                    {name: statistics.fmean(v) for name, v in values.items()})
                questions.setdefault(f"{tag} m={m:g}", []).append(values)
            if not choose:
                print(f"fold {k} {tag}: a refit (no dev split), no m chosen "
                      f"({time.perf_counter() - t0:.0f} s)", flush=True)
                continue
            table.setdefault(f"{tag} m=cv", []).append(
                {**table[f"{tag} m={chosen:g}"][-1], "chosen": chosen})
            questions.setdefault(f"{tag} m=cv", []).append(questions[f"{tag} m={chosen:g}"][-1])
            print(f"fold {k} {tag}: dev ev MRR {({f'{m:g}': round(v, 4) for m, v in dev_mrr.items()})}"
                  f", chosen m={chosen:g} ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"\n# COVID-QA dev, folds {args.train_folds} of {args.folds} by article (seed {args.seed}); "
          f"sentence evidence W={args.sentence_evidence:g}, term-pair BM25 g={args.phrase_weight:g}, cuts at "
          f"{args.cut_unit or 'the trained'} starts; models: {args.run}\n")
    print_table(table)
    gains = print_gains(questions, articles)
    write_json_atomic(Path(args.out or args.run) / "late_interaction.json",
                      run_metadata({"args": vars(args), "rows": table, "gains": gains,
                                    "questions": questions, "articles": articles,
                                    "seconds": time.perf_counter() - t0}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
