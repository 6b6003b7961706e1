"""gralc.experiments.seed_folds: the jobs of a seed study (what each trains, in which order, with which
cache) validate as training configs, and a job is kept, skipped, failed or stopped as its
status says."""

from __future__ import annotations

import time

import pytest

from gralc.config import CONFIG_DIR, load_config
from gralc.experiments.crossval import VARIANTS
from gralc.experiments.seed_folds import jobs, main, parser, run_job
from gralc.training.config import TrainConfig


def _args(tmp_path, *extra):
    data = tmp_path / "squad.json"
    data.write_text('{"data": []}')
    return parser().parse_args(["--data", str(data), "--out", str(tmp_path / "out"), *extra])


def test_jobs_train_each_seed_recipe_and_fold_then_the_finals(tmp_path):
    args = _args(tmp_path, "--seeds", "1", "2", "--final-seeds", "0", "--jobs", "4", "--device", "cuda")
    todo = jobs(args)
    names = [name for name, _, _ in todo]
    assert names[:6] == ["seed1/run/fold0", "seed1/run/fold1", "seed1/run/fold2", "seed1/run/fold3",
                         "seed1/run/fold4", "seed1/refit/fold0"]
    assert names[-2:] == ["seed0/run/final", "seed0/refit/final"] and len(names) == 2 * 2 * 5 + 2
    for name, run_dir, overrides in todo:
        cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", overrides)  # validated
        seed, recipe, fold = name.split("/")
        assert cfg.seed == int(seed.removeprefix("seed")) and cfg.paths.output_dir == str(run_dir)
        assert cfg.trainer.accelerator == "gpu" and cfg.pipeline.encoder.device == "cuda"
        assert cfg.lora.enabled and cfg.model.use_lexical and cfg.optim.late_interaction == 0.6
        assert (cfg.loader.dev_fraction == 0) == (recipe == "refit")
        if fold == "final":  # every article: no cross-validation
            assert cfg.data.cv_folds == 0
        else:
            assert (cfg.data.cv_folds, cfg.data.cv_fold) == (5, int(fold.removeprefix("fold")))
        assert cfg.paths.cache_dir == str(run_dir.parent / f"{run_dir.name}.cache")  # one per job
    assert all(o in todo[0][2] for o in VARIANTS["lora_lexical_small_late"])


def test_one_job_at_a_time_shares_the_cache_and_folds_can_be_left_out(tmp_path):
    args = _args(tmp_path, "--seeds", "3", "--train-folds", "--final-seeds", "3", "--recipes", "run",
                 "--cache-dir", str(tmp_path / "cache"))
    ((name, _, overrides),) = jobs(args)
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", overrides)
    assert name == "seed3/run/final" and cfg.paths.cache_dir == str(tmp_path / "cache")
    assert cfg.trainer.accelerator == "cpu" and cfg.callbacks.checkpoint.monitor == "val/ev_mrr"


def test_a_job_is_kept_skipped_failed_or_stopped(tmp_path):
    done = tmp_path / "done"
    done.mkdir()
    (done / "result.json").write_text("{}")
    assert run_job("a", done, [], 1, time.monotonic() + 60)["status"] == "kept"
    assert run_job("b", tmp_path / "b", [], 1, time.monotonic() - 1)["status"] == "not started (deadline)"
    failed = run_job("c", tmp_path / "c", ["no_such_key=1"], 1, time.monotonic() + 120)
    assert failed["status"].startswith("failed (exit") and "no_such_key" in (tmp_path / "c.log").read_text()
    stopped = run_job("d", tmp_path / "d", [f"paths.output_dir={tmp_path / 'd'}"], 1, time.monotonic() + 3)
    assert stopped["status"] == "stopped (deadline)" and stopped["seconds"] < 30


def test_a_job_folder_holding_someone_elses_files_is_refused_before_any_job_runs(tmp_path, capsys):
    args = ["--seeds", "1", "--train-folds", "0", "1", "--recipes", "run", "--jobs", "2"]
    fold1 = tmp_path / "out" / "seed1" / "run" / "lora_lexical_small_late" / "fold1"
    fold1.mkdir(parents=True)
    (fold1 / "notes.txt").write_text("mine")
    (fold1 / "config.yaml").write_text("")  # train.py's own files alone would be resumed
    data = tmp_path / "squad.json"
    data.write_text('{"data": []}')
    with pytest.raises(SystemExit):
        main(["--data", str(data), "--out", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert f"{fold1} holds files train.py does not write" in err and "another --out" in err
    assert (fold1 / "notes.txt").read_text() == "mine" and not (fold1.parent / "fold0").exists()
    assert not (tmp_path / "out" / "jobs.json").exists()
