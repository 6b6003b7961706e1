"""The experiment's export-time scoring (``scoring:`` of a train config, e.g.
configs/experiment/covidqa_trained.yaml) travels in the checkpoint and is what ``gralc.export``
writes; ``scoring.KEY=value`` (anywhere on the line) or the flag of the same key replaces one
field; a key given twice with two values, or an unknown key, is exit 2 before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from gralc.export import main as export_main
from gralc.model.persistence import INFERENCE_YAML, load_trained
from gralc.model.scoring_config import ScoringConfig
from gralc.safe_load import load_torch


@pytest.fixture(scope="module")
def checkpoint(train_once, tmp_path_factory) -> str:
    return train_once(tmp_path_factory.mktemp("scoring_run"), "scoring.phrase_weight=0.05",
                      "scoring.cut_unit=sentence", "scoring.sentence_evidence=0.3")


def _exported(folder: Path):
    doc = OmegaConf.load(folder / INFERENCE_YAML)
    return doc.model_config, doc.scoring, doc.pipeline_config.chunking.boundary.get("cut_unit", "word")


def test_the_experiments_scoring_is_what_export_writes(checkpoint, tmp_path):
    assert export_main([checkpoint, "--out", str(tmp_path / "a")]) == 0
    m, s, cut = _exported(tmp_path / "a")
    assert (m.phrase_weight, m.sentence_evidence, cut) == (0.05, 0.3, "sentence")
    assert s == {"late_interaction": 0.0, "kg_prox_idf": False}  # not in the experiment's scoring: off
    assert "late_interaction" not in m and "kg_prox_idf" not in m  # one home: the scoring section


def test_a_key_value_replaces_one_field(checkpoint, tmp_path):
    assert export_main([checkpoint, "scoring.phrase_weight=0", "--out", str(tmp_path / "b"),
                        "scoring.late_interaction=0.8", "scoring.kg_prox_idf=true"]) == 0
    m, s, cut = _exported(tmp_path / "b")
    assert (m.phrase_weight, s.late_interaction, s.kg_prox_idf, m.sentence_evidence, cut) == \
        (0.0, 0.8, True, 0.3, "sentence")
    model = load_trained(tmp_path / "b").model
    assert model.scoring == ScoringConfig(late_interaction=0.8, kg_prox_idf=True)
    assert (model.config.phrase_weight, model.boundary_config.cut_unit) == (0.0, "sentence")


def _as_0_2_0_checkpoint(checkpoint: str, out: Path) -> Path:
    """The checkpoint as GraLC 0.2.0 wrote it: the inference-only settings in ``model_config``
    (training refused any but 0 / false), no ``scoring`` entry, the experiment's scoring as a
    dataclass of seven optional fields."""
    import torch

    ckpt = load_torch(checkpoint)
    info = ckpt["gralc"]
    info.pop("scoring")
    info["model_config"] = {**info["model_config"], "late_interaction": 0.0, "kg_prox_idf": False}
    recorded = dict(info["train_config"]["scoring"])
    info["train_config"]["scoring"] = {k: recorded.get(k) for k in (
        "sentence_evidence", "evidence_sentences", "late_interaction", "phrase_weight",
        "concept_weight", "kg_prox_idf", "cut_unit")}
    torch.save(ckpt, out)
    return out


def _as_0_2_0_export(folder: Path) -> Path:
    """The export as GraLC 0.2.0 wrote it: ``late_interaction`` and ``kg_prox_idf`` in its
    ``model_config``, no ``scoring`` section (its marker re-sealed over the file)."""
    import json

    import yaml

    from gralc.artefacts import file_sha256

    path = folder / INFERENCE_YAML
    doc = yaml.safe_load(path.read_text())
    doc["model_config"].update(doc.pop("scoring"))
    path.write_text(yaml.safe_dump(doc))
    marker = folder / ".gralc-artefact.json"
    seal = json.loads(marker.read_text())
    seal["files"][INFERENCE_YAML] = {"size": path.stat().st_size, "sha256": file_sha256(path)}
    marker.write_text(json.dumps(seal))
    return folder


def test_checkpoints_and_exports_of_0_2_0_load_with_the_same_scoring(checkpoint, tmp_path):
    """A 0.2.0 checkpoint exports to the same inference.yaml and weights as today's, and loads
    with the same settings; a 0.2.0 export (late_interaction / kg_prox_idf in model_config)
    loads with them as its scoring."""
    old = _as_0_2_0_checkpoint(checkpoint, tmp_path / "old.ckpt")
    assert "late_interaction" in load_torch(old)["gralc"]["model_config"]  # the test can fail
    new_model, old_model = load_trained(checkpoint).model, load_trained(old).model
    assert old_model.config == new_model.config and old_model.scoring == new_model.scoring == ScoringConfig()
    for ckpt, name in ((checkpoint, "new"), (old, "old")):
        assert export_main([str(ckpt), "--out", str(tmp_path / name), "scoring.late_interaction=0.8"]) == 0
    docs = [yaml_doc(tmp_path / name) for name in ("new", "old")]
    assert docs[0] == docs[1] and docs[0]["scoring"]["late_interaction"] == 0.8
    weights = [(tmp_path / n / "weights.safetensors").read_bytes() for n in ("new", "old")]
    assert weights[0] == weights[1]

    exported = load_trained(tmp_path / "new").model
    before = load_trained(_as_0_2_0_export(tmp_path / "old")).model
    assert "scoring" not in yaml_doc(tmp_path / "old")
    assert before.scoring == exported.scoring == ScoringConfig(late_interaction=0.8)
    assert before.config == exported.config and before.boundary_config == exported.boundary_config
    assert exported.config.sentence_evidence == 0.3 and exported.boundary_config.cut_unit == "sentence"


def yaml_doc(folder: Path) -> dict:
    """An export's inference.yaml without the path it was exported from."""
    import yaml

    doc = yaml.safe_load((folder / INFERENCE_YAML).read_text())
    doc.pop("source_checkpoint")
    return doc


@pytest.mark.parametrize("bad, message", [
    (["scoring.late_interaction=0.5", "scoring.late_interaction=0.8"], "given twice"),
    (["--late-interaction", "0.8"], "--late-interaction is now written scoring.late_interaction=VALUE"),
    (["scoring.temperature=0.1"], "only"),
    (["model.phrase_weight=0.1"], "scoring.KEY=value"),
    (["scoring.cut_unit=paragraph"], "cut_unit"),
    (["scoring.late_interaction=1.0"], "scoring.late_interaction must lie in [0, 1)"),
    (["scoring.kg_prox_idf=maybe"], "kg_prox_idf"),
])
def test_bad_scoring_is_one_message_and_exit_2(checkpoint, tmp_path, capsys, bad, message):
    assert export_main([checkpoint, "--out", str(tmp_path / "c"), *bad]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
