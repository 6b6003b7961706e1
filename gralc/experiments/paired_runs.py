"""Recipes against a reference, paired by held-out question: the verdict table of issue 57.

    python -m gralc.experiments.paired_runs --reference docs/results/two_stage_cv.json \
        --arm "seed 1=RUN/error_analysis.json" --seeds "S=A,B,C" --out results/verdicts

Each file holds five folds of one trained recipe scored question by question (two_stage_cv,
error_analysis); ``--row`` picks its search (default ``exhaustive, float16``). Every arm is
paired with the reference by question (same folds and questions, checked), its gain read with
a paired bootstrap over held-out articles; ``--seeds`` also reports the spread over seeds. The
saved ``paired_runs.json`` keeps every run's per-question rows, so a later arm pairs with a
published run after its folder is gone (``FILE#NAME``, :func:`load_run`); an arm published
without rows is carried as it was (:func:`carried_arm`). Its table: :func:`report`."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from gralc.evaluation.significance import FoldPairs, paired_gain
from gralc.experiments.published import finish_result
from gralc.runinfo import run_metadata
from gralc.safe_load import read_json_untrusted

METRICS = ("ev_recall@512wp", "ev_mrr", "ev_recall@256wp", "ev_recall@1024wp", "wa_ndcg@10")
BAR_METRICS = ("ev_recall@512wp", "ev_mrr")


class MismatchedRuns(ValueError):
    """Two result files do not hold the same folds and questions, so they cannot be paired."""


def fold_questions(saved: dict, row: str, path: str) -> list[dict]:
    """Per fold, the ``row`` entry (per-question values and articles) of a two_stage.json."""
    folds = saved.get("folds")
    if not isinstance(folds, list) or not folds:
        raise MismatchedRuns(f"{path}: no folds (a gralc.experiments.two_stage_cv two_stage.json?)")
    missing = [k for k, f in enumerate(folds) if row not in f]
    if missing:
        raise MismatchedRuns(f"{path}: no row {row!r} in fold(s) {missing}; it has {sorted(folds[0])}")
    return [f[row] for f in folds]


def kept_rows(folds: list[dict]) -> list[dict]:
    """What pairing needs of a run, kept in the saved verdicts so a later arm pairs with it
    after its run folder is gone (``FILE#NAME``, :func:`load_run`): per fold, the articles,
    question ids and every metric's per-question values."""
    return [{"articles": f["articles"], "question_ids": f.get("question_ids", []),
             "questions": {m: f["questions"][m] for m in METRICS}} for f in folds]


def load_run(spec: str, row: str) -> tuple[list[dict] | None, dict[str, float]]:
    """``(per-fold rows or None, means)`` of one run: a two_stage.json / error_analysis.json
    path, or ``VERDICTS#NAME``, a run kept in a saved paired_runs.json (``NAME``: an arm,
    ``reference``, or ``GROUP[i]``, the i-th run of a seed group). A run saved before rows were
    kept has means only (``None`` rows): it can join a seed spread, not a pairing."""
    path, sep, key = spec.rpartition("#")
    if not sep or Path(spec).is_file() or not Path(path).is_file():
        folds = fold_questions(read_json_untrusted(Path(spec), allow_interpolation=True), row, spec)
        return folds, means(folds)
    saved = read_json_untrusted(Path(path), allow_interpolation=True, expect=dict)
    if saved.get("row", row) != row:
        raise MismatchedRuns(f"{path} pairs row {saved.get('row')!r}, not {row!r}")
    group, _, index = key.partition("[")
    entry = (saved.get("reference") if key == "reference" else (saved.get("arms") or {}).get(key))
    if entry is None and index.endswith("]") and index[:-1].isdigit() and group in (saved.get("seeds") or {}):
        seed_group, i = saved["seeds"][group], int(index[:-1])
        if i >= len(seed_group.get("per_run", [])):
            raise MismatchedRuns(f"{spec}: {group!r} has {len(seed_group.get('per_run', []))} runs")
        runs = seed_group.get("runs") or [None] * len(seed_group["per_run"])
        return (runs[i], seed_group["per_run"][i])
    if not isinstance(entry, dict) or "means" not in entry:
        names = ["reference", *(saved.get("arms") or {}), *(f"{g}[i]" for g in saved.get("seeds") or {})]
        raise MismatchedRuns(f"{spec}: no run {key!r} in {path}; it keeps {names}")
    return entry.get("folds"), entry["means"]


def carried_arm(spec: str, reference: str) -> dict:
    """An arm of an earlier verdicts file that was saved without per-question rows, carried
    over as it was (means and gain) when it was paired against the same ``reference``; it
    says so (``carried_from``). Anything else is MismatchedRuns."""
    path, _, key = spec.rpartition("#")
    saved = read_json_untrusted(Path(path), allow_interpolation=True, expect=dict)
    entry = (saved.get("arms") or {}).get(key)
    if not isinstance(entry, dict) or "gain" not in entry:
        raise MismatchedRuns(f"{spec}: kept without per-question rows and without a gain; it joins "
                             "a --seeds spread only, or rerun its recipe")
    if (saved.get("reference") or {}).get("path") != reference:
        raise MismatchedRuns(f"{spec}: kept without per-question rows, and paired against "
                             f"{(saved.get('reference') or {}).get('path')!r}, not {reference!r}: "
                             "it cannot be paired again; rerun its recipe")
    return {**entry, "carried_from": f"{spec} (git {saved.get('git_hash')})"}


def check_paired(a: list[dict], b: list[dict], a_path: str, b_path: str) -> None:
    """MismatchedRuns unless ``a`` and ``b`` hold the same folds, questions and articles."""
    if len(a) != len(b):
        raise MismatchedRuns(f"{a_path} has {len(a)} folds, {b_path} {len(b)}")
    for k, (fa, fb) in enumerate(zip(a, b)):
        if fa["articles"] != fb["articles"]:
            raise MismatchedRuns(f"fold {k}: {a_path} and {b_path} hold other questions "
                                 f"({len(fa['articles'])} vs {len(fb['articles'])}): score both "
                                 "with the same --data, --folds and --seed")


def means(folds: list[dict]) -> dict[str, float]:
    """Each metric's mean over folds of the fold means (a CV table's number)."""
    return {m: statistics.fmean(statistics.fmean(f["questions"][m]) for f in folds) for m in METRICS}


def gain(a: list[dict], b: list[dict], seed: int = 0) -> dict[str, dict]:
    """Gain of ``a`` over ``b`` per bar metric, paired bootstrap over held-out articles."""
    return {m: paired_gain([FoldPairs(a=fa["questions"][m], b=fb["questions"][m], clusters=fa["articles"])
                            for fa, fb in zip(a, b)], seed=seed).as_dict() for m in BAR_METRICS}


def averaged(runs: list[list[dict]]) -> list[dict]:
    """One run whose per-question values are the mean over ``runs`` (seeds of one recipe)."""
    return [{"articles": folds[0]["articles"],
             "questions": {m: [statistics.fmean(v) for v in zip(*(f["questions"][m] for f in folds))]
                           for m in METRICS}}
            for folds in zip(*runs)]


def compare(reference: str, arms: dict[str, str], seeds: dict[str, list[str]], row: str) -> dict:
    """The saved dict: the reference's means, each arm's means and gain, each seed group's
    per-run means, spread and (seed-averaged) gain; every run's rows kept (:func:`kept_rows`).
    Any run may be ``VERDICTS#NAME`` (:func:`load_run`); a seed run kept without rows joins the
    spread, and the seed-averaged gain is over the runs with rows (``paired_runs`` says how many)."""
    ref, ref_means = load_run(reference, row)
    if ref is None:
        raise MismatchedRuns(f"{reference}: kept without per-question rows; it cannot be paired")
    out: dict = {"reference": {"path": reference, "means": ref_means, "folds": kept_rows(ref)},
                 "row": row, "arms": {}, "seeds": {}}
    for name, path in arms.items():
        got, got_means = load_run(path, row)
        if got is None:
            out["arms"][name] = carried_arm(path, reference)
            continue
        check_paired(got, ref, path, reference)
        out["arms"][name] = {"path": path, "means": got_means, "gain": gain(got, ref), "folds": kept_rows(got)}
    for name, paths in seeds.items():
        loaded = [load_run(p, row) for p in paths]
        for p, (r, _) in zip(paths, loaded):
            if r is not None:
                check_paired(r, ref, p, reference)
        per_run = [m for _, m in loaded]
        paired = [r for r, _ in loaded if r is not None]
        if not paired:
            raise MismatchedRuns(f"--seeds {name}: no run with per-question rows; at least one is needed")
        out["seeds"][name] = {
            "paths": paths, "per_run": per_run,
            "spread": {m: statistics.pstdev(r[m] for r in per_run) for m in METRICS},
            "range": {m: max(r[m] for r in per_run) - min(r[m] for r in per_run) for m in METRICS},
            "gain": gain(averaged(paired), ref), "paired_runs": len(paired),
            "runs": [kept_rows(r) if r is not None else None for r, _ in loaded]}
    return out


def report(saved: dict) -> str:
    """Markdown: means, gains over the reference with 95 % intervals, seed spreads."""
    ref = saved["reference"]
    lines = [f"Paired by held-out question over the five COVID-QA dev folds; row `{saved['row']}`; "
             f"reference `{ref['path']}`; git {saved.get('git_hash')}.", "",
             "| recipe | " + " | ".join(BAR_METRICS) + " | gain " + " [95 % CI] | gain ".join(BAR_METRICS)
             + " [95 % CI] |", "|---|" + "---|" * (2 * len(BAR_METRICS))]
    lines.append("| reference | " + " | ".join(f"{ref['means'][m]:.4f}" for m in BAR_METRICS)
                 + " |" + " |" * len(BAR_METRICS))
    for name, arm in [*saved["arms"].items(), *((_seed_label(k, v), v) for k, v in saved["seeds"].items())]:
        m = arm.get("means") or {k: statistics.fmean(r[k] for r in arm["per_run"]) for k in METRICS}
        cells = [f"{m[k]:.4f}" for k in BAR_METRICS]
        cells += [f"{g['gain']:+.4f} [{g['low']:+.4f}, {g['high']:+.4f}]"
                  for g in (arm["gain"][k] for k in BAR_METRICS)]
        lines.append(f"| {name}{' (carried)' if arm.get('carried_from') else ''} | " + " | ".join(cells) + " |")
    carried = [f"{name}: {arm['carried_from']}" for name, arm in saved["arms"].items() if arm.get("carried_from")]
    if carried:
        lines += ["", "(carried): paired in an earlier verdicts file against the same reference, whose "
                      "per-question rows were not kept (their run folders are gone); copied as they were: "
                  + "; ".join(carried) + "."]
    for name, s in saved["seeds"].items():
        lines += ["", f"Seed spread of {name} ({len(s['paths'])} runs): "
                  + "; ".join(f"{m} {', '.join(f'{r[m]:.4f}' for r in s['per_run'])} "
                              f"(std {s['spread'][m]:.4f}, range {s['range'][m]:.4f})" for m in BAR_METRICS)]
    return "\n".join(lines) + "\n"


def _seed_label(name: str, group: dict) -> str:
    """A seed group's row: the means are over every run, the gain over the runs with rows."""
    n, paired = len(group["paths"]), group.get("paired_runs", len(group["paths"]))
    return (f"{name} (mean of {n} seeds)" if paired == n else
            f"{name} (mean of {n} seeds; gain paired over the {paired} kept with per-question rows)")


def _names_file(spec: str) -> bool:
    """Whether ``spec`` starts with an existing file (``FILE`` or ``FILE#NAME``)."""
    return Path(spec).is_file() or ("#" in spec and Path(spec.rpartition("#")[0]).is_file())


def _pairs(values: list[str], flag: str, ap: argparse.ArgumentParser) -> dict[str, str]:
    """``NAME=PATH`` values: split at the first ``=`` whose right side names an existing file
    (a name may hold ``=``, e.g. an override; a kept run's ``#NAME`` too), else at the last."""
    out = {}
    for v in values:
        cut = next((i for i, ch in enumerate(v) if ch == "=" and _names_file(_split_specs(v[i + 1 :])[0])), None)
        name, path = (v[:cut], v[cut + 1 :]) if cut is not None else v.rpartition("=")[::2]
        if not name or not path:
            ap.error(f"{flag} {v!r}: give NAME=PATH")
        out[name] = path
    return out


def _split_specs(text: str) -> list[str]:
    """``PATH,PATH,...`` where a kept run's name (after ``#``) may hold commas: a piece that
    does not start with an existing file continues the previous ``FILE#NAME``."""
    specs: list[str] = []
    for piece in text.split(","):
        if specs and "#" in specs[-1] and not _names_file(piece.strip()):
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


def main(argv: list[str] | None = None) -> int:
    """The command line (``--help``); writes ``--out/paired_runs.json``; 0 on success, 2 on bad input."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, help="two_stage.json of the reference recipe")
    ap.add_argument("--arm", nargs="*", default=[], metavar="NAME=PATH",
                    help="a recipe's two_stage.json / error_analysis.json, or VERDICTS#NAME: a run "
                         "kept in an earlier paired_runs.json (e.g. docs/results/training_verdicts.json)")
    ap.add_argument("--seeds", nargs="*", default=[], metavar="NAME=PATH,PATH,...",
                    help="one recipe under several seeds (each PATH as for --arm; VERDICTS#GROUP[i]: "
                         "a seed group's i-th run)")
    ap.add_argument("--row", default="exhaustive, float16")
    ap.add_argument("--out", help="folder for paired_runs.json")
    ap.add_argument("--publish", metavar="NAME", help="also copy it to docs/results/NAME.json")
    args = ap.parse_args(argv)
    arms = _pairs(args.arm, "--arm", ap)
    seeds = {k: _split_specs(v) for k, v in _pairs(args.seeds, "--seeds", ap).items()}
    try:
        saved = run_metadata({"args": vars(args), **compare(args.reference, arms, seeds, args.row)})
    except (MismatchedRuns, OSError, ValueError) as exc:
        ap.exit(2, f"error: {exc}\n")
    return finish_result(saved, args.out, "paired_runs.json", args.publish, report)


if __name__ == "__main__":
    raise SystemExit(main())
