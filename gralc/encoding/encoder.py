"""Full-document (late) encoding: one contextual vector per word-piece of a whole document.

Paper Sect. 3.1.3: the whole document goes through the transformer; a document longer than
the context is encoded in overlapping windows blended by linear distance-weighted averaging
(``gralc.encoding.windows``). Queries and short texts are embedded as the model card prescribes
(all-MiniLM-L6-v2: mean pooling over the attention mask, then L2 normalisation).

Each encoder's conventions (:class:`~gralc.encoding.models.EncoderConventions`, e.g. e5's
``query: `` / ``passage: `` prefixes) are applied here and only here: questions (one path,
:meth:`DocumentEncoder.read_questions`, batched as a :class:`QuestionBatching` says) get the
query prefix, texts embedded on their own (:meth:`~DocumentEncoder.encode_texts`: chunks,
concept names, reports) the passage prefix, and every window of a late-chunked document the
passage prefix's tokens right after its leading special tokens (dropped from the output like
them, so a document's token vectors and offsets are its own tokens').
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from gralc.encoding.cache import EmbeddingCache, cache_key
from gralc.encoding.models import (
    encoder_conventions,
    encoder_digest,
    load_tokenizer_and_model,
    model_name,
    sentence_max_length,
)
from gralc.encoding.precision import PRECISIONS, resolve_precision
from gralc.encoding.types import TokenEmbeddings
from gralc.encoding.windows import WindowBlender, blend_windows, plan_windows

logger = logging.getLogger(__name__)

#: device types an encoder may run on (``encoder.device``), with how to tell one is present
_DEVICE_CHECKS = {
    "cpu": lambda: True,
    "cuda": lambda: torch.cuda.is_available(),
    "mps": lambda: torch.backends.mps.is_available(),
    "xpu": lambda: hasattr(torch, "xpu") and torch.xpu.is_available(),
}
_DEVICE_FIX = "set encoder.device=auto (a CUDA GPU when there is one, else the CPU) or encoder.device=cpu"


def resolve_device(device: str) -> torch.device:
    """The torch device of ``encoder.device``: ``auto`` is ``cuda`` when a GPU is present, else
    ``cpu``. A string that names no device, or a device this machine lacks (``cuda`` or
    ``cuda:3`` without that GPU, say), is a ValueError naming ``encoder.device`` and the fix.

    >>> resolve_device("cpu")
    device(type='cpu')
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        dev = None
    if dev is None or dev.type not in _DEVICE_CHECKS:
        raise ValueError(f"encoder.device={device!r} is not a device the encoder runs on: use "
                         "encoder.device=auto (a CUDA GPU when there is one, else the CPU), cpu, "
                         "cuda, cuda:N, mps or xpu")
    if not _DEVICE_CHECKS[dev.type]():
        why = (" (this torch is a CPU-only build)" if dev.type == "cuda" and torch.version.cuda is None
               else "")
        raise ValueError(f"encoder.device={device!r}: no {dev.type.upper()} device on this machine"
                         f"{why}; {_DEVICE_FIX}")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        n = torch.cuda.device_count()
        raise ValueError(f"encoder.device={device!r}: this machine has {n} CUDA GPU(s), "
                         f"cuda:0 to cuda:{n - 1} (CUDA_VISIBLE_DEVICES="
                         f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')}); pick one of them, or "
                         f"{_DEVICE_FIX}")
    return dev



@dataclass
class EncoderConfig:
    """Encoder settings. ``window``: content tokens per window (None: the model's maximum
    minus its special tokens); ``overlap``: tokens shared by consecutive windows;
    ``batch_size``: windows (or texts) per forward pass; ``device``: "auto" = cuda if
    available else cpu; ``precision``: "fp32", "bf16" (torch.autocast) or "auto" (bf16 only on hardware
    with native bf16, :mod:`gralc.encoding.precision`; :attr:`DocumentEncoder.precision`
    says which ran); ``cache_dir``:
    on-disk cache of document embeddings (None: no cache); ``stream_tokens``: see below.

    >>> EncoderConfig(device="cpu", precision="auto").overlap
    128
    """

    #: a Hugging Face id or model folder, or a name GraLC knows (gralc encoders lists them)
    model: str = "all-MiniLM-L6-v2"
    window: int | None = None
    overlap: int = 128
    batch_size: int = 8
    device: str = "auto"
    precision: str = "fp32"
    cache_dir: str | None = None
    #: documents longer than this many word-pieces stream through the encoder one at a time,
    #: with a progress bar, each window blended as soon as it is computed (bounded memory:
    #: the token vectors themselves, not every window's output as well)
    stream_tokens: int = 100_000


