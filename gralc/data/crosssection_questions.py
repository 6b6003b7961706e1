"""Cross-section question generator (GraLC-RAG paper, Sect. 3.4).

Five templates, each requiring evidence from two top-level IMRaD types::

    method_result      methods + results        intro_result   introduction + results
    result_discussion  results + discussion     method_discussion  methods + discussion
    cross_study        results + discussion  ("... compare to the prior work of Smith et al. (2004)?")

Slots are short key terms, never copied sentences: the article's MeSH concepts with an
:class:`~gralc.knowledge.linker.EntityLinker`, else regex heuristics, ranked by occurrences x
IDF, preferring terms found in both required sections. Gold paragraphs are the paragraphs of
the two types holding a slot term; a question needs one per type and no run of more than
``max_verbatim_words`` words copied. Deterministic (``random.Random(f"{seed}:{doc.id}")``);
ids ``"{doc.id}::{template}::{n}"``, ``kind`` = template. The rules in full: docs/data.md."""

from __future__ import annotations

import bisect
import datetime
import functools
import math
import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field

import ahocorasick

from gralc.documents.model import Document
from gralc.documents.question import Question
from gralc.knowledge.linker import normalise

TEMPLATE_NAMES = ("method_result", "intro_result", "result_discussion", "method_discussion",
                  "cross_study")  # fmt: skip


@dataclass(frozen=True)
class Template:
    """``types``: the two required IMRaD types; ``slots``: the type each term slot is drawn
    from; ``text``: format string over the slot labels (cross_study adds author and year).

    >>> Template(("methods", "results"), ("methods", "results"), "How did {0} change {1}?").types
    ('methods', 'results')
    """

    types: tuple[str, str]
    slots: tuple[str, ...]
    text: str


TEMPLATES: dict[str, Template] = {
    "method_result": Template(("methods", "results"), ("methods", "results"),
        "How did the {0} described in the methods relate to the findings on {1}?"),
    "intro_result": Template(("introduction", "results"), ("introduction", "results"),
        "Did the results on {1} address the question about {0} raised in the introduction?"),
    "result_discussion": Template(("results", "discussion"), ("results",),
        "How do the authors interpret the finding on {0}?"),
    "method_discussion": Template(("methods", "discussion"), ("methods",),
        "What limitations of the {0} do the authors discuss?"),
    "cross_study": Template(("results", "discussion"), ("results",),
        "How do the results on {0} compare to the prior work of {1} et al. ({2})?"),
}  # fmt: skip


@dataclass
class GeneratorConfig:
    """``per_article``: max questions per article; ``min_paragraph_words``: shorter paragraphs
    give no slot terms (they can still be gold); ``top_k``: a slot is drawn at random among
    the ``top_k`` best-ranked terms; ``max_verbatim_words``: longest run of consecutive
    article words a question may contain.

    >>> GeneratorConfig(per_article=3).top_k
    5
    """

    seed: int = 0
    per_article: int = 5
    templates: tuple[str, ...] = TEMPLATE_NAMES
    min_paragraph_words: int = 20
    top_k: int = 5
    max_verbatim_words: int = 8

    def __post_init__(self) -> None:
        unknown = [t for t in self.templates if t not in TEMPLATES]
        if unknown:
            raise ValueError(f"unknown template(s) {unknown}; choose from {TEMPLATE_NAMES}")
        if self.per_article < 1:
            raise ValueError(f"per_article must be >= 1, got {self.per_article}")


def template_of(question: Question) -> str:
    """The template of a generated question (its ``kind``, else from ``doc::template::n``).

    >>> from gralc.documents.question import Question
    >>> template_of(Question("d1::method_result::0", "Q?", "d1"))
    'method_result'
    """
    return question.kind or question.id.split("::")[-2]


# ----- references --------------------------------------------------------------------------
_PARTICLES = {"van", "von", "der", "den", "de", "da", "di", "del", "della", "la", "le", "du",
              "dos", "das", "ten", "ter", "op"}  # fmt: skip
