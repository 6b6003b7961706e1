"""The local sweep runner: grids, sampling, the sweep files themselves, aggregation, a real sweep."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gralc.config import CONFIG_DIR, load_config
from gralc.sweep import (
    SweepError,
    aggregate,
    apply_extras,
    expand_grid,
    load_sweep,
    main,
    to_overrides,
    write_summary,
)

REPO = Path(__file__).resolve().parents[1]
SWEEPS = sorted((CONFIG_DIR / "sweep").glob("*.yaml"))

GRID = {
    "program": "eval.py",
    "method": "grid",
    "metric": {"name": "demo/mrr", "goal": "maximize"},
    "parameters": {
        "a": {"values": [1, 2]},
        "b": {"value": "x"},
        "c": {"values": ["[p]", "[q]", "[r]"]},
    },
    "command": ["${env}", "${interpreter}", "${program}", "${args_no_hyphens}"],
}


def test_expand_grid_is_the_cartesian_product_in_file_order():
    assert expand_grid(GRID) == [
        {"a": 1, "b": "x", "c": "[p]"}, {"a": 1, "b": "x", "c": "[q]"}, {"a": 1, "b": "x", "c": "[r]"},
        {"a": 2, "b": "x", "c": "[p]"}, {"a": 2, "b": "x", "c": "[q]"}, {"a": 2, "b": "x", "c": "[r]"},
    ]
    assert to_overrides({"a": 1, "flag": True, "m": "[p]"}) == ["a=1", "flag=True", "m=[p]"]


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_overrides_are_what_the_wandb_agent_passes(path):
    """Same strings as the agent's ``${args_no_hyphens}`` (wandb's own formatting code)."""
    from wandb.sdk.launch.sweeps.utils import create_sweep_command_args

    for config in expand_grid(load_sweep(path)):
        agent = create_sweep_command_args({"args": {k: {"value": v} for k, v in config.items()}})
        assert to_overrides(config) == agent["args_no_hyphens"]


def test_random_sampling_is_deterministic_and_within_the_specs():
    sweep = {"program": "train.py", "method": "random", "parameters": {
        "lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2},
        "n": {"min": 1, "max": 3},
        "d": {"values": ["peak", "dp"]},
        "k": {"value": 5},
    }}
    first = expand_grid(sweep, count=6, seed=3)
    assert first == expand_grid(sweep, count=6, seed=3)
    assert first != expand_grid(sweep, count=6, seed=4)
    assert len(first) == 6
    for c in first:
        assert 1e-4 <= c["lr"] <= 1e-2 and c["n"] in (1, 2, 3) and c["d"] in ("peak", "dp") and c["k"] == 5
        assert isinstance(c["n"], int)


@pytest.mark.parametrize(("change", "message"), [
    ({"method": "hyperband"}, "method"),
    ({"command": ["${env}", "${interpreter}", "${program}", "${args}"]}, "args_no_hyphens"),
    ({"parameters": {"a": {"values": [None, "x"]}}}, '"null"'),
    ({"parameters": {"a": {"parameters": {"b": {"value": 1}}}}}, "dotted"),
    ({"parameters": {"a": {"min": 0.0, "max": 1.0}}}, "grid search needs `values`"),
    ({"programme": "eval.py"}, "unknown key"),
])
def test_malformed_sweeps_are_rejected_with_the_fix(change, message):
    with pytest.raises(SweepError, match=message):
        expand_grid({**GRID, **change})


def test_set_replaces_swept_values_drops_duplicates_and_wandb_follows_the_flag():
    sweep = {**GRID, "parameters": {**GRID["parameters"], "wandb.enabled": {"value": True},
                                    "wandb.offline": {"value": False}}}
    configs = apply_extras(expand_grid(sweep), ["c=[s]", "paths.cache_dir=/tmp/c"], "off", sweep)
    assert configs == [
        {"a": a, "b": "x", "c": "[s]", "wandb.enabled": False, "wandb.offline": True, "paths.cache_dir": "/tmp/c"}
        for a in (1, 2)
    ]
    online = apply_extras(expand_grid(sweep), [], "online", sweep)
    assert {(c["wandb.enabled"], c["wandb.offline"]) for c in online} == {(True, False)}


def _schema(program: str):
    if program == "eval.py":
        from gralc.evaluation.config import EvalConfig

        return EvalConfig, CONFIG_DIR / "eval.yaml"
    from gralc.training.config import TrainConfig

    return TrainConfig, CONFIG_DIR / "train.yaml"


@pytest.mark.parametrize("path", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_every_run_of_every_sweep_file_is_a_valid_program_config(path):
    """What W&B's agent would pass (``${args_no_hyphens}``) loads with the program's schema."""
    sweep = load_sweep(path)
    assert sweep["command"] == ["${env}", "${interpreter}", "${program}", "${args_no_hyphens}"]
    schema, defaults = _schema(sweep["program"])
    configs = expand_grid(sweep)
    assert len(configs) >= 2
    for config in configs:
        cfg = load_config(schema, defaults, to_overrides(config))
        if "methods" in config:  # a method list, parsed by OmegaConf
            assert cfg.methods == config["methods"].strip("[]").split(",")
        for key, value in config.items():
            if key == "methods":
                continue
            node = cfg
            for part in key.split("."):
                node = getattr(node, part)
            assert node == value, key


def test_dry_run_prints_the_grid_and_the_commands(capsys, tmp_path):
    assert main(["decoder", "--dry-run", "--out", str(tmp_path), "candidates=20"]) == 0
    out = capsys.readouterr().out
    assert "| run_000 | peak | 20 |" in out and "| run_001 | dp | 20 |" in out
    assert "eval.py pipeline.chunking.boundary.decoder=dp 'methods=[structure_aware]'" in out
    assert f"paths.output_dir={tmp_path}/run_001" in out
    assert not list(tmp_path.iterdir())  # nothing ran


def _fake_eval_run(out: Path, i: int, decoder: str, mrr: float | None, status: str = "ok") -> None:
    run = out / f"run_{i:03d}"
    run.mkdir(parents=True)
    params = {"pipeline.chunking.boundary.decoder": decoder, "methods": "[structure_aware]"}
    (run / "sweep_run.json").write_text(json.dumps({"params": params, "status": status, "seconds": 1.5}))
    if mrr is not None:
        metrics = {"mrr": mrr, "recall@1": mrr - 0.1, "chunk_stats": {"n_chunks": 80.0}, "timings": {}}
        (run / "metrics.json").write_text(json.dumps({"demo": {"structure_aware": metrics}, "run": {}}))


def test_aggregate_and_summary_on_fabricated_runs(tmp_path):
    (tmp_path / "sweep.yaml").write_text((CONFIG_DIR / "sweep" / "decoder.yaml").read_text())
    _fake_eval_run(tmp_path, 0, "peak", 0.5)
    _fake_eval_run(tmp_path, 1, "dp", 0.75)
    _fake_eval_run(tmp_path, 2, "dp", None, status="failed (exit 1)")
    rows = aggregate(tmp_path)
    assert [r["run"] for r in rows] == ["run_000", "run_001", "run_002"]
    assert rows[1]["pipeline.chunking.boundary.decoder"] == "dp"
    assert rows[1]["demo/structure_aware/mrr"] == 0.75
    assert rows[1]["demo/recall@1"] == pytest.approx(0.65) and rows[1]["demo/n_chunks"] == 80.0
    assert "demo/mrr" not in rows[1]  # the sweep metric is not repeated under its short name
    assert rows[2]["demo/structure_aware/mrr"] is None and rows[2]["status"] == "failed (exit 1)"
    write_summary(tmp_path, rows)
    table = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert [t["demo/structure_aware/mrr"] for t in table] == ["0.5", "0.75", ""]
    assert "Best demo/structure_aware/mrr: 0.7500 (run_001: decoder=dp)" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "summary.png").stat().st_size > 5000


def test_aggregate_reads_train_runs(tmp_path):
    (tmp_path / "sweep.yaml").write_text((CONFIG_DIR / "sweep" / "learnable.yaml").read_text())
    run = tmp_path / "run_000"
    (run / "csv" / "version_0").mkdir(parents=True)
    (run / "csv" / "version_0" / "metrics.csv").write_text(
        "epoch,step,train/loss_epoch,val/mrr\n0,4,,0.5\n0,4,1.2,\n1,9,,0.6\n1,9,0.9,\n")
    (run / "result.json").write_text(json.dumps({"best_val_mrr": 0.6, "learned_values": {"beta": 0.71}}))
    params = {"model.learn_alpha": True, "model.learn_tau": False, "model.learn_beta": True}
    (run / "sweep_run.json").write_text(json.dumps({"params": params, "status": "ok", "seconds": 3.0}))
    (row,) = aggregate(tmp_path)
    assert row["val/mrr"] == 0.6 and row["train/loss_epoch"] == 0.9
    assert row["best_val_mrr"] == 0.6 and row["learned/beta"] == 0.71 and row["model.learn_tau"] is False


@pytest.mark.slow
def test_real_decoder_sweep_on_the_demo_corpus(tmp_path):
    """Two eval.py runs (peak, dp) in parallel, end to end (~70 s on 2 cores)."""
    out = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "gralc", "sweep", "decoder", "--jobs", "2", "--out", str(out),
         f"paths.cache_dir={tmp_path / 'cache'}", "ks=[1,5]", "candidates=20"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = list(csv.DictReader((out / "summary.csv").open()))
    assert [r["pipeline.chunking.boundary.decoder"] for r in rows] == ["peak", "dp"]
    assert all(r["status"] == "ok" for r in rows)
    mrr = [float(r["demo/structure_aware/mrr"]) for r in rows]
    assert all(0.5 < m <= 1.0 for m in mrr)
    assert rows[0]["demo/n_chunks"] != rows[1]["demo/n_chunks"]  # the decoders cut differently
    assert (out / "summary.png").stat().st_size > 5000
    assert (out / "sweep_runs" / "run_001.log").read_text().startswith(sys.executable)
    assert json.loads((out / "sweep_runs" / "run_001.json").read_text())["status"] == "ok"