@dataclass(frozen=True)
class QuestionBatching:
    """How :meth:`DocumentEncoder.read_questions` groups questions into encoder passes:
    ``size`` questions per pass (None: ``encoder.batch_size``; 1: one unpadded pass each),
    ``longest_first``: sorted by length first (less padding). Padding changes a vector's last
    bits, so each caller keeps the grouping its numbers were made with: use the constants.
    E.g. ``encoder.encode_questions(texts, PADDED)``.

    >>> PADDED.longest_first, ONE_BY_ONE.size
    (True, 1)
    """

    size: int | None = None
    longest_first: bool = False


#: one unpadded pass per question: a question's numbers never depend on its batch (the
#: trained search's late interaction, its pooled vector too)
ONE_BY_ONE = QuestionBatching(size=1)
#: padded passes of ``encoder.batch_size``, longest first (dense rows, the trained search's
#: vector without late interaction, training's frozen question vectors)
PADDED = QuestionBatching(longest_first=True)
#: padded passes of ``encoder.batch_size`` in the given order (LoRA training's questions)
IN_ORDER = QuestionBatching()


class DocumentEncoder:
    """Late-chunking encoder around a Hugging Face ``AutoModel`` with a fast tokenizer.

    Example: ``DocumentEncoder(EncoderConfig()).encode_document("Metformin helps.").vectors.shape``
    -> ``torch.Size([5, 384])`` (one row per word-piece of the text, MiniLM).
    """

    def __init__(self, config: EncoderConfig | None = None):
        self.config = config = config or EncoderConfig()
        if config.precision not in PRECISIONS:
            raise ValueError(
                f"EncoderConfig.precision must be one of {PRECISIONS}, got {config.precision!r}"
            )
        if config.batch_size < 1:
            raise ValueError(f"EncoderConfig.batch_size must be >= 1, got {config.batch_size}")
        self.device = resolve_device(config.device)  # checked before the weights are read
        self.precision = resolve_precision(config.precision, self.device)
        self.tokenizer, self.model = load_tokenizer_and_model(config.model)
        self.model.to(self.device).eval()
        self._model_id = model_name(config.model)
        #: the encoder's files by content (None: a hub id with no local folder): part of every
        #: cache key, so an encoder edited or replaced in place never reads another's vectors
        self._content = encoder_digest(config.model)
        #: query / passage prefixes, pooling, length, normalisation (gralc.encoding.models)
        self.conventions = encoder_conventions(config.model)

        self._prefix_ids, self._suffix_ids = self._special_tokens()
        self._query_ids = self._prefix_tokens(self.conventions.query_prefix)
        self._passage_ids = self._prefix_tokens(self.conventions.passage_prefix)
        max_len = min(self.tokenizer.model_max_length, self.model.config.max_position_embeddings)
        self._context = max_len
        self._max_window = (max_len - len(self._prefix_ids) - len(self._suffix_ids)
                            - len(self._passage_ids))
        self.window = config.window if config.window is not None else self._max_window
        if not 0 < self.window <= self._max_window:
            raise ValueError(
                f"EncoderConfig.window={self.window} must be in [1, {self._max_window}] for "
                f"{self._model_id} (its context minus special tokens); use window=None for the maximum"
            )
        if not 0 <= config.overlap < self.window:
            raise ValueError(
                f"EncoderConfig.overlap={config.overlap} must be in [0, window={self.window})"
            )
        self.query_max_length = (self.conventions.max_length or sentence_max_length(config.model)
                                 or max_len)

        self.cache = EmbeddingCache(config.cache_dir) if config.cache_dir else None
        self.cache_hits = 0
        self.cache_misses = 0

    def _special_tokens(self) -> tuple[list[int], list[int]]:
        """Ids the tokenizer puts before / after a single sequence (e.g. [CLS] / [SEP])."""
        content = self.tokenizer("hello", add_special_tokens=False)["input_ids"]
        full = self.tokenizer("hello")["input_ids"]
        for i in range(len(full) - len(content) + 1):
            if full[i : i + len(content)] == content:
                return full[:i], full[i + len(content) :]
        raise ValueError(f"cannot locate the special tokens of the {self._model_id} tokenizer")

    def _prefix_tokens(self, prefix: str) -> list[int]:
        """The content-token ids ``prefix`` puts before a text: those of ``prefix + text`` are
        these followed by those of ``text`` (checked: a prefix must tokenise on its own)."""
        if not prefix:
            return []
        ids = self.tokenizer(prefix.rstrip(), add_special_tokens=False)["input_ids"]
        for probe in ("hello world", "Metformin (500 mg)", "α-synuclein"):
            alone = self.tokenizer(probe, add_special_tokens=False)["input_ids"]
            joined = self.tokenizer(prefix + probe, add_special_tokens=False)["input_ids"]
            if joined != ids + alone:
                raise ValueError(f"the prefix {prefix!r} of {self._model_id} does not tokenise "
                                 f"apart from the text that follows it ({probe!r}): end it with a "
                                 "space, or fix the encoder's conventions")
        return ids

    @property
    def model_id(self) -> str:
        """Name of the encoder (hub id for the bundled default, the name a converted folder
        records, else the folder or id given: :func:`gralc.encoding.models.model_name`)."""
        return self._model_id

    @property
    def dim(self) -> int:
        """Width ``d`` of the token and text vectors (the model's hidden size)."""
        return int(self.model.config.hidden_size)

    @property
    def max_window(self) -> int:
        """Most content tokens one forward pass can take (context minus special tokens)."""
        return self._max_window

    @property
    def special_ids(self) -> tuple[list[int], list[int]]:
        """Token ids the encoder puts before and after every window's content: the model's
        special tokens (e.g. [CLS] / [SEP]), the passage prefix's after the leading ones."""
        return self._prefix_ids + self._passage_ids, list(self._suffix_ids)

    @property
    def question_max_length(self) -> int:
        """Word-pieces a question is read from, special tokens and query prefix included:
        ``query_max_length`` plus the prefix, at most the model's context (the one truncation
        length of :meth:`read_questions`, whatever the batching)."""
        return min(self.query_max_length + len(self._query_ids), self._context)

    def question_texts(self, texts: list[str]) -> list[str]:
        """The questions as the encoder reads them: behind the query prefix."""
        return [self.conventions.query_prefix + t for t in texts]

    def question_token_mask(self, input_ids: torch.Tensor) -> torch.Tensor:
        """(Q, L) bool: the positions of tokenised :meth:`question_texts` (right-padded) that
        are the questions' own word-pieces: neither special tokens nor the query prefix."""
        special = torch.tensor(sorted(set(self.tokenizer.all_special_ids)))
        keep = ~torch.isin(input_ids, special)
        start = len(self._prefix_ids)
        keep[:, start : start + len(self._query_ids)] = False
        return keep

    def _autocast(self):
        if self.precision == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @torch.inference_mode()
    def _forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Last hidden states (B, L, d) as float32 on CPU."""
        with self._autocast():
            out = self.model(
                input_ids=input_ids.to(self.device), attention_mask=attention_mask.to(self.device)
            ).last_hidden_state
        return out.float().cpu()

    def _run_windows(self, seqs: list[list[int]], progress: bool) -> list[torch.Tensor]:
        """Content-token vectors (len_i, d) of each content-token sequence, run with special
        tokens added, longest first, ``batch_size`` sequences per padded batch."""
        results: list[torch.Tensor] = [torch.empty(0)] * len(seqs)
        for i, out in self._iter_windows(seqs, progress):
            results[i] = out
        return results

    def _iter_windows(self, seqs: list[list[int]], progress: bool,
                      desc: str = "encoding windows") -> Iterator[tuple[int, torch.Tensor]]:
        """``(index, content-token vectors)`` of each sequence, batch by batch."""
        order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
        batches = [
            order[i : i + self.config.batch_size]
            for i in range(0, len(order), self.config.batch_size)
        ]
        pad_id = self.tokenizer.pad_token_id or 0
        before, after = self.special_ids
        start = len(before)
        for batch in tqdm(batches, desc=desc, disable=None if progress else True,
                          mininterval=5, miniters=1):
            rows = [before + seqs[i] + after for i in batch]
            width = max(len(r) for r in rows)
            ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for j, row in enumerate(rows):
                ids[j, : len(row)] = torch.tensor(row)
                mask[j, : len(row)] = 1
            hidden = self._forward(ids, mask)
            for j, i in enumerate(batch):
                yield i, hidden[j, start : start + len(seqs[i])].clone()

    def _key(self, text: str) -> str:
        model = self.model_id  # a passage prefix changes every vector: part of the key
        if self._content:
            model += f"|sha256={self._content}"
        if self.conventions.passage_prefix:
            model += f"|passage_prefix={self.conventions.passage_prefix!r}"
        return cache_key(text, model, self.window, self.config.overlap, self.precision)

    def encode_document(self, text: str) -> TokenEmbeddings:
        """Token vectors (N, d) and char offsets (N, 2) of the whole ``text``."""
        return self.encode_documents([text], progress=False)[0]

    def encode_documents(self, texts: list[str], progress: bool = True) -> list[TokenEmbeddings]:
        """``encode_document`` for many texts, batching windows across documents."""
        for i, text in enumerate(texts):
            if not text or not text.strip():
                raise ValueError(f"document {i} is empty: there is no text to encode")
        results: list[TokenEmbeddings | None] = [None] * len(texts)
        todo = []
        for i, text in enumerate(texts):
            cached = self.cache.get(self._key(text), len(text)) if self.cache else None
            if cached is not None:
                self.cache_hits += 1
                results[i] = cached
            else:
                self.cache_misses += int(self.cache is not None)
                todo.append(i)
        if not todo:
            return results  # type: ignore[return-value]

        enc = self.tokenizer(
            [texts[i] for i in todo],
            add_special_tokens=False,
            return_offsets_mapping=True,
            truncation=False,
            verbose=False,
        )
        plans, seqs, long_docs = [], [], []
        for k, (i, ids) in enumerate(zip(todo, enc["input_ids"], strict=True)):
            if not ids:
                raise ValueError(
                    f"document {i} yields no tokens for {self.model_id}: nothing to encode"
                )
            windows = plan_windows(len(ids), self.window, self.config.overlap)
            plans.append(windows)
            if len(ids) > self.config.stream_tokens:
                long_docs.append(k)
            else:
                seqs.extend(ids[s:e] for s, e in windows)
        outputs = self._run_windows(seqs, progress)

        pos = 0
        for k, (i, windows) in enumerate(zip(todo, plans, strict=True)):
            n = len(enc["input_ids"][k])
            if k in long_docs:
                vectors = self._stream_document(i, enc["input_ids"][k], windows)
            else:
                vectors = blend_windows(outputs[pos : pos + len(windows)], windows, n)
                pos += len(windows)
            te = TokenEmbeddings(
                vectors=vectors.contiguous(),
                offsets=np.asarray(enc["offset_mapping"][k], dtype=np.int64).reshape(-1, 2),
                model_id=self.model_id,
                windows=windows,
            )
            logger.debug(  # one line per document: -vv on a command line
                "encoded document %d: n_tokens=%d n_windows=%d windowed=%s",
                i,
                n,
                len(windows),
                len(windows) > 1,
            )
            if self.cache:
                self.cache.put(self._key(texts[i]), te)
            results[i] = te
        return results  # type: ignore[return-value]

    def _stream_document(self, i: int, ids: list[int], windows: list[tuple[int, int]]) -> torch.Tensor:
        """A long document's blended token vectors (n, d): windows encoded batch by batch
        and blended at once, with a progress bar (bounded memory, same numbers)."""
        logger.info("document %d is long (%d word-pieces, %d windows): streaming it through "
                    "the encoder", i, len(ids), len(windows))
        blender = WindowBlender(len(ids), self.dim)
        seqs = [ids[s:e] for s, e in windows]
        step = max(1, len(windows) // 10)  # a log line every 10% for SLURM logs (no TTY bar)
        for done, (j, out) in enumerate(
                self._iter_windows(seqs, True, desc=f"encoding long document {i}"), start=1):
            blender.add(out, *windows[j])
            if done % step == 0:
                logger.info("document %d: %d/%d windows encoded", i, done, len(windows))
        return blender.result()

    def finish_pooled(self, means: torch.Tensor) -> torch.Tensor:
        """Pooled vectors as the conventions want them: L2-normalised (or not)."""
        return F.normalize(means, p=2, dim=1) if self.conventions.normalize else means

    @torch.inference_mode()
    def encode_texts(self, texts: list[str], max_length: int | None = None) -> torch.Tensor:
        """Sentence embeddings (Q, d) of passages (chunks, concept names, reports: behind the
        passage prefix), float32 CPU: mean pooling over the attention mask, L2-normalised,
        truncated to ``max_length`` word-pieces including special tokens, the prefix on top
        (default: the model card's ``max_seq_length``, 256 for MiniLM; at most the model's
        context). Chunkers pass a larger ``max_length`` so a whole chunk is embedded."""
        means, _ = self.mean_pool_texts(texts, max_length)
        return self.finish_pooled(means)

    @torch.inference_mode()
    def mean_pool_texts(
        self, texts: list[str], max_length: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Un-normalised mean-pooled vectors (Q, d) float32 of passages and the number of
        positions each mean covers (Q,) int64 (special tokens and prefix included, as the model
        card pools), so that callers can combine texts: the mean over texts A and B pooled
        together is ``(n_A * m_A + n_B * m_B) / (n_A + n_B)``. ``max_length`` as in
        ``encode_texts``."""
        return self._mean_pool(texts, max_length, self.conventions.passage_prefix,
                               len(self._passage_ids))

    def _mean_pool(self, texts: list[str], max_length: int | None, prefix: str,
                   n_prefix: int) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`mean_pool_texts` of ``prefix + text``: ``max_length`` word-pieces of the text
        and special tokens, plus the ``n_prefix`` tokens of the prefix, at most the context."""
        max_length = min((max_length or self.query_max_length) + n_prefix, self._context)
        means = torch.zeros(len(texts), self.dim)
        counts = torch.zeros(len(texts), dtype=torch.int64)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for b in range(0, len(order), self.config.batch_size):
            batch = order[b : b + self.config.batch_size]
            enc = self.tokenizer(
                [prefix + texts[i] for i in batch],
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
            )
            hidden = self._forward(enc["input_ids"], enc["attention_mask"])
            mask = enc["attention_mask"].unsqueeze(-1).float()
            means[batch] = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            counts[batch] = enc["attention_mask"].sum(1)
        return means, counts

    @torch.inference_mode()
    def encode_queries(self, texts: list[str]) -> torch.Tensor:
        """Query embeddings (Q, d): the vectors of :meth:`encode_questions` read in
        :data:`PADDED` passes (what dense rows, the trained model's vector and training's
        frozen question vectors use). E.g. ``encoder.encode_queries(["What is ACE2?"])``."""
        return self.encode_questions(texts, PADDED, tokens=False)[0]

    def _check_questions(self, texts: list[str], warn: bool = True) -> None:
        """A blank question is refused; one longer than the encoder reads is warned of."""
        blank = [i for i, t in enumerate(texts) if not t or not t.strip()]
        if blank:
            raise ValueError(f"question(s) {blank[:5]} are blank: a search needs words to match")
        if not texts or not warn:
            return
        limit = self.query_max_length
        special = len(self._prefix_ids) + len(self._suffix_ids)
        lengths = self.tokenizer(list(texts), add_special_tokens=False, verbose=False)["input_ids"]
        long = [i for i, ids in enumerate(lengths) if len(ids) + special > limit]
        if long:
            logger.warning("%d question(s) (e.g. #%d, %d word-pieces) are longer than the %d "
                           "word-pieces the encoder reads (%s): only their beginning is embedded",
                           len(long), long[0], len(lengths[long[0]]), limit, self.model_id)

    @torch.inference_mode()
    def encode_query_tokens(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """The questions' word-piece vectors for late interaction: ``(vectors (Q, L, d)
        float32, mask (Q, L) bool)``, the ``tokens, mask`` of :meth:`encode_questions`
        (one pass each). E.g. ``vectors, mask = encoder.encode_query_tokens(["ACE2?"])``."""
        return self.encode_questions(texts, warn=False)[1:]

    @torch.inference_mode()
    def encode_questions(self, texts: list[str], batching: QuestionBatching = ONE_BY_ONE,
                         tokens: bool = True, warn: bool = True
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`read_questions` with this encoder's own (frozen) weights, by default
        :data:`ONE_BY_ONE` (a question's numbers never depend on its batch).
        E.g. ``vectors, tokens, mask = encoder.encode_questions(["What is ACE2?"])``."""
        return self.read_questions(texts, batching, self._forward, tokens, warn)

    def read_questions(self, texts: list[str], batching: QuestionBatching,
                       forward: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                       tokens: bool = True, warn: bool = True
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The one question path: ``(vectors (Q, d), word-piece vectors (Q, L, d), mask (Q,
        L) bool)`` float32 on CPU. Each question is read behind the query prefix, truncated
        to :attr:`question_max_length` word-pieces, in the passes ``batching`` says, through
        ``forward(input_ids, attention_mask) -> hidden (B, L, d)`` (:meth:`_forward`, or a
        LoRA encoder's adapted pass, with gradient). The vector is the mean over the attention
        mask (special tokens and prefix included, as the model card pools), L2-normalised as
        the conventions say; the word-pieces are the question's own (neither special tokens,
        prefix nor padding), left-aligned (``tokens=False``: empty). A blank question is
        refused (ValueError); with ``warn``, questions longer than the encoder reads are
        logged. E.g. ``encoder.read_questions(["ACE2?"], ONE_BY_ONE, encoder._forward)``."""
        self._check_questions(texts, warn)
        n = len(texts)
        size = batching.size or self.config.batch_size
        order = (sorted(range(n), key=lambda i: -len(texts[i])) if batching.longest_first
                 else list(range(n)))
        questions = self.question_texts(texts)
        pooled: list[torch.Tensor] = [torch.empty(0)] * n
        parts: list[torch.Tensor] = [torch.zeros(0, self.dim)] * n
        for b in range(0, n, size):
            rows = order[b : b + size]
            enc = self.tokenizer([questions[i] for i in rows], padding=True, truncation=True,
                                 max_length=self.question_max_length, return_tensors="pt")
            hidden = forward(enc["input_ids"], enc["attention_mask"])
            attention = enc["attention_mask"].unsqueeze(-1).float()
            means = (hidden * attention).sum(1) / attention.sum(1).clamp(min=1e-9)
            own = enc["attention_mask"].bool() & self.question_token_mask(enc["input_ids"])
            for j, i in enumerate(rows):
                pooled[i] = means[j]
                if tokens:
                    parts[i] = hidden[j][own[j]]
        if not n:
            return (torch.zeros(0, self.dim), torch.zeros(0, 0, self.dim),
                    torch.zeros(0, 0, dtype=torch.bool))
        width = max(p.shape[0] for p in parts)
        vectors = torch.stack([F.pad(p, (0, 0, 0, width - p.shape[0])) for p in parts])
        mask = torch.stack([torch.arange(width) < p.shape[0] for p in parts])
        return self.finish_pooled(torch.stack(pooled)), vectors, mask

    @staticmethod
    def pool_spans(
        tokens: TokenEmbeddings, spans: list[tuple[int, int]], normalize: bool = False
    ) -> torch.Tensor:
        """Mean token vector of each half-open token span (late-chunking pooling); (K, d).
        Summed span by span in float64, a long span ``POOL_BLOCK`` rows at a time: memory
        O(POOL_BLOCK d) whatever the span (a cumulative sum over the whole document took
        three (n, d) float64 copies, 10 GB for a 5 MB article; ``sum(dtype=float64)`` of a
        whole-document span, multilevel's document chunk, one more)."""
        n = tokens.n_tokens
        for s, e in spans:
            if not 0 <= s < e <= n:
                raise ValueError(f"pool_spans: span ({s}, {e}) is empty or outside [0, {n}]")
        if not spans:
            return torch.zeros(0, tokens.vectors.shape[1])
        vectors = tokens.vectors
        pooled = torch.stack([_sum_rows(vectors, s, e) / (e - s) for s, e in spans]).float()
        return F.normalize(pooled, p=2, dim=1) if normalize else pooled


#: Rows :meth:`DocumentEncoder.pool_spans` casts to float64 at once (6 MB for MiniLM).
POOL_BLOCK = 2048


def _sum_rows(vectors: torch.Tensor, start: int, end: int) -> torch.Tensor:
    """``vectors[start:end].sum(0)`` in float64 (d,), ``POOL_BLOCK`` rows at a time:
    ``sum(dtype=float64)`` casts its whole input first, an (end - start, d) float64 copy."""
    total = vectors[start : min(end, start + POOL_BLOCK)].sum(0, dtype=torch.float64)
    for a in range(start + POOL_BLOCK, end, POOL_BLOCK):
        total += vectors[a : min(end, a + POOL_BLOCK)].sum(0, dtype=torch.float64)
    return total
