"""5-fold cross-validation by article on COVID-QA dev: untrained rows and GraLC trained per fold.

    python -m gralc.experiments.crossval                               # untrained rows, ~6 min
    python -m gralc.experiments.crossval --train --epochs 3 --out results/covidqa_cv
    python -m gralc.experiments.crossval --train --variants full no_kg fixed_boundaries

Untrained rows run once over the pooled 49 articles, each fold's numbers the means over its
questions. ``--train`` trains GraLC once per fold on the other folds' articles only and scores
it on the held-out fold against the pooled corpus; prints mean ± std over folds, seconds per
epoch and the gap to the best untrained row. ``--variants`` (ablations), ``--ablate``,
``--sentence-evidence``, ``--wise`` and ``--extend-from`` add rows: docs/experiments.md.
``--train-only --reuse``: train fold by fold (an interrupted fold resumes), score nothing.
Knowledge: the full MeSH 2024 graph of the shared data folder
(:func:`gralc.experiments.real_data.knowledge_overrides`); the built-in demo list is refused."""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from gralc.config import CONFIG_DIR, load_config
from gralc.data.benchmarks import squad_benchmark
from gralc.data.folds import article_folds, cv_side
from gralc.encoding.precision import explain_precision
from gralc.evaluation.evidence import budget_counter
from gralc.evaluation.methods import DEFAULT_METHODS, RunSettings, evaluate_method
from gralc.evaluation.trained_rows import evaluate_trained
from gralc.experiments.real_data import (
    SHARED_DATA,
    pipeline_part,
    real_pipeline_config,
    require_real_graph,
    with_real_knowledge,
)
from gralc.pipeline import Pipeline
from gralc.runinfo import blas_kernel, run_metadata, seed_everything, write_json_atomic
from gralc.training.callbacks import EpochTimer
from gralc.training.config import TrainConfig
from gralc.training.run import train
from gralc.training.run_folder import copy_run

logger = logging.getLogger("gralc.experiments.crossval")
DEFAULT_DATA = SHARED_DATA / "covidqa/covidqa_dev.json"
#: the issue's rows, plus the best untrained rows of the README table
ROWS = ["naive", "naive_hybrid", "naive_bm25", "bm25", "late", "structure_aware",
        "structure_aware_hybrid", "dp_sentences_hybrid", "multilevel_hybrid"]
METRICS = ["ev_recall@256wp", "ev_recall@512wp", "ev_recall@1024wp", "ev_mrr", "ev_recall@5",
           "wa_ndcg@10", "mrr"]
#: training variants: the files of configs/experiment/cv/ (each switches one learned part off
#: or on; ``--variants NAME`` trains ``experiment=cv/NAME``), as train.py overrides
VARIANT_DIR = CONFIG_DIR / "experiment" / "cv"
VARIANTS: dict[str, list[str]] = {f.stem: [f"experiment=cv/{f.stem}"]
                                  for f in sorted(VARIANT_DIR.glob("*.yaml"))}


#: learned parts switched off in an already trained model (``--ablate``), without retraining
ABLATIONS = ("lexical", "kg_fusion", "kg_prox", "boundaries")


def ablated(model, part: str):
    """A copy of a trained GraLCModel with one learned part switched off: ``lexical`` (no BM25
    term), ``kg_fusion`` (H' = H: no GAT / MLP / lambda on the tokens), ``kg_prox`` (cosine
    instead of beta cos + (1 - beta) kg_prox) or ``boundaries`` (alpha, gamma, tau back at
    their initial values)."""
    import copy

    m = copy.deepcopy(model)
    if part == "lexical":
        m.lexical = None
    elif part == "kg_fusion":
        m.fusion = None
    elif part == "kg_prox":
        m.hybrid = None
    elif part == "boundaries":
        bc = m.boundary_config
        with torch.no_grad():
            m.boundary.alpha.copy_(torch.tensor([bc.alpha_struct, bc.alpha_sem, bc.alpha_entity]))
            m.boundary.gamma.fill_(bc.gamma)
            m.boundary.tau.fill_(bc.tau)
    else:
        raise ValueError(f"unknown ablation {part!r}; known: {ABLATIONS}")
    return m.eval()