_INITIALS = re.compile(r"[A-Z](?:\.?-?[A-Z]){0,3}\.?")
_GLUED = re.compile(r"([A-Z][a-z]*(?:['\u2019-][A-Z]?[a-z]+)*[a-z])(?=[A-Z])")  # "ZhangNYoungR"
_YEAR = re.compile(r"(?<![\d.])(1[89]\d\d|20\d\d)(?!\d)")
_AFTER_NUMBER = re.compile(r"\d[\s:;,\u2013-]*$")  # "112 1796 1808": pages, not years


def first_author_year(text: str) -> tuple[str, str] | None:
    """``("Smith", "2004")`` from a reference string such as ``"Smith J, Doe A. Title. J Biol.
    2004;3:1-10."`` or ``"Da Silva JA Hall GM ... 1992 6 196"``; None when not found.

    >>> first_author_year("Smith J, Doe A. Title. J Biol. 2004;3:1-10.")
    ('Smith', '2004')
    """
    surname: list[str] = []
    name = None
    for tok in re.split(r"[\s,;]+", text.strip())[:6]:
        if surname and _INITIALS.fullmatch(tok):
            name = " ".join(surname)
            break
        if tok[:1].isupper() or tok.lower() in _PARTICLES:
            surname.append(tok)
        else:
            break
    if name is None:
        glued = _GLUED.match(text.strip())
        name = glued.group(1) if glued else None
    years = [m for m in _YEAR.finditer(text)
             if int(m.group(1)) <= datetime.date.today().year + 1
             and not _AFTER_NUMBER.search(text[max(0, m.start() - 8) : m.start()])]
    if not name or not years or not name[0].isalpha():
        return None
    # prefer "(2010)", then a year followed by volume / pages ("2004;3:1", "1999 45 317")
    paren = [m for m in years if text[m.start() - 1 : m.start()] == "("]
    tail = [m for m in years if re.match(r"[;:(]|\s+\d", text[m.end() : m.end() + 4])]
    if name.isupper() and len(name) > 2:
        name = name.title()
    return name, (paren or tail or years)[0].group(1)


# ----- slot terms --------------------------------------------------------------------------
BODY_TYPES = ("introduction", "methods", "results", "discussion", "conclusion")


@dataclass
class Term:
    """A slot candidate: ``key`` (concept id or normalised phrase), ``label`` (as written in
    the question), ``forms`` (surface forms), ``sources`` (types whose paragraphs it was
    extracted from), ``paragraphs`` (paragraph id -> occurrences), ``idf`` over the docs.

    >>> Term("D008687", "metformin", forms={"metformin"}).idf
    1.0
    """

    key: str
    label: str
    forms: set[str] = field(default_factory=set)
    sources: set[str] = field(default_factory=set)
    paragraphs: dict[str, int] = field(default_factory=dict)
    idf: float = 1.0


_STOP = frozenset("""a an the this these that those its their our his her and or but nor of in
on at to for from by with without within into onto over under between among than as via per
is are was were be been being has have had do does did not no it we they which who whom whose
what when where while whether how if both each all any some such other same more most less
least very also only using used use after before during then there here one two three four
five several many few can could may might should would will shall must described""".split())
GENERIC = frozenset("""cell cells mice mouse rat rats animal animals patient patients human
humans level levels number numbers expression activity data result results group groups sample
samples time rate rates control controls study studies effect effects analysis analyses method
methods model models protein proteins gene genes change changes difference differences increase
decrease value values response responses function role type types case cases area region factor
factors test tests figure table assay assays staining approach technique procedure kit software
protocol imaging design experiment experiments dna rna mrna background variation recognition
line lines cohort trial array arrays vector vectors construct constructs antibody antibodies
probe probes reporter database strain strains""".split())
_SENTENCE_STARTS = frozenset(("section", "samples", "sections", "cells", "tissue", "tissues",
                              "data", "results", "expression", "rna", "dna", "protein"))
