"""What a training run costs, as a number that holds across CPUs: training seconds x the
encoder's tokens/s on the same machine in the same run / 10^6 (issue 57).

    python -m gralc.experiments.training_cost --out results/training_cost \\
        --arm "record=" --arm "last 2 layers=lora.layers=2"

Measures the frozen encoder's full-document throughput (synthetic texts; fp32 and, where the
CPU has native bf16, bf16; the best counts), then trains each ``--arm`` (``NAME=override,...``
on top of the record's recipe, ``--variant``) on COVID-QA fold ``--fold`` from a cold cache
(a fresh folder: encodings, linking and features built as a first run builds them) and
times its phases (:class:`PhaseTimer`: features and setup, training batches, their backward,
validation). Writes ``--out/training_cost.json``; its table: :func:`report`. One experiment at
a time on 2 cores: timings of two runs side by side mean nothing."""

from __future__ import annotations

import argparse
import os
import random
import re
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pytorch_lightning as pl
import torch

from gralc.config import ConfigError
from gralc.experiments.published import finish_result

WORDS = (
    "metformin insulin glomerular filtration rate creatinine lactic acidosis patients cohort "
    "randomised trial hazard ratio confidence interval tumour necrosis factor expression "
    "synovium inflammation cardiovascular mortality renal impairment dose adjustment baseline "
    "follow-up retrospective analysis significant reduction increased risk association with the "
    "of in and was were for by after before during compared between among treated untreated"
).split()


def make_texts(n_texts: int, n_sentences: int, seed: int = 0) -> list[str]:
    """Synthetic biomedical-style texts: ``n_sentences`` sentences of 8-20 words each.

    >>> len(make_texts(2, 3))
    2
    """
    rng = random.Random(seed)
    return [" ".join(" ".join(rng.choices(WORDS, k=rng.randint(8, 20))).capitalize() + "."
                     for _ in range(n_sentences)) for _ in range(n_texts)]


def encoder_throughput(precision: str, n_texts: int = 8, n_sentences: int = 60,
                       model: str | None = None) -> dict:
    """Full-document encoding speed of the frozen encoder at ``precision`` (``fp32``/``bf16``):
    ``{precision, texts, tokens, windows, seconds, tokens_per_s}`` (one warm-up first).

    Example: ``encoder_throughput("fp32", 2, 20)["tokens_per_s"]`` -> e.g. ``9000.0``."""
    from gralc.encoding.encoder import DocumentEncoder, EncoderConfig

    texts = make_texts(n_texts, n_sentences)
    encoder = DocumentEncoder(EncoderConfig(device="cpu", precision=precision, cache_dir=None,
                                            **({"model": model} if model else {})))
    encoder.encode_document(texts[0][:2000])  # warm-up
    start = time.perf_counter()
    out = encoder.encode_documents(texts, progress=False)
    seconds = time.perf_counter() - start
    tokens = sum(te.n_tokens for te in out)
    return {"precision": precision, "texts": n_texts, "tokens": tokens,
            "windows": sum(len(te.windows) for te in out), "seconds": seconds,
            "tokens_per_s": tokens / seconds, "model": encoder.model_id}


def best_throughput() -> tuple[float, list[dict]]:
    """``(tokens/s at the best precision this CPU runs, every measured row)``: fp32, and bf16
    only where the CPU has native bf16 (elsewhere it is ~5x slower, never the best)."""
    from gralc.encoding.precision import native_bf16

    rows = [encoder_throughput("fp32")]
    if native_bf16(torch.device("cpu"))[0]:
        rows.append(encoder_throughput("bf16"))
    return max(r["tokens_per_s"] for r in rows), rows


