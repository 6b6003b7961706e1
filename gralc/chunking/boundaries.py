"""Boundary signals for structure-aware late chunking (GraLC-RAG Eq. 5-8) and hard constraints.

Convention used everywhere in this package: a **boundary (or cut) at token i** means a cut
BEFORE token ``i``, so token ``i`` is the first token of a new chunk. Index 0 (the document
start) is never a cut, and every signal is 0 there. All signals are tensors of shape (N,) for
a document of N tokens.

The signal functions are pure and written in torch so that a learned module can wrap
:func:`boundary_scores` with ``nn.Parameter`` alpha / gamma (gradients flow through it, and
through :func:`semantic_signal` into the token vectors).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import torch
import torch.nn.functional as F

from gralc.documents.model import Document, Sentence
from gralc.knowledge.mention import EntityMention, token_span

#: Values of :attr:`BoundaryConfig.cut_unit`.
CUT_UNITS = ("word", "sentence")


@dataclass
class BoundaryConfig:
    """Defaults are the paper's (GraLC-RAG Sect. 3.1.5); the DP terms are ASCM's (Eq. 2).

    ``window`` is w of Eq. 6 in tokens. ``struct_weights`` are Eq. 5's weights for a section /
    subsection / paragraph start. ``min_tokens`` / ``max_tokens`` bound chunk sizes.
    ``decoder``: ``peak`` (threshold ``tau``) or ``dp`` (globally optimal, ASCM). The DP cost of
    a chunk is ``-b(cut) + dp_length_weight * ((len - dp_target_tokens) / dp_target_tokens)**2
    + dp_cohesion_weight * cohesion_penalty``. ``cut_unit``: where a hard (and soft) cut may
    fall, ``word`` (any word start, the paper's token-level decoding) or ``sentence`` (sentence
    and title starts only, :func:`cut_allowed_mask`; no chunk ends mid-sentence, so an answer
    sentence is never split between two chunks).

    >>> BoundaryConfig(decoder="dp").alpha
    tensor([0.5000, 0.3000, 1.0000])
    """

    #: weight of the structural signal in b = a1 b_struct + a2 b_sem + a3 b_entity (learned)
    alpha_struct: float = 0.5
    #: weight of the semantic signal (1 - cosine of the windows either side; learned)
    alpha_sem: float = 0.3
    #: weight of the entity signal (negative inside a concept mention; learned)
    alpha_entity: float = 1.0
    #: the penalty b_entity puts on a cut inside a concept mention (Eq. 7; learned)
    gamma: float = 0.5
    tau: float = 0.3
    window: int = 16
    struct_weights: tuple[float, float, float] = (1.0, 0.7, 0.4)
    min_tokens: int = 128
    max_tokens: int = 1024
    decoder: str = "peak"
    #: DP decoder: the chunk length the length term prefers
    dp_target_tokens: int = 384
    #: DP decoder: weight of the squared relative distance from dp_target_tokens
    dp_length_weight: float = 1.0
    #: DP decoder: weight of the chunk's cohesion penalty
    dp_cohesion_weight: float = 1.0
    cut_unit: str = "word"

    def __post_init__(self) -> None:
        if self.decoder not in ("peak", "dp"):
            raise ValueError(f"BoundaryConfig.decoder must be 'peak' or 'dp', got {self.decoder!r}")
        if self.cut_unit not in CUT_UNITS:
            raise ValueError(f"BoundaryConfig.cut_unit must be one of {CUT_UNITS}, got {self.cut_unit!r}")
        if not 1 <= self.min_tokens <= self.max_tokens:
            raise ValueError(
                f"BoundaryConfig needs 1 <= min_tokens <= max_tokens, got "
                f"{self.min_tokens} / {self.max_tokens}"
            )
        if self.window < 1:
            raise ValueError(f"BoundaryConfig.window must be >= 1, got {self.window}")

    @property
    def alpha(self) -> torch.Tensor:
        """(3,) tensor ``[alpha_struct, alpha_sem, alpha_entity]``."""
        return torch.tensor([self.alpha_struct, self.alpha_sem, self.alpha_entity])


# ----- structural signal (Eq. 5) ----------------------------------------------------------
def structural_char_boundaries(
    doc: Document, weights: Sequence[float] = (1.0, 0.7, 0.4)
) -> dict[int, float]:
    """Character positions where a structural unit starts -> Eq. 5 weight (strongest wins).

    A top-level section starts at its title's first character (``Section.start``), weight
    ``weights[0]``; a deeper section ``weights[1]``; any paragraph (list items and captions
    included) ``weights[2]``. On PubMedQA abstracts the context labels (BACKGROUND, METHODS,
    ...) are top-level sections, so their starts get the section weight.

    >>> from gralc.documents.plaintext import document_from_text
    >>> structural_char_boundaries(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1"))
    {3: 1.0, 12: 0.4}
    """
    w_sec, w_sub, w_par = weights
    out: dict[int, float] = {}

    def put(pos: int, w: float) -> None:
        out[pos] = max(out.get(pos, 0.0), w)

    for sec in doc.iter_sections():
        put(sec.start, w_sec if sec.level <= 1 else w_sub)
    for par in doc.paragraphs:
        put(par.start, w_par)
    return out


def char_to_token_start(offsets: np.ndarray, pos: int) -> int:
    """First token whose span ends after ``pos`` (same rule as ``token_span``); N if none.

    >>> char_to_token_start(np.array([[0, 4], [5, 9]]), 4), char_to_token_start(np.array([[0, 4], [5, 9]]), 9)
    (1, 2)
    """
    return int(np.searchsorted(offsets[:, 1], pos, side="right"))


def structural_signal(
    doc: Document, offsets: np.ndarray, weights: Sequence[float] = (1.0, 0.7, 0.4)
) -> torch.Tensor:
    """b_struct (N,): Eq. 5 weight of the strongest unit starting at token i, else 0.

    ``offsets`` (N, 2) are the token character spans in ``doc.text`` (``TokenEmbeddings.offsets``).

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1")
    >>> structural_signal(doc, np.array([[0, 1], [3, 10], [12, 14], [15, 19]]))
    tensor([0.0000, 1.0000, 0.4000, 0.0000])
    """
    n = len(offsets)
    out = torch.zeros(n)
    for pos, w in structural_char_boundaries(doc, weights).items():
        i = char_to_token_start(offsets, pos)
        if 0 < i < n:
            out[i] = max(float(out[i]), w)
    return out


# ----- semantic signal (Eq. 6) ------------------------------------------------------------
#: Cut positions per block of :func:`semantic_signal`: its float64 work arrays are
#: (block + 2 w, d), about 3 MB each for MiniLM, whatever the document's length (blocks
#: of a few MB are also reused by the allocator; 13 MB ones left threads' arenas holding
#: up to the size of the token vectors).
SEM_BLOCK = 1024


def semantic_signal(vectors: torch.Tensor, window: int, block: int = SEM_BLOCK) -> torch.Tensor:
    """b_sem (N,): ``1 - cos(mean(H[i-w:i]), mean(H[i:i+w]))``, 0 at i = 0.

    Windows are clipped at the document edges. O(N d) time with cumulative sums in float64
    (for precision), computed ``block`` cut positions at a time from the rows they read, so
    the extra memory is O(block d), never an (N, d) float64 copy of ``vectors`` (one
    whole-document cumulative sum held about ten of them at once: 5 GiB to index a 1 MB
    article); the numbers are the whole-document sum's up to float64 rounding.
    Differentiable w.r.t. ``vectors`` (N, d); the result has their dtype and device.

    >>> semantic_signal(torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), window=1)
    tensor([0., 0., 1.])
    """
    n = vectors.shape[0]
    if n == 0:
        return vectors.new_zeros(0)
    if block < 1:
        raise ValueError(f"semantic_signal: block must be >= 1, got {block}")
    out = vectors.new_zeros(n)  # written block by block: nothing else outlives a block
    for a in range(1, n, block):
        b = min(a + block, n)
        first, last = max(0, a - window), min(n, b - 1 + window)  # rows the block's windows read
        seg = vectors[first:last].to(torch.float64)
        csum = torch.cat([seg.new_zeros(1, seg.shape[1]), torch.cumsum(seg, dim=0)])
        del seg
        idx = torch.arange(a, b, device=vectors.device)
        lo = (idx - window).clamp(min=0)
        hi = (idx + window).clamp(max=n)
        at = csum[idx - first]
        left = (at - csum[lo - first]) / (idx - lo).unsqueeze(1)
        right = (csum[hi - first] - at) / (hi - idx).unsqueeze(1)
        del at, csum
        out[a:b] = 1.0 - F.cosine_similarity(left, right, dim=1, eps=1e-12)
    return out


# ----- entity signal (Eq. 7) --------------------------------------------------------------
def entity_crossing_mask(
    mentions: Iterable[EntityMention], offsets: np.ndarray, n: int | None = None
) -> torch.Tensor:
    """(N,) bool: True where a cut before token i would split an entity mention.

    Mentions and ``offsets`` must both be in ``Document.text`` coordinates; a mention covering
    tokens ``[s, e)`` (via :func:`gralc.knowledge.mention.token_span`) marks ``s+1 .. e-1``.

    >>> offsets = np.array([[0, 4], [4, 9], [10, 15]])
    >>> entity_crossing_mask([EntityMention(0, 9, "D008687", "Metformin", "Metformin")], offsets)
    tensor([False,  True, False])
    """
    n = len(offsets) if n is None else n
    diff = np.zeros(n + 1, dtype=np.int64)
    for m in mentions:
        s, e = token_span(offsets, m.start, m.end)
        if e - s >= 2:
            diff[s + 1] += 1
            diff[min(e, n)] -= 1
    return torch.from_numpy(np.cumsum(diff[:n]) > 0)


def _letters(text: str) -> str:
    return re.sub(r"[\W_]+", "", text).lower()


def check_mentions(doc: Document, mentions: Iterable[EntityMention]) -> None:
    """Raise if a mention is not in ``doc.text`` coordinates (span outside the text, or text
    there that is not its surface form, compared on lower-cased letters and digits): spans
    linked on another text would put the entity penalty on the wrong tokens.

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("Metformin helps.", "d1")
    >>> check_mentions(doc, [EntityMention(0, 9, "D008687", "Metformin", "Metformin")]) is None
    True
    """
    for m in mentions:
        if not 0 <= m.start < m.end <= len(doc.text) or (
            _letters(doc.text[m.start : m.end]) != _letters(m.surface)
        ):
            raise ValueError(
                f"document {doc.id!r}: mention {m.surface!r} at [{m.start}, {m.end}) does not "
                f"match the document text there ({doc.text[m.start : m.end]!r}); link entities "
                "on Document.text itself"
            )


# ----- combined score (Eq. 8) -------------------------------------------------------------
def boundary_scores(
    b_struct: torch.Tensor,
    b_sem: torch.Tensor,
    entity_mask: torch.Tensor,
    alpha: torch.Tensor,
    gamma: torch.Tensor | float,
) -> torch.Tensor:
    """b (N,) = alpha[0] b_struct + alpha[1] b_sem + alpha[2] (-gamma 1[entity crosses i]).

    Differentiable w.r.t. ``alpha`` (3,) and ``gamma`` (scalar tensor).

    >>> boundary_scores(torch.tensor([1.0, 0.0]), torch.tensor([0.2, 0.4]), torch.tensor([False, True]),
    ...                 torch.tensor([0.5, 0.5, 1.0]), 0.5)
    tensor([ 0.6000, -0.3000])
    """
    b_entity = -gamma * entity_mask.to(b_sem.dtype)
    return alpha[0] * b_struct + alpha[1] * b_sem + alpha[2] * b_entity


@dataclass
class BoundarySignals:
    """All per-token signals of one document, each (N,); ``score`` is Eq. 8.

    Example: ``compute_signals(doc, vectors, offsets, mentions, config).components(i, config)``
    -> ``{'score': ..., 'struct': ..., 'sem': ..., 'entity': ...}`` at token ``i``.
    """

    struct: torch.Tensor
    sem: torch.Tensor
    entity_mask: torch.Tensor
    score: torch.Tensor

    def components(self, i: int, config: BoundaryConfig) -> dict[str, float]:
        """Score and its unweighted components at cut ``i`` (for ``Chunk.boundary_scores``)."""
        return {
            "score": float(self.score[i]),
            "struct": float(self.struct[i]),
            "sem": float(self.sem[i]),
            "entity": -config.gamma * float(self.entity_mask[i]),
        }


def compute_signals(
    doc: Document,
    vectors: torch.Tensor,
    offsets: np.ndarray,
    mentions: Iterable[EntityMention],
    config: BoundaryConfig,
) -> BoundarySignals:
    """Eq. 5-8 for one document with the config's (fixed) alpha and gamma.

    Example: ``compute_signals(doc, tokens.vectors, tokens.offsets, mentions, BoundaryConfig()).score``
    -> the (N,) Eq. 8 boundary score of each token of ``doc`` (``tokens = encoder.encode_document(doc)``).
    """
    if len(offsets) != vectors.shape[0]:
        raise ValueError(
            f"document {doc.id!r}: {vectors.shape[0]} token vectors but {len(offsets)} offsets"
        )
    if len(offsets) and int(offsets[:, 1].max()) > len(doc.text):
        raise ValueError(
            f"document {doc.id!r}: token offsets reach character {int(offsets[:, 1].max())} of a "
            f"{len(doc.text)}-character text; encode doc.text itself"
        )
    check_mentions(doc, mentions)
    struct = structural_signal(doc, offsets, config.struct_weights)
    sem = semantic_signal(vectors.detach(), config.window)
    mask = entity_crossing_mask(mentions, offsets, len(offsets))
    score = boundary_scores(struct, sem, mask, config.alpha, torch.tensor(config.gamma))
    return BoundarySignals(struct=struct, sem=sem, entity_mask=mask, score=score)


def word_start_mask(offsets: np.ndarray) -> torch.Tensor:
    """(N,) bool: True where token i starts a new word (whitespace before it), and at 0.

    Cuts elsewhere would split a word into word-pieces ("glio | ##blastoma").

    >>> word_start_mask(np.array([[0, 4], [4, 9], [10, 15]]))
    tensor([ True, False,  True])
    """
    n = len(offsets)
    mask = np.ones(n, dtype=bool)
    if n > 1:
        mask[1:] = offsets[1:, 0] > offsets[:-1, 1]
    return torch.from_numpy(mask)


def cut_allowed_mask(doc: Document, offsets: np.ndarray | torch.Tensor, cut_unit: str) -> torch.Tensor:
    """(N,) bool: tokens a cut may precede under ``cut_unit`` (:class:`BoundaryConfig`):
    every word start (``word``), or the word starts that also start a sentence unit of
    :func:`gralc.chunking.sentence_spans.sentence_token_spans` (``sentence``: sentences,
    titles, sentence-less paragraphs). ``offsets`` (N, 2) are character spans in ``doc.text``;
    a window's slice of them works too (units outside it are ignored).

    Example: ``cut_allowed_mask(doc, tokens.offsets, "sentence")`` -> (N,) bool, True at the
    first word-piece of each sentence and title of ``doc`` (``"word"``: at every word start).
    """
    from gralc.chunking.sentence_spans import sentence_token_spans

    offsets = offsets.cpu().numpy() if isinstance(offsets, torch.Tensor) else np.asarray(offsets)
    mask = word_start_mask(offsets)
    if cut_unit == "word" or len(offsets) == 0:
        return mask
    if cut_unit != "sentence":
        raise ValueError(f"cut_unit must be one of {CUT_UNITS}, got {cut_unit!r}")
    starts = torch.zeros(len(offsets), dtype=torch.bool)
    starts[[u.tok_start for u in sentence_token_spans(doc, offsets)]] = True
    return mask & starts


# ----- recommendation -> level-of-evidence pairs (ASCM hard constraint) -------------------
RECOMMENDATION_RE = re.compile(
    r"\b(recommend\w*|should|must|is (?:advised|indicated|suggested)|"
    r"are (?:advised|indicated|suggested)|suggest(?:s|ed)?)\b",
    re.IGNORECASE,
)
EVIDENCE_RE = re.compile(
    r"^\W*(?:"
    r"(?:level|grade|strength|quality|class)\s+of\s+(?:evidence|recommendation)"
    r"|evidence\s+(?:level|grade)"
    r"|(?:LoE|LoC|LoR|GoR|SoR)\b"
    r"|grade\s+[A-D1-4]\b"
    r"|level\s+(?:[IV]+|[1-5])[abc]?\b"
    r")",
    re.IGNORECASE,
)


def recommendation_evidence_pairs(doc: Document) -> list[tuple[Sentence, Sentence]]:
    """(recommendation, evidence) sentence pairs: an evidence statement ("Level of evidence: A",
    "(Grade B)", "Evidence level II", "LoR 1") that directly follows, in document order (its
    own paragraph allowed), a sentence that recommends ("recommended", "should", ...).

    >>> from gralc.documents.plaintext import document_from_text
    >>> doc = document_from_text("# T\\n\\nMetformin is recommended first. Level of evidence: A.", "d1")
    >>> [(doc.text[r.start:r.end], doc.text[e.start:e.end]) for r, e in recommendation_evidence_pairs(doc)]
    [('Metformin is recommended first.', 'Level of evidence: A.')]
    """
    sents = doc.sentences
    return [
        (prev, cur)
        for prev, cur in pairwise(sents)
        if EVIDENCE_RE.match(doc.text[cur.start : cur.end])
        and RECOMMENDATION_RE.search(doc.text[prev.start : prev.end])
    ]
