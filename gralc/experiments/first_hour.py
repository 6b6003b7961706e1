"""A new user's first hour, scripted: what they meet, timed and checked, on the demo corpus.

    python -m gralc.experiments.first_hour --out results/first_hour      # ~5 min on 2 cores
    python -m gralc.experiments.first_hour --report results/first_hour/first_hour.json --publish first_hour

Every step runs the ``gralc`` command in a fresh process, from a scratch folder laid out as a
clone after ``make demo``, and records pass/fail and seconds: every ``--help`` (under 3 s
each), an export and its index moved and tarred (the same top 10), ``gralc eval`` with two
named models, BEIR in and TREC out scored by ranx (the same MRR as ``ev_mrr``), ``gralc
search`` cold five times (<= 3 s) with ``python -X importtime``, and a transformers-free
query tower's floor. The steps in full: docs/experiments.md. The README's tour is run by
``tests/project/test_readme.py`` (and from a wheel by ``.ci/wheel_tour.sh``), not here."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from gralc.atomic import write_text_atomic
from gralc.experiments.published import publish_result, report_arguments
from gralc.safe_load import read_json_untrusted

QUESTION = "What limits metformin adherence?"
HELP_BAR_S = 3.0
SEARCH_BAR_S = 3.0
#: top-level modules whose import time a cold search reports
IMPORTS = ("torch", "transformers", "torch_geometric", "faiss", "gralc")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GRALC_DEBUG"}
    return {**env, "MPLBACKEND": "Agg"}


def gralc(work: Path, *args: str, timeout: int = 900) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m gralc ARGS`` in a fresh process from ``work``: (the process, seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "gralc", *args], cwd=work, env=_env(),
                          capture_output=True, text=True, timeout=timeout)
    return proc, time.perf_counter() - t0


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode != 0:
        raise RuntimeError(f"{what}: exit {proc.returncode}\n{proc.stderr[-3000:]}")


def help_times(work: Path, runs: int = 3) -> list[dict]:
    """Per command: exit code of ``--help`` and the fastest and median of ``runs`` fresh
    processes (seconds)."""
    from gralc.commands import COMMANDS

    out = []
    for name in ["", *COMMANDS]:
        times, code = [], 0
        for _ in range(runs):
            proc, s = gralc(work, *([name] if name else []), "--help", timeout=120)
            times.append(s)
            code = code or proc.returncode
        out.append({"command": f"gralc {name} --help".replace("  ", " "), "exit": code,
                    "min_s": min(times), "median_s": statistics.median(times)})
    return out


def import_breakdown(work: Path, args: list[str]) -> dict[str, float]:
    """Seconds of the cumulative import of each of :data:`IMPORTS` (as first imported) in one
    ``python -X importtime -m gralc ARGS`` run."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "gralc", *args], cwd=work,
                          env=_env(), capture_output=True, text=True, timeout=300)
    _check(proc, "importtime")
    seen: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)$", line)
        if m and m.group(3) in IMPORTS and m.group(3) not in seen:
            seen[m.group(3)] = int(m.group(1)) / 1e6
    return seen


TOWER_COLD = """
import time, sys; t0 = time.perf_counter()
import torch
from tokenizers import Tokenizer
t1 = time.perf_counter()
tower = torch.jit.load(sys.argv[1]); tok = Tokenizer.from_file(sys.argv[2])
tok.enable_padding(length=64); tok.enable_truncation(64)
e = tok.encode(sys.argv[3]); ids = torch.tensor([e.ids]); mask = torch.tensor([e.attention_mask])
with torch.no_grad():
    h = tower(ids, mask)
v = (h * mask[..., None]).sum(1) / mask.sum()
print(t1 - t0, time.perf_counter() - t0)
"""


def tower_floor(work: Path, runs: int = 3) -> dict[str, float]:
    """The measured prototype of the module docstring: ``{"import_torch_s", "total_s",
    "max_abs_diff"}`` (medians over ``runs`` fresh processes; the traced tower's largest
    difference from the eager encoder on the question)."""
    import torch

    from gralc.encoding.models import load_tokenizer_and_model

    tok, model = load_tokenizer_and_model("all-MiniLM-L6-v2")
    model.eval()
    enc = tok([QUESTION], padding="max_length", max_length=64, return_tensors="pt")

    class Tower(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask):
            return self.m(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    with torch.no_grad():
        traced = torch.jit.trace(Tower(model), (enc["input_ids"], enc["attention_mask"]), strict=False)
        diff = float((traced(enc["input_ids"], enc["attention_mask"])
                      - Tower(model)(enc["input_ids"], enc["attention_mask"])).abs().max())
    traced.save(str(work / "tower.pt"))
    tok.backend_tokenizer.save(str(work / "tokenizer.json"))
    times = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", TOWER_COLD, str(work / "tower.pt"),
                               str(work / "tokenizer.json"), QUESTION], capture_output=True,
                              text=True, timeout=120, env=_env())
        _check(proc, "the traced tower")
        times.append([float(x) for x in proc.stdout.split()])
    return {"import_torch_s": statistics.median(t[0] for t in times),
            "total_s": statistics.median(t[1] for t in times), "max_abs_diff": diff}


