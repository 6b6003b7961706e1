"""A concept vocabulary (MeSH descriptors or UMLS concepts) and its loaders.

Loaders read the public file formats as distributed:

* NLM's descriptor XML ``descYYYY.xml`` (:meth:`Vocabulary.from_descriptor_xml`, streamed);
* a thesaurus-terms TSV with NLM's term columns (:meth:`Vocabulary.from_thesaurus_tsv`);
* NLM's tree file ``mtreesYYYY.bin`` or a ``DescriptorUI/TreeNumber`` TSV (tree numbers);
* UMLS ``MRCONSO.RRF`` (:meth:`Vocabulary.from_mrconso`, concept id = CUI).

Permuted terms (``IsPermutedTermYN=Y``): NLM generates them from entry terms. Those with a
comma and space are inversions ("Neoplasms, Breast") that running text lacks: skipped.
Those without a comma are singular/plural and word-order variants ("Abdominal Neoplasm",
"Abdomens"): kept, placed after the real synonyms. They give the linker its plural handling,
so the linker adds no "s" variants of its own.
"""

from __future__ import annotations

import csv
import gc
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gralc.safe_load import require_file

DOWNLOAD_HINT = (
    "download NLM's MeSH files with `gralc mesh --year 2024 --out DIR` "
    "(or from https://nlmpubs.nlm.nih.gov/projects/mesh/MESH_FILES/) and pass that path"
)


@dataclass
class Concept:
    """A concept: id (MeSH descriptor UI ``D003920`` or UMLS CUI), preferred name, entry
    terms other than the name (real synonyms first), MeSH tree numbers.

    >>> Concept("D008687", "Metformin", synonyms=["Glucophage"]).terms()
    ['Metformin', 'Glucophage']
    """

    id: str
    name: str
    synonyms: list[str] = field(default_factory=list)
    tree_numbers: list[str] = field(default_factory=list)

    def terms(self) -> list[str]:
        """The preferred name followed by the synonyms."""
        return [self.name, *self.synonyms]


