"""Dictionary entity linker: Aho-Corasick longest match over a :class:`Vocabulary`.

Always run the linker on ``Document.text`` (the canonical text the chunker and the encoder
tokenise), never on another concatenation of the article: mention offsets are character
offsets into exactly the string given to :meth:`EntityLinker.link`.

Matching: text and terms are normalised to a string of the SAME length (lower-cased,
non-alphanumerics as spaces) and matched at word boundaries only ("Iris" is not found in
"Irish"; "Anti-Bacterial" matches "anti bacterial"); the longest match wins, then the
leftmost, and mentions do not overlap. Filters (:class:`LinkerConfig`): terms shorter than
``min_length`` and stop-listed terms are not used; short acronym-like terms match
case-sensitively only. Plurals come from the vocabulary (:mod:`gralc.knowledge.vocabulary`).
The rules in full: docs/data.md."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import ahocorasick

from gralc.atomic import write_text_atomic
from gralc.knowledge.mention import EntityMention
from gralc.knowledge.vocabulary import Vocabulary, bulk_load
from gralc.safe_load import read_json_untrusted

#: MeSH entry terms that are frequent words in scientific prose where they almost never mean
#: the concept: "Lead" (the metal) vs "lead to", "Role", "Fig" (Ficus), "Will" (Volition),
#: "Strain" (Sprains and Strains), "Separated" (Divorce), "Metric" and "Soma" (drug brand
#: names), "DRG" (Diagnosis-Related Groups, in biology the dorsal root ganglion). Chosen from
#: the 900 most frequent one-word matches of the 2024 thesaurus over 108 PMC articles.
#: Compared lower-cased with the whole term, so "Lead Poisoning" still matches.
# fmt: off
DEFAULT_STOPLIST: tuple[str, ...] = (
    "ability", "abbreviations", "address", "adjustment", "administration", "affect",
    "affects", "arm", "arms", "arrowhead", "arrowheads", "association", "associations", "back",
    "biological", "carrying", "character", "charge", "coding", "collection", "compensation",
    "consumption", "culture", "cultures", "drg", "drgs", "drive", "drives", "efficiency",
    "element", "elements", "exhibit", "face", "families", "family", "fig", "figs", "floor",
    "form", "forms", "future", "ganglion", "generations", "goal", "hand", "hybrid", "hybrids",
    "index", "knowledge", "lead", "library", "libraries", "life", "literature", "maintenance",
    "manuscript", "map", "maps", "measure", "measures", "mediating", "method", "methods",
    "metric", "metrics", "minor", "needs", "nature", "observation", "organization", "overall",
    "paper", "permit", "play", "plays", "power", "procedure", "procedures", "production",
    "program", "programs", "projection", "record", "regulation", "report", "reports",
    "research", "resource", "resources", "respect", "rest", "retinal", "review", "role",
    "roles", "scales", "screening", "self", "sensitivity", "separated", "separation",
    "soma", "specificity", "standards", "strain", "strains", "suggestion", "table",
    "tables", "technique", "techniques", "thought", "time", "track", "tracks", "transient",
    "understanding", "uniform", "university", "universities", "white", "will", "work",
)
# fmt: on


@dataclass
class LinkerConfig:
    """Linker options.

    ``min_length``: shortest term (characters) used. ``case_sensitive_max_len``: terms of at
    most this length that look like acronyms (an upper-case letter after the first
    character: "ACE", "AIDS", "COPD", "mRNA", "IgG") match only with the same case, so
    "ace", "aids" in ordinary words do not. ``stoplist``: lower-cased terms never used.

    >>> LinkerConfig(min_length=4).case_sensitive_max_len
    5
    """

    min_length: int = 3
    case_sensitive_max_len: int = 5
    stoplist: tuple[str, ...] = DEFAULT_STOPLIST


_ASCII_TABLE = bytes(c if (c >= 128 or chr(c).isalnum()) else 32 for c in range(256))
_NON_ASCII_NON_WORD = re.compile(r"[^\x00-\x7f\w]")


def normalise(text: str, lower: bool = True) -> str:
    """Same-length normalisation: lower-case (per character where the lower case would be
    longer) and non-alphanumeric characters to spaces. ``len(result) == len(text)``.

    >>> normalise("HbA1c-level")
    'hba1c level'
    """
    if lower:
        low = text.lower()
        if len(low) != len(text):  # e.g. "İ".lower() has two characters: keep those as is
            low = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    else:
        low = text
    if low.isascii():
        return low.encode("ascii").translate(_ASCII_TABLE).decode("ascii")
    out = low.encode("utf-8").translate(_ASCII_TABLE).decode("utf-8")
    return _NON_ASCII_NON_WORD.sub(" ", out)


def _acronym_like(term: str) -> bool:
    return any(c.isupper() for c in term[1:])


@dataclass
class _Entry:
    """One automaton key: its length (padding spaces included), the concept it links to when
    any case matches (or -1), and case-sensitive forms ``normalise(term, lower=False)``."""

    key_len: int
    concept: int = -1
    rank: tuple | None = None  # (synonym position, concept id) of ``concept``
    case_forms: dict[str, tuple[tuple, int]] = field(default_factory=dict)


class EntityLinker:
    """Aho-Corasick linker over a vocabulary. ``build_seconds`` is the automaton build time.

    >>> from gralc.knowledge.builtin import builtin_vocabulary_path
    >>> from gralc.knowledge.vocabulary import load_vocabulary
    >>> linker = EntityLinker(load_vocabulary(builtin_vocabulary_path()))
    >>> [(m.surface, m.concept_id) for m in linker.link("Metformin lowers HbA1c.")]
    [('Metformin', 'D008687'), ('HbA1c', 'D006442')]
    """

    @bulk_load()
    def __init__(self, vocabulary: Vocabulary, config: LinkerConfig | None = None) -> None:
        self.config = config or LinkerConfig()
        start = time.perf_counter()
        stop = {s.lower() for s in self.config.stoplist}
        self.concept_ids: list[str] = []
        self.concept_names: list[str] = []
        entries: dict[str, _Entry] = {}
        for concept in vocabulary.concepts.values():
            cidx = len(self.concept_ids)
            self.concept_ids.append(concept.id)
            self.concept_names.append(concept.name)
            for position, term in enumerate(concept.terms()):
                term = term.strip()
                if len(term) < self.config.min_length or term.lower() in stop:
                    continue
                key = " " + normalise(term).strip() + " "
                if len(key) < 3:  # the term was punctuation only
                    continue
                entry = entries.setdefault(key, _Entry(len(key)))
                rank = (position, concept.id)  # preferred name first, then synonym order
                if len(term) <= self.config.case_sensitive_max_len and _acronym_like(term):
                    form = normalise(term, lower=False).strip()
                    if form not in entry.case_forms or rank < entry.case_forms[form][0]:
                        entry.case_forms[form] = (rank, cidx)
                elif entry.rank is None or rank < entry.rank:
                    entry.rank, entry.concept = rank, cidx
        self._entries = [
            (e.key_len, e.concept, {f: c for f, (_, c) in e.case_forms.items()})
            for e in entries.values()
        ]
        self._keys = list(entries)
        self._automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
        for idx, key in enumerate(entries):
            self._automaton.add_word(key, idx)
        self._automaton.make_automaton()
        self.build_seconds = time.perf_counter() - start

    @property
    def num_keys(self) -> int:
        """Number of distinct normalised terms in the automaton (after the stoplist and
        ``min_length``)."""
        return len(self._entries)

    def link(self, text: str) -> list[EntityMention]:
        """Mentions in ``text`` (use ``Document.text``), sorted by start; ``[start, end)``
        are offsets into ``text`` itself."""
        padded = " " + normalise(text) + " "
        candidates: list[tuple[int, int, int]] = []  # (-length, start, concept): longest first
        append, entries = candidates.append, self._entries
        for last, idx in self._automaton.iter(padded):
            key_len, concept, case_forms = entries[idx]
            start = last - key_len + 1  # offset in ``text``: the key's leading space is padding
            if case_forms:
                hit = case_forms.get(normalise(text[start : last - 1], lower=False))
                if hit is not None:
                    concept = hit
            if concept >= 0:
                append((2 - key_len, start, concept))
        candidates.sort()
        taken = bytearray(len(text))
        chosen: list[tuple[int, int, int]] = []
        for neg_len, start, concept in candidates:
            end = start - neg_len
            if taken.find(1, start, end) < 0:
                taken[start:end] = b"\x01" * (end - start)
                chosen.append((start, end, concept))
        chosen.sort()
        ids, names = self.concept_ids, self.concept_names
        return [EntityMention(s, e, ids[c], text[s:e], names[c]) for s, e, c in chosen]

    def link_documents(self, texts: Iterable[str]) -> list[list[EntityMention]]:
        """:meth:`link` for each text (each a ``Document.text``)."""
        return [self.link(text) for text in texts]

    def save(self, path: str | Path) -> None:
        """Write the linker as JSON (terms, entries, config; never a pickle) to ``path``
        atomically; :meth:`load` rebuilds the automaton from it."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"format": "gralc.linker/1", "config": asdict(self.config),
                   "concept_ids": self.concept_ids, "concept_names": self.concept_names,
                   "keys": self._keys, "entries": self._entries}
        write_text_atomic(path, json.dumps(payload, ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path) -> EntityLinker:
        """A linker saved with :meth:`save` (JSON: loading runs no code from the file)."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(
                f"linker file not found: {path}; build it with EntityLinker(vocabulary).save(path)"
            )
        try:
            data = read_json_untrusted(path, allow_interpolation=True)
            if data.get("format") != "gralc.linker/1":
                raise ValueError("no 'format': 'gralc.linker/1'")
            self = cls.__new__(cls)
            self.config = LinkerConfig(**data["config"])
            self.concept_ids, self.concept_names = data["concept_ids"], data["concept_names"]
            self._keys = data["keys"]
            self._entries = [(int(n), c, {str(f): int(i) for f, i in forms.items()})
                             for n, c, forms in data["entries"]]
        except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path} is not a GraLC linker file ({exc}); build one with "
                             "EntityLinker(vocabulary).save(path)") from None
        start = time.perf_counter()
        self._automaton = ahocorasick.Automaton(ahocorasick.STORE_INTS)
        for idx, key in enumerate(self._keys):
            self._automaton.add_word(key, idx)
        self._automaton.make_automaton()
        self.build_seconds = time.perf_counter() - start
        return self