def _top10(work: Path, index: Path, *extra: str) -> list[str]:
    proc, _ = gralc(work, "search", str(index), QUESTION, "-k", "10", "--format", "json", *extra)
    _check(proc, f"search {index}")
    return [json.loads(line)["chunk_id"] for line in proc.stdout.splitlines()]


def run(out: Path) -> dict:
    """Every step (module docstring) in a scratch folder under ``out``; the result record."""
    from gralc.runinfo import run_metadata

    started = time.perf_counter()
    repo = Path(__file__).resolve().parents[2]
    work = Path(tempfile.mkdtemp(prefix="first_hour_", dir=out))
    (work / "gralc").symlink_to(repo / "gralc", target_is_directory=True)
    A = "gralc/data/demo/articles"
    steps: dict[str, dict] = {}

    proc, s = gralc(work, "demo", "--stages", "train")
    _check(proc, "gralc demo --stages train")
    steps["make demo's training stage"] = {"ok": True, "seconds": s}

    helps = help_times(work)

    proc, s_export = gralc(work, "export", "outputs/demo_train", "--out", "outputs/export")
    _check(proc, "export")
    proc, s_index = gralc(work, "index", A, "--model", "outputs/export", "--out", "outputs/index")
    _check(proc, "index")
    expected = _top10(work, work / "outputs" / "index")
    moved = work / "moved" / "deeper"
    moved.parent.mkdir()
    subprocess.run(["mv", str(work / "outputs"), str(moved)], check=True)  # as a user moves it
    same_moved = _top10(work, moved / "index") == expected
    with tarfile.open(work / "both.tar", "w") as tar:
        tar.add(moved, arcname="bundle")
    with tarfile.open(work / "both.tar") as tar:
        tar.extractall(work / "unpacked", filter="data")
    same_tarred = _top10(work, work / "unpacked" / "bundle" / "index") == expected
    subprocess.run(["mv", str(moved), str(work / "outputs")], check=True)  # back for the rest
    steps["export + index moved and tarred: the same top 10"] = {
        "ok": same_moved and same_tarred, "moved": same_moved, "tarred": same_tarred,
        "seconds": s_export + s_index}

    proc, s_train = gralc(work, "train", "paths.output_dir=outputs/second", "trainer.max_epochs=2", "seed=1")
    _check(proc, "a second model")
    proc, s = gralc(work, "eval", "methods=[bm25]", "models={first: outputs/demo_train, second: outputs/second}",
                    "paths.output_dir=outputs/two_models")
    _check(proc, "eval with two named models")
    rows = set(read_json_untrusted((work / "outputs" / "two_models" / "metrics.json"), allow_interpolation=True)["demo"])
    want = {f"{n}{s}" for n in ("first", "second") for s in ("", "_cosine", "_hybrid", "_cosine_hybrid")}
    steps["eval with two named models: both row sets"] = {"ok": want <= rows, "rows": sorted(rows),
                                                         "seconds": s + s_train}

    t0 = time.perf_counter()
    for args in (["qrels", "data=demo", "--format", "beir", "--out", "outputs/beir"],
                 ["index", "outputs/beir", "--out", "outputs/beir_index"],
                 ["qrels", "data=beir", "data.path=outputs/beir", "--index", "outputs/beir_index",
                  "--out", "outputs/beir.qrels"],
                 ["eval", "data=beir", "data.path=outputs/beir", "methods=[structure_aware]",
                  "paths.output_dir=outputs/beir_eval"]):
        proc, _ = gralc(work, *args)
        _check(proc, " ".join(args))
    proc, _ = gralc(work, "search", "outputs/beir_index", "--queries", "outputs/beir", "--format", "trec", "-k", "20")
    _check(proc, "search --format trec")
    write_text_atomic(work / "outputs" / "beir.run", proc.stdout)
    import ranx

    ranx_mrr = float(ranx.evaluate(ranx.Qrels.from_file(str(work / "outputs" / "beir.qrels"), kind="trec"),
                                   ranx.Run.from_file(str(work / "outputs" / "beir.run"), kind="trec"), "mrr"))
    metrics = read_json_untrusted((work / "outputs" / "beir_eval" / "metrics.json"), allow_interpolation=True)
    ours = next(v["structure_aware"]["ev_mrr"] for k, v in metrics.items() if k != "run")
    steps["a BEIR folder in, a TREC run out, scored by ranx"] = {
        "ok": abs(ranx_mrr - ours) < 1e-9, "ranx_mrr": ranx_mrr, "gralc_ev_mrr": ours,
        "seconds": time.perf_counter() - t0}

    search = ["search", "outputs/index", QUESTION, "-k", "10"]
    cold = [gralc(work, *search)[1] for _ in range(5)]
    imports = import_breakdown(work, search)
    tower = tower_floor(work)
    result = {
        **run_metadata(), "args": {"out": str(out)}, "steps": steps, "help": helps,
        "cold_search_s": cold, "cold_search_median_s": statistics.median(cold),
        "cold_search_min_s": min(cold), "cold_search_imports_s": imports, "tower_floor": tower,
        "bars": {"help_s": HELP_BAR_S, "cold_search_s": SEARCH_BAR_S},
        "seconds": time.perf_counter() - started,
    }
    shutil.rmtree(work, ignore_errors=True)
    return result