@contextmanager
def bulk_load():
    """Pause the cyclic garbage collector while creating many objects (halves load time).

    >>> with bulk_load():
    ...     concepts = [Concept(f"D{i}", f"term {i}") for i in range(3)]
    >>> len(concepts)
    3
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _check_file(path: str | Path) -> Path:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"vocabulary file not found: {path}; {DOWNLOAD_HINT}")
    require_file(path, "vocabulary file")
    return path


def _keep_term(term: str, permuted: bool) -> bool:
    return bool(term) and not (permuted and ", " in term)


class Vocabulary:
    """Concepts by id (``concepts``) and the index ``term -> concept ids`` (``term_index``,
    exact surface strings).

    >>> v = Vocabulary(); v.add(Concept("D008687", "Metformin", synonyms=["Glucophage"]))
    >>> v.term_index["Glucophage"], v.num_terms()
    (['D008687'], 2)
    """

    def __init__(self, concepts: dict[str, Concept] | None = None) -> None:
        self.concepts: dict[str, Concept] = {}
        self.term_index: dict[str, list[str]] = {}
        for concept in (concepts or {}).values():
            self.add(concept)

    def __len__(self) -> int:
        return len(self.concepts)

    def __contains__(self, concept_id: str) -> bool:
        return concept_id in self.concepts

    def __getitem__(self, concept_id: str) -> Concept:
        return self.concepts[concept_id]

    def add(self, concept: Concept) -> None:
        """Add a concept, or merge its terms and tree numbers into the one with its id."""
        old = self.concepts.get(concept.id)
        if old is None:
            old = self.concepts[concept.id] = Concept(concept.id, concept.name)
        for syn in concept.terms():
            if syn != old.name and syn not in old.synonyms:
                old.synonyms.append(syn)
        old.tree_numbers.extend(t for t in concept.tree_numbers if t not in old.tree_numbers)
        for term in concept.terms():
            ids = self.term_index.setdefault(term, [])
            if concept.id not in ids:
                ids.append(concept.id)

    def merge(self, other: Vocabulary) -> Vocabulary:
        """A new vocabulary with the concepts of both (same ids are merged)."""
        merged = Vocabulary()
        for vocab in (self, other):
            for concept in vocab.concepts.values():
                merged.add(concept)
        return merged

    def tree_index(self) -> dict[str, str]:
        """``tree number -> concept id``."""
        return {tn: c.id for c in self.concepts.values() for tn in c.tree_numbers}

    def num_terms(self) -> int:
        """Number of distinct terms (names and synonyms) in :attr:`term_index`."""
        return len(self.term_index)

    # --- loaders -------------------------------------------------------------------------

    @classmethod
    @bulk_load()
    def from_thesaurus_tsv(cls, path: str | Path) -> Vocabulary:
        """Read a TSV with header columns DescriptorUI, DescriptorName, TermName and
        optionally IsPermutedTermYN (NLM's thesaurus terms, one row per term)."""
        path = _check_file(path)
        real: dict[str, list[str]] = {}
        variants: dict[str, list[str]] = {}
        names: dict[str, str] = {}
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(reader, [])
            missing = {"DescriptorUI", "DescriptorName", "TermName"} - set(header)
            if missing:
                raise ValueError(f"{path}: missing columns {sorted(missing)} (thesaurus TSV)")
            i_uid, i_name, i_term = (
                header.index(c) for c in ("DescriptorUI", "DescriptorName", "TermName")
            )
            i_perm = header.index("IsPermutedTermYN") if "IsPermutedTermYN" in header else None
            for row in reader:
                uid, term = row[i_uid], row[i_term]
                if uid not in names:
                    names[uid] = row[i_name]
                permuted = i_perm is not None and row[i_perm] == "Y"
                if _keep_term(term, permuted):
                    (variants if permuted else real).setdefault(uid, []).append(term)
        vocab = cls()
        for uid, name in names.items():
            syns = real.get(uid, []) + variants.get(uid, [])
            vocab.add(Concept(uid, name, list(dict.fromkeys(s for s in syns if s != name))))
        return vocab

    @classmethod
    @bulk_load()
    def from_descriptor_xml(cls, path: str | Path, strict: bool = True) -> Vocabulary:
        """Stream NLM's ``descYYYY.xml`` (DescriptorRecordSet) with lxml iterparse, clearing
        each record once read. A malformed or truncated file raises ``ValueError``; with
        ``strict=False`` the complete records before the error are kept (with a warning)."""
        from lxml import etree

        path = _check_file(path)
        vocab = cls()
        try:
            for _, rec in etree.iterparse(str(path), tag="DescriptorRecord", events=("end",)):
                vocab._add_descriptor_record(rec)
                rec.clear()
                while rec.getprevious() is not None:  # free the records already read
                    del rec.getparent()[0]
        except etree.XMLSyntaxError as err:
            msg = (
                f"{path}: XML error after {len(vocab)} complete descriptor records ({err}); "
                "the file looks truncated or corrupt: download it again"
            )
            if strict:
                raise ValueError(
                    msg + ", or pass strict=False to keep the complete records"
                ) from err
            warnings.warn(msg + f"; keeping the {len(vocab)} complete records", stacklevel=2)
        if not vocab.concepts:
            raise ValueError(f"{path}: no DescriptorRecord found (expected NLM descYYYY.xml)")
        return vocab

    def _add_descriptor_record(self, rec) -> None:
        uid = rec.findtext("DescriptorUI")
        name = rec.findtext("DescriptorName/String")
        if not (uid and name):
            return
        trees = [t.text for t in rec.iterfind("TreeNumberList/TreeNumber") if t.text]
        real, variants = [], []
        for term in rec.iterfind("ConceptList/Concept/TermList/Term"):
            text = term.findtext("String") or ""
            permuted = term.get("IsPermutedTermYN") == "Y"
            if _keep_term(text, permuted) and text != name:
                (variants if permuted else real).append(text)
        self.add(Concept(uid, name, list(dict.fromkeys(real + variants)), trees))

    @classmethod
    @bulk_load()
    def from_mrconso(
        cls, path: str | Path, sabs: tuple[str, ...] = ("MSH",), lang: str = "ENG"
    ) -> Vocabulary:
        """Read UMLS ``MRCONSO.RRF`` (``|``-separated; CUI, LAT, TS, LUI, STT, SUI, ISPREF,
        AUI, SAUI, SCUI, SDUI, SAB, TTY, CODE, STR, SRL, SUPPRESS, CVF), rows of the given
        sources and language that are not suppressible. Concept id = CUI; name = the
        preferred string (TS=P, STT=PF, ISPREF=Y) if present, else the first string."""
        path = _check_file(path)
        strings: dict[str, list[str]] = {}
        preferred: dict[str, str] = {}
        with path.open(encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                cols = line.rstrip("\n").split("|")
                if len(cols) < 17:
                    raise ValueError(f"{path}:{line_no}: not MRCONSO.RRF (expected >= 17 fields)")
                cui, lat, ts, stt, ispref, sab, text, suppress = (
                    cols[0],
                    cols[1],
                    cols[2],
                    cols[4],
                    cols[6],
                    cols[11],
                    cols[14],
                    cols[16],
                )
                if lat != lang or (sabs and sab not in sabs) or suppress not in ("N", ""):
                    continue
                strings.setdefault(cui, []).append(text)
                if ts == "P" and stt == "PF" and ispref == "Y":
                    preferred.setdefault(cui, text)
        vocab = cls()
        for cui, terms in strings.items():
            name = preferred.get(cui, terms[0])
            vocab.add(Concept(cui, name, list(dict.fromkeys(t for t in terms if t != name))))
        return vocab

    # --- tree numbers --------------------------------------------------------------------

    def add_tree_file(self, path: str | Path) -> int:
        """Add tree numbers from ``mtreesYYYY.bin`` (``Name;TreeNumber`` per line); names
        are mapped to concepts by preferred name. Returns the number of lines used."""
        path = _check_file(path)
        by_name = {c.name: c for c in self.concepts.values()}
        used = 0
        with path.open(encoding="utf-8") as f:
            for line in f:
                name, sep, tree_number = line.rstrip("\r\n").rpartition(";")
                concept = by_name.get(name)
                if sep and concept is not None and tree_number not in concept.tree_numbers:
                    concept.tree_numbers.append(tree_number)
                    used += 1
        return used

    def add_tree_tsv(self, path: str | Path) -> int:
        """Add tree numbers from a TSV with columns DescriptorUI and TreeNumber. Returns the
        number of rows used (rows of unknown descriptors are ignored)."""
        path = _check_file(path)
        used = 0
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            if not {"DescriptorUI", "TreeNumber"} <= set(reader.fieldnames or []):
                raise ValueError(f"{path}: expected columns DescriptorUI and TreeNumber")
            for row in reader:
                concept = self.concepts.get(row["DescriptorUI"])
                if concept is not None and row["TreeNumber"] not in concept.tree_numbers:
                    concept.tree_numbers.append(row["TreeNumber"])
                    used += 1
        return used


def load_vocabulary(path: str | Path) -> Vocabulary:
    """Load a vocabulary by file type: ``*.xml`` descriptor XML, ``*.tsv`` thesaurus terms,
    ``MRCONSO.RRF``.

    >>> from gralc.knowledge.builtin import builtin_vocabulary_path
    >>> load_vocabulary(builtin_vocabulary_path()).concepts["D008687"].name
    'Metformin'
    """
    path = _check_file(path)
    if path.suffix.lower() == ".xml":
        return Vocabulary.from_descriptor_xml(path)
    if path.suffix.lower() == ".tsv":
        return Vocabulary.from_thesaurus_tsv(path)
    if path.name.upper().startswith("MRCONSO"):
        return Vocabulary.from_mrconso(path)
    raise ValueError(
        f"{path}: unknown vocabulary format; pass descYYYY.xml, a thesaurus-terms .tsv or "
        "MRCONSO.RRF"
    )