def fold_means(per_query: list[dict], questions: list, fold_of: dict[str, int], n: int) -> list[dict]:
    """Per fold: the mean of every metric over its questions with resolved evidence."""
    out = []
    for k in range(n):
        rows = [r for r, q in zip(per_query, questions, strict=True)
                if fold_of[q.gold_doc_id] == k and "ev_mrr" in r]
        out.append({m: statistics.fmean(r[m] for r in rows) for m in METRICS})
    return out


def summary(folds: list[dict]) -> dict[str, tuple[float, float]]:
    return {m: (statistics.fmean(f[m] for f in folds),
                statistics.stdev(f[m] for f in folds) if len(folds) > 1 else 0.0)
            for m in METRICS}


def covidqa_setup(data: str, cache_dir: str, knowledge: list[str] | tuple[str, ...] = ()):
    """``(bench, pipeline, prepared documents, run settings)`` for the COVID-QA rows: the
    SQuAD-format ``data``, eval.py's pipeline defaults (as the README's COVID-QA table, CPU,
    encodings cached under ``cache_dir``) linked with the full MeSH 2024 graph
    (:func:`gralc.experiments.real_data.knowledge_overrides`; ``knowledge``: PipelineConfig
    ``knowledge.*`` overrides applied after it, a demo-list pipeline is refused), the
    metrics' cut-offs and word-piece counter."""
    cfg = real_pipeline_config([f"encoder.cache_dir={cache_dir}/encodings", "encoder.device=cpu",
                                *knowledge], what="the COVID-QA bench")
    bench = squad_benchmark(data)
    pipe = Pipeline(cfg)
    prepared = pipe.prepare(bench.documents, progress=False)
    return bench, pipe, prepared, RunSettings((1, 5, 10, 20), pieces=budget_counter(pipe.encoder))


def dev_side(bench, docs, variant: str, extra: list[str]):
    """The dev split training makes of ``bench``'s questions (by article, the variant's loader
    settings), searched against ``docs`` only."""
    from gralc.data.benchmarks import Benchmark
    from gralc.training.pairs import split_questions

    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [*VARIANTS[variant], *extra])
    _, dev_q = split_questions(bench.questions, "squad", cfg.loader.dev_fraction, cfg.loader.split_seed)
    return Benchmark(f"{bench.name}[dev]", docs, dev_q, dict(bench.stats))


def graph_row_means(scorer, ckpt: str, bench, prepared, pipeline, settings, weight: float) -> dict:
    """Means over ``bench``'s questions of the ``gralc`` (the product's search) row with
    ``model.sentence_evidence=weight`` (the scorer's model is restored afterwards)."""
    from dataclasses import replace

    base = scorer.model.config
    scorer.model.config = replace(base, sentence_evidence=weight)
    try:
        r = next(r for r in evaluate_trained(ckpt, bench, prepared, pipeline, settings, scorer=scorer)
                 if r.method == "gralc")
    finally:
        scorer.model.config = base
    rows = [q for q in r.per_query if "ev_mrr" in q]
    return {m: statistics.fmean(q[m] for q in rows) for m in METRICS}


def choose_sentence_evidence(scorer, ckpt: str, dev, prepared, pipeline, settings,
                             weights: list[float]) -> tuple[float, dict[float, float]]:
    """The weight with the best evidence MRR on ``dev`` (ties: the smaller), and every
    weight's dev evidence MRR."""
    own = {d.id for d in dev.documents}
    prep = [p for p in prepared if p.doc.id in own]
    mrr = {w: graph_row_means(scorer, ckpt, dev, prep, pipeline, settings, w)["ev_mrr"]
           for w in weights}
    return max(sorted(mrr), key=lambda w: mrr[w]), mrr


