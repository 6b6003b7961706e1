"""Issue 57's measuring tools on small real inputs: the phase timer on a real demo training run,
the cost table, and the paired comparison of two-stage result files (refusing files that do
not hold the same questions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gralc.experiments.paired_runs import MismatchedRuns, compare, report
from gralc.experiments.paired_runs import main as paired_main
from gralc.experiments.training_cost import PhaseTimer, make_texts
from gralc.experiments.training_cost import report as cost_report
from gralc.training.run import train


def test_phase_timer_times_a_real_run(make_cfg, tmp_path, one_thread):
    timer = PhaseTimer()
    train(make_cfg(tmp_path, "trainer.max_epochs=1", "trainer.limit_train_batches=2",
                   "callbacks.early_stopping.enabled=false"), callbacks=[timer])
    s = timer.seconds
    assert timer.steps == 2
    assert 0 < s["backward"] < s["train_batches"] < s["fit"]
    assert s["validation"] > 0  # the initial pass and the epoch's


def test_cost_table_is_seconds_times_tokens_per_s():
    saved = {"tokens_per_s": 10_000.0, "throughput": [{"model": "m", "precision": "fp32", "tokens_per_s": 10_000.0}],
             "args": {"threads": 2, "fold": 0, "variant": "v"},
             "arms": {"record": {"seconds": 770.0, "steps": 217, "phases": {"validation": 200.0}},
                      "fast": {"seconds": 385.0, "steps": 217, "phases": {}}}}
    table = cost_report(saved)
    assert "| record | 770 | 7.70 | 1.00 | 217 |  |" in table
    assert "| fast | 385 | 3.85 | 0.50 | 217 |  |" in table
    assert len(make_texts(3, 5)) == 3 and make_texts(1, 4) == make_texts(1, 4)  # seeded


def test_combined_runs_keep_each_runs_encoder_speed(tmp_path, capsys):
    from gralc.experiments.training_cost import main

    def run(name, rate, arms):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({
            "tokens_per_s": rate, "git_hash": name, "args": {"threads": 2, "fold": 0, "variant": "v"},
            "throughput": [{"model": "m", "precision": "fp32", "tokens_per_s": rate}],
            "arms": {a: {"seconds": s, "steps": 2, "phases": {}, "best_score": 0.5, "selected": "trained",
                         "tokens_per_s": rate} for a, s in arms.items()}}))
        return str(path)

    first, second = run("one", 5000.0, {"before": 1000.0}), run("two", 6000.0, {"after": 500.0})
    # a run saved before arms kept their score: read from the run folder its checkpoint names
    old = json.loads((tmp_path / "one.json").read_text())
    (tmp_path / "r" / "checkpoints").mkdir(parents=True)
    (tmp_path / "r" / "result.json").write_text(json.dumps({"best_score": 0.5, "selected": "trained"}))
    old["arms"]["before"].update(best_score=None, selected=str(tmp_path / "r" / "checkpoints" / "b.ckpt"))
    (tmp_path / "one.json").write_text(json.dumps(old))
    assert main(["--combine", first, second, "--out", str(tmp_path / "both")]) == 0
    table = capsys.readouterr().out
    # each arm's cost uses the speed its own run measured: 1000 x 5000 and 500 x 6000
    assert "| before | 1000 | 5.00 | 1.00 | 2 | 0.5000 (trained) |" in table
    assert "| after | 500 | 3.00 | 0.50 | 2 | 0.5000 (trained) |" in table
    assert "git one" in table and "git two" in table
    with pytest.raises(SystemExit) as exit_:
        main(["--combine", first, first])
    assert exit_.value.code == 2 and "'before' is already in an earlier file" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(SystemExit) as exit_:
        main(["--combine", str(tmp_path / "bad.json")])
    assert exit_.value.code == 2 and "bad.json" in capsys.readouterr().err


def _run(path, values: list[list[float]], articles: list[list[str]]) -> str:
    folds = [{"exhaustive, float16": {"questions": {m: v for m in ("ev_recall@512wp", "ev_mrr", "ev_recall@256wp",
                                                                  "ev_recall@1024wp", "wa_ndcg@10")},
                                      "articles": a}} for v, a in zip(values, articles)]
    path.write_text(json.dumps({"folds": folds}))
    return str(path)


def test_paired_runs_gain_and_seed_spread(tmp_path):
    arts = [["a", "a", "b"], ["c", "d", "d"]]
    ref = _run(tmp_path / "ref.json", [[1, 0, 0], [1, 1, 0]], arts)
    better = _run(tmp_path / "b.json", [[1, 1, 0], [1, 1, 1]], arts)
    saved = compare(ref, {"better": better}, {"rec": [ref, better]}, "exhaustive, float16")
    g = saved["arms"]["better"]["gain"]["ev_recall@512wp"]
    assert g["gain"] == pytest.approx((1 / 3 + 1 / 3) / 2) and g["low"] >= 0
    assert saved["seeds"]["rec"]["range"]["ev_mrr"] == pytest.approx(1 / 3)
    assert "| better |" in report(saved) and "Seed spread of rec (2 runs)" in report(saved)


def test_a_published_verdict_keeps_its_rows_so_a_later_arm_pairs_without_the_run_folders(tmp_path, capsys):
    """Run folders do not outlive a machine: the verdicts file itself is enough to pair with."""
    arts = [["a", "a", "b"], ["c", "d", "d"]]
    ref = _run(tmp_path / "ref.json", [[1, 0, 0], [1, 1, 0]], arts)
    seed1 = _run(tmp_path / "s1.json", [[1, 1, 0], [1, 1, 1]], arts)
    out = tmp_path / "v1"
    assert paired_main(["--reference", ref, "--arm", f"seed 1={seed1}", "--out", str(out)]) == 0
    first = compare(ref, {"seed 1": seed1}, {}, "exhaustive, float16")
    for p in (ref, seed1):
        Path(p).unlink()  # the run folders are gone
    seed2 = _run(tmp_path / "s2.json", [[0, 1, 0], [1, 0, 1]], arts)
    kept = str(out / "paired_runs.json")
    saved = compare(f"{kept}#reference", {"seed 1": f"{kept}#seed 1"},
                    {"three": [f"{kept}#reference", f"{kept}#seed 1", seed2]}, "exhaustive, float16")
    assert saved["arms"]["seed 1"]["gain"] == first["arms"]["seed 1"]["gain"]  # the same pairing, from the file
    assert saved["seeds"]["three"]["paired_runs"] == 3 and len(saved["seeds"]["three"]["per_run"]) == 3
    # a group kept without rows (saved before rows were kept) joins a spread, never a pairing
    old = json.loads(Path(kept).read_text())
    old["seeds"] = {"two": {"paths": ["x", "y"], "per_run": [old["reference"]["means"]] * 2}}
    del old["arms"]["seed 1"]["folds"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    mixed = compare(f"{kept}#reference", {}, {"g": [str(tmp_path / "old.json") + "#two[1]", seed2]},
                    "exhaustive, float16")
    assert mixed["seeds"]["g"]["paired_runs"] == 1 and "gain paired over the 1 kept" in report(mixed)
    # an arm kept without rows is carried over as it was, when it was paired with the same reference
    old["reference"]["path"] = f"{kept}#reference"
    (tmp_path / "old.json").write_text(json.dumps(old))
    carried = compare(f"{kept}#reference", {"s": str(tmp_path / "old.json") + "#seed 1"}, {}, "exhaustive, float16")
    assert carried["arms"]["s"]["gain"] == first["arms"]["seed 1"]["gain"]
    assert carried["arms"]["s"]["carried_from"].startswith(str(tmp_path / "old.json") + "#seed 1")
    assert "| s (carried) |" in report(carried) and "(carried): paired in an earlier verdicts file" in report(carried)
    with pytest.raises(MismatchedRuns, match="kept without per-question rows, and paired against"):
        compare(seed2, {"s": str(tmp_path / "old.json") + "#seed 1"}, {}, "exhaustive, float16")
    with pytest.raises(MismatchedRuns, match=r"no run 'seed 9' in .*it keeps \['reference', 'seed 1'"):
        compare(f"{kept}#reference", {"s": f"{kept}#seed 9"}, {}, "exhaustive, float16")
    # names with '=' and ',' on the command line, kept runs named by them
    commas = str(tmp_path / "commas.json")
    assert paired_main(["--reference", ref_kept := f"{kept}#reference", "--arm", f"fp32, seed=1={kept}#seed 1",
                        "--seeds", f"g, seeds=1,2={kept}#seed 1,{seed2}", "--out", commas[:-5]]) == 0
    again = json.loads((Path(commas[:-5]) / "paired_runs.json").read_text())
    assert paired_main(["--reference", ref_kept, "--arm", f"x=1={commas[:-5]}/paired_runs.json#fp32, seed=1",
                        "--seeds", f"y={commas[:-5]}/paired_runs.json#g, seeds=1,2[0],{seed2}"]) == 0
    assert again["seeds"]["g, seeds=1,2"]["paths"] == [f"{kept}#seed 1", seed2]
    with pytest.raises(SystemExit) as exit_:
        paired_main(["--reference", f"{kept}#reference", "--arm", f"s={kept}#nope"])
    assert exit_.value.code == 2 and "no run 'nope'" in capsys.readouterr().err


def test_paired_runs_refuse_other_questions(tmp_path, capsys):
    ref = _run(tmp_path / "ref.json", [[1, 0]], [["a", "b"]])
    other = _run(tmp_path / "o.json", [[1, 0]], [["a", "c"]])
    with pytest.raises(MismatchedRuns, match="fold 0: .* hold other questions"):
        compare(ref, {"o": other}, {}, "exhaustive, float16")
    with pytest.raises(SystemExit) as exit_:
        paired_main(["--reference", ref, "--arm", f"o={other}"])
    assert exit_.value.code == 2 and "hold other questions" in capsys.readouterr().err
    with pytest.raises(MismatchedRuns, match="no row 'two-stage, codes'"):
        compare(ref, {}, {}, "two-stage, codes")


def test_arms_are_checked_before_any_measuring(capsys, shared_data):
    from gralc.experiments.training_cost import main

    with pytest.raises(SystemExit) as exit_:
        main(["--arm", "fine=lora.layers=2,lora.target_modules=[query,key]", "bad=lora.bogus=1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--arm 'bad'" in err and "lora.bogus" in err and "fine" not in err