_LATIN = frozenset(("situ", "vivo", "vitro", "silico", "utero", "ovo"))
_RELATIONAL = frozenset("""role effect effects level levels expression number amount amounts
activity ability presence absence loss lack function importance impact influence contribution
use""".split())
_NOT_ACRONYMS = frozenset("""DNA RNA USA UK II III IV VI VII VIII IX XI XII SD SEM SE CI OR HR RR
NS ND NA ID PBS BSA DMSO EDTA SDS HEPES DAPI NIH WHO IQR""".split())
_WORD = r"[^\W_][\w\-/]*"
_TOKEN = re.compile(r"(?<![\w-])[^\W_][\w\-]*[^\W_]")
_HEADS = (r"(?:assays?|analys[ie]s|methods?|techniques?|approach(?:es)?|models?|tests?|staining"
          r"|[A-Za-z]*PCR|ELISA|ANOVA|microscopy|cytometry|sequencing|blot(?:ting|s)?"
          r"|electrophoresis|chromatography|spectrometry|spectroscopy|immunohistochemistry"
          r"|immunofluorescence|immunoprecipitation|hybridi[sz]ation|regression|imaging|software"
          r"|algorithms?|protocols?|questionnaires?|surveys?|simulations?|genotyping|mapping"
          r"|transfection|knockdown|screens?|interviews?|kits?|scans?|scanning|mice|rats|lines"
          r"|cohorts?|trials?|microarrays?|arrays?|vectors?|constructs?|antibod(?:y|ies)|probes?"
          r"|reporters?|databases?)")
_METHOD_LIKE = re.compile(rf"(?:^|\s|-){_HEADS}$")
_METHOD = (
    re.compile(rf"\b(?:using|by|with|via|through)\s+((?:{_WORD}\s+){{0,4}}?{_HEADS})\b"),
    re.compile(rf"\b((?:{_WORD}\s+){{0,4}}?{_HEADS})\s+(?:was|were)\s+(?:performed|carried out"
               r"|used|conducted|applied|done|employed)\b"),
)
_CHANGE = (r"(?:increas(?:ed|es|ing)|decreas(?:ed|es|ing)|reduc(?:ed|es|ing|tion)|elevat(?:ed|ion)"
           r"|higher|lower|enhanc(?:ed|ement)|impair(?:ed|ment)|inhibit(?:ed|ion)|suppress(?:ed|ion)"
           r"|induc(?:ed|tion)|up-?regulat(?:ed|ion)|down-?regulat(?:ed|ion)|loss|greater|fewer"
           r"|accumulat(?:ed|ion)|restor(?:ed|ation)|abolished|attenuat(?:ed|ion)|activat(?:ed|ion))")
_RESULT = re.compile(rf"\b{_CHANGE}\s+((?:{_WORD}\s+){{0,5}}{_WORD})", re.IGNORECASE)
_INTRO = (
    re.compile(r"\b(?:we|this study|the present study|here)\s+(?:\w+\s+)?(?:investigat|examin|test"
               r"|ask|stud|analy[sz]|explor|determin|assess|evaluat|characteri[sz]|identif|address"
               r"|compar|hypothesi[sz]|propos)\w*\s+(?:whether|how|if|that)?\s*"
               rf"((?:{_WORD}\s+){{0,5}}{_WORD})", re.IGNORECASE),
    re.compile(r"\b(?:aim|objective|purpose|goal)s?\s+(?:of\s+\w+\s+\w+\s+)?(?:was|were|is|are)"
               rf"\s+to\s+\w+\s+(?:whether|how|if)?\s*((?:{_WORD}\s+){{0,5}}{_WORD})",
               re.IGNORECASE),
)  # fmt: skip


@functools.lru_cache(maxsize=65536)
def is_acronym(tok: str) -> bool:
    """``IL-6``, ``PCR``, ``mRNA``, ``CD4``, ``p53``; not ``mM``, ``kDa``, ``Figure``.

    >>> is_acronym("IL-6"), is_acronym("kDa")
    (True, False)
    """
    if len(tok) < 2 or not tok[0].isalpha() or tok in _NOT_ACRONYMS:
        return False
    if "-" in tok:  # "IL-6", "NF-kappaB" yes; "Mann-Whitney", "Kaplan-Meier" no
        return any(is_acronym(part) for part in tok.split("-") if part[:1].isalpha())
    upper, digit = sum(c.isupper() for c in tok), any(c.isdigit() for c in tok)
    return upper >= 2 or (upper >= 1 and digit) or bool(re.fullmatch(r"[a-z]{1,3}\d+[A-Za-z]?", tok))


