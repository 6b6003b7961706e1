"""Run a W&B sweep YAML locally, without a W&B server, and summarise the runs.

    gralc sweep decoder [--dry-run] [--jobs N] [--out DIR]
        [--wandb off|offline|online] [--limit N] [--count N] [--seed S] [--gpus 0,1]
        [key=value ...]

The same file works with ``wandb sweep`` / ``wandb agent`` (docs/sweeps.md). Each configuration
runs as ``python PROGRAM key=value ... paths.output_dir=OUT/run_NNN`` (the values formatted as
W&B's ``${args_no_hyphens}`` does), logging to ``OUT/sweep_runs/run_NNN.log`` (beside the run's
folder, which belongs to the program: eval.py and train.py refuse folders holding files they
did not write); a failed run is recorded, never fatal. ``OUT/summary.{csv,md,png}``: one row per run (swept parameters, the
sweep metric, key metrics, status, seconds).
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import os
import queue
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from gralc.atomic import atomic_write, write_text_atomic
from gralc.safe_load import no_interpolation, read_json_untrusted, read_yaml_untrusted

METHODS = ("grid", "random", "bayes")
TOP_KEYS = {"program", "method", "metric", "parameters", "command", "early_terminate", "name",
            "description", "project", "entity", "run_cap"}
KEY_METRICS = ("mrr", "recall@1", "recall@5", "ndcg@10", "seccov_pairs@5", "cross_section_recall@5",
               "n_chunks", "tokens_mean", "best_val_mrr", "val/mrr", "train/loss_epoch",
               "ev_mrr", "ev_recall@512wp", "graph_nodes", "graph_edges", "graph_build_s")
RUN_FILE = "sweep_run.json"  # per run: params, command, status, seconds
RUNS_DIR = "sweep_runs"  # OUT/sweep_runs/run_NNN.{log,json}: the runner's own files


class SweepError(ValueError):
    """A malformed sweep file, with the fix in the message."""


# ----- sweep files and grids ----------------------------------------------------------------
def sweep_file(name: str | Path) -> Path:
    """A sweep YAML by path, or by the name of one shipped in ``gralc/configs/sweep/``
    (``decoder`` or ``decoder.yaml``)."""
    from gralc.config import CONFIG_DIR

    path = Path(name)
    if path.is_file():
        return path
    shipped = CONFIG_DIR / "sweep" / f"{path.name.removesuffix('.yaml')}.yaml"
    if shipped.is_file() and len(path.parts) == 1:
        return shipped
    names = ", ".join(sorted(f.stem for f in (CONFIG_DIR / "sweep").glob("*.yaml")))
    raise SweepError(f"sweep file {path} not found; pass a sweep YAML or the name of a shipped "
                     f"one ({names})")


def program_command(program: str) -> list[str]:
    """How to start a sweep's ``program``: ``train.py`` / ``eval.py`` as ``python -m gralc
    train|eval`` when no such script is in the working folder (a wheel install has none);
    any other program as ``python PROGRAM``."""
    if Path(program).is_file():
        return [sys.executable, program]
    if Path(program).name in ("train.py", "eval.py"):
        return [sys.executable, "-m", "gralc", Path(program).stem]
    raise SweepError(f"program {program!r} not found from {Path.cwd()}: give its path, or use "
                     "train.py / eval.py (run as `gralc train` / `gralc eval`)")


def load_sweep(path: str | Path) -> dict[str, Any]:
    """Read and validate a sweep YAML (the W&B format); ``path`` may name a shipped sweep."""
    path = sweep_file(path)
    try:  # the one untrusted-YAML reader: bounded size, no aliases, no interpolation
        # (``command:`` holds W&B's ${env} macros, never resolved; the parameters may hold none)
        sweep = read_yaml_untrusted(path, "sweep file", allow_interpolation=True)
        if isinstance(sweep, dict):
            no_interpolation(sweep.get("parameters"), str(path))
    except ValueError as exc:
        hint = " (write `command:` as a block list of `- ${env}` items)" if "not valid YAML" in str(exc) else ""
        raise SweepError(f"{exc}{hint}") from None
    validate_sweep(sweep, str(path))
    return sweep


def validate_sweep(sweep: Any, source: str = "sweep") -> None:
    """The checks W&B makes that matter here, plus OmegaConf's needs (``key=value`` args)."""
    if not isinstance(sweep, dict):
        raise SweepError(f"{source}: a sweep is a mapping with program, method, parameters")
    unknown = sorted(set(sweep) - TOP_KEYS)
    if unknown:
        raise SweepError(f"{source}: unknown key(s) {unknown}; valid: {sorted(TOP_KEYS)}")
    if not isinstance(sweep.get("program"), str):
        raise SweepError(f"{source}: `program` (the script to run, e.g. eval.py) is missing")
    if sweep.get("method") not in METHODS:
        raise SweepError(f"{source}: `method` must be one of {METHODS}, got {sweep.get('method')!r}")
    metric = sweep.get("metric")
    if metric is not None and (not isinstance(metric, dict) or "name" not in metric
                               or metric.get("goal", "minimize") not in ("minimize", "maximize")):
        raise SweepError(f"{source}: `metric` must be {{name: ..., goal: minimize|maximize}}")
    if sweep["method"] == "bayes" and metric is None:
        raise SweepError(f"{source}: method bayes needs a `metric`")
    command = sweep.get("command")
    if command is not None and "${args_no_hyphens}" not in command:
        raise SweepError(f"{source}: `command` must pass ${{args_no_hyphens}} (key=value, what OmegaConf "
                         "parses), not ${args} (--key=value, wandb/wandb#1427)")
    params = sweep.get("parameters")
    if not isinstance(params, dict) or not params:
        raise SweepError(f"{source}: `parameters` must map each config key to {{values: [...]}}")
    for key, spec in params.items():
        if not isinstance(spec, dict):
            raise SweepError(f"{source}: parameter {key!r} must be a mapping like {{values: [...]}}")
        if "parameters" in spec:
            raise SweepError(f"{source}: nested parameter {key!r}: use dotted keys (a.b: {{values: ...}})")
        if not {"value", "values", "distribution", "min", "max"} & set(spec):
            raise SweepError(f"{source}: parameter {key!r} needs value, values or min/max")
        if spec.get("value", 0) is None or None in spec.get("values", []):
            raise SweepError(f"{source}: parameter {key!r}: write null as the string \"null\" (W&B "
                             "passes a YAML null as the string None)")


