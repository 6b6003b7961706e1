"""The final COVID-QA model: trained on all 49 dev articles, exported, and run through the
three entry points a user has, which must rank alike.

    python -m gralc.experiments.final_model --variant lora_lexical_small --epochs 2 --out results/covidqa_final

The entry points: ``python -m gralc.index`` then ``python -m gralc.search`` (the CLI for
``--cli-questions`` questions, ``Retriever.load(...).search`` for every question) and
``python eval.py data=squad models=[EXPORT]`` (its ``gralc`` row's top 20). Prints the learned
values, the eval row's evidence metrics and how many questions rank identically.
``--sentence-evidence``, ``--late-interaction``, ``--phrase-weight``, ``--concept-weight`` and
``--cut-unit`` set the export; ``--reuse`` / ``--checkpoint CKPT`` export an earlier model:
docs/experiments.md. Knowledge: the full MeSH 2024 graph of the shared data folder, as
``gralc.experiments.crossval``; a model or run on the built-in demo list is refused.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from gralc.config import CONFIG_DIR, load_config
from gralc.data.benchmarks import squad_benchmark
from gralc.experiments.crossval import (
    DEFAULT_DATA,
    VARIANTS,
    choose_sentence_evidence,
    dev_side,
)
from gralc.experiments.real_data import (
    REPO,
    pipeline_part,
    real_pipeline_config,
    require_real_graph,
    with_real_knowledge,
)
from gralc.model.persistence import export
from gralc.runinfo import run_metadata, write_json_atomic
from gralc.safe_load import read_json_untrusted
from gralc.training.config import TrainConfig
from gralc.training.run import train


def sh(*cmd: str) -> str:
    """Run a CLI of this repository; its stdout (stderr passes through)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, *cmd], cwd=REPO, env=env, check=True,
                          stdout=subprocess.PIPE, text=True).stdout


def sentence_evidence(args, ckpt: str, bench) -> tuple[float | None, dict[float, float]]:
    """The export's ``model.sentence_evidence``: None (as trained), the one weight given, or the
    weight with the best dev evidence MRR (dev split of training, all articles searched)."""
    if len(args.sentence_evidence) <= 1:
        return (args.sentence_evidence or [None])[0], {}
    from gralc.evaluation.evidence import budget_counter
    from gralc.evaluation.methods import RunSettings
    from gralc.pipeline import Pipeline
    from gralc.retrieval.trained.scorer import TrainedScorer

    pipe = Pipeline(real_pipeline_config([
        f"encoder.cache_dir={args.cache_dir}/encodings", "encoder.device=cpu",
        *pipeline_part(args.set)], what="gralc.experiments.final_model"))
    prepared = pipe.prepare(bench.documents, progress=False)
    settings = RunSettings((1, 5, 10, 20), pieces=budget_counter(pipe.encoder))
    dev = dev_side(bench, bench.documents, args.variant, args.set)
    return choose_sentence_evidence(TrainedScorer.load(ckpt), ckpt, dev, prepared, pipe, settings,
                                    args.sentence_evidence)


