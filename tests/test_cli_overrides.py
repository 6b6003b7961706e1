"""key=value settings are accepted anywhere on a command line (issue 46): after --out as
well as before it. An unknown key proves the setting reached the config (not argparse's
"unrecognized arguments")."""

from __future__ import annotations

import pytest

from gralc import graph, index
from gralc import shard as shard_cli


@pytest.mark.parametrize("main, argv", [
    (index.main, ["CORPUS", "--out", "OUT", "knowledge.nosuch=1"]),
    (index.main, ["CORPUS", "knowledge.nosuch=1", "--out", "OUT"]),
    (shard_cli.main, ["build", "CORPUS", "--shard", "0", "--num-shards", "1",
                        "--out", "OUT", "knowledge.nosuch=1"]),
    (graph.main, ["CORPUS", "--out", "OUT", "knowledge.nosuch=1"]),
])
def test_a_setting_after_the_options_reaches_the_config(main, argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "CORPUS").mkdir()
    (tmp_path / "CORPUS" / "a.txt").write_text("Title\n\nMice had fever.\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" not in err and "nosuch" in err


def test_pipeline_settings_have_one_spelling_across_clis():
    """gralc.index documents knowledge.vocabulary=...; train.py and eval.py take it too."""
    from gralc.config import load_config
    from gralc.evaluation.config import EvalConfig
    from gralc.training.config import TrainConfig

    for schema in (EvalConfig, TrainConfig):
        short = load_config(schema, None, ["knowledge.vocabulary=/v.tsv", "encoder.batch_size=3"])
        long = load_config(schema, None, ["pipeline.knowledge.vocabulary=/v.tsv",
                                          "pipeline.encoder.batch_size=3"])
        assert short == long and short.pipeline.knowledge.vocabulary == "/v.tsv"
