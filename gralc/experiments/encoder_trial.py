"""Encoders side by side on COVID-QA dev: the untrained rows with each encoder, paired
by question, five folds by article, and what each encoder costs.

    python -m gralc.experiments.encoder_trial \\
        --encoders all-MiniLM-L6-v2 multilingual-e5-small multilingual-e5-small-enpt \\
        --out results/encoder_trial
    python -m gralc.experiments.encoder_trial --report results/encoder_trial/encoder_trial.json \\
        --trained all-MiniLM-L6-v2=docs/results/two_stage_cv.json \\
        multilingual-e5-small=results/two_stage_e5/two_stage.json --publish encoder_trial

Each ``--encoders`` name's ``--rows`` run over the pooled 49 articles with the full MeSH 2024
graph, budgets always in MiniLM word-pieces, each row compared with the first encoder's by a
paired bootstrap over held-out articles; the cost (encoding speed, tokens per word-piece,
vector width, ``--train-batches``) is measured in the same run. ``--trained``, ``--training``
and ``--pubmedqa`` add other runs' rows. In full: docs/experiments.md."""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from gralc.data.folds import article_folds
from gralc.evaluation.methods import DEFAULT_METHODS, evaluate_method
from gralc.evaluation.significance import FoldPairs, paired_gain
from gralc.experiments.published import publish_result, run_arguments
from gralc.experiments.real_data import SHARED_DATA
from gralc.runinfo import run_metadata, seed_everything, write_json_atomic

logger = logging.getLogger("gralc.experiments.encoder_trial")
DEFAULT_DATA = SHARED_DATA / "covidqa/covidqa_dev.json"
#: the issue's untrained rows: fixed-size, late, structure-aware, multilevel and their hybrids
ROWS = ["naive", "late", "structure_aware", "multilevel",
        "naive_hybrid", "late_hybrid", "structure_aware_hybrid", "multilevel_hybrid"]
#: the dense rows the issue's bar is about (no BM25 in the score)
DENSE_ROWS = ("naive", "late", "structure_aware", "multilevel")
METRICS = ("ev_recall@256wp", "ev_recall@512wp", "ev_recall@1024wp", "ev_mrr", "ev_recall@5",
           "wa_ndcg@10", "mrr")
BAR_METRICS = ("ev_recall@512wp", "ev_mrr")
#: the trained rows of a two_stage_cv run compared across encoders
TRAINED_ROWS = ("exhaustive, float16", "two-stage, codes")


def per_question(per_query: list[dict], questions: list, fold_of: dict[str, int]) -> dict[str, list]:
    """The questions with resolved evidence: their ids, articles, folds and every metric's value."""
    kept = [(r, q) for r, q in zip(per_query, questions, strict=True) if "ev_mrr" in r]
    return {"ids": [q.id for _, q in kept], "articles": [q.gold_doc_id for _, q in kept],
            "folds": [fold_of[q.gold_doc_id] for _, q in kept],
            "questions": {m: [float(r[m]) for r, _ in kept] for m in METRICS}}


def fold_pairs(a: dict, b: dict, metric: str, folds: list[int] | None = None) -> list[FoldPairs]:
    """``a`` against ``b`` (two :func:`per_question` records of the same questions), one
    :class:`FoldPairs` per fold."""
    if a["ids"] != b["ids"]:
        raise ValueError("the two rows answered different questions: they cannot be paired")
    out = []
    for k in sorted(set(a["folds"])) if folds is None else folds:
        idx = [i for i, f in enumerate(a["folds"]) if f == k]
        out.append(FoldPairs([a["questions"][metric][i] for i in idx],
                             [b["questions"][metric][i] for i in idx],
                             [a["articles"][i] for i in idx]))
    return out


def fold_means(record: dict, metric: str) -> list[float]:
    """Per fold (in fold order): the mean of ``metric`` over its questions."""
    return [statistics.fmean(v for v, f in zip(record["questions"][metric], record["folds"], strict=True)
                             if f == k) for k in sorted(set(record["folds"]))]