def main(argv: list[str] | None = None) -> int:
    """The command line (``python -m gralc.experiments.final_model --help``): writes the final model; 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--variant", default="full", choices=list(VARIANTS))
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--set", nargs="*", default=[], help="extra train.py key=value overrides")
    ap.add_argument("--cli-questions", type=int, default=10)
    ap.add_argument("--sentence-evidence", type=float, nargs="*", default=[], metavar="W",
                    help="export with model.sentence_evidence=W (several: chosen on the dev "
                         "split; default: as trained)")
    ap.add_argument("--late-interaction", type=float, default=None, metavar="M",
                    help="export with scoring.late_interaction=M (chosen by gralc.experiments.inference_cv; "
                         "default: as trained, off)")
    ap.add_argument("--phrase-weight", type=float, default=None, metavar="G",
                    help="export with model.phrase_weight=G (default: as trained, off)")
    ap.add_argument("--concept-weight", type=float, default=None, metavar="C",
                    help="export with model.concept_weight=C (the concept match; default: as trained, off)")
    ap.add_argument("--cut-unit", choices=["word", "sentence"], default=None,
                    help="export with pipeline.chunking.boundary.cut_unit (default: as trained)")
    ap.add_argument("--reuse", action="store_true", help="reuse the model an earlier run trained and exported in --out")
    ap.add_argument("--checkpoint", default=None,
                    help="export this trained checkpoint (a .ckpt of this variant) instead of training")
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--out", default="results/covidqa_final")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    args.set = with_real_knowledge(args.set)  # the full MeSH 2024 unless --set names its own
    t0 = time.perf_counter()
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [
        "data=squad", f"data.path={args.data}", f"paths.output_dir={out / 'train'}",
        f"paths.cache_dir={args.cache_dir}", f"pipeline.encoder.cache_dir={args.cache_dir}/encodings",
        "pipeline.encoder.device=cpu", "trainer.accelerator=cpu", f"trainer.max_epochs={args.epochs}",
        *VARIANTS[args.variant], *args.set])
    require_real_graph(cfg, "gralc.experiments.final_model")
    done = out / "train" / "result.json"
    if args.checkpoint:
        ckpt = Path(args.checkpoint).resolve()
        if not ckpt.is_file():
            ap.error(f"--checkpoint {ckpt} does not exist")
        result = read_json_untrusted((ckpt.parent.parent / "result.json"), allow_interpolation=True) \
            if (ckpt.parent.parent / "result.json").is_file() else {"selected": "given", "learned_values": {}}
        result = {**result, "best_checkpoint": str(ckpt)}
    elif args.reuse and done.is_file():
        result = read_json_untrusted(done, allow_interpolation=True)
    else:
        result = train(cfg)
    if args.checkpoint or args.reuse:  # a model trained elsewhere or earlier: its own knowledge
        from gralc.model.persistence import load_trained

        require_real_graph(load_trained(result["best_checkpoint"]).pipeline_config,
                           f"gralc.experiments.final_model ({result['best_checkpoint']})")
    bench = squad_benchmark(args.data)
    chosen, dev_mrr = sentence_evidence(args, result["best_checkpoint"], bench)
    settings = {k: v for k, v in (("sentence_evidence", chosen),
                                  ("late_interaction", args.late_interaction),
                                  ("phrase_weight", args.phrase_weight),
                                  ("concept_weight", args.concept_weight),
                                  ("cut_unit", args.cut_unit)) if v is not None}
    exp = export(Path(result["best_checkpoint"]), out / "export", force=True, settings=settings)
    t_train = time.perf_counter() - t0
    index = out / "index"
    sh("-m", "gralc.index", args.data, f"encoder.cache_dir={args.cache_dir}/encodings",
       "--model", str(exp), "--out", str(index), "--force")
    sh("eval.py", "data=squad", f"data.path={args.data}", f"models=[{exp}]", "methods=[bm25]",
       f"paths.output_dir={out / 'eval'}", "paths.force=true", f"paths.cache_dir={args.cache_dir}",
       *[o for o in args.set if o.startswith("pipeline.knowledge.")])
    rows = [json.loads(line) for line in (out / "eval" / "per_query.jsonl").open()]
    evaluated = {r["question_id"]: r["top"] for r in rows if r["method"] == "gralc"}
    payload = read_json_untrusted((out / "eval" / "metrics.json"), allow_interpolation=True)
    metrics = next(rows["gralc"] for name, rows in payload.items() if name != "run")
    from gralc.inference import Retriever

    retriever = Retriever.load(index)
    same_api = sum(
        [h.chunk.chunk_id for h in retriever.search(q.text, k=20)] == evaluated[q.id]
        for q in bench.questions)
    same_cli = 0
    for q in bench.questions[: args.cli_questions]:
        hits = [json.loads(line) for line in
                sh("-m", "gralc.search", str(index), q.text, "-k", "20", "--format", "json").splitlines()]
        same_cli += [h["chunk_id"] for h in hits] == evaluated[q.id]
    print(f"# final COVID-QA model: variant {args.variant} ({' '.join(VARIANTS[args.variant] + args.set)}), "
          f"late interaction {args.late_interaction}, term-pair BM25 {args.phrase_weight}, "
          f"concept match {args.concept_weight}, cuts at "
          f"{args.cut_unit or 'as trained'}, sentence evidence {chosen} (dev ev MRR per weight: "
          f"{ {f'{w:g}': round(v, 4) for w, v in dev_mrr.items()} }), "
          + (f"checkpoint {args.checkpoint} exported (trained elsewhere), {t_train:.0f} s" if args.checkpoint
             else f"{args.epochs} epochs on all {len(bench.documents)} articles, {t_train:.0f} s"))
    print(f"selected: {result['selected']}; learned values: "
          + ", ".join(f"{k}={v:.4f}" for k, v in result["learned_values"].items()))
    print("gralc eval's gralc row: " + ", ".join(
        f"{k} {metrics[k]:.4f}" for k in ("ev_mrr", "ev_recall@5", "ev_recall@512wp", "wa_ndcg@10", "mrr")))
    print(f"identical top-20 through gralc.index + Retriever.search: {same_api}/{len(bench.questions)}; "
          f"through the gralc.search CLI: {same_cli}/{min(args.cli_questions, len(bench.questions))}")
    write_json_atomic(out / "final.json", run_metadata({
        "args": vars(args), "train": result, "metrics": metrics, "sentence_evidence": chosen,
        "dev_ev_mrr_by_weight": dev_mrr, "same_api": same_api,
        "same_cli": same_cli, "n_questions": len(bench.questions)}))
    return 0 if same_api == len(bench.questions) else 1


if __name__ == "__main__":
    raise SystemExit(main())