def _phrase(words: list[str], head_final: bool) -> str | None:
    """A short noun phrase from regex-captured words, or None if nothing specific is left.
    ``head_final``: keep the words after the last stop word ("the Kaplan-Meier method");
    else drop leading stop/relational words ("the role of X") and cut at the next stop word."""
    if head_final:
        cut = max((i for i, w in enumerate(words) if w.lower() in _STOP and not (
            i + 1 < len(words) and words[i + 1].lower() in _LATIN)), default=-1)
        words = words[cut + 1 :]
        if len(words) > 1 and words[0].istitle() and words[0].lower() in _SENTENCE_STARTS:
            words = words[1:]
    else:
        while words and (words[0].lower() in _STOP or words[0].lower() in _RELATIONAL
                         and len(words) > 1 and words[1].lower() == "of"):  # fmt: skip
            words = words[2:] if words[0].lower() in _RELATIONAL else words[1:]
        kept: list[str] = []
        for i, w in enumerate(words):
            lw = w.lower()
            nxt = words[i + 1].lower() if i + 1 < len(words) else ""
            if lw == "of" and kept and nxt and nxt not in _STOP and "of" not in kept:
                kept.append(lw)
                continue
            if lw in _STOP or lw.endswith("ly") or not w[-1].isalnum():
                break
            kept.append(w)
        words = kept[:4]
        while words and words[-1] == "of":
            words.pop()
    label = " ".join(words)
    if len(label) < 3 or label.lower() in GENERIC or re.fullmatch(r"[\d\W_]+", label):
        return None
    if not head_final and len(label) <= 6 and label.isalpha() and label.islower():
        return None  # a short common word ("line", "domain") says nothing specific
    return label


def _definitions(texts: list[str]) -> dict[str, str]:
    """``{"CIA": "collagen-induced arthritis"}`` from "collagen-induced arthritis (CIA)"."""
    out: dict[str, str] = {}
    for text in texts:
        for m in re.finditer(r"\(([^\W\d_][\w\-]*)\)", text):
            acr = m.group(1)
            if not is_acronym(acr) or acr in out:
                continue
            words = re.split(r"[.;:,()\[\]]", text[max(0, m.start() - 150) : m.start()])[-1].split()
            k = max(2, sum(c.isupper() for c in acr))
            for n in (k, k - 1, k - 2, k + 1):
                cand = words[-n:] if 1 <= n <= len(words) else []
                if cand and cand[0][0].lower() == acr[0].lower() and cand[0].lower() not in _STOP:
                    out[acr] = " ".join(cand)
                    break
    return out


def _locate(doc: Document, paragraphs: list, terms: dict[str, Term]) -> None:
    """Fill ``Term.paragraphs``: every form is searched at word boundaries (acronyms
    case-sensitively) with Aho-Corasick over the linker's same-length normalised text."""
    starts = [p.start for p in paragraphs]
    for case_sensitive in (False, True):
        automaton = ahocorasick.Automaton()
        for term in terms.values():
            for form in term.forms:
                if is_acronym(form) == case_sensitive and normalise(form).strip():
                    key = " " + normalise(form, lower=not case_sensitive).strip() + " "
                    if key not in automaton:
                        automaton.add_word(key, (len(key), set()))
                    automaton.get(key)[1].add(term.key)
        if len(automaton) == 0:
            continue
        automaton.make_automaton()
        padded = " " + normalise(doc.text, lower=not case_sensitive) + " "
        for last, (key_len, owners) in automaton.iter(padded):
            start, end = last - key_len + 1, last - 1  # offsets in doc.text
            i = bisect.bisect_right(starts, start) - 1
            if i >= 0 and end <= paragraphs[i].end:
                pid = paragraphs[i].id
                for owner in owners:
                    hits = terms[owner].paragraphs
                    hits[pid] = hits.get(pid, 0) + 1