def swept_keys(sweep: dict[str, Any]) -> list[str]:
    """Parameters that vary (everything but ``value:`` constants), in file order."""
    return [k for k, spec in sweep["parameters"].items() if "value" not in spec]


def _sample(key: str, spec: dict[str, Any], rng: random.Random) -> Any:
    """One draw of a W&B parameter spec (constant, categorical, uniform, int, log, q, normal)."""
    if "value" in spec:
        return spec["value"]
    if "values" in spec and spec.get("distribution", "categorical") == "categorical":
        return rng.choices(spec["values"], weights=spec.get("probabilities"))[0]
    lo, hi = spec.get("min"), spec.get("max")
    default = "int_uniform" if isinstance(lo, int) and isinstance(hi, int) else "uniform"
    dist = spec.get("distribution", default)
    if dist == "int_uniform":
        return rng.randint(lo, hi)
    if dist == "uniform":
        return rng.uniform(lo, hi)
    if dist == "q_uniform":
        q = spec.get("q", 1.0)
        return round(rng.uniform(lo, hi) / q) * q
    if dist == "log_uniform_values":
        return math.exp(rng.uniform(math.log(lo), math.log(hi)))
    if dist == "normal":
        return rng.gauss(spec.get("mu", 0.0), spec.get("sigma", 1.0))
    raise SweepError(f"parameter {key!r}: distribution {dist!r} is not supported by the local runner")


#: the most configurations a grid may expand to (each is a training or evaluation run)
MAX_GRID = 10_000


def expand_grid(sweep: dict[str, Any], count: int = 8, seed: int = 0) -> list[dict[str, Any]]:
    """The configurations of a sweep, as ``{key: value}`` dicts (constants included).

    grid: the cartesian product of every ``values`` list in file order (the first parameter
    varies slowest). random / bayes: ``count`` draws from a ``random.Random(seed)`` (bayes is
    sampled like random: the local runner fits no model).
    """
    validate_sweep(sweep)
    params: dict[str, dict[str, Any]] = sweep["parameters"]
    if sweep["method"] == "grid":
        bad = [k for k, s in params.items() if "value" not in s and "values" not in s]
        if bad:
            raise SweepError(f"grid search needs `values` for {bad}; use method: random for ranges")
        choices = [[s["value"]] if "value" in s else list(s["values"]) for s in params.values()]
        size = math.prod(len(c) for c in choices)
        if size > MAX_GRID:  # counted before any configuration is made
            raise SweepError(f"the grid has {size:,} configurations ({' x '.join(str(len(c)) for c in choices)}), "
                             f"more than the {MAX_GRID:,} a local sweep runs; use method: random with "
                             "--count, or fewer values")
        return [dict(zip(params, combo)) for combo in itertools.product(*choices)]
    rng = random.Random(seed)
    return [{k: _sample(k, s, rng) for k, s in params.items()} for _ in range(count)]


