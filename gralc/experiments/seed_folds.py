"""One training recipe under several seeds, as parallel ``train.py`` jobs: each seed's five
COVID-QA fold models (as ``gralc.experiments.crossval --train``) and, with ``--final-seeds``,
its model on all 49 articles (as ``gralc.experiments.final_model``), each as ``run`` and
``refit``. Layout (read by ``average_folds`` and ``inference_cv``)::

    OUT/seed{S}/{run,refit}/VARIANT/fold{K}/    OUT/seed{S}/{run,refit}/final/

    python -m gralc.experiments.seed_folds --seeds 1 2 --jobs 1 --out results/seeds           # CPU, in turn
    python -m gralc.experiments.seed_folds --seeds 1 2 --final-seeds 0 1 2 --device cuda --jobs 16 --threads 1 \\
        --out results/seeds                                                       # one GPU

A finished job (``result.json``) is kept, a stopped one resumes from ``last.ckpt``, a folder
holding files train.py does not write is refused; ``OUT/jobs.json`` records every job's
command, exit status and seconds; ``--deadline S`` starts no job after S seconds and stops
the running ones. Knowledge: the full MeSH 2024 graph, as ``gralc.experiments.crossval``."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gralc.config import CONFIG_DIR, load_config
from gralc.experiments.crossval import DEFAULT_DATA, VARIANTS, fold_overrides
from gralc.experiments.real_data import REPO, require_real_graph, with_real_knowledge
from gralc.runinfo import run_metadata, write_json_atomic
from gralc.safe_load import read_json_untrusted

#: the soup of record's two ingredients (docs/training.md)
RECIPES = {
    "run": ["callbacks.checkpoint.monitor=val/ev_mrr"],
    "refit": ["loader.dev_fraction=0", "callbacks.early_stopping.enabled=false"],
}


def job_overrides(args: argparse.Namespace, seed: int, recipe: str, fold: int | None,
                  run_dir: Path) -> list[str]:
    """``train.py`` overrides of one job: ``gralc.experiments.crossval``'s for a fold (folds of record,
    fold seed 0), on every article for ``fold=None``; on ``--device``, seeded ``seed``."""
    # parallel jobs: one cache each (a shared one serialises their feature builds on its lock)
    cache = run_dir.parent / f"{run_dir.name}.cache" if args.jobs > 1 else Path(args.cache_dir)
    cv = None if fold is None else (args.folds, fold, 0)
    return [*fold_overrides(args.data, cv, run_dir, cache, args.epochs, args.threads, args.variant,
                            args.device), *RECIPES[recipe], f"seed={seed}", *args.set]


def jobs(args: argparse.Namespace) -> list[tuple[str, Path, list[str]]]:
    """(name, run folder, overrides) in priority order: seed, recipe, fold; finals last."""
    out = Path(args.out)
    todo = [(f"seed{s}/{r}/fold{k}", out / f"seed{s}" / r / args.variant / f"fold{k}", s, r, k)
            for s in args.seeds for r in args.recipes
            for k in (args.train_folds if args.train_folds is not None else range(args.folds))]
    todo += [(f"seed{s}/{r}/final", out / f"seed{s}" / r / "final", s, r, None)
             for s in args.final_seeds for r in args.recipes]
    return [(name, d, job_overrides(args, s, r, k, d)) for name, d, s, r, k in todo]


#: what train.py writes into its output folder: an unfinished job's folder holds nothing else
TRAIN_FILES = {"config.yaml", "run.json", "initial.ckpt", "initial.json", "csv", "checkpoints"}


def foreign_folders(todo: list[tuple[str, Path, list[str]]]) -> list[Path]:
    """Unfinished job folders that hold files train.py does not write (someone else's)."""
    return [d for _, d, _ in todo if d.is_dir() and not (d / "result.json").is_file()
            and {p.name for p in d.iterdir()} - TRAIN_FILES]


def run_job(name: str, run_dir: Path, overrides: list[str], threads: int, stop_at: float) -> dict:
    """One ``train.py`` process (log: ``run_dir``.log); killed at ``stop_at`` (monotonic)."""
    if (run_dir / "result.json").is_file():
        return {"job": name, "status": "kept", "seconds": 0.0}
    if time.monotonic() >= stop_at:
        return {"job": name, "status": "not started (deadline)", "seconds": 0.0}
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
           "TOKENIZERS_PARALLELISM": "false", "PYTHONUNBUFFERED": "1"}
    # a stopped job goes on from its last.ckpt (train.py refuses to overwrite a run otherwise)
    cmd = [sys.executable, str(REPO / "train.py"), *overrides, "resume=auto"]
    t0 = time.monotonic()
    with open(run_dir.parent / f"{run_dir.name}.log", "a") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            rc = proc.wait(timeout=max(1.0, stop_at - t0))
            status = "done" if rc == 0 else f"failed (exit {rc})"
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            status = "stopped (deadline)"
    return {"job": name, "status": status, "seconds": round(time.monotonic() - t0, 1),
            "command": ["train.py", *overrides]}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--seeds", type=int, nargs="+", required=True, help="train.py seed values of the folds")
    ap.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    ap.add_argument("--variant", default="lora_lexical_small_late", choices=list(VARIANTS))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--train-folds", type=int, nargs="*", default=None,
                    help="only these folds (none: finals only)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--final-seeds", type=int, nargs="*", default=[],
                    help="also train these seeds' models on all articles (each recipe)")
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (encoder and trainer)")
    ap.add_argument("--jobs", type=int, default=1, help="train.py processes at a time")
    ap.add_argument("--threads", type=int, default=2, help="torch threads per job")
    ap.add_argument("--deadline", type=float, default=None, help="seconds: start nothing after, stop what runs")
    ap.add_argument("--cache-dir", default="data/cache", help="the cache of --jobs 1 (more jobs: one per job)")
    ap.add_argument("--set", nargs="*", default=[], help="extra train.py key=value overrides")
    ap.add_argument("--out", required=True)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    if not Path(args.data).is_file():
        ap.error(f"--data {args.data}: no such file (COVID-QA dev in SQuAD format)")
    if args.jobs < 1 or args.threads < 1:
        ap.error("--jobs and --threads must be >= 1")
    todo = jobs(args)
    if foreign := foreign_folders(todo):
        ap.error(f"{foreign[0]} holds files train.py does not write and no result.json "
                 f"({len(foreign)} such job folder(s)): move them away or give another --out")
    args.set = with_real_knowledge(args.set)  # the full MeSH 2024 unless --set names its own
    todo = jobs(args)
    if todo:
        from gralc.training.config import TrainConfig

        require_real_graph(load_config(TrainConfig, CONFIG_DIR / "train.yaml", todo[0][2]),
                           "gralc.experiments.seed_folds")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    stop_at = time.monotonic() + (args.deadline if args.deadline else float("inf"))
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(pool.map(lambda j: run_job(*j, args.threads, stop_at), todo))
    wall = time.monotonic() - t0
    print("| job | status | seconds |\n|---|---|---|")
    for d in done:
        print(f"| {d['job']} | {d['status']} | {d['seconds']:.0f} |")
    print(f"\n{sum(d['status'] == 'done' for d in done)} of {len(done)} jobs trained in {wall:.0f} s "
          f"({args.jobs} at a time, {args.threads} threads each, device {args.device})")
    log = Path(args.out) / "jobs.json"  # one entry per invocation, earlier ones kept
    earlier = read_json_untrusted(log, allow_interpolation=True)["invocations"] if log.is_file() else []
    write_json_atomic(log, {"invocations": [*earlier, {"run": run_metadata({"argv": sys.argv}),
                                                       "wall_seconds": round(wall, 1), "jobs": done}]})
    return 0 if all(d["status"] in ("done", "kept") for d in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