def regex_terms(doc: Document, paragraphs: list, ptype: dict[str, str], min_words: int,
                only: tuple[str, ...] = BODY_TYPES) -> dict[str, Term]:
    """Slot terms from regex heuristics: method phrases (methods), change phrases (results),
    study-aim phrases (introduction), acronyms with their definitions (any type); extracted
    from the paragraphs of the types in ``only``, located in every paragraph.

    Example: ``regex_terms(doc, paragraphs, ptype, 20)`` -> slot terms by normalised phrase
    (``'western blot'``, ``'il-6'``, ...) found by the regex heuristics.
    """
    texts = {p.id: doc.text[p.start : p.end] for p in paragraphs}
    defs = _definitions(list(texts.values()))
    terms: dict[str, Term] = {}

    def add(label: str | None, typ: str, forms: tuple[str, ...] = ()) -> None:
        if label:
            key = label if is_acronym(label) else label.lower()
            term = terms.setdefault(key, Term(key, label))
            term.sources.add(typ)
            term.forms.update((label, *forms))

    for p in paragraphs:
        text, typ = texts[p.id], ptype[p.id]
        if typ not in only or len(text.split()) < min_words:
            continue
        for tok in dict.fromkeys(_TOKEN.findall(text)):
            if is_acronym(tok):
                long = defs.get(tok, "")
                if typ != "methods" or _METHOD_LIKE.search(f"{tok} {long}".strip()):
                    add(tok, typ, (long,) if long else ())
        patterns = {"methods": [(r, True) for r in _METHOD], "results": [(_RESULT, False)],
                    "introduction": [(r, False) for r in _INTRO]}.get(typ, [])  # fmt: skip
        for regex, head_final in patterns:
            for m in regex.finditer(text):
                add(_phrase(m.group(1).split(), head_final), typ)
    for acr, long in defs.items():  # questions name the long form, the text may use either
        if acr in terms:
            terms[acr].label = long
    _locate(doc, paragraphs, terms)
    return terms


def linker_terms(doc: Document, paragraphs: list, ptype: dict[str, str], linker,
                 min_words: int) -> dict[str, Term]:
    """Slot terms = the concepts the linker finds in ``doc.text``; label = the article's most
    frequent surface form of the concept. A concept is a methods slot only if it names a
    technique ("PCR", "Western blot"): "mice" or "plasma" in the methods are not methods.

    Example: ``linker_terms(doc, paragraphs, ptype, linker, 20)`` -> ``{'D008687': Term(key='D008687',
    label='metformin', ...), ...}``: the linked concepts as slot terms.
    """
    starts = [p.start for p in paragraphs]
    terms: dict[str, Term] = {}
    surfaces: dict[str, Counter] = {}
    for m in linker.link(doc.text):
        i = bisect.bisect_right(starts, m.start) - 1
        if i < 0 or m.end > paragraphs[i].end:
            continue
        p = paragraphs[i]
        term = terms.setdefault(m.concept_id, Term(m.concept_id, m.name))
        term.paragraphs[p.id] = term.paragraphs.get(p.id, 0) + 1
        if len(doc.text[p.start : p.end].split()) >= min_words:
            term.sources.add(ptype[p.id])
        surfaces.setdefault(m.concept_id, Counter())[m.surface] += 1
    for key, term in list(terms.items()):
        surface = max(surfaces[key].items(), key=lambda kv: (kv[1], kv[0]))[0]
        lower_first = surface[:1].lower() + surface[1:]
        if lower_first in surfaces[key]:  # "Apoptosis" at a sentence start -> "apoptosis"
            surface = lower_first
        name, term.label, term.forms = term.label, surface, set(surfaces[key])
        if not any(_METHOD_LIKE.search(f) for f in (*term.forms, name)):
            term.sources.discard("methods")
        if term.label.lower() in GENERIC or name.lower() in GENERIC or (
                term.label.split()[0].lower() in _STOP):
            del terms[key]
    return terms

