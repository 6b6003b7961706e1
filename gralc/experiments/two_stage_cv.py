"""Two-stage search with token codes against the exhaustive exact score, on COVID-QA by
cross-validation by article.

    python -m gralc.experiments.two_stage_cv --run results/cv_soup_mesh/lora_lexical_small_late \\
        --out results/two_stage_cv

For each fold of a ``gralc.experiments.crossval`` run (``--run``: a variant folder), the
fold's selected model with the export settings of record chunks all 49 articles once; its
held-out questions are then searched four ways, the ``gralc`` row of eval.py each time:
exhaustive or two-stage (the candidates of ``--search``), each with exact float16 token vectors
or IVF-PQ codes (``two-stage, codes`` is the product's search). Prints each row's five-fold
means and the gain of every row over the first with a paired bootstrap over held-out articles,
and writes everything (per-question values too) to ``--out/two_stage.json``. Details:
docs/experiments.md.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from dataclasses import replace
from pathlib import Path

from gralc.config import load_config
from gralc.data.folds import cv_side
from gralc.evaluation.significance import FoldPairs, paired_gain
from gralc.evaluation.trained_rows import searchable, searched_rows
from gralc.experiments.crossval import covidqa_setup, fold_run_arguments
from gralc.experiments.inference_cv import selected_checkpoint
from gralc.experiments.published import print_report, run_arguments
from gralc.experiments.real_data import require_real_graph
from gralc.pipeline import Pipeline, with_runtime
from gralc.retrieval.trained.candidates import CandidateConfig
from gralc.retrieval.trained.scorer import TrainedScorer
from gralc.retrieval.trained.token_codec import TokenCodecConfig
from gralc.runinfo import run_metadata, write_json_atomic

METRICS = ("ev_recall@256wp", "ev_recall@512wp", "ev_recall@1024wp", "ev_mrr", "ev_recall@5",
           "wa_ndcg@10", "mrr")
BAR_METRICS = ("ev_recall@512wp", "ev_mrr")
REFERENCE = "exhaustive, float16"


def with_export_settings(scorer: TrainedScorer, args) -> TrainedScorer:
    """The export of record's inference settings on a fold model (as ``gralc.export`` sets them)."""
    scorer.model.set_scoring({"sentence_evidence": args.sentence_evidence, "late_interaction":
                              args.late_interaction, "phrase_weight": args.phrase_weight,
                              "cut_unit": args.cut_unit})
    return scorer


def fold_rows(scorer: TrainedScorer, test, base_pipe: Pipeline, settings, search: CandidateConfig,
              codec: TokenCodecConfig, stages: tuple[str, ...] = ("exhaustive", "two-stage"),
              tokens_kept: tuple[str, ...] = ("float16", "codes")) -> dict[str, dict]:
    """Per variant (``stages`` x ``tokens_kept``): per-question metric values (questions with
    evidence), ms per question and candidates per question."""
    pipe = Pipeline(with_runtime(scorer.pipeline_config, base_pipe.config))
    prepared = pipe.prepare(test.documents, progress=False)
    scorer.token_codec = TokenCodecConfig(kind="float16")
    chunks = scorer.chunk(pipe, prepared)
    exact = scorer.table.finish()
    tables = {"float16": lambda: exact, "codes": lambda: exact.with_codec(codec)}
    configs = {"exhaustive": CandidateConfig(exhaustive=True), "two-stage": search}
    out = {}
    for tokens in tokens_kept:
        scorer.table = table = tables[tokens]()
        for stage in stages:
            config = configs[stage]
            s = searchable(scorer, pipe, chunks, config)
            t0 = time.perf_counter()
            row = searched_rows(s, test, replace(settings, search=config), rows=("",))[0]
            seconds = time.perf_counter() - t0
            kept = [q for q in row.per_query if "ev_mrr" in q]
            out[f"{stage}, {tokens}"] = {
                "questions": {m: [float(q[m]) for q in kept] for m in METRICS},
                "articles": [q["gold_doc_id"] for q in kept],
                "ms_per_question": 1000 * seconds / max(1, len(test.questions)),
                "candidates_per_question": s.candidates_per_question if stage == "two-stage" else len(chunks),
                "bytes_per_token": table.tokens.codec.code_size,
                "n_chunks": len(chunks), "n_tokens": table.tokens.n_tokens,
            }
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line (``python -m gralc.experiments.two_stage_cv --help``): writes two_stage.json; 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    fold_run_arguments(ap, "a gralc.experiments.crossval variant folder (fold0, ...)")
    ap.add_argument("--sentence-evidence", type=float, default=0.3)
    ap.add_argument("--late-interaction", type=float, default=0.8)
    ap.add_argument("--phrase-weight", type=float, default=0.05)
    ap.add_argument("--cut-unit", choices=["word", "sentence"], default="sentence")
    ap.add_argument("--search", nargs="*", default=[], metavar="key=value",
                    help="two-stage settings (gralc.retrieval.trained.candidates.CandidateConfig)")
    ap.add_argument("--codec", nargs="*", default=[], metavar="key=value",
                    help="token codec settings (gralc.retrieval.trained.token_codec.TokenCodecConfig)")
    ap.add_argument("--stages", nargs="+", choices=["exhaustive", "two-stage"],
                    default=["exhaustive", "two-stage"], help="searches to run (default: both)")
    ap.add_argument("--tokens", nargs="+", choices=["float16", "codes"], default=["float16", "codes"],
                    help="token vectors to score with (default: both)")
    run_arguments(ap, "two_stage.json")
    args = ap.parse_args(argv)
    if args.report:
        return report_main(args.report, args.publish)
    if not args.out or not args.run:
        ap.error("--run and --out are required (or --report)")
    search = load_config(CandidateConfig, None, args.search)
    codec = load_config(TokenCodecConfig, None, args.codec)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    t0 = time.perf_counter()
    bench, base_pipe, _, settings = covidqa_setup(args.data, args.cache_dir)
    folds: list[dict[str, dict]] = []
    for k in args.train_folds:
        scorer = with_export_settings(TrainedScorer.load(selected_checkpoint(Path(args.run) / f"fold{k}")), args)
        require_real_graph(scorer.pipeline_config, f"gralc.experiments.two_stage_cv (fold {k} of {args.run})")
        test = cv_side(bench, args.folds, k, args.seed, "test")
        folds.append(fold_rows(scorer, test, base_pipe, settings, search, codec, tuple(args.stages),
                               tuple(args.tokens)))
        print(f"fold {k}: " + "; ".join(f"{name} ev R@512wp {statistics.fmean(v['questions']['ev_recall@512wp']):.4f}"
                                        f" ({v['ms_per_question']:.1f} ms/q)" for name, v in folds[-1].items())
              + f" ({time.perf_counter() - t0:.0f} s)", flush=True)
    saved = run_metadata({"args": vars(args), "search": vars(search), "codec": vars(codec),
                          "folds": folds, "seconds": time.perf_counter() - t0})
    saved["gains"] = gains_of(folds)
    write_json_atomic(Path(args.out) / "two_stage.json", saved)
    print(report(saved))
    return 0