class PhaseTimer(pl.Callback):
    """Wall seconds per phase of a fit: ``fit`` (all of trainer.fit), ``train_batches`` (every
    training step: forward, backward, optimiser), ``backward``, ``validation`` (every pass,
    the initial one included), and the step count.

    Example: ``train(cfg, callbacks=[timer := PhaseTimer()]); timer.seconds["backward"]``."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.steps = 0
        self._open: dict[str, float] = {}

    def _begin(self, key: str) -> None:
        self._open[key] = time.perf_counter()

    def _end(self, key: str) -> None:
        if key in self._open:
            self.seconds[key] += time.perf_counter() - self._open.pop(key)

    def on_fit_start(self, trainer, pl_module) -> None:
        self._begin("fit")

    def on_fit_end(self, trainer, pl_module) -> None:
        self._end("fit")

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self._begin("train_batches")

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._end("train_batches")
        self.steps += 1

    def on_before_backward(self, trainer, pl_module, loss) -> None:
        self._begin("backward")

    def on_after_backward(self, trainer, pl_module) -> None:
        self._end("backward")

    def on_validation_start(self, trainer, pl_module) -> None:
        self._begin("validation")

    def on_validation_end(self, trainer, pl_module) -> None:
        self._end("validation")


def arm_config(overrides: list[str], variant: str, fold: int, data: str, threads: int, tmp: Path):
    """The TrainConfig of one arm: ``variant`` + ``overrides`` on ``fold``, caches under ``tmp``
    (ConfigError on a bad override)."""
    from gralc.config import CONFIG_DIR, load_config
    from gralc.experiments.crossval import fold_overrides
    from gralc.experiments.real_data import with_real_knowledge
    from gralc.training.config import TrainConfig

    return load_config(TrainConfig, CONFIG_DIR / "train.yaml", [
        *fold_overrides(data, (5, fold, 0), tmp / "run", tmp / "cache", 2, threads, variant),
        *with_real_knowledge(["callbacks.checkpoint.monitor=val/ev_mrr", *overrides])])


def time_arm(overrides: list[str], variant: str, fold: int, data: str, threads: int, keep: Path | None) -> dict:
    """Train ``variant`` + ``overrides`` on ``fold`` from a cold cache; its phases' seconds."""
    from gralc.training.run import train

    with tempfile.TemporaryDirectory(prefix="gralc-cost-") as tmp:
        cfg = arm_config(overrides, variant, fold, data, threads, Path(tmp))
        if keep is not None:
            cfg.paths.output_dir = str(keep)
        timer = PhaseTimer()
        start = time.perf_counter()
        result = train(cfg, callbacks=[timer])
        total = time.perf_counter() - start
    phases = dict(timer.seconds)
    phases["before_fit"] = total - phases.get("fit", 0.0)  # config checks, features (cold), model
    phases["forward_and_step"] = phases.get("train_batches", 0.0) - phases.get("backward", 0.0)
    return {"overrides": overrides, "seconds": total, "phases": phases, "steps": timer.steps,
            "monitor": result.get("monitor"), "best_score": result.get("best_score"),
            "initial_score": result.get("initial_score"), "selected": result.get("selected"),
            "checkpoint": str(result.get("best_checkpoint"))}


def _runs(saved: dict) -> list[dict]:
    """The measuring runs of a result: itself, or with ``--combine`` the runs it merged."""
    return saved.get("runs") or [saved]


def report(saved: dict) -> str:
    """Markdown: each arm's seconds, cost (seconds x its run's tokens/s / 10^6), ratio to the
    first arm, dev score and phases; one line per measuring run (encoder speed, CPU, git)."""
    arms = saved["arms"]
    first = next(iter(arms.values()))["seconds"] if arms else 1.0
    phases = ("before_fit", "train_batches", "backward", "forward_and_step", "validation")
    lines = []
    for run in _runs(saved):
        measured = ", ".join(f"{r['precision']} {r['tokens_per_s']:,.0f}" for r in run["throughput"])
        lines.append(
            f"- {'; '.join(f'*{n}*' for n in (run['arm_names'] if 'arm_names' in run else arms))}: encoder "
            f"`{run['throughput'][0]['model']}` {run['tokens_per_s']:,.0f} tokens/s at its best "
            f"precision ({measured}) in the same run; {run.get('cpu_model')}, "
            f"{run['args']['threads']} threads; fold {run['args']['fold']} of COVID-QA dev, recipe "
            f"`{run['args']['variant']}`, cold cache; git {run.get('git_hash')}.")
    lines += ["", "| arm | seconds | cost (s x tokens/s / 10^6) | vs first | steps | dev score (selected) | "
              + " | ".join(phases) + " |", "|---|" + "---:|" * (5 + len(phases))]
    for name, arm in arms.items():
        cost = arm["seconds"] * arm.get("tokens_per_s", saved.get("tokens_per_s", 0.0)) / 1e6
        score = (f"{arm['best_score']:.4f} ({arm.get('selected')})"
                 if isinstance(arm.get("best_score"), float) else "")
        lines.append(f"| {name} | {arm['seconds']:.0f} | {cost:.2f} | {arm['seconds'] / first:.2f} | "
                     f"{arm['steps']} | {score} | "
                     + " | ".join(f"{arm['phases'].get(p, 0.0):.0f}" for p in phases) + " |")
    return "\n".join(lines) + "\n"