def sentence_evidence_rows(args, fold: int, variant: str, trained, ckpt: str, bench,
                           prepared, pipeline, settings) -> dict[str, dict]:
    """Fold means of ``gralc`` (the product's search) with each ``--sentence-evidence`` weight on the held-out
    fold, plus ``cv``: the weight with the best evidence MRR on the fold's dev split (inside
    its training folds, searched against the training folds' articles only)."""
    side = cv_side(bench, args.folds, fold, args.seed, "train")
    dev = dev_side(side, side.documents, variant, args.set)
    chosen, dev_mrr = choose_sentence_evidence(trained, ckpt, dev, prepared, pipeline, settings,
                                               args.sentence_evidence)
    logger.warning("fold %d: sentence evidence chosen on dev: %g (dev ev MRR %s)", fold, chosen,
                   {f"{w:g}": round(v, 4) for w, v in dev_mrr.items()})
    test = cv_side(bench, args.folds, fold, args.seed, "test")
    out = {f"{variant}+sent={w:g}:gralc":
           graph_row_means(trained, ckpt, test, prepared, pipeline, settings, w)
           for w in args.sentence_evidence}
    out[f"{variant}+sent=cv:gralc"] = {**out[f"{variant}+sent={chosen:g}:gralc"],
                                             "chosen": chosen}
    return out


def interpolated_checkpoint(initial: str, trained: str, t: float, out: Path) -> str:
    """A checkpoint whose every floating weight is ``(1 - t) * initial + t * trained`` (weight-
    space interpolation between the untrained and the trained model, WiSE-FT; LoRA adapters
    and scalars alike): :func:`gralc.training.soup.soup` with weights ``(1 - t, t)``."""
    from gralc.training.soup import soup

    return str(soup([initial, trained], out, weights=[1 - t, t]))


def wise_rows(args, fold: int, variant: str, ckpt: str, weight: float, bench, prepared,
              pipeline, settings) -> dict[str, dict]:
    """Fold means of ``gralc`` (the product's search) (sentence evidence ``weight``) for the models interpolated
    between the fold's initial and selected checkpoints at each ``--wise`` t, plus ``cv``: the t
    with the best evidence MRR on the fold's dev split."""
    from gralc.retrieval.trained.scorer import TrainedScorer

    run = Path(args.out) / variant / f"fold{fold}"
    side = cv_side(bench, args.folds, fold, args.seed, "train")
    dev = dev_side(side, side.documents, variant, args.set)
    test = cv_side(bench, args.folds, fold, args.seed, "test")
    dev_mrr, out = {}, {}
    for t in args.wise:
        path = interpolated_checkpoint(str(run / "initial.ckpt"), ckpt, t, run / f"wise-{t:g}.ckpt")
        scorer = TrainedScorer.load(path)
        _, mrr = choose_sentence_evidence(scorer, path, dev, prepared, pipeline, settings, [weight])
        dev_mrr[t] = mrr[weight]
        out[f"{variant}+wise={t:g}:gralc"] = graph_row_means(
            scorer, path, test, prepared, pipeline, settings, weight)
    chosen = max(sorted(dev_mrr), key=lambda t: dev_mrr[t])
    logger.warning("fold %d: interpolation t chosen on dev: %g (dev ev MRR %s)", fold, chosen,
                   {f"{t:g}": round(v, 4) for t, v in dev_mrr.items()})
    out[f"{variant}+wise=cv:gralc"] = {**out[f"{variant}+wise={chosen:g}:gralc"],
                                             "chosen": chosen}
    return out


def fold_overrides(data: str, cv: tuple[int, int, int] | None, run_dir: Path, cache_dir: str | Path,
                   epochs: int, threads: int, variant: str, device: str = "cpu") -> list[str]:
    """``train.py`` overrides that train ``variant`` on the training side of ``cv`` = (folds,
    held-out fold, fold seed), or on every article for ``cv=None`` (the final model)."""
    folds = [] if cv is None else [f"data.cv_folds={cv[0]}", f"data.cv_fold={cv[1]}", f"data.cv_seed={cv[2]}"]
    return ["data=squad", f"data.path={data}", *folds, f"paths.output_dir={run_dir}",
            f"paths.cache_dir={cache_dir}", f"pipeline.encoder.cache_dir={cache_dir}/encodings",
            f"pipeline.encoder.device={device}", f"trainer.accelerator={'cpu' if device == 'cpu' else 'gpu'}",
            f"trainer.max_epochs={epochs}", f"trainer.num_threads={threads}", *VARIANTS[variant]]


