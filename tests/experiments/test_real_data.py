"""The real graph wherever real data is used (issue 44): every experiment config on real data
links with MeSH 2024 (as ``python -m gralc.knowledge download`` writes it), the benches'
knowledge helper names the full MeSH files of the shared data, and a bench pipeline on the
built-in demo list is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gralc.config import CONFIG_DIR, ConfigError, load_config
from gralc.evaluation.config import EvalConfig
from gralc.experiments.real_data import (
    DemoVocabularyRefused,
    knowledge_overrides,
    pipeline_part,
    real_pipeline_config,
    require_real_graph,
    with_real_knowledge,
)
from gralc.pipeline import KnowledgeConfig, PipelineConfig
from gralc.training.config import TrainConfig

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS = sorted((CONFIG_DIR / "experiment").glob("*.yaml"))


def _raw(path: Path) -> dict:
    return yaml.safe_load(path.read_text()) or {}


def test_there_are_real_data_experiments():
    assert {"covidqa", "covidqa_trained", "pmc_full", "pubmedqa_tuned"} <= {p.stem for p in REAL}


#: the experiments on real data (a demo-corpus experiment links with its own built-in list)
REAL = [p for p in EXPERIMENTS if _raw(p).get("data", {}).get("name", "demo") != "demo"]


@pytest.mark.parametrize("path", REAL, ids=[p.stem for p in REAL])
def test_every_real_data_experiment_links_with_mesh_2024(path):
    raw = _raw(path)
    knowledge = raw.get("pipeline", {}).get("knowledge", {})
    assert knowledge.get("vocabulary") == "data/mesh/desc2024.xml", path.name
    assert knowledge.get("tree_file") == "data/mesh/mtrees2024.bin", path.name
    assert knowledge.get("relations", {}).get("pharm_action_tsv") == "data/mesh/desc2024.xml", path.name
    assert "shared/" not in path.read_text(), "product configs never name ../shared/data"
    loaded = 0
    for schema, base in ((EvalConfig, "eval.yaml"), (TrainConfig, "train.yaml")):
        try:  # an experiment may be for training only (or evaluation only)
            cfg = load_config(schema, CONFIG_DIR / base, [f"experiment={path.stem}", "data.path=x"])
        except ConfigError:
            continue
        require_real_graph(cfg, path.name)  # the loaded config has the vocabulary too
        loaded += 1
    assert loaded, f"{path.name} loads as neither an eval.py nor a train.py config"


@pytest.mark.parametrize("config", [PipelineConfig(), KnowledgeConfig(),
                                    load_config(TrainConfig, CONFIG_DIR / "train.yaml", [])])
def test_a_demo_list_pipeline_is_refused_with_the_fix(config, capsys):
    with pytest.raises(DemoVocabularyRefused) as err:
        require_real_graph(config, "bench.x")
    assert err.value.code == 2  # a command-line error
    message = str(err.value)
    assert "bench.x runs on real data" in message and "demo vocabulary" in message
    assert "knowledge_overrides" in message and "pipeline.knowledge.vocabulary" in message
    assert message in capsys.readouterr().err


def test_a_bench_pipeline_set_back_to_the_demo_list_is_refused(tmp_path):
    """Naming no vocabulary (``knowledge.vocabulary=null``) is the demo list: refused before
    any data or model is loaded."""
    from gralc.experiments.crossval import covidqa_setup

    with pytest.raises(DemoVocabularyRefused, match="the COVID-QA bench"):
        covidqa_setup(str(tmp_path / "no.json"), str(tmp_path), ["knowledge.vocabulary=null"])
    with pytest.raises(DemoVocabularyRefused):
        real_pipeline_config(["knowledge.vocabulary=null"])


def test_missing_knowledge_files_are_named(tmp_path):
    with pytest.raises(SystemExit, match=r"mesh2024_thesaurus_terms\.tsv, which does not exist"):
        knowledge_overrides(tmp_path)
    (tmp_path / "mesh").mkdir()
    for name in ("mesh2024_thesaurus_terms.tsv", "mtrees2024_style.bin",
                 "mesh2024_pharmacological_action.tsv"):
        (tmp_path / "mesh" / name).write_text("")
    with pytest.raises(SystemExit, match=r"relations/hsdn_disease_symptom\.tsv"):
        knowledge_overrides(tmp_path)
    (tmp_path / "relations").mkdir()
    (tmp_path / "relations" / "hsdn_disease_symptom.tsv").write_text("")
    got = knowledge_overrides(tmp_path)
    assert got == [
        f"pipeline.knowledge.vocabulary={tmp_path}/mesh/mesh2024_thesaurus_terms.tsv",
        f"pipeline.knowledge.tree_file={tmp_path}/mesh/mtrees2024_style.bin",
        f"pipeline.knowledge.relations.pharm_action_tsv={tmp_path}/mesh/mesh2024_pharmacological_action.tsv",
        f"pipeline.knowledge.relations.disease_symptom_tsv={tmp_path}/relations/hsdn_disease_symptom.tsv",
    ]
    assert knowledge_overrides(tmp_path, prefix="")[0].startswith("knowledge.vocabulary=")
    # the defaults come first, the caller's overrides after them (theirs win) ...
    extra = ["trainer.max_epochs=1", "pipeline.knowledge.relations.disease_symptom_tsv=null"]
    assert with_real_knowledge(extra, tmp_path) == [*got, *extra]
    assert pipeline_part(with_real_knowledge(extra, tmp_path)) == [
        *knowledge_overrides(tmp_path, prefix=""), "knowledge.relations.disease_symptom_tsv=null"]
    # ... and a caller naming its own vocabulary keeps its own knowledge files only
    own = ["pipeline.knowledge.vocabulary=data/mesh/desc2024.xml"]
    assert with_real_knowledge(own, tmp_path / "absent") == own
    # the encoder is shared by the untrained rows and training too; other pipeline keys are not
    assert pipeline_part(["pipeline.encoder.model=multilingual-e5-small", "pipeline.encoder.device=cpu",
                          "model.use_kg=false"]) == ["encoder.model=multilingual-e5-small"]


def test_the_shared_data_holds_the_full_graph_and_training_gets_it(shared_data):
    from gralc.experiments.crossval import VARIANTS, fold_overrides

    know = knowledge_overrides(shared_data)
    overrides = [*fold_overrides("x.json", (5, 0, 0), Path("out"), "cache", 1, 1, "lora_lexical_small_late"),
                 *with_real_knowledge([])]
    cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", overrides)
    require_real_graph(cfg, "training")
    k = cfg.pipeline.knowledge
    assert k.vocabulary == str(shared_data / "mesh" / "mesh2024_thesaurus_terms.tsv")
    assert k.tree_file == str(shared_data / "mesh" / "mtrees2024_style.bin")
    assert k.relations.pharm_action_tsv.endswith("mesh2024_pharmacological_action.tsv")
    assert k.relations.disease_symptom_tsv.endswith("hsdn_disease_symptom.tsv")
    assert len(know) == 4 and VARIANTS


def test_bench_training_on_the_demo_list_is_refused_before_anything_runs(tmp_path):
    """``--set pipeline.knowledge.vocabulary=null`` (the demo list) in the benches that train:
    refused before any data is read, any job starts or any file is written."""
    from gralc.experiments.crossval import main as covidqa_cv
    from gralc.experiments.seed_folds import main as seed_folds

    data = tmp_path / "squad.json"
    data.write_text('{"data": []}')
    demo = ["--set", "pipeline.knowledge.vocabulary=null"]
    with pytest.raises(DemoVocabularyRefused, match="gralc.experiments.crossval --train"):
        covidqa_cv(["--data", str(data), "--train", "--out", str(tmp_path / "cv"), *demo])
    with pytest.raises(DemoVocabularyRefused, match="gralc.experiments.seed_folds"):
        seed_folds(["--data", str(data), "--out", str(tmp_path / "seeds"), "--seeds", "1",
                    "--train-folds", "0", "--recipes", "run", *demo])
    assert not (tmp_path / "cv").exists() and not (tmp_path / "seeds" / "jobs.json").exists()