# ----- articles ----------------------------------------------------------------------------
@dataclass
class _Article:
    doc: Document
    ptype: dict[str, str]  # paragraph id -> top-level IMRaD type
    terms: dict[str, Term]
    types: set[str] = field(default_factory=set)

    def resolve(self, role: str) -> str | None:
        """The type filling a role (discussion -> conclusion when there is no discussion)."""
        if role in self.types:
            return role
        return "conclusion" if role == "discussion" and "conclusion" in self.types else None

    def count(self, term: Term, typ: str) -> int:
        return sum(n for pid, n in term.paragraphs.items() if self.ptype[pid] == typ)


def _article(doc: Document, config: GeneratorConfig, linker) -> _Article:
    ptype = {p.id: doc.top_level_type(p.section_id) for p in doc.paragraphs
             if p.kind != "formula"}  # fmt: skip
    ptype = {pid: t for pid, t in ptype.items() if t in BODY_TYPES}
    paragraphs = sorted((p for p in doc.paragraphs if p.id in ptype), key=lambda p: p.start)
    if linker is not None:  # concepts; method slots also from the regex method phrases
        terms = linker_terms(doc, paragraphs, ptype, linker, config.min_paragraph_words)
        terms.update(regex_terms(doc, paragraphs, ptype, config.min_paragraph_words,
                                 only=("methods",)))
    else:
        terms = regex_terms(doc, paragraphs, ptype, config.min_paragraph_words)
    return _Article(doc, ptype, terms, set(ptype.values()))