def train_fold(args: argparse.Namespace, fold: int, variant: str) -> tuple[str, list[float]]:
    """Train on every fold but ``fold``; returns (selected checkpoint, seconds per epoch).
    ``--reuse``: the checkpoint an earlier run of this bench selected there, if any; a fold
    it left unfinished continues from its newest checkpoint (``resume=auto``), so a five-fold
    CV survives an interruption fold by fold."""
    done = Path(args.out) / variant / f"fold{fold}" / "result.json"
    if args.reuse and done.is_file():
        from gralc.training.run_folder import run_selected_checkpoint

        logger.warning("%s fold %d: reusing %s", variant, fold, done)
        return str(run_selected_checkpoint(done.parent)), []
    run_dir = Path(args.out) / variant / f"fold{fold}"
    resume = []
    if args.extend_from:  # continue that run's fold for more epochs, in --out
        if not run_dir.exists():
            copy_run(Path(args.extend_from) / variant / f"fold{fold}", run_dir)
        resume = ["resume=last"]
    elif args.reuse and run_dir.is_dir() and any(run_dir.iterdir()):
        # a fold interrupted mid-run continues from its newest checkpoint (or starts afresh)
        logger.warning("%s fold %d: continuing the interrupted run in %s", variant, fold, run_dir)
        resume = ["resume=auto"]
    overrides = [*fold_overrides(args.data, (args.folds, fold, args.seed), run_dir, args.cache_dir,
                                 args.epochs, args.threads, variant), *args.set, *resume]
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", overrides)
    require_real_graph(cfg, "gralc.experiments.crossval --train")
    timer = EpochTimer()
    result = train(cfg, callbacks=[timer])
    return result["best_checkpoint"], timer.seconds


def fold_run_arguments(ap: argparse.ArgumentParser, run_help: str) -> None:
    """The arguments of a driver that scores the fold models of a crossval run: ``--run`` (the
    variant folder), ``--data``, ``--folds``, ``--seed`` and ``--train-folds`` (the folds scored)."""
    ap.add_argument("--run", help=run_help)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-folds", type=int, nargs="+", default=[0, 1, 2, 3, 4])


