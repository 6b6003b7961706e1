"""The graph's trial on COVID-QA: each graph part of a trained full-MeSH model, on and off,
five folds by article, paired bootstrap over held-out articles.

    python -m gralc.experiments.graph_trial --run results/cv_late_mesh/lora_lexical_small_late \\
        --out results/graph_trial
    python -m gralc.experiments.graph_trial --report results/graph_trial/graph_trial.json \\
        --publish graph_trial

Each fold's selected model of a ``gralc.experiments.crossval`` run (``--run``), with the
export settings of record, searches its held-out questions with the product's search. Rows:
``full graph``, ``+ concept match`` (``--concept-weights``, and the weight chosen on dev),
``kg_prox idf``, and ablations with one graph part switched off at inference (no retraining).
``--pmc DIR --questions Q.jsonl --model EXPORT``: the same rows on the PMC template questions;
``--rows crosssection``: the export's search (``gralc``, and ``gralc_diverse`` re-ranked as the
``*_diverse`` rows are) beside :data:`CROSS_SECTION_BASELINES`. Every row: docs/experiments.md.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import torch

from gralc.data.folds import cv_side
from gralc.evaluation.significance import FoldPairs, paired_gain
from gralc.evaluation.trained_rows import searched_rows
from gralc.experiments.crossval import covidqa_setup, dev_side, fold_run_arguments
from gralc.experiments.inference_cv import selected_checkpoint
from gralc.experiments.published import publish_result, run_arguments
from gralc.experiments.real_data import require_real_graph
from gralc.pipeline import Pipeline, with_runtime
from gralc.retrieval.indexes.bm25 import BM25Config, BM25Index
from gralc.retrieval.indexes.dense import ChunkIndex
from gralc.retrieval.trained.candidates import CandidateConfig
from gralc.retrieval.trained.concept_match import concept_index
from gralc.retrieval.trained.scorer import TrainedScorer
from gralc.retrieval.trained.search import TrainedSearch
from gralc.runinfo import run_metadata, write_json_atomic
from gralc.safe_load import read_json_untrusted

METRICS = ("ev_recall@256wp", "ev_recall@512wp", "ev_recall@1024wp", "ev_mrr", "ev_recall@5",
           "wa_ndcg@10", "mrr")
PMC_METRICS = ("ev_recall@512wp", "ev_mrr", "cross_section_recall@5", "cross_section_recall@20")
BAR_METRICS = ("ev_recall@512wp", "ev_mrr")
REFERENCE = "full graph"
CHOSEN = "+ concept match (c on dev)"
#: ``--rows crosssection``: the untrained rows (gralc.evaluation.methods), each plain row then
#: its section-diverse one, and the trained model's rows (gralc.evaluation.trained_rows)
CROSS_SECTION_BASELINES = ("naive", "naive_diverse", "structure_aware", "section_diverse",
                           "multilevel", "multilevel_diverse")
TRAINED, TRAINED_DIVERSE, TRAINED_TAIL = "gralc", "gralc_diverse", "gralc_complete_tail"


@contextmanager
def switched(scorer: TrainedScorer, concept_weight: float = 0.0, kg_idf: bool = False,
             kg_prox: bool = True):
    """The scorer's model with these inference settings for the block (restored after)."""
    model = scorer.model
    config, scoring, beta = model.config, model.scoring, None
    model.set_scoring({"concept_weight": concept_weight, "kg_prox_idf": kg_idf})
    if not kg_prox and model.hybrid is not None:
        beta = model.hybrid.beta_logit.data.clone()
        model.hybrid.beta_logit.data.fill_(50.0)  # beta = 1: the dense part is cos alone
    try:
        yield scorer
    finally:
        model.config, model.scoring = config, scoring
        if beta is not None:
            model.hybrid.beta_logit.data.copy_(beta)


@contextmanager
def parts_off(scorer: TrainedScorer, fusion: bool = True, entity: bool = True):
    """Trained parts that shape the chunks, off for the block: GAT fusion (lambda = 0), entity
    boundaries (alpha_entity = 0)."""
    model, saved = scorer.model, {}
    if not fusion and model.fusion is not None:
        saved["lam"] = model.fusion.lam.data.clone()
        model.fusion.lam.data.zero_()
    if not entity:
        saved["alpha"] = model.boundary.alpha.data.clone()
        model.boundary.alpha.data[2] = 0.0
    try:
        yield scorer
    finally:
        if "lam" in saved:
            model.fusion.lam.data.copy_(saved["lam"])
        if "alpha" in saved:
            model.boundary.alpha.data.copy_(saved["alpha"])