def to_overrides(config: dict[str, Any]) -> list[str]:
    """``key=value`` strings exactly as W&B's ``${args_no_hyphens}`` formats them."""
    return [f"{k}={v}" for k, v in config.items()]


def apply_extras(configs: list[dict[str, Any]], extras: Sequence[str], wandb_mode: str,
                 sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """``key=value`` settings of the command line (``extras``) replace (or add to) every configuration; ``*wandb.enabled`` /
    ``*wandb.offline`` parameters follow ``--wandb``. Duplicates are dropped."""
    fixed: dict[str, Any] = {}
    for item in extras:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SweepError(f"{item!r}: a setting added to every run is key=value")
        fixed[key] = value
    for key in sweep["parameters"]:
        if key.endswith("wandb.enabled"):
            fixed.setdefault(key, wandb_mode != "off")
        elif key.endswith("wandb.offline"):
            fixed.setdefault(key, wandb_mode != "online")
    out: list[dict[str, Any]] = []
    for config in configs:
        merged = {**config, **fixed}
        if merged not in out:
            out.append(merged)
    return out


# ----- running ------------------------------------------------------------------------------
def _local(config: dict[str, Any]) -> dict[str, Any]:
    """The local runner sets each run's output folder itself (OUT/run_NNN)."""
    return {k: v for k, v in config.items() if k != "paths.output_dir"}


def _run_one(index: int, config: dict[str, Any], program: str, out: Path, env: dict[str, str],
             gpus: queue.Queue | None) -> dict[str, Any]:
    run_dir = out / f"run_{index:03d}"
    books = out / RUNS_DIR
    books.mkdir(parents=True, exist_ok=True)
    log_path = books / f"{run_dir.name}.log"
    command = [*program_command(program), *to_overrides(_local(config)), f"paths.output_dir={run_dir}"]
    gpu = gpus.get() if gpus is not None else None
    run_env = {**env, **({"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else {})}
    started = time.perf_counter()
    try:
        with log_path.open("w") as log:
            log.write(shlex.join(command) + "\n\n")
            log.flush()
            code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=run_env).returncode
    except OSError as exc:  # the program could not start
        code = -1
        with log_path.open("a") as log:
            log.write(f"\n{exc}\n")
    finally:
        if gpus is not None:
            gpus.put(gpu)
    record = {"index": index, "params": config, "command": command, "returncode": code,
              "status": "ok" if code == 0 else f"failed (exit {code})",
              "seconds": round(time.perf_counter() - started, 1)}
    write_text_atomic(books / f"{run_dir.name}.json", json.dumps(record, indent=2, default=str))
    print(f"[run_{index:03d}] {record['status']} in {record['seconds']} s: {' '.join(to_overrides(config))}",
          flush=True)
    return record


def run_sweep(sweep: dict[str, Any], configs: list[dict[str, Any]], out: Path, jobs: int = 1,
              wandb_mode: str = "off", gpus: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Run every configuration (``jobs`` at a time; with ``gpus``, each run holds one GPU)."""
    program = sweep["program"]
    program_command(program)  # a program that cannot start is refused before any run
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "sweep.yaml", yaml.safe_dump(sweep, sort_keys=False))
    env = {**os.environ, "WANDB_MODE": {"off": "disabled"}.get(wandb_mode, wandb_mode),
           "WANDB_RUN_GROUP": out.name}
    if jobs > 1 and "OMP_NUM_THREADS" not in env:  # share the cores instead of oversubscribing
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // jobs))
    pool: queue.Queue | None = None
    if gpus:
        pool = queue.Queue()
        for g in gpus:
            pool.put(g)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
        futures = [ex.submit(_run_one, i, c, program, out, env, pool) for i, c in enumerate(configs)]
        return [f.result() for f in futures]


# ----- aggregation --------------------------------------------------------------------------
def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def run_metrics(run_dir: str | Path) -> dict[str, float]:
    """Flat metrics of one run. Eval (metrics.json): ``bench/method/metric`` (chunk statistics
    too), plus ``bench/metric`` when the benchmark ran one method. Train (result.json + the
    CSV logger): each logged column's last value (as W&B's summary), ``best_val_mrr`` and
    ``learned/<name>``."""
    run_dir = Path(run_dir)
    flat: dict[str, float] = {}
    if (run_dir / "metrics.json").is_file():
        data = read_json_untrusted((run_dir / "metrics.json"), allow_interpolation=True)
        for bench, methods in data.items():
            if bench == "run":
                continue
            for method, m in methods.items():
                values = {**m, **m.get("chunk_stats", {})}
                for key, v in values.items():
                    if (x := _number(v)) is not None:
                        flat[f"{bench}/{method}/{key}"] = x
                        if len(methods) == 1:
                            flat[f"{bench}/{key}"] = x
    logs = sorted(run_dir.glob("csv/version_*/metrics.csv"), key=lambda p: p.stat().st_mtime)
    if logs:
        with logs[-1].open(newline="") as fh:
            for row in csv.DictReader(fh):
                flat.update({k: float(v) for k, v in row.items() if k and v not in ("", None)})
    if (run_dir / "result.json").is_file():
        result = read_json_untrusted((run_dir / "result.json"), allow_interpolation=True)
        flat.update({k: x for k, v in result.items() if (x := _number(v)) is not None})
        flat.update({f"learned/{k}": float(v) for k, v in (result.get("learned_values") or {}).items()})
    return flat


def _short(key: str) -> str:
    """``bench/method/metric`` -> ``bench/metric`` (other keys unchanged)."""
    parts = key.split("/")
    return f"{parts[0]}/{parts[2]}" if len(parts) == 3 else key


def _key_columns(flat: dict[str, float], metric: str | None) -> list[str]:
    """Key metrics of a run, in the short ``bench/metric`` form where the run has it; never
    the sweep metric again."""
    keys = []
    for k in flat:
        parts = k.split("/")
        if not (k.startswith("learned/") or k in KEY_METRICS or parts[-1] in KEY_METRICS):
            continue
        if (len(parts) == 3 and _short(k) in flat) or k == metric or (metric and k == _short(metric)):
            continue
        keys.append(k)
    return keys


def aggregate(out_dir: str | Path) -> list[dict[str, Any]]:
    """One row per ``run_*`` dir: ``run``, swept parameters, the sweep metric, key metrics,
    ``status``, ``seconds``. Needs ``out_dir/sweep.yaml`` (written by :func:`run_sweep`)."""
    out = Path(out_dir)
    sweep = load_sweep(out / "sweep.yaml")
    metric = (sweep.get("metric") or {}).get("name")
    rows = []
    names = {p.name for p in out.glob("run_*") if p.is_dir()}
    names |= {p.stem for p in (out / RUNS_DIR).glob("run_*.json")}
    for name in sorted(names):
        run_dir = out / name
        rec_path = out / RUNS_DIR / f"{name}.json"
        if not rec_path.is_file():
            rec_path = run_dir / RUN_FILE  # sweeps run before the runner kept its files aside
        rec = read_json_untrusted(rec_path, allow_interpolation=True) if rec_path.is_file() else {"params": {}}
        flat = run_metrics(run_dir)
        row: dict[str, Any] = {"run": run_dir.name}
        row.update({k: rec["params"].get(k, "") for k in swept_keys(sweep)})
        if metric:
            row[metric] = flat.get(metric)
        row.update({k: flat[k] for k in _key_columns(flat, metric)})
        row["status"] = rec.get("status", "not run")
        row["seconds"] = rec.get("seconds")
        rows.append(row)
    return rows


def _cell(v: Any, key: str = "") -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if key == "seconds" or abs(v) >= 100:
            return f"{v:.1f}"
        return f"{v:.0f}" if key.rsplit("/", 1)[-1].startswith("n_") else f"{v:.4f}"
    return str(v)


def markdown(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A Markdown table of ``rows``, one column per key in ``columns`` (None cells blank)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(r.get(c), c) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def write_summary(out_dir: str | Path, rows: list[dict[str, Any]]) -> None:
    """``summary.csv``, ``summary.md`` (best run named) and ``summary.png`` (metric per run)."""
    out = Path(out_dir)
    sweep = load_sweep(out / "sweep.yaml")
    metric = (sweep.get("metric") or {}).get("name")
    columns = list(dict.fromkeys(k for r in rows for k in r))
    columns = [c for c in columns if c not in ("status", "seconds")] + ["status", "seconds"]
    with atomic_write(out / "summary.csv", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    text = [f"# Sweep {out.name}: {sweep['program']}, {sweep['method']}", "", markdown(rows, columns), ""]
    scored = [r for r in rows if metric and r.get(metric) is not None]
    if scored:
        pick = max if sweep["metric"].get("goal", "minimize") == "maximize" else min
        best = pick(scored, key=lambda r: r[metric])
        text.append(f"Best {metric}: {_cell(best[metric], metric)} ({best['run']}: {_label(best, sweep)})")
    write_text_atomic(out / "summary.md", "\n".join(text) + "\n")
    _plot(out / "summary.png", rows, sweep, metric)


def _label(row: dict[str, Any], sweep: dict[str, Any]) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={row.get(k)}" for k in swept_keys(sweep))


def _plot(path: Path, rows: list[dict[str, Any]], sweep: dict[str, Any], metric: str | None) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 1.2 + 0.4 * len(rows)), layout="constrained")
    ax = fig.subplots()
    values = [r.get(metric) if metric else None for r in rows]
    ys = range(len(rows))
    ax.barh(list(ys), [v if v is not None else 0.0 for v in values], color="tab:blue")
    for y, v, r in zip(ys, values, rows):
        ax.text(v or 0.0, y, f" {_cell(v)}" if v is not None else f" {r['status']}", va="center", fontsize=8)
    ax.set_yticks(list(ys), [f"{r['run']}: {_label(r, sweep)}" for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(metric or "(no metric in the sweep file)")
    ax.set_title(f"{sweep['program']} sweep ({path.parent.name})", fontsize=10)
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=120)


# ----- command line -------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    """``gralc sweep SWEEP [key=value ...] [--dry-run] ...``; exit 0 when every run succeeded,
    1 when one failed, 2 for a bad sweep file or argument."""
    from gralc.cli import run

    return run(_main, argv)


def _main(argv: list[str]) -> int:
    from gralc.cli import CommandParser

    p = CommandParser("gralc sweep", description=__doc__.split("\n\n")[0].split("\n")[0],
                      renamed={"--set": "KEY=VALUE (anywhere on the line)"},
                      epilog="key=value settings are added to every run (replacing a swept value).")
    p.add_argument("sweep", help="a W&B sweep YAML, or the name of a shipped one (decoder, "
                                 "strategies, learnable, ...: gralc/configs/sweep/)")
    p.add_argument("--dry-run", action="store_true", help="print the grid and the commands only")
    p.add_argument("--jobs", type=int, help="runs at a time (default 1, or one per --gpus id)")
    p.add_argument("--out", help="sweep directory (default outputs/sweeps/<name>_<date>_<time>)")
    p.add_argument("--wandb", choices=("off", "offline", "online"), default="off")
    p.add_argument("--limit", type=int, help="run only the first N configurations")
    p.add_argument("--count", type=int, default=8, help="configurations drawn by random/bayes")
    p.add_argument("--seed", type=int, default=0, help="seed of random/bayes draws")
    p.add_argument("--gpus", default="", help="comma-separated GPU ids; each run holds one")
    args = p.parse(argv)
    sweep = load_sweep(args.sweep)  # a SweepError (a ValueError) is one message, exit 2
    configs = apply_extras(expand_grid(sweep, args.count, args.seed), args.settings, args.wandb, sweep)
    configs = configs[: args.limit] if args.limit else configs
    out = Path(args.out or f"outputs/sweeps/{Path(args.sweep).stem}_{time.strftime('%Y%m%d_%H%M%S')}")
    keys = list(dict.fromkeys([*swept_keys(sweep), *(s.partition("=")[0] for s in args.settings)]))
    print(markdown([{"run": f"run_{i:03d}", **c} for i, c in enumerate(configs)], ["run", *keys]))
    if args.dry_run:
        print()
        for i, c in enumerate(configs):
            print(shlex.join([*program_command(sweep["program"]), *to_overrides(_local(c)),
                              f"paths.output_dir={out / f'run_{i:03d}'}"]))
        return 0
    gpus = [g for g in args.gpus.split(",") if g]
    records = run_sweep(sweep, configs, out, args.jobs or len(gpus) or 1, args.wandb, gpus)
    write_summary(out, aggregate(out))
    print("\n" + (out / "summary.md").read_text() + f"\nsummary written to {out}/summary.{{csv,md,png}}")
    return 0 if all(r["returncode"] == 0 for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
