"""The experiment's export-time scoring (``scoring:`` of a train config, e.g.
configs/experiment/covidqa_trained.yaml) travels in the checkpoint and is what ``gralc.export``
writes; ``scoring.KEY=value`` (anywhere on the line) or the flag of the same key replaces one
field; a key given twice with two values, or an unknown key, is exit 2 before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from gralc.export import main as export_main
from gralc.model.persistence import INFERENCE_YAML


@pytest.fixture(scope="module")
def checkpoint(train_once, tmp_path_factory) -> str:
    return train_once(tmp_path_factory.mktemp("scoring_run"), "scoring.phrase_weight=0.05",
                      "scoring.cut_unit=sentence", "scoring.sentence_evidence=0.3")


def _exported(folder: Path):
    doc = OmegaConf.load(folder / INFERENCE_YAML)
    return doc.model_config, doc.pipeline_config.chunking.boundary.get("cut_unit", "word")


def test_the_experiments_scoring_is_what_export_writes(checkpoint, tmp_path):
    assert export_main([checkpoint, "--out", str(tmp_path / "a")]) == 0
    m, cut = _exported(tmp_path / "a")
    assert (m.phrase_weight, m.sentence_evidence, cut) == (0.05, 0.3, "sentence")
    assert m.get("late_interaction", 0.0) == 0.0  # not in the experiment's scoring: as trained


def test_a_key_value_replaces_one_field(checkpoint, tmp_path):
    assert export_main([checkpoint, "scoring.phrase_weight=0", "--out", str(tmp_path / "b"),
                        "scoring.late_interaction=0.8"]) == 0
    m, cut = _exported(tmp_path / "b")
    assert (m.phrase_weight, m.late_interaction, m.sentence_evidence, cut) == (0.0, 0.8, 0.3, "sentence")


@pytest.mark.parametrize("bad, message", [
    (["scoring.late_interaction=0.5", "scoring.late_interaction=0.8"], "given twice"),
    (["--late-interaction", "0.8"], "--late-interaction is now written scoring.late_interaction=VALUE"),
    (["scoring.temperature=0.1"], "only"),
    (["model.phrase_weight=0.1"], "scoring.KEY=value"),
    (["scoring.cut_unit=paragraph"], "cut_unit"),
])
def test_bad_scoring_is_one_message_and_exit_2(checkpoint, tmp_path, capsys, bad, message):
    assert export_main([checkpoint, "--out", str(tmp_path / "c"), *bad]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