def _scores_from_run_folder(arm: dict) -> dict:
    """A result written before arms recorded their dev score (``selected`` then held the
    checkpoint's path): the score from that run folder's ``result.json``, where it is kept."""
    from gralc.safe_load import read_json_untrusted

    if arm.get("best_score") is not None or not str(arm.get("selected", "")).endswith(".ckpt"):
        return {}
    result = Path(arm["selected"]).parent.parent / "result.json"
    try:
        run = read_json_untrusted(result, "run result", expect=dict)
    except (FileNotFoundError, ValueError):
        return {}
    return {k: run.get(k) for k in ("monitor", "best_score", "initial_score", "selected")} | {
        "checkpoint": arm["selected"]}


def combine(paths: list[str]) -> dict:
    """One result from several ``training_cost.json`` runs: their arms in order (each keeps its
    own run's encoder speed, so its cost is still a ratio measured in one run) and the runs'
    metadata under ``runs``. A ValueError names a file without arms or a repeated arm name."""
    from gralc.safe_load import read_json_untrusted

    arms, runs = {}, []
    for path in paths:
        run = read_json_untrusted(path, "training_cost result", expect=dict)
        if not isinstance(run.get("arms"), dict) or not isinstance(run.get("tokens_per_s"), (int, float)):
            raise ValueError(f"{path}: not a training_cost.json (no 'arms' / 'tokens_per_s')")
        for name, arm in run["arms"].items():
            if name in arms:
                raise ValueError(f"{path}: arm {name!r} is already in an earlier file; rename one")
            arms[name] = {**arm, "tokens_per_s": arm.get("tokens_per_s", run["tokens_per_s"])}
            arms[name].update(_scores_from_run_folder(arm))
        runs.append({k: v for k, v in run.items() if k not in ("arms", "runs")}
                    | {"arm_names": list(run["arms"]), "file": str(path)})
    return {"arms": arms, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    """The command line (``--help``); writes ``--out/training_cost.json``; 0 on success."""
    from gralc.experiments.crossval import DEFAULT_DATA, VARIANTS
    from gralc.runinfo import run_metadata

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arm", nargs="+", default=["record="], metavar="NAME=OVERRIDE,...",
                    help="a recipe to time: the variant plus these train.py overrides (NAME "
                         "without '='; a list value keeps its commas: lora.target_modules=[query,key])")
    ap.add_argument("--variant", default="lora_lexical_small_late", choices=list(VARIANTS))
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--out", help="folder for training_cost.json (and each arm's run folder)")
    ap.add_argument("--publish", metavar="NAME", help="also copy it to docs/results/NAME.json")
    ap.add_argument("--combine", nargs="+", metavar="JSON",
                    help="measure nothing: merge these training_cost.json runs (arms in order, "
                         "each with its own run's encoder speed) into one result")
    args = ap.parse_args(argv)
    if args.combine:
        try:
            saved = run_metadata(combine(args.combine) | {"args": vars(args)})
        except (ValueError, FileNotFoundError) as exc:
            ap.exit(2, f"error: --combine: {exc}\n")
        return finish_result(saved, args.out, "training_cost.json", args.publish, report)
    arms = {}
    for spec in args.arm:
        name, sep, over = spec.partition("=")
        if not sep or not name:
            ap.error(f"--arm {spec!r}: give NAME=OVERRIDE,... (NAME= for the recipe as it is)")
        arms[name] = [o for o in re.split(r",(?![^\[]*\])", over) if o]  # a list value keeps its commas
    for name, overrides in arms.items():  # every arm's config checked before the minutes start
        try:
            arm_config(overrides, args.variant, args.fold, args.data, args.threads, Path("unused"))
        except ConfigError as exc:
            ap.exit(2, f"error: --arm {name!r}: {exc}\n")
    os.environ.setdefault("WANDB_MODE", "offline")
    torch.set_num_threads(args.threads)
    rate, rows = best_throughput()
    timed = {}
    for name, overrides in arms.items():
        keep = Path(args.out) / "runs" / "".join(c if c.isalnum() else "_" for c in name) if args.out else None
        timed[name] = time_arm(overrides, args.variant, args.fold, args.data, args.threads, keep)
        timed[name]["tokens_per_s"] = rate
        print(f"{name}: {timed[name]['seconds']:.0f} s, cost {timed[name]['seconds'] * rate / 1e6:.2f}", flush=True)
    saved = run_metadata({"args": vars(args), "tokens_per_s": rate, "throughput": rows, "arms": timed})
    return finish_result(saved, args.out, "training_cost.json", args.publish, report)


if __name__ == "__main__":
    raise SystemExit(main())