def _overlaps(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a in b or b in a


def _pick(art: _Article, rng: random.Random, source: str, pair: tuple[str, str],
          taken: list[Term], exclude: set[str], top_k: int, need_shared: bool,
          near: set[str] | None = None) -> Term | None:
    """Draw a term extracted from ``source``: among those present in both ``pair`` types if
    any (required when ``need_shared``), then near the ``near`` paragraphs if any."""
    pool = [t for t in art.terms.values() if source in t.sources and t.key not in exclude
            and art.count(t, source) > 0
            and not any(t.key == o.key or _overlaps(t.label, o.label) for o in taken)]
    shared = [t for t in pool if all(art.count(t, typ) for typ in pair)]
    if shared or need_shared:
        pool = shared
    if near:
        pool = [t for t in pool if near & t.paragraphs.keys()] or pool
    pool.sort(key=lambda t: (-(1 + math.log(art.count(t, source))) * t.idf, t.key))
    return rng.choice(pool[:top_k]) if pool else None


def _gold(art: _Article, types: tuple[str, str], terms: list[Term],
          extra: set[str] = frozenset()) -> list[str] | None:
    hits = set(extra).union(*(t.paragraphs.keys() for t in terms))
    gold = [p.id for p in art.doc.paragraphs if p.id in hits and art.ptype.get(p.id) in types]
    found = {art.ptype[pid] for pid in gold}
    return gold if all(t in found for t in types) else None


def _make(name: str, art: _Article, rng: random.Random, used: set[str],
          config: GeneratorConfig) -> tuple[str, list[str], str, list[str]] | None:
    """(question text, gold types, first-slot key, gold paragraph ids) or None."""
    tpl = TEMPLATES[name]
    types = tuple(art.resolve(r) for r in tpl.types)
    if None in types:
        return None
    slot_types = [types[tpl.types.index(r)] for r in tpl.slots]
    if name == "cross_study":
        return _make_cross_study(art, rng, used, config, types)  # type: ignore[arg-type]
    terms: list[Term] = []
    for i, src in enumerate(slot_types):
        term = _pick(art, rng, src, types, terms, used if i == 0 else set(), config.top_k,
                     need_shared=len(tpl.slots) == 1)  # type: ignore[arg-type]
        if term is None:
            return None
        terms.append(term)
    gold = _gold(art, types, terms)  # type: ignore[arg-type]
    if gold is None:
        return None
    return tpl.text.format(*(t.label for t in terms)), list(types), terms[0].key, gold


def _make_cross_study(art: _Article, rng: random.Random, used: set[str],
                      config: GeneratorConfig, types: tuple[str, str]):
    results, discussion = types
    refs = {r.id: r for r in art.doc.references}
    cited: dict[str, set[str]] = {}
    for c in art.doc.citations:
        if c.paragraph_id in art.ptype and c.ref_id in refs and c.ref_id not in used:
            cited.setdefault(c.ref_id, set()).add(c.paragraph_id)
    in_disc = {r: ps for r, ps in cited.items()
               if any(art.ptype[p] == discussion for p in ps)
               and first_author_year(refs[r].text)}  # fmt: skip
    both = [r for r, ps in in_disc.items() if any(art.ptype[p] == results for p in ps)]
    candidates = sorted(both or in_disc)
    if not candidates:
        return None
    ref_id = rng.choice(candidates)
    citing = {p for p in cited[ref_id] if art.ptype[p] in types}
    disc_citing = {p for p in citing if art.ptype[p] == discussion}
    term = _pick(art, rng, results, types, [], set(), config.top_k, need_shared=False,
                 near=disc_citing)
    if term is None:
        return None
    gold = _gold(art, types, [], extra={p for p in term.paragraphs if art.ptype[p] == results}
                 | citing)  # fmt: skip
    if gold is None:
        return None
    author, year = first_author_year(refs[ref_id].text)  # type: ignore[misc]
    text = TEMPLATES["cross_study"].text.format(term.label, author, year)
    return text, list(types), ref_id, gold


# ----- generation --------------------------------------------------------------------------
def _shingles(text: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def generate_questions(docs: list[Document], config: GeneratorConfig | None = None,
                       linker=None) -> list[Question]:
    """Up to ``config.per_article`` cross-section questions per document, documents in the
    given order. ``linker``: an EntityLinker for concept slots (regex heuristics if None).

    Example: ``generate_questions(load_corpus("gralc/data/demo/articles").documents)`` -> up to 5
    cross-section questions per article, each with its two gold IMRaD types.
    """
    config = config or GeneratorConfig()
    arts = [_article(d, config, linker) for d in docs]
    df = Counter(k for a in arts for k in a.terms)
    for a in arts:
        for t in a.terms.values():
            t.idf = math.log((1 + len(arts)) / (1 + df[t.key])) + 1.0
    n = config.max_verbatim_words + 1
    out: list[Question] = []
    for art in arts:
        doc = art.doc
        rng = random.Random(f"{config.seed}:{doc.id}")
        copied = _shingles(doc.text, n)
        used: dict[str, set[str]] = {name: set() for name in config.templates}
        made: list[Question] = []
        progress = True
        while progress and len(made) < config.per_article:
            progress = False
            order = list(config.templates)
            rng.shuffle(order)
            for name in order:
                if len(made) >= config.per_article:
                    break
                got = _make(name, art, rng, used[name], config)
                if got is None:
                    continue
                text, types, key, gold = got
                used[name].add(key)
                progress = True
                if _shingles(text, n) & copied:
                    continue
                made.append(Question(
                    id=f"{doc.id}::{name}::{len(used[name]) - 1}", text=text,
                    gold_doc_id=doc.id, gold_section_types=types, gold_paragraph_ids=gold,
                    kind=name))
        out.extend(made)
    return out


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: None reads ``sys.argv``): writes the corpus's cross-section
    questions as JSONL to ``--out`` and prints their count per template; returns 0.

    Example: ``main(["gralc/data/demo/articles", "--out", "questions.jsonl"])`` -> ``0``, with the
    questions written and their count per template printed.
    """
    from gralc.data.generator_cli import generator_inputs, generator_parser
    from gralc.data.question_io import write_jsonl

    ap = generator_parser("python -m gralc.data.crosssection_questions",
                          "Generate cross-section questions (JSONL).", "output JSONL file",
                          per_article=5)
    args = ap.parse_args(argv)
    loaded, linker = generator_inputs(ap, args)
    config = GeneratorConfig(seed=args.seed, per_article=args.per_article)
    questions = generate_questions(loaded.documents, config, linker)
    write_jsonl(questions, args.out)
    counts = Counter(template_of(q) for q in questions)
    print(f"{len(questions)} questions from {len(loaded.documents)} articles "
          f"({len(loaded.skipped)} skipped) -> {args.out}")
    for name in config.templates:
        print(f"  {name:18s} {counts[name]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
