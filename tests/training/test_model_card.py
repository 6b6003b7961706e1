"""Every export carries ``MODEL_CARD.md`` (gralc.model.model_card), generated from its
checkpoint and listed in the export's manifest; an index built with the export still verifies;
every file GraLC writes into the export and the index is readable by group and others under
umask 022 (safetensors creates its file 0600); a user's own MODEL_CARD.md is never overwritten
(refused, or moved aside with --force)."""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from gralc.artefacts import MARKER, _write_marker, listed_files, read_marker, verify_artefact
from gralc.export import main as export_main
from gralc.model.model_card import MODEL_CARD
from gralc.model.persistence import INFERENCE_YAML
from gralc.safe_load import load_torch


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture(scope="module")
def checkpoint(train_once, tmp_path_factory) -> str:
    return train_once(tmp_path_factory.mktemp("card_run"))


@pytest.fixture(scope="module")
def exported(checkpoint, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("card") / "export"
    old = os.umask(0o022)
    try:
        assert export_main([checkpoint, "--out", str(out), "scoring.phrase_weight=0.05"]) == 0
    finally:
        os.umask(old)
    return out


def section(card: str, title: str) -> str:
    """The text under ``## title`` up to the next heading."""
    return card.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def table(text: str) -> dict[str, str]:
    """First column -> second column of a Markdown table's body rows."""
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \|", text, re.M)
    return dict(rows[1:])  # the header row goes


def test_the_card_holds_what_the_checkpoint_and_inference_yaml_say(exported, checkpoint):
    card = (exported / MODEL_CARD).read_text(encoding="utf-8")
    doc = OmegaConf.to_container(OmegaConf.load(exported / INFERENCE_YAML))
    learned = {k: float(v) for k, v in table(section(card, "Learned values")).items()}
    assert learned == doc["learned_values"]  # every value, to the last digit
    info = load_torch(checkpoint)["gralc"]
    train, run = info["train_config"], info["run"]
    recipe = table(section(card, "Training recipe"))
    assert f"lr {train['optim']['lr']!r}" in recipe["optimiser (optim.*)"]
    assert recipe["seed"] == str(train["seed"])
    assert recipe["epochs (trainer.max_epochs)"] == str(train["trainer"]["max_epochs"])
    assert run["git_hash"] in recipe["code"] and run["created"] in recipe["trained"]
    assert table(section(card, "Training data"))["source (data.name)"] == train["data"]["name"]
    n = info["data_summary"]["n_train_questions"]
    assert n > 0 and f"Trained on {n} questions from `{train['data']['name']}`" in card
    scoring = table(section(card, "Scoring settings of this export"))
    assert scoring["phrase_weight"] == "0.05" and scoring["cut_unit"] == "word"
    dev = section(card, "Dev metrics")
    assert "| val/mrr |" in dev and "not recorded" not in dev.lower()
    for heading in ("Model", "Intended use", "Limits"):
        assert f"\n## {heading}\n" in card
    assert doc["encoder_id"] in table(section(card, "Model"))["encoder"]


def test_the_card_is_listed_in_the_manifest_and_indexes_built_with_the_export_verify(
        exported, tmp_path, umask_022):
    from gralc import index as index_cli
    from gralc.data.demo import DEMO_DIR
    from gralc.inference import Retriever

    files = listed_files(read_marker(exported))
    assert MODEL_CARD in files and INFERENCE_YAML in files
    verify_artefact(exported, ("export",))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("PMC9000001.nxml", "PMC9000002.nxml"):
        shutil.copy(DEMO_DIR / "articles" / name, corpus / name)
    index = tmp_path / "index"
    assert index_cli.main([str(corpus), "--model", str(exported), "--out", str(index)]) == 0
    assert Retriever.load(index).search("metformin adherence", k=1)  # checks the model digest too
    unreadable = [f"{p} {oct(stat.S_IMODE(p.stat().st_mode))}"
                  for folder in (exported, index) for p in [folder, *folder.rglob("*")]
                  if not p.is_symlink() and (p.stat().st_mode & 0o044 != 0o044
                                             or (p.is_dir() and p.stat().st_mode & 0o011 != 0o011))]
    assert unreadable == [], "files GraLC wrote that group/others cannot read under umask 022"


def test_exporting_again_gives_the_same_card(exported, checkpoint, tmp_path):
    """No time and no folder name in the card: the same checkpoint and settings, the same card
    (hence the same model digest for indexes built with it)."""
    again = tmp_path / "elsewhere"
    assert export_main([checkpoint, "--out", str(again), "scoring.phrase_weight=0.05"]) == 0
    assert (again / MODEL_CARD).read_bytes() == (exported / MODEL_CARD).read_bytes()


def test_a_users_own_model_card_is_refused_then_moved_aside_with_force(checkpoint, tmp_path, capsys):
    out = tmp_path / "export"
    assert export_main([checkpoint, "--out", str(out)]) == 0
    (out / MODEL_CARD).unlink()  # an export of a GraLC without cards, with the user's own card
    (out / MARKER).unlink()
    _write_marker(out, "export")
    (out / MODEL_CARD).write_text("my card", encoding="utf-8")
    assert export_main([checkpoint, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert MODEL_CARD in err and "--force" in err
    assert (out / MODEL_CARD).read_text(encoding="utf-8") == "my card"
    assert export_main([checkpoint, "--out", str(out), "--force"]) == 0
    (aside,) = tmp_path.glob("export.replaced-*")
    assert (aside / MODEL_CARD).read_text(encoding="utf-8") == "my card"
    assert (out / MODEL_CARD).read_text(encoding="utf-8").startswith("# Model card: GraLC")
    verify_artefact(out, ("export",))