def seconds_per_batch(overrides: list[str], batches: int, cache_dir: str, data: str, repeats: int,
                      variant: str = "lora_lexical_small_late") -> list[float]:
    """Seconds per training batch of ``variant`` on fold 0: ``repeats`` one-epoch runs of ``batches`` batches (the first run
    also builds and caches the features, so it is not timed)."""
    import tempfile

    out = []
    for i in range(repeats + 1):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [
                *fold_overrides(data, (5, 0, 0), Path(tmp), cache_dir, 1, 2, variant), *overrides,
                f"trainer.limit_train_batches={batches if i else 2}", "trainer.validate_before_fit=false",
                "callbacks.early_stopping.enabled=false", "loader.dev_fraction=0"])
            timer = EpochTimer()
            train(cfg, callbacks=[timer])
            if i:
                out.append(timer.seconds[0] / batches)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="SQuAD-format JSON (whole articles)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rows", nargs="+", default=ROWS, help="untrained rows (eval.py names)")
    ap.add_argument("--train", action="store_true", help="train GraLC on each fold")
    ap.add_argument("--variants", nargs="+", default=["full"], choices=list(VARIANTS))
    ap.add_argument("--ablate", nargs="*", default=[], choices=ABLATIONS,
                    help="also score each trained fold model of the first --variants entry "
                         "with this part switched off")
    ap.add_argument("--sentence-evidence", type=float, nargs="*", default=[],
                    help="score each trained fold model of the first --variants entry with these "
                         "model.sentence_evidence weights (and the one chosen on dev per fold)")
    ap.add_argument("--wise", type=float, nargs="*", default=[],
                    help="score each fold's model (first --variants entry, its dev-chosen "
                         "sentence evidence) interpolated in weight space between its initial "
                         "and selected checkpoints at these t in [0, 1] (and the t chosen on dev)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train-only", action="store_true",
                    help="with --train: train the folds, score nothing (score them with "
                         "gralc.experiments.two_stage_cv or error_analysis: one pass each)")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse each fold's selected checkpoint of an earlier run in --out")
    ap.add_argument("--extend-from", default=None,
                    help="continue each fold's run of an earlier --out (copied into --out, "
                         "the original untouched) up to --epochs instead of training afresh")
    ap.add_argument("--train-folds", type=int, nargs="+", default=None,
                    help="train only these folds (quick runs; the table then covers them only)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--set", nargs="*", default=[],
                    help="extra train.py key=value overrides (pipeline.knowledge.* and "
                         "pipeline.encoder.model ones also set the untrained rows' pipeline)")
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--out", default="results/covidqa_cv")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    missing = [str(p) for v in args.variants for k in args.train_folds or range(args.folds)
               if args.extend_from and not (p := Path(args.extend_from) / v / f"fold{k}"
                                            / "checkpoints" / "last.ckpt").is_file()]
    if any(not 0 <= t <= 1 for t in args.wise):
        ap.error(f"--wise {args.wise}: interpolation weights must lie in [0, 1]")
    if missing:  # before the untrained rows' minutes
        ap.error(f"--extend-from {args.extend_from}: no run to continue at {', '.join(missing)}")
    args.set = with_real_knowledge(args.set)  # the full MeSH 2024 unless --set names its own
    for variant in args.variants if args.train else []:  # refused before any minute is spent
        require_real_graph(load_config(TrainConfig, CONFIG_DIR / "train.yaml",
                                       [*VARIANTS[variant], *args.set]), "gralc.experiments.crossval --train")
    seed_everything(args.seed)
    os.environ.setdefault("WANDB_MODE", "offline")
    t0 = time.perf_counter()
    if args.train and args.train_only:  # train fold by fold, score nothing: no untrained rows
        for variant in args.variants:
            for k in args.train_folds if args.train_folds is not None else range(args.folds):
                ckpt, _ = train_fold(args, k, variant)
                logger.warning("%s fold %d trained (%.0f s): %s", variant, k, time.perf_counter() - t0, ckpt)
        return 0
    bench, base_pipe, prepared, settings = covidqa_setup(args.data, args.cache_dir,
                                                         pipeline_part(args.set))
    fold_of = article_folds([d.id for d in bench.documents], args.folds, args.seed)
    specs = {m.name: m for m in DEFAULT_METHODS}
    table: dict[str, dict[str, Any]] = {}
    for name in args.rows:
        r = evaluate_method(specs[name], bench, prepared, base_pipe, settings)
        table[name] = {"folds": fold_means(r.per_query, bench.questions, fold_of, args.folds),
                       "chunks": r.chunk_stats.get("n_chunks")}
        logger.warning("%s done (%.0f s)", name, time.perf_counter() - t0)
    folds_run = args.train_folds if args.train and args.train_folds is not None else list(range(args.folds))
    # GraLC at each variant's initial values (no training): what training must improve on
    for variant in args.variants if args.train else []:
        from gralc.model.gralc_model import GraLCModel
        from gralc.retrieval.trained.scorer import TrainedScorer

        cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [
            f"pipeline.encoder.cache_dir={args.cache_dir}/encodings", "pipeline.encoder.device=cpu",
            *VARIANTS[variant], *args.set])  # the same overrides as training
        seed_everything(args.seed)
        model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, base_pipe.encoder.dim,
                           base_pipe.encoder.dim).eval()
        init = evaluate_trained("", bench, prepared, base_pipe, settings,
                                scorer=TrainedScorer(model, cfg.pipeline))
        for r in init:
            table[f"init:{variant}:{r.method}"] = {
                "folds": fold_means(r.per_query, bench.questions, fold_of, args.folds)}
        # the untrained model with sentence evidence too: an untrained row the trained must beat
        for w in [w for w in args.sentence_evidence if w > 0] if variant == args.variants[0] else []:
            from dataclasses import replace

            model.config = replace(model.config, sentence_evidence=w)
            r = next(r for r in evaluate_trained("", bench, prepared, base_pipe, settings,
                                                 scorer=TrainedScorer(model, cfg.pipeline))
                     if r.method == "gralc")
            table[f"init:{variant}+sent={w:g}:{r.method}"] = {
                "folds": fold_means(r.per_query, bench.questions, fold_of, args.folds)}
    for variant in args.variants if args.train else []:
        per_fold: dict[str, list[dict]] = {}
        epochs: list[float] = []
        for k in folds_run:
            ckpt, seconds = train_fold(args, k, variant)
            epochs.extend(seconds)
            test = cv_side(bench, args.folds, k, args.seed, "test")
            from gralc.retrieval.trained.scorer import TrainedScorer

            trained = TrainedScorer.load(ckpt)
            require_real_graph(trained.pipeline_config, f"{variant} fold {k} ({ckpt})")
            scorers = {"": trained}
            for part in args.ablate if variant == args.variants[0] else []:
                scorers[f"-{part}"] = TrainedScorer(
                    ablated(trained.model, part), trained.pipeline_config, ckpt,
                    concept_encoder=trained.concept_encoder)
            weight = 0.0
            if args.sentence_evidence and variant == args.variants[0]:
                for name, means in sentence_evidence_rows(args, k, variant, trained, ckpt, bench,
                                                          prepared, base_pipe, settings).items():
                    per_fold.setdefault(name, []).append(means)
                weight = per_fold[f"{variant}+sent=cv:gralc"][-1]["chosen"]
            if args.wise and variant == args.variants[0]:
                for name, means in wise_rows(args, k, variant, ckpt, weight, bench, prepared,
                                             base_pipe, settings).items():
                    per_fold.setdefault(name, []).append(means)
            for tag, scorer in scorers.items():
                for r in evaluate_trained(ckpt, test, prepared, base_pipe, settings, scorer=scorer):
                    rows = [q for q in r.per_query if "ev_mrr" in q]
                    per_fold.setdefault(f"{variant}{tag}:{r.method}", []).append(
                        {m: statistics.fmean(q[m] for q in rows) for m in METRICS})
            logger.warning("%s fold %d done (%.0f s)", variant, k, time.perf_counter() - t0)
        for name, folds in per_fold.items():
            table[name] = {"folds": folds, "s_per_epoch": statistics.fmean(epochs) if epochs else None}
            if name.endswith(("+sent=cv:gralc", "+wise=cv:gralc")):
                print(f"{name}: chosen on dev per fold: {[f.pop('chosen') for f in folds]}")
    print(f"# COVID-QA dev, {len(bench.documents)} articles, {len(bench.questions)} questions, "
          f"{args.folds} folds by article (seed {args.seed}); CPU: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, BLAS {blas_kernel()}; LoRA passes with lora.precision=auto: "
          f"{'{} ({})'.format(*explain_precision('auto', torch.device('cpu')))}\n")
    print("| row | " + " | ".join(METRICS) + " | s/epoch |")
    print("|---|" + "---|" * (len(METRICS) + 1))
    for row in table.values():  # untrained rows: the folds the trained rows cover
        if len(row["folds"]) == args.folds and len(folds_run) < args.folds:
            row["folds"] = [row["folds"][k] for k in folds_run]
    print(f"folds: {folds_run}\n")
    for name, row in table.items():
        s = row["mean_std"] = summary(row["folds"])
        spe = row.get("s_per_epoch")
        cells = [f"{s[m][0]:.4f} ± {s[m][1]:.4f}" for m in METRICS] + [f"{spe:.0f}" if spe else ""]
        print(f"| {name} | " + " | ".join(cells) + " |")
    untrained = [n for n in table if ":" not in n or n.startswith("init:")]
    best = max(untrained, key=lambda n: table[n]["mean_std"]["ev_recall@512wp"][0])
    print(f"\nbest untrained row by ev_recall@512wp: {best}")
    for name in [n for n in table if ":" in n and not n.startswith("init:")]:
        d512 = table[name]["mean_std"]["ev_recall@512wp"][0] - table[best]["mean_std"]["ev_recall@512wp"][0]
        dmrr = table[name]["mean_std"]["ev_mrr"][0] - table[best]["mean_std"]["ev_mrr"][0]
        print(f"{name}: ev_recall@512wp {d512:+.4f}, ev_mrr {dmrr:+.4f} vs {best} "
              f"(bar: +0.05 / +0.03)")
    write_json_atomic(Path(args.out) / "cv.json",
                      run_metadata({"args": vars(args), "rows": table, "best_untrained": best,
                                    "seconds": time.perf_counter() - t0}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