def first_hour_md(saved: dict) -> str:
    """The table of a first-hour record."""
    helps = saved["help"]
    worst = max(helps, key=lambda h: h["median_s"])
    lines = [
        f"First hour on the demo corpus ({saved.get('created', '')[:10]}, git {saved.get('git_hash', '')[:10]}): "
        "each step in a fresh `gralc` process, as a clone after `make demo`.", "",
        "| step | result | seconds |", "|---|---|---|",
    ]
    for name, step in saved["steps"].items():
        lines.append(f"| {name} | {'pass' if step['ok'] else 'FAIL'} | {step['seconds']:.1f} |")
    ok_help = all(h["exit"] == 0 for h in helps)
    under = sum(h["median_s"] <= saved["bars"]["help_s"] for h in helps)
    lines.append(f"| `--help` of `gralc` and its {len(helps) - 1} commands: exit 0, median under "
                 f"{saved['bars']['help_s']:.0f} s | {'pass' if ok_help else 'FAIL'}, {under} of {len(helps)} "
                 f"under the bar | slowest `{worst['command']}` {worst['median_s']:.2f} |")
    bar = saved["bars"]["cold_search_s"]
    med = saved["cold_search_median_s"]
    lines.append(f"| `gralc search` on one question, cold (median of {len(saved['cold_search_s'])} fresh "
                 f"processes; bar {bar:.0f} s) | {'pass' if med <= bar else 'over the bar'} | {med:.2f} "
                 f"(min {saved['cold_search_min_s']:.2f}) |")
    lines += ["", "Where a cold search's time goes (`python -X importtime`, cumulative seconds of each "
              "package's first import, one run):", "",
              "| " + " | ".join(saved["cold_search_imports_s"]) + " |",
              "|" + "---|" * len(saved["cold_search_imports_s"]),
              "| " + " | ".join(f"{v:.2f}" for v in saved["cold_search_imports_s"].values()) + " |", ""]
    if "tower_floor" in saved:
        t = saved["tower_floor"]
        lines += [f"A transformers-free query tower (measured prototype: the encoder traced with "
                  f"torch.jit, the `tokenizers` package; not the product's path) would encode a question "
                  f"cold in {t['total_s']:.2f} s, of which importing torch {t['import_torch_s']:.2f} s "
                  f"(largest difference from the eager encoder {t['max_abs_diff']:.1e}).", ""]
    lines += [
              "| command | exit | min s | median s |", "|---|---|---|---|"]
    lines += [f"| `{h['command']}` | {h['exit']} | {h['min_s']:.2f} | {h['median_s']:.2f} |" for h in helps]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m gralc.experiments.first_hour",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("results/first_hour"),
                    help="folder for the record (first_hour.json) and the scratch clone")
    report_arguments(ap, "first-hour record")
    args = ap.parse_args(argv)
    if args.report:
        saved = read_json_untrusted(args.report, allow_interpolation=True)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        saved = run(args.out.resolve())
        write_text_atomic(args.out / "first_hour.json", json.dumps(saved, indent=2))
        print(f"wrote {args.out / 'first_hour.json'}")
    print(first_hour_md(saved))
    if args.publish:
        publish_result(args.publish, saved)
    return 0 if all(s["ok"] for s in saved["steps"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
