"""Concept embeddings with a real MiniLM encoder (mean pooling), in-memory and disk cache."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from gralc.knowledge.concept_embeddings import ConceptEmbedder
from gralc.knowledge.vocabulary import Concept, Vocabulary


class MiniLMTexts:
    """``list[str] -> (n, 384)`` mean-pooled all-MiniLM-L6-v2 embeddings; counts its calls."""

    def __init__(self, path):
        from transformers import AutoModel, AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()
        self.texts_seen: list[str] = []

    @torch.no_grad()
    def __call__(self, texts: list[str]) -> torch.Tensor:
        self.texts_seen += texts
        batch = self.tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return (hidden * mask).sum(1) / mask.sum(1)


@pytest.fixture(scope="module")
def encoder(minilm_path):
    return MiniLMTexts(minilm_path)


VOCAB = Vocabulary(
    {
        c.id: c
        for c in [
            Concept(
                "D001943",
                "Breast Neoplasms",
                [
                    "Breast Cancer",
                    "Breast Tumors",
                    "Mammary Cancer",
                    "Breast Carcinoma",
                    "Cancer of Breast",
                    "Extra",
                ],
            ),
            Concept("D051379", "Mice", ["Mouse"]),
            Concept("D006973", "Hypertension", ["High Blood Pressure"]),
        ]
    }
)


def test_mean_of_normalised_name_and_k_synonyms(encoder):
    embedder = ConceptEmbedder(encoder, k=4)
    u = embedder.embed_ids(["D001943"], VOCAB)
    assert u.shape == (1, 384)
    texts = [
        "Breast Neoplasms",
        "Breast Cancer",
        "Breast Tumors",
        "Mammary Cancer",
        "Breast Carcinoma",
    ]
    assert encoder.texts_seen == texts  # name + 4 synonyms, not "Cancer of Breast"
    expected = F.normalize(encoder(texts), dim=-1).mean(0)
    assert torch.allclose(u[0], expected, atol=1e-5)


def test_cached_once_and_semantics(encoder):
    embedder = ConceptEmbedder(encoder)
    encoder.texts_seen.clear()
    u = embedder.embed_ids(["D051379", "D006973", "D051379"], VOCAB)
    assert u.shape == (3, 384) and torch.equal(u[0], u[2])
    n_calls = len(encoder.texts_seen)
    assert n_calls == 4  # Mice, Mouse, Hypertension, High Blood Pressure
    embedder.embed_ids(["D006973"], VOCAB)
    assert len(encoder.texts_seen) == n_calls  # cached
    sim = F.cosine_similarity(u[1:2], encoder(["elevated blood pressure"]))
    assert sim.item() > F.cosine_similarity(u[0:1], encoder(["elevated blood pressure"])).item()
    with pytest.raises(KeyError, match="D999999"):
        embedder.embed_ids(["D999999"], VOCAB)


@pytest.mark.parametrize("suffix", [".safetensors", ".npz"])
def test_disk_cache_roundtrip(encoder, tmp_path, suffix):
    path = tmp_path / f"concepts{suffix}"
    first = ConceptEmbedder(encoder, cache_path=path)
    u = first.embed_ids(["D051379", "D006973"], VOCAB)
    first.save()
    encoder.texts_seen.clear()
    second = ConceptEmbedder(encoder, cache_path=path)
    assert len(second) == 2
    assert torch.allclose(second.embed_ids(["D051379", "D006973"], VOCAB), u)
    assert encoder.texts_seen == []  # nothing re-encoded
    with pytest.raises(ValueError, match="k=4"):
        ConceptEmbedder(encoder, cache_path=path, k=2)