def chunked(scorer: TrainedScorer, pipe: Pipeline, prepared, search: CandidateConfig) -> TrainedSearch:
    """The side's chunks by the scorer's model, indexed as ``gralc.index --model`` indexes them
    (the concept match's index always, so any concept setting can search it)."""
    chunks = scorer.chunk(pipe, prepared)
    index = ChunkIndex(pipe.encoder.dim)
    index.add(chunks)
    bm25, pairs = BM25Index(), BM25Index(BM25Config(ngram=2))
    bm25.index(chunks)
    pairs.index(chunks)
    return TrainedSearch(scorer, pipe, index, bm25, pairs, search, concept_index(chunks))


def row(search: TrainedSearch, side, settings, metrics=METRICS) -> dict:
    """Per-question values (questions with evidence) of the ``gralc`` row."""
    return per_question(searched_rows(search, side, replace(settings, search=search.config), rows=("",))[0],
                        metrics)


def per_question(r, metrics=METRICS) -> dict:
    """A row's per-question values (questions with evidence, in the benchmark's order: every
    row keeps the same questions) and each one's article, from a MethodResult ``r``."""
    kept = [q for q in r.per_query if "ev_mrr" in q]
    return {"questions": {m: [float(q.get(m, float("nan"))) for q in kept] for m in metrics},
            "articles": [q["gold_doc_id"] for q in kept]}


def mean(values: list[float]) -> float:
    """Mean of ``values`` without their NaNs (NaN when none is left)."""
    values = [v for v in values if v == v]  # NaN: a metric the question does not have
    return statistics.fmean(values) if values else float("nan")


def choose_concept_weight(args, scorer: TrainedScorer, pipe: Pipeline, dev, settings,
                          search: CandidateConfig) -> tuple[float, dict[float, float]]:
    """The concept weight with the best evidence MRR on ``dev`` (0 included; ties: the
    smaller), and each weight's dev evidence MRR."""
    dev_search = chunked(scorer, pipe, pipe.prepare(dev.documents, progress=False), search)
    dev_mrr = {}
    for c in [0.0, *args.concept_weights]:
        with switched(scorer, concept_weight=c):
            dev_mrr[c] = mean(row(dev_search, dev, settings)["questions"]["ev_mrr"])
    return max(sorted(dev_mrr), key=lambda c: dev_mrr[c]), dev_mrr


def graph_rows(args, scorer: TrainedScorer, pipe: Pipeline, test, settings, search: CandidateConfig,
               chosen: float, metrics=METRICS) -> dict[str, dict]:
    """Every row of the module docstring on ``test``, with the concept weight ``chosen``."""
    out: dict[str, dict] = {}
    prepared = pipe.prepare(test.documents, progress=False)
    s = chunked(scorer, pipe, prepared, search)
    with switched(scorer):
        out[REFERENCE] = row(s, test, settings, metrics)
    weights = list(dict.fromkeys([*args.concept_weights, *([chosen] if chosen else [])]))
    for c in weights:
        with switched(scorer, concept_weight=c):
            out[f"+ concept match (c={c:g})"] = row(s, test, settings, metrics)
    out[CHOSEN] = out[REFERENCE] if chosen == 0 else out[f"+ concept match (c={chosen:g})"]
    if args.rows == "concepts":
        return out
    with switched(scorer, kg_idf=True):
        out["kg_prox idf"] = row(s, test, settings, metrics)
    with switched(scorer, concept_weight=chosen, kg_idf=True):
        out["kg_prox idf + concept match (c on dev)"] = row(s, test, settings, metrics)
    with switched(scorer, concept_weight=chosen, kg_prox=False):
        out["- kg_prox (beta = 1)"] = row(s, test, settings, metrics)
    if args.rows == "scoring":
        return out
    for name, kw in (("- GAT fusion (lambda = 0)", {"fusion": False}),
                     ("- entity boundaries (alpha_entity = 0)", {"entity": False}),
                     ("- every graph part", {"fusion": False, "entity": False})):
        with parts_off(scorer, **kw):
            s2 = chunked(scorer, pipe, prepared, search)
            every = name == "- every graph part"
            with switched(scorer, concept_weight=0.0 if every else chosen, kg_prox=not every):
                out[name] = row(s2, test, settings, metrics)
    return out