def gains_of(folds: list[dict[str, dict]]) -> dict[str, dict]:
    """Every row's gain over :data:`REFERENCE` in the bar's metrics, paired bootstrap over
    held-out articles (:func:`gralc.evaluation.significance.paired_gain`)."""
    gains: dict[str, dict] = {}
    for name in [n for n in folds[0] if n != REFERENCE and REFERENCE in folds[0]]:
        for m in BAR_METRICS:
            got = paired_gain([FoldPairs(a=f[name]["questions"][m], b=f[REFERENCE]["questions"][m],
                                         clusters=f[name]["articles"]) for f in folds])
            gains.setdefault(name, {})[m] = got.as_dict()
    return gains


def report(saved: dict) -> str:
    """Markdown of a ``two_stage.json``: five-fold means per row, then the gains."""
    a, folds = saved["args"], saved["folds"]
    lines = [f"COVID-QA dev, folds {a['train_folds']} of {a['folds']} by article; models `{a['run']}`; "
             f"W={a['sentence_evidence']:g} M={a['late_interaction']:g} g={a['phrase_weight']:g}, cuts at "
             f"{a['cut_unit']} starts; search {saved['search']}; codec {saved['codec']}; git {saved.get('git_hash')}.",
             "", "| row | " + " | ".join(METRICS) + " | ms / question (eval row) | candidates / question | bytes / token |",
             "|---|" + "---|" * (len(METRICS) + 3)]
    for name in folds[0]:
        cells = [f"{statistics.fmean(statistics.fmean(f[name]['questions'][m]) for f in folds):.4f}" for m in METRICS]
        extra = [statistics.fmean(f[name][key] for f in folds) for key in
                 ("ms_per_question", "candidates_per_question", "bytes_per_token")]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {extra[0]:.0f} | {extra[1]:.0f} | {extra[2]:.0f} |")
    lines += ["", f"| over {REFERENCE} | " + " | ".join(f"{m} [95 % CI]" for m in BAR_METRICS) + " |",
              "|---|" + "---|" * len(BAR_METRICS)]
    for name, by_metric in saved["gains"].items():
        cells = [f"{g['gain']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}]" for g in (by_metric[m] for m in BAR_METRICS)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def report_main(path: Path, publish: str | None) -> int:
    """Print the table of a saved ``two_stage.json`` (``publish``: also save it as results/NAME.json); 0."""
    return print_report(path, publish, report)


if __name__ == "__main__":
    raise SystemExit(main())