def untrained_rows(encoder: str, rows: list[str], args) -> tuple[dict[str, dict], Any]:
    """Per row: the :func:`per_question` record of ``encoder`` on the pooled articles."""
    from gralc.experiments.crossval import covidqa_setup

    t0 = time.perf_counter()
    bench, pipe, prepared, settings = covidqa_setup(args.data, args.cache_dir, [f"encoder.model={encoder}"])
    fold_of = article_folds([d.id for d in bench.documents], args.folds, args.seed)
    specs = {m.name: m for m in DEFAULT_METHODS}
    out = {}
    for name in rows:
        r = evaluate_method(specs[name], bench, prepared, pipe, settings)
        out[name] = per_question(r.per_query, bench.questions, fold_of)
        out[name]["n_chunks"] = r.chunk_stats.get("n_chunks")
        logger.warning("%s %s: ev R@512wp %.4f (%.0f s)", encoder, name,
                       statistics.fmean(fold_means(out[name], "ev_recall@512wp")), time.perf_counter() - t0)
    return out, bench


def encoding_cost(encoders: list[str], texts: list[str], repeats: int) -> dict[str, dict]:
    """Per encoder: whole-document encoding seconds over ``texts`` (cache off, the encoders
    interleaved ``repeats`` times, the fastest pass kept), per 1,000 MiniLM word-pieces, its own
    tokens per MiniLM word-piece and its vector width."""
    import torch

    from gralc.encoding import DocumentEncoder, EncoderConfig
    from gralc.evaluation.evidence import budget_counter

    models = {name: DocumentEncoder(EncoderConfig(model=name, device="cpu", cache_dir=None)) for name in encoders}
    pieces = budget_counter(next(iter(models.values())))
    minilm = sum(len(pieces.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
    own = {name: sum(len(enc.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)
           for name, enc in models.items()}
    seconds: dict[str, list[float]] = {name: [] for name in encoders}
    for enc in models.values():  # warm-up: first-call allocations are not the encoder's cost
        enc.encode_documents(texts[:1], progress=False)
    for _ in range(repeats):
        for name, enc in models.items():
            t0 = time.perf_counter()
            enc.encode_documents(texts, progress=False)
            seconds[name].append(time.perf_counter() - t0)
    first = min(seconds[encoders[0]])
    return {name: {"seconds": min(s), "seconds_all": s, "ratio_to_first": min(s) / first,
                   "s_per_1k_minilm_pieces": 1000 * min(s) / minilm,
                   "own_tokens_per_minilm_piece": own[name] / minilm,
                   "dim": models[name].dim, "precision": str(models[name].precision),
                   "texts": len(texts), "minilm_pieces": minilm, "threads": torch.get_num_threads()}
            for name, s in seconds.items()}


def training_cost(encoders: list[str], batches: int, repeats: int, cache_dir: str, data: str) -> dict[str, dict]:
    """Per encoder: seconds per training batch of the model of record's recipe (the COVID-QA
    fold-0 training side, the full MeSH 2024 graph; :func:`gralc.experiments.crossval.seconds_per_batch`:
    a warm-up run, then a timed run of ``batches`` batches; the encoders interleaved ``repeats``
    times), and the ratio to the first encoder, measured in one run."""
    from gralc.experiments.crossval import seconds_per_batch
    from gralc.experiments.real_data import knowledge_overrides

    seconds: dict[str, list[float]] = {enc: [] for enc in encoders}
    for _ in range(repeats):  # interleaved: a slower spell of a shared machine hits every encoder
        for enc in encoders:
            seconds[enc] += seconds_per_batch([*knowledge_overrides(), f"pipeline.encoder.model={enc}"], batches,
                                  cache_dir, data, 1)
    first = statistics.fmean(seconds[encoders[0]])
    return {enc: {"s_per_batch": s, "ratio_to_first": statistics.fmean(s) / first, "batches": batches}
            for enc, s in seconds.items()}


def untrained_gains(rows: dict[str, dict[str, dict]], encoders: list[str], resamples: int) -> dict:
    """``{encoder: {row: {metric: PairedGain dict}}}``: every encoder against the first."""
    ref = encoders[0]
    return {enc: {row: {m: paired_gain(fold_pairs(rec, rows[ref][row], m), resamples).as_dict()
                        for m in BAR_METRICS}
                  for row, rec in rows[enc].items() if row in rows[ref]}
            for enc in encoders[1:]}


def trained_runs(specs: list[str], training: list[str], resamples: int) -> dict | None:
    """The ``--trained`` two_stage_cv runs (and ``--training`` cv.json seconds per epoch) of each
    encoder, summarised and compared with the first on the folds every run covers."""

    if not specs:
        return None
    runs = {}
    for name, path, saved in named_runs(specs, "--trained", ("args", "folds"),
                                        "gralc.experiments.two_stage_cv (two_stage.json)"):
        runs[name] = {"path": str(path), "git_hash": saved.get("git_hash"),
                      "folds": list(saved["args"]["train_folds"]), "rows": saved["folds"]}
    for name, _, saved in named_runs(training, "--training", ("rows",),
                                     "gralc.experiments.crossval --train (cv.json)"):
        rows = saved["rows"]
        epochs = [r.get("s_per_epoch") for r in rows.values() if r.get("s_per_epoch")]
        runs.setdefault(name, {})["s_per_epoch"] = epochs[0] if epochs else None
    names = list(runs)
    ref = runs[names[0]]
    out: dict[str, Any] = {"encoders": {}, "gains": {}}
    for name, run in runs.items():
        if "rows" not in run:
            raise BadRunFile(f"--training {name}=...: give its --trained {name}=two_stage.json too")
    common = sorted(set.intersection(*(set(run["folds"]) for run in runs.values())))
    if not common:
        folds = ", ".join(f"{n}: {r['folds']}" for n, r in runs.items())
        raise BadRunFile(f"--trained: the runs share no fold ({folds})")
    for name, run in runs.items():
        summary = {}
        for row in TRAINED_ROWS:
            per_fold = [run["rows"][run["folds"].index(k)][row] for k in common]
            summary[row] = {m: statistics.fmean(statistics.fmean(f["questions"][m]) for f in per_fold)
                            for m in METRICS}
            summary[row]["bytes_per_chunk"] = statistics.fmean(
                f["bytes_per_token"] * f["n_tokens"] / f["n_chunks"] for f in per_fold)
            summary[row]["ms_per_question"] = statistics.fmean(f["ms_per_question"] for f in per_fold)
        out["encoders"][name] = {"path": run["path"], "git_hash": run["git_hash"], "folds": common,
                                 "s_per_epoch": run.get("s_per_epoch"), "rows": summary}
        if name == names[0]:
            continue
        gains = {}
        for row in TRAINED_ROWS:
            gains[row] = {}
            for m in BAR_METRICS:
                pairs = []
                for k in common:
                    a = run["rows"][run["folds"].index(k)][row]
                    b = ref["rows"][ref["folds"].index(k)][row]
                    if a["articles"] != b["articles"]:
                        raise ValueError(f"--trained {name} fold {k}: other questions than {names[0]}'s")
                    pairs.append(FoldPairs(a["questions"][m], b["questions"][m], a["articles"]))
                gains[row][m] = paired_gain(pairs, resamples).as_dict()
        out["gains"][name] = gains
    return out


def pubmedqa_runs(specs: list[str]) -> dict | None:
    """``--pubmedqa ENCODER=results.json`` (``gralc.experiments.pubmedqa --seeds`` runs, the fixed
    strategies only): per encoder, each strategy's test MRR and R@1 (500 official test
    questions, relevance: a chunk of the gold abstract)."""

    if not specs:
        return None
    out = {}
    for name, path, saved in named_runs(specs, "--pubmedqa", ("rows", "n_test"),
                                        "gralc.experiments.pubmedqa (results.json)"):
        meta = saved.get("run_metadata", {})
        out[name] = {"path": str(path), "git_hash": meta.get("git_hash"), "n_test": saved["n_test"],
                     "rows": {row: {"mrr": r["test/mrr"]["mean"], "recall@1": r["test/recall@1"]["mean"]}
                              for row, r in saved["rows"].items()}}
    return out


class BadRunFile(SystemExit):
    """A ``--trained`` / ``--training`` / ``--pubmedqa`` argument or file that cannot be used
    (the message names it and the fix; the command exits 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


def named_runs(specs: list[str], flag: str, needs: tuple[str, ...],
               writer: str) -> list[tuple[str, Path, dict]]:
    """``(encoder, path, run)`` of each ``ENCODER=PATH`` of ``flag`` (:func:`parse_pair`,
    :func:`read_run`)."""
    out = []
    for spec in specs:
        name, path = parse_pair(spec, flag)
        out.append((name, path, read_run(path, flag, needs, writer)))
    return out


def read_run(path: Path, flag: str, needs: tuple[str, ...], writer: str) -> dict:
    """A run file of ``flag``, read as untrusted, with the top-level keys ``needs``."""
    from gralc.safe_load import read_json_untrusted

    saved = read_json_untrusted(path)
    missing = [k for k in needs if not isinstance(saved, dict) or k not in saved]
    if missing:
        raise BadRunFile(f"{flag} {path}: no {', '.join(missing)} in it; give the file {writer} writes")
    return saved


def parse_pair(spec: str, flag: str) -> tuple[str, Path]:
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise BadRunFile(f"{flag} {spec!r}: give ENCODER=PATH, e.g. {flag} multilingual-e5-small=results/x.json")
    if not Path(path).is_file():
        raise BadRunFile(f"{flag} {spec!r}: no file at {path}")
    return name, Path(path)


def summary_table(saved: dict) -> str:
    """One row per encoder (the README's copy): the best dense untrained row and the best
    untrained row by ev R@512wp (mean over folds), the trained model where measured (its folds),
    and the encoding time against the first encoder."""
    dense = [r for r in saved["args"]["rows"] if r in DENSE_ROWS]
    trained = (saved.get("trained") or {}).get("encoders", {})
    lines = ["| encoder | best dense untrained row, ev R@512wp / ev MRR | best untrained row, ev R@512wp / "
             "ev MRR | trained GraLC (exact), ev R@512wp / ev MRR | encoding time |", "|---|---|---|---|---|"]
    for enc in saved["encoders"]:
        rows = saved["rows"][enc]

        def cell(names: list[str], rows=rows) -> str:
            mean = {n: {m: statistics.fmean(fold_means(rows[n], m)) for m in BAR_METRICS} for n in names}
            best = max(names, key=lambda n: mean[n]["ev_recall@512wp"])
            return f"{mean[best]['ev_recall@512wp']:.3f} / {mean[best]['ev_mrr']:.3f} ({best})"

        t = trained.get(enc)
        tcell = (f"{t['rows']['exhaustive, float16']['ev_recall@512wp']:.3f} / "
                 f"{t['rows']['exhaustive, float16']['ev_mrr']:.3f} (fold{'s' if len(t['folds']) > 1 else ''} "
                 f"{', '.join(map(str, t['folds']))})") if t else "not trained"
        lines.append(f"| {enc} | {cell(dense) if dense else ''} | {cell(list(rows))} | {tcell} | "
                     f"{saved['cost'][enc]['ratio_to_first']:.2f}x |")
    return "\n".join(lines) + "\n"


def report(saved: dict) -> str:
    """Markdown: the untrained rows per encoder (mean over folds) with the paired gain over the
    first encoder, the cost table and, when present, the trained rows."""
    encoders = saved["encoders"]
    ref = encoders[0]
    lines = [summary_table(saved), f"COVID-QA dev, {saved['n_questions']} questions with evidence, {saved['args']['folds']} "
             "folds by article, full MeSH 2024; budgets in all-MiniLM-L6-v2 word-pieces for every "
             f"encoder. Gain: over {ref} on the same questions, 95 % paired bootstrap interval over "
             "held-out articles (10,000 resamples).\n",
             "| row | encoder | ev R@512wp | ev MRR | wa nDCG@10 | gain ev R@512wp [95 % CI] | gain ev MRR [95 % CI] |",
             "|---|---|---|---|---|---|---|"]
    for row in saved["args"]["rows"]:
        for enc in encoders:
            rec = saved["rows"][enc][row]
            cells = [f"{statistics.fmean(fold_means(rec, m)):.3f}" for m in ("ev_recall@512wp", "ev_mrr", "wa_ndcg@10")]
            g = saved["gains"].get(enc, {}).get(row)
            gains = [f"{g[m]['gain']:+.3f} [{g[m]['low']:+.3f}, {g[m]['high']:+.3f}]" for m in BAR_METRICS] if g else ["", ""]
            lines.append(f"| {row} | {enc} | " + " | ".join(cells + gains) + " |")
    cost = saved["cost"]
    first = next(iter(cost.values()))
    lines += ["", f"Encoding cost, measured in one run: whole-document late-chunking encoding of "
              f"{first['texts']} articles ({first['minilm_pieces']:,} MiniLM word-pieces), cache off, "
              f"encoders interleaved, fastest of {len(first['seconds_all'])} passes, {first['threads']} "
              f"threads, each encoder at its `encoder.precision`.\n",
              "| encoder | precision | s per 1k MiniLM pieces | time vs first | own tokens per MiniLM piece | dim |",
              "|---|---|---|---|---|---|"]
    for enc, c in cost.items():
        lines.append(f"| {enc} | {c['precision']} | {c['s_per_1k_minilm_pieces']:.3f} | "
                     f"{c['ratio_to_first']:.2f}x | {c['own_tokens_per_minilm_piece']:.2f} | {c['dim']} |")
    train = saved.get("training_cost")
    if train:
        lines += ["", "Training cost, measured in one run: seconds per training batch of the model of "
                  f"record's recipe (COVID-QA fold 0's training side, full MeSH 2024, "
                  f"{next(iter(train.values()))['batches']} batches per timed run).\n",
                  "| encoder | s per batch | time vs first |", "|---|---|---|"]
        for enc, t in train.items():
            lines.append(f"| {enc} | {statistics.fmean(t['s_per_batch']):.2f} | {t['ratio_to_first']:.2f}x |")
    trained = saved.get("trained")
    if trained:
        tref = next(iter(trained["encoders"]))
        lines += ["", f"Trained: the model of record's recipe (lora_lexical_small_late, its export "
                  f"scoring) trained per fold on each encoder; gain over {tref} on the folds every run covers, "
                  "paired bootstrap over held-out articles.\n",
                  "| row | encoder | folds | ev R@512wp | ev MRR | gain ev R@512wp [95 % CI] | "
                  "gain ev MRR [95 % CI] | index bytes/chunk | s/epoch |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for row in TRAINED_ROWS:
            for enc, t in trained["encoders"].items():
                r = t["rows"][row]
                g = trained["gains"].get(enc, {}).get(row)
                gains = [f"{g[m]['gain']:+.3f} [{g[m]['low']:+.3f}, {g[m]['high']:+.3f}]" for m in BAR_METRICS] if g else ["", ""]
                spe = f"{t['s_per_epoch']:.0f}" if t.get("s_per_epoch") else ""
                lines.append(f"| {row} | {enc} | {','.join(map(str, t['folds']))} | {r['ev_recall@512wp']:.3f} | "
                             f"{r['ev_mrr']:.3f} | " + " | ".join(gains) +
                             f" | {r['bytes_per_chunk']:,.0f} | {spe} |")
        lines.append("\nRun files: " + "; ".join(f"{enc} `{t['path']}` (git {str(t['git_hash'])[:10]})"
                                                 for enc, t in trained["encoders"].items())
                     + ". Search times are not compared here: the runs did not share one machine state.")
    pubmed = saved.get("pubmedqa")
    if pubmed:
        rows = [r for r in next(iter(pubmed.values()))["rows"] if all(r in p["rows"] for p in pubmed.values())]
        lines += ["", f"PubMedQA* ({next(iter(pubmed.values()))['n_test']} official test questions over 1,000 "
                  "abstracts, relevance: a chunk of the gold abstract), the fixed strategies, test MRR / R@1 "
                  "(`python -m gralc.experiments.pubmedqa --seeds --set pipeline.encoder.model=ENCODER`):\n",
                  "| strategy | " + " | ".join(pubmed) + " |", "|---|" + "---|" * len(pubmed)]
        for row in rows:
            lines.append(f"| {row} | " + " | ".join(f"{p['rows'][row]['mrr']:.4f} / {p['rows'][row]['recall@1']:.3f}"
                                                   for p in pubmed.values()) + " |")
    lines.append("\nCommands:\n\n- `" + " ".join(["python -m gralc.experiments.encoder_trial", *saved["argv"][1:]])
                 + f"` (git {str(saved.get('git_hash'))[:10]})")
    for added in saved.get("added", []):
        lines.append("- added to it: `" + " ".join(["python -m gralc.experiments.encoder_trial", *added["argv"][1:]])
                     + f"` (git {str(added.get('git_hash'))[:10]})")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="SQuAD-format JSON (whole articles)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--encoders", nargs="+", default=["all-MiniLM-L6-v2", "multilingual-e5-small"],
                    help="encoder.model values; the first is the reference")
    ap.add_argument("--rows", nargs="+", default=ROWS, choices=[m.name for m in DEFAULT_METHODS])
    ap.add_argument("--speed-articles", type=int, default=6, help="articles encoded for the cost")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--train-batches", type=int, default=0,
                    help="also time this many training batches of the record's recipe per encoder")
    ap.add_argument("--trained", nargs="*", default=[], metavar="ENCODER=two_stage.json")
    ap.add_argument("--training", nargs="*", default=[], metavar="ENCODER=cv.json")
    ap.add_argument("--pubmedqa", nargs="*", default=[], metavar="ENCODER=results.json",
                    help="gralc.experiments.pubmedqa --seeds runs (fixed strategies), one per encoder")
    run_arguments(ap, "encoder_trial.json")
    args = ap.parse_args(argv)
    try:
        return run(args, argv)
    except BadRunFile as e:  # one message naming the argument or file and the fix, exit 2
        ap.error(e.message)


def run(args: argparse.Namespace, argv: list[str] | None) -> int:
    from gralc.safe_load import read_json_untrusted

    if args.report:
        saved = read_json_untrusted(args.report)
        if args.trained or args.train_batches or args.pubmedqa:  # measured later: added
            if args.pubmedqa:
                saved["pubmedqa"] = pubmedqa_runs(args.pubmedqa)
            if args.trained:
                saved["trained"] = trained_runs(args.trained, args.training, args.resamples)
            if args.train_batches:
                timed_encoders = [e for e in saved["encoders"] if e in args.encoders]
                saved["training_cost"] = training_cost(timed_encoders, args.train_batches,
                                                       args.repeats, args.cache_dir, args.data)
            added = run_metadata({"argv": [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]})
            saved.setdefault("added", []).append(added)
            if args.out:  # the report with its additions, for a later --report
                write_json_atomic(Path(args.out) / "encoder_trial.json", saved)
        print(report(saved))
        if args.publish:
            publish_result(args.publish, saved)
        return 0
    if not args.out:
        raise BadRunFile("--out is required (or --report)")
    trained = trained_runs(args.trained, args.training, args.resamples)  # bad files refused first
    pubmedqa = pubmedqa_runs(args.pubmedqa)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    seed_everything(args.seed)
    t0 = time.perf_counter()
    rows, bench = {}, None
    for enc in args.encoders:
        rows[enc], bench = untrained_rows(enc, args.rows, args)
    texts = [d.text for d in bench.documents[: args.speed_articles]]
    cost = encoding_cost(args.encoders, texts, args.repeats)
    train_cost = (training_cost(args.encoders, args.train_batches, args.repeats, args.cache_dir, args.data)
                  if args.train_batches else None)
    saved = run_metadata({"args": vars(args), "encoders": args.encoders, "rows": rows,
                          "n_questions": len(rows[args.encoders[0]][args.rows[0]]["ids"]),
                          "gains": untrained_gains(rows, args.encoders, args.resamples),
                          "cost": cost, "training_cost": train_cost, "trained": trained, "pubmedqa": pubmedqa, "seconds": time.perf_counter() - t0})
    write_json_atomic(Path(args.out) / "encoder_trial.json", saved)
    print(report(saved))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