def fold_rows(args, scorer: TrainedScorer, test, dev, base_pipe: Pipeline, settings,
              search: CandidateConfig) -> tuple[dict[str, dict], dict]:
    """One fold's rows (:func:`graph_rows`) with the concept weight chosen on its ``dev`` split,
    and what was chosen: ``(rows, fold info)``."""
    pipe = Pipeline(with_runtime(scorer.pipeline_config, base_pipe.config))
    # the concept weight, chosen on the dev split (inside the training folds)
    chosen, dev_mrr = choose_concept_weight(args, scorer, pipe, dev, settings, search)
    out = graph_rows(args, scorer, pipe, test, settings, search, chosen)
    return out, {"chosen_concept_weight": chosen, "dev_ev_mrr": {f"{c:g}": v for c, v in dev_mrr.items()},
                 "learned": scorer.learned_values()}


def crosssection_rows(scorer: TrainedScorer, base: Pipeline, test, settings, metrics=PMC_METRICS
                      ) -> dict[str, dict]:
    """``--rows crosssection`` on ``test``: the untrained :data:`CROSS_SECTION_BASELINES` with
    ``base`` (one chunking per strategy), then the model's search as exported (:data:`TRAINED`,
    as ``gralc eval`` scores it: its own pipeline settings, the product's two-stage search) and
    that search's top ``candidates`` re-ranked as the ``*_diverse`` rows are
    (:data:`TRAINED_DIVERSE`, ``search.diverse=round_robin``), and with its head kept
    (:data:`TRAINED_TAIL`, ``search.diverse=complete_tail``)."""
    from gralc.evaluation.methods import DEFAULT_METHODS, chunk_key, evaluate_method, make_chunker
    from gralc.evaluation.trained_rows import DIVERSE_ROW, PRODUCT, own_pipeline, searchable

    out: dict[str, dict] = {}
    prepared = base.prepare(test.documents, progress=False)
    specs = {m.name: m for m in DEFAULT_METHODS}
    chunks: dict[tuple, list] = {}
    for name in CROSS_SECTION_BASELINES:
        spec = specs[name]
        if chunk_key(spec) not in chunks:
            chunker = make_chunker(base, spec)
            chunks[chunk_key(spec)] = [c for p in prepared for c in chunker.chunk(p)]
        out[name] = per_question(evaluate_method(spec, test, prepared, base, settings,
                                                 chunks=chunks[chunk_key(spec)]), metrics)
    pipe, own = own_pipeline(scorer, base, prepared, scorer.source)
    search = searchable(scorer, pipe, scorer.chunk(pipe, own), settings.search)
    product, diverse = searched_rows(search, test, settings, TRAINED, rows=(PRODUCT, DIVERSE_ROW))
    out[TRAINED], out[TRAINED_DIVERSE] = per_question(product, metrics), per_question(diverse, metrics)
    tail = searched_rows(search, test, settings, TRAINED, rows=(DIVERSE_ROW,), diverse="complete_tail")[0]
    out[TRAINED_TAIL] = per_question(tail, metrics)
    return out


def crosssection_comparisons() -> list[tuple[str, str]]:
    """``(row, reference)`` pairs of ``--rows crosssection``: each trained row against each
    untrained diverse row, the diverse trained row against the plain one, and each untrained
    diverse row against its plain counterpart (the row before it)."""
    diverse = [n for n in CROSS_SECTION_BASELINES if n.endswith("_diverse")]
    own = [(n, CROSS_SECTION_BASELINES[CROSS_SECTION_BASELINES.index(n) - 1]) for n in diverse]
    trained = (TRAINED, TRAINED_DIVERSE, TRAINED_TAIL)
    return [*((t, d) for t in trained for d in diverse), (TRAINED_DIVERSE, TRAINED), (TRAINED_TAIL, TRAINED), *own]


def default_comparisons(folds: list[dict[str, dict]]) -> list[tuple[str, str]]:
    """Every row against :data:`REFERENCE`, and every ablation against :data:`CHOSEN` too
    (unless CHOSEN is REFERENCE in every fold)."""
    same = all(f[CHOSEN] is f[REFERENCE] or f[CHOSEN] == f[REFERENCE] for f in folds)
    pairs = []
    for name in folds[0]:
        refs = [REFERENCE] if not name.startswith("-") else [CHOSEN, REFERENCE]
        pairs += [(name, ref) for ref in refs if name != ref and not (ref == CHOSEN and same)]
    return pairs


def gains_of(folds: list[dict[str, dict]], comparisons: list[tuple[str, str]] | None = None
             ) -> dict[str, dict]:
    """The gain of each ``(row, reference)`` of ``comparisons`` (None:
    :func:`default_comparisons`) in the bar's metrics (and the cross-section recalls where
    present): paired bootstrap over held-out articles."""
    gains: dict[str, dict] = {}
    first = next(iter(folds[0].values()))["questions"]
    metrics = [m for m in (*BAR_METRICS, "cross_section_recall@5", "cross_section_recall@20") if m in first]
    for name, ref in comparisons if comparisons is not None else default_comparisons(folds):
        for m in metrics:
            pairs = []
            for f in folds:  # a question without the metric (NaN) is left out of both
                keep = [i for i, v in enumerate(f[name]["questions"][m]) if v == v]
                if keep:
                    pairs.append(FoldPairs(a=[f[name]["questions"][m][i] for i in keep],
                                           b=[f[ref]["questions"][m][i] for i in keep],
                                           clusters=[f[name]["articles"][i] for i in keep]))
            if pairs:
                gains.setdefault(f"{name} vs {ref}", {})[m] = paired_gain(pairs).as_dict()
    return gains


def report(saved: dict) -> str:
    """The markdown tables of a saved ``graph_trial.json``: every row's means, then the gains."""
    a, folds = saved["args"], saved["folds"]
    first = next(iter(folds[0].values()))
    metrics = list(first["questions"])
    if a.get("pmc") and a.get("rows") == "crosssection":
        head = (f"PMC template questions ({len(first['articles'])} with evidence over "
                f"{len(set(first['articles']))} articles; `{a['questions']}` over `{a['pmc']}`, full text); "
                f"`{TRAINED}`: model `{a['model']}` as exported (two-stage search), `{TRAINED_DIVERSE}`: its "
                f"top {saved.get('candidates', 100)} re-ranked as the untrained `*_diverse` rows are; "
                + (f"`{TRAINED_TAIL}`: with its first ranks kept (`search.diverse=complete_tail`); "
                   if TRAINED_TAIL in folds[0] else "") +
                f"differences paired over articles; git {saved.get('git_hash')}.")
    elif a.get("pmc"):
        head = (f"PMC template questions ({len(first['articles'])} with evidence; "
                f"`{a['questions']}` over `{a['pmc']}`, full text); model `{a['model']}`; concept weight "
                f"{a['chosen']:g} (COVID-QA's choice) in the ablations; git {saved.get('git_hash')}.")
    else:
        head = (f"COVID-QA dev, folds {a['train_folds']} of {a['folds']} by article; models `{a['run']}` "
                f"(full MeSH 2024 graph); export settings of record (W=0.3, M=0.8, g=0.05, sentence cuts); "
                f"concept weight chosen on each fold's dev split: "
                f"{[f['chosen_concept_weight'] for f in saved['fold_info']]}; git {saved.get('git_hash')}.")
    lines = [head, "", "| row | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for name in folds[0]:
        cells = [f"{mean([mean(f[name]['questions'][m]) for f in folds]):.4f}" for m in metrics]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    gained = list(next(iter(saved["gains"].values()), {}))
    lines += ["", "| difference | " + " | ".join(f"{m} [95 % CI]" for m in gained) + " |",
              "|---|" + "---|" * len(gained)]
    for name, by_metric in saved["gains"].items():
        cells = [f"{g['gain']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}]" for g in (by_metric[m] for m in gained)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def pmc_main(args) -> int:
    """The rows on the PMC template questions with one exported model (``--model``)."""
    from gralc.data.benchmarks import DataConfig, pmc_benchmarks
    from gralc.evaluation.evidence import budget_counter
    from gralc.evaluation.methods import RunSettings
    from gralc.experiments.real_data import real_pipeline_config

    t0 = time.perf_counter()
    base = Pipeline(real_pipeline_config([f"encoder.cache_dir={args.cache_dir}/encodings", "encoder.device=cpu"],
                                         what="the PMC graph trial"))
    test = pmc_benchmarks(DataConfig(name="pmc", path=args.pmc, questions=args.questions), base.linker)[0]
    scorer = TrainedScorer.load(args.model)
    require_real_graph(scorer.pipeline_config, str(args.model))
    settings = RunSettings((1, 5, 10, 20), pieces=budget_counter(base.encoder))
    if args.rows == "crosssection":
        rows = crosssection_rows(scorer, base, test, settings)
        comparisons = crosssection_comparisons()
    else:
        pipe = Pipeline(with_runtime(scorer.pipeline_config, base.config))
        rows = graph_rows(args, scorer, pipe, test, settings, CandidateConfig(), args.chosen, PMC_METRICS)
        comparisons = None
    saved = run_metadata({"args": vars(args), "folds": [rows], "fold_info": [
        {"chosen_concept_weight": args.chosen, "learned": scorer.learned_values()}],
        "candidates": settings.candidates, "seconds": time.perf_counter() - t0})
    write_json_atomic(Path(args.out) / "graph_trial.partial.json", saved)  # before the bootstrap
    saved["gains"] = gains_of([rows], comparisons)
    write_json_atomic(Path(args.out) / "graph_trial.json", saved)
    print(report(saved))
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line (``python -m gralc.experiments.graph_trial --help``): writes graph_trial.json; 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    fold_run_arguments(ap, "a gralc.experiments.crossval variant folder (fold0, ...) trained with full MeSH")
    ap.add_argument("--variant", default="lora_lexical_small_late",
                    help="the run's gralc.experiments.crossval variant (its dev split)")
    ap.add_argument("--concept-weights", type=float, nargs="+", default=[0.05, 0.1, 0.2, 0.4])
    ap.add_argument("--sentence-evidence", type=float, default=0.3)
    ap.add_argument("--late-interaction", type=float, default=0.8)
    ap.add_argument("--phrase-weight", type=float, default=0.05)
    ap.add_argument("--cut-unit", choices=["word", "sentence"], default="sentence")
    ap.add_argument("--pmc", help="PMC mode: the JATS article folder")
    ap.add_argument("--questions", help="PMC mode: the template questions (gralc.data.crosssection_questions)")
    ap.add_argument("--model", help="PMC mode: the exported model (its own export settings)")
    ap.add_argument("--chosen", type=float, default=0.0, help="PMC mode: the concept weight of the ablations")
    ap.add_argument("--rows", choices=["all", "scoring", "concepts", "crosssection"], default="all",
                    help="all rows; scoring: not those that chunk again (GAT fusion, entity "
                         "boundaries, every part off); concepts: the full graph and the concept match; "
                         "crosssection (PMC mode): the model as exported, alone and section-diverse, "
                         "beside the untrained *_diverse rows and their plain counterparts")
    run_arguments(ap, "graph_trial.json")
    args = ap.parse_args(argv)
    if args.report:
        saved = read_json_untrusted(args.report, allow_interpolation=True)
        print(report(saved))
        if args.publish:
            publish_result(args.publish, saved)
        return 0
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    torch.set_grad_enabled(False)
    if args.pmc:
        if not (args.out and args.questions and args.model):
            ap.error("--pmc needs --questions, --model and --out")
        return pmc_main(args)
    if args.rows == "crosssection":
        ap.error("--rows crosssection is a PMC mode's rows (--pmc)")
    if not args.out or not args.run:
        ap.error("--run and --out are required (or --report, or --pmc)")
    t0 = time.perf_counter()
    bench, base_pipe, _, settings = covidqa_setup(args.data, args.cache_dir)
    search = CandidateConfig()
    folds, info = [], []
    for k in args.train_folds:
        scorer = TrainedScorer.load(selected_checkpoint(Path(args.run) / f"fold{k}"))
        require_real_graph(scorer.pipeline_config, f"fold {k} of {args.run}")
        scorer.model.set_scoring({"sentence_evidence": args.sentence_evidence, "late_interaction":
                                  args.late_interaction, "phrase_weight": args.phrase_weight,
                                  "cut_unit": args.cut_unit})
        side = cv_side(bench, args.folds, k, args.seed, "train")
        dev_q = dev_side(side, side.documents, args.variant, [])
        own = {q.gold_doc_id for q in dev_q.questions}
        dev = replace(dev_q, documents=[d for d in side.documents if d.id in own])
        test = cv_side(bench, args.folds, k, args.seed, "test")
        rows, fold_info = fold_rows(args, scorer, test, dev, base_pipe, settings, search)
        folds.append(rows)
        info.append(fold_info)
        print(f"fold {k} (c on dev {fold_info['chosen_concept_weight']:g}, {time.perf_counter() - t0:.0f} s): "
              + "; ".join(f"{n} {mean(v['questions']['ev_recall@512wp']):.4f} / {mean(v['questions']['ev_mrr']):.4f}"
                          for n, v in rows.items()), flush=True)
        partial = run_metadata({"args": vars(args), "folds": folds, "fold_info": info,
                                "seconds": time.perf_counter() - t0})
        write_json_atomic(Path(args.out) / "graph_trial.partial.json", partial)
    saved = run_metadata({"args": vars(args), "folds": folds, "fold_info": info,
                          "seconds": time.perf_counter() - t0})
    saved["gains"] = gains_of(folds)
    write_json_atomic(Path(args.out) / "graph_trial.json", saved)
    print(report(saved))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
