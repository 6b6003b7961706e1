"""PubMedQA loader: questions plus one :class:`Document` per abstract.

Sources: the official ``ori_pqal.json`` (PQA-L) via :func:`load_pqal`, or the Hugging Face
dataset ``qiaojin/PubMedQA`` via :func:`load_hf_pubmedqa`; both go through
:func:`convert_record`, so the same record gives the same objects. A document's text is its
labels and contexts in blank-line separated blocks (built with :class:`TextBuilder`): one
level-1 :class:`Section` per run of contexts with the same label (``UNLABELLED`` or empty:
untitled), its ``imrad_type`` from :func:`label_to_imrad`. Splits (PQA-L): the 500 PMIDs of
``test_ground_truth.json`` are ``test``; a seeded ``dev_fraction`` share of the others is
``dev``, the rest ``train``. The JSON files are untrusted input
(:mod:`gralc.documents.textio`): a bad file is one error naming the file and the PMID. The
layout in full: docs/data.md."""

from __future__ import annotations

import logging
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gralc.documents.model import Document, Paragraph, Section, Sentence, TextBuilder, bounded_title
from gralc.documents.question import Question, clean_question_text
from gralc.documents.sentences import split_sentences
from gralc.documents.textio import read_json_file, replace_surrogates_in, surrogate_warning
from gralc.safe_load import require_file

log = logging.getLogger(__name__)

GET_DATA_HINT = (
    "download data/ori_pqal.json (and data/test_ground_truth.json) from "
    "https://github.com/pubmedqa/pubmedqa"
)
UNTITLED_LABELS = {"", "UNLABELLED", "UNLABELED"}

#: Whole labels whose first keyword would mislead the word rule below.
_EXACT = {
    "MEASUREMENTS AND MAIN RESULTS": "results",
    "MEASUREMENTS AND RESULTS": "results",
    "MEASUREMENT AND RESULTS": "results",
    "CASE DEFINITION": "methods",
    "END POINT": "methods",
    "SUMMARY": "other",
    "MAIN BODY": "other",
}
#: Keyword -> type; a label takes the type of its FIRST word found here
#: ("BACKGROUND AND PURPOSE" -> introduction, "METHODS AND RESULTS" -> methods).
_WORDS = {
    "introduction": (
        "BACKGROUND INTRODUCTION OBJECTIVE OBJECTIVES OBJECT AIM AIMS PURPOSE PURPOSES GOAL "
        "GOALS CONTEXT RATIONALE HYPOTHESIS HYPOTHESES"
    ),
    "methods": (
        "METHOD METHODS METHODOLOGY MATERIAL MATERIALS DESIGN SETTING SETTINGS PATIENT PATIENTS "
        "PARTICIPANTS SUBJECTS PROBANDS POPULATION SAMPLE INTERVENTION INTERVENTIONS MEASURE "
        "MEASURES MEASUREMENT MEASUREMENTS OUTCOME OUTCOMES VARIABLES SOURCE SOURCES SELECTION "
        "EXTRACTION COLLECTION LOCATION"
    ),
    "results": "RESULT RESULTS FINDINGS OBSERVATIONS SYNTHESIS CASE",
    "discussion": "DISCUSSION LIMITATION LIMITATIONS COMMENT COMMENTS",
    "conclusion": "CONCLUSION CONCLUSIONS INTERPRETATION IMPLICATIONS",
}
_WORD_TYPE = {w: t for t, words in _WORDS.items() for w in words.split()}


def label_to_imrad(label: str) -> str:
    """IMRaD type of a structured-abstract label (``"BACKGROUND"`` -> ``introduction``).

    Exact table first, then the first known keyword of the label; ``other`` otherwise
    (``UNLABELLED``, ``TRIAL REGISTRATION``, ``ICU LOS``, ...).

    >>> label_to_imrad("BACKGROUND"), label_to_imrad("TRIAL REGISTRATION")
    ('introduction', 'other')
    """
    norm = " ".join(re.findall(r"[A-Z]+", label.upper()))
    if norm in _EXACT:
        return _EXACT[norm]
    for word in norm.split():
        if word in _WORD_TYPE:
            return _WORD_TYPE[word]
    return "other"


@dataclass
class PubMedQA:
    """Loaded questions and their abstracts; ``mesh_terms`` maps document id -> MeSH headings;
    ``skipped`` counts entries dropped for having no CONTEXTS.

    Example: ``load_pqal("data/pubmedqa/ori_pqal.json").split("test")`` -> the 500 test
    questions; ``.document("21645374")`` -> that PMID's abstract.
    """

    questions: list[Question] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    mesh_terms: dict[str, list[str]] = field(default_factory=dict)
    skipped: int = 0

    def document(self, doc_id: str) -> Document:
        """The document with this id (KeyError if none)."""
        for doc in self.documents:
            if doc.id == doc_id:
                return doc
        raise KeyError(doc_id)

    def split(self, name: str) -> list[Question]:
        """Questions of one split (``train`` | ``dev`` | ``test``)."""
        return [q for q in self.questions if q.split == name]


def convert_record(
    pmid: str,
    question: str,
    contexts: list[str],
    labels: list[str],
    long_answer: str = "",
    decision: str = "",
) -> tuple[Question, Document]:
    """Convert ONE PubMedQA record to its :class:`Question` and abstract :class:`Document`.

    Blank contexts are dropped with their labels (an empty paragraph is no text). Raises
    ValueError when the question is not a non-blank string, ``contexts`` is empty (or blank) or
    ``labels`` has a different length.

    >>> q, doc = convert_record("1", "Does it help?", ["Few studied it.", "It helped."], ["BACKGROUND", "RESULTS"])
    >>> q.gold_doc_id, [s.imrad_type for s in doc.sections]
    ('1', ['introduction', 'results'])
    """
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"PubMedQA record {pmid}: the question must be a non-blank string, got "
                         f"{question!r:.60}")  # fmt: skip
    question = clean_question_text(question, f"PubMedQA record {pmid}: the question")
    if len(labels) != len(contexts):
        raise ValueError(
            f"PubMedQA record {pmid}: {len(contexts)} CONTEXTS but {len(labels)} LABELS"
        )
    kept = [(label, ctx) for label, ctx in zip(labels, contexts, strict=True) if ctx.strip()]
    labels, contexts = [label for label, _ in kept], [ctx for _, ctx in kept]
    if not contexts:
        raise ValueError(f"PubMedQA record {pmid} has no CONTEXTS")
    builder = TextBuilder()
    runs: list[tuple[str, list[str]]] = []  # (label, contexts) for consecutive equal labels
    for label, ctx in zip(labels, contexts, strict=True):
        if runs and runs[-1][0] == label:
            runs[-1][1].append(ctx)
        else:
            runs.append((label, [ctx]))

    sections: list[Section] = []
    paragraphs: list[Paragraph] = []
    notes: list[str] = []
    for label, ctxs in runs:
        sec_id = f"s{len(sections) + 1}"
        untitled = label.strip().upper() in UNTITLED_LABELS
        title = "" if untitled else bounded_title(label.strip(), f"PubMedQA record {pmid}: a label", notes)
        t_start, t_end = (builder.length, builder.length) if untitled else builder.add(title)
        sec = Section(sec_id, title, 1, label_to_imrad(label), t_start, t_end, t_start, t_end)
        for ctx in ctxs:
            p_id = f"p{len(paragraphs) + 1}"
            start, end = builder.add(ctx.strip())
            if untitled and not sec.paragraph_ids:
                # untitled section starts at its first paragraph (after the separator)
                sec.start = sec.title_start = sec.title_end = start
            paragraphs.append(Paragraph(p_id, start, end, sec_id, kind="abstract"))
            sec.paragraph_ids.append(p_id)
            sec.end = end
        sections.append(sec)

    text = builder.text
    for par in paragraphs:
        par.sentences = [
            Sentence(s, e, par.id) for s, e in split_sentences(text, par.start, par.end)
        ]
    doc = Document(
        id=pmid,
        text=text,
        pmid=pmid,
        sections=sections,
        paragraphs=paragraphs,
        source="pubmedqa",
        warnings=notes,
    )
    q = Question(
        id=pmid, text=question, gold_doc_id=pmid, long_answer=long_answer, decision=decision or ""
    )
    return q, doc


#: PQA-L keys: (JSON type, what the message calls it); the first three are required
_PQAL_TYPES = {"QUESTION": (str, "a string"), "CONTEXTS": (list, "a list of strings"),
               "LABELS": (list, "a list of strings"), "LONG_ANSWER": (str, "a string"),
               "final_decision": (str, "a string"), "MESHES": (list, "a list of strings")}  # fmt: skip


def _check_pqal_entry(entry: dict[str, Any]) -> None:
    """ValueError naming the first key of ``entry`` that is missing or of the wrong type."""
    for key, (kind, expected) in _PQAL_TYPES.items():
        value = entry.get(key)
        if value is None and key not in ("QUESTION", "CONTEXTS", "LABELS"):
            continue
        if value is None:
            raise ValueError(f"missing key {key!r}")
        if not isinstance(value, kind) or kind is list and not all(isinstance(v, str) for v in value):
            raise ValueError(f"{key!r} must be {expected}, got {str(value)[:60]!r}")


def _convert_pqal_entry(pmid: str, entry: dict[str, Any]) -> tuple[Question, Document]:
    _check_pqal_entry(entry)
    return convert_record(
        str(pmid),
        entry["QUESTION"],
        entry["CONTEXTS"],
        entry["LABELS"],
        entry.get("LONG_ANSWER", ""),
        entry.get("final_decision", ""),
    )


def convert_hf_record(record: dict[str, Any]) -> tuple[Question, Document, list[str]]:
    """Convert one ``qiaojin/PubMedQA`` record (fields ``pubid``, ``question``,
    ``context{contexts,labels,meshes}``, ``long_answer``, ``final_decision`` (absent in
    ``pqa_unlabeled``)) -> (question, document, MeSH terms).

    >>> q, doc, mesh = convert_hf_record({"pubid": 1, "question": "Does it help?", "long_answer": "Yes.",
    ...     "final_decision": "yes", "context": {"contexts": ["It helped."], "labels": ["RESULTS"], "meshes": ["Humans"]}})
    >>> q.id, q.decision, doc.sections[0].imrad_type, mesh
    ('1', 'yes', 'results', ['Humans'])
    """
    ctx = record["context"]
    q, doc = convert_record(
        str(record["pubid"]),
        record["question"],
        list(ctx["contexts"]),
        list(ctx["labels"]),
        record.get("long_answer") or "",
        record.get("final_decision") or "",
    )
    return q, doc, list(ctx.get("meshes") or [])


def assign_splits(
    questions: list[Question], test_ids: set[str], dev_fraction: float = 0.1, seed: int = 0
) -> None:
    """Set ``split`` in place: ``test`` for ``test_ids``; of the rest, exactly
    ``round(dev_fraction * n)`` drawn by ``random.Random(seed)`` from the sorted ids are
    ``dev``, the others ``train``.

    >>> from gralc.documents.question import Question
    >>> qs = [Question(str(i), "Q?", str(i)) for i in range(4)]
    >>> assign_splits(qs, {"0"}, dev_fraction=0.34); sorted(q.split for q in qs)
    ['dev', 'test', 'train', 'train']
    """
    pool = sorted(q.id for q in questions if q.id not in test_ids)
    dev = set(random.Random(seed).sample(pool, round(dev_fraction * len(pool))))
    for q in questions:
        q.split = "test" if q.id in test_ids else "dev" if q.id in dev else "train"


def _read_json(path: Path) -> Any:
    if not path.exists():
        raise FileNotFoundError(f"PubMedQA file not found: {path}; {GET_DATA_HINT}")
    require_file(path, "PubMedQA file")
    data = read_json_file(path, hint=f"; re-download it ({GET_DATA_HINT})")
    data, changed, first = replace_surrogates_in(data)
    if changed:
        log.warning("%s", surrogate_warning(str(path), changed, first))
    return data


def load_pqal(
    path: str | Path,
    test_ground_truth: str | Path | None = None,
    dev_fraction: float = 0.1,
    seed: int = 0,
) -> PubMedQA:
    """Load the official ``ori_pqal.json`` (dict PMID -> {QUESTION, CONTEXTS, LABELS, MESHES,
    LONG_ANSWER, final_decision, ...}).

    ``test_ground_truth``: the official ``{pmid: label}`` test file; by default
    ``test_ground_truth.json`` beside ``path`` when present (else no ``test`` split).

    Example: ``len(load_pqal("data/pubmedqa/ori_pqal.json").questions)`` -> ``1000`` (``test`` split
    from ``test_ground_truth.json`` beside it; ``dev`` 10% of the rest).
    """
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object PMID -> entry, got {type(data).__name__}")
    gt_path = (
        Path(test_ground_truth) if test_ground_truth else path.parent / "test_ground_truth.json"
    )
    test_ids: set[str] = set()
    if test_ground_truth or gt_path.is_file():
        truth = _read_json(gt_path)
        if not isinstance(truth, (dict, list)):
            raise ValueError(f"{gt_path}: expected a JSON object PMID -> label (or a list of "
                             f"PMIDs), got {type(truth).__name__}; {GET_DATA_HINT}")  # fmt: skip
        test_ids = set(map(str, truth))
    else:
        log.warning("no %s: every question is train/dev (%s)", gt_path, GET_DATA_HINT)

    out = PubMedQA()
    for pmid, entry in data.items():
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: entry for PMID {pmid} is not a JSON object")
        contexts = entry.get("CONTEXTS")
        if not contexts or isinstance(contexts, list) and all(
                isinstance(c, str) and not c.strip() for c in contexts):  # fmt: skip
            log.warning("%s: PMID %s has no CONTEXTS, skipped", path, pmid)
            out.skipped += 1
            continue
        try:
            q, doc = _convert_pqal_entry(pmid, entry)
        except (KeyError, TypeError, ValueError) as err:
            reason = str(err) if type(err) is ValueError else repr(err)
            raise ValueError(f"{path}: bad entry for PMID {pmid}: {reason}") from err
        out.questions.append(q)
        out.documents.append(doc)
        out.mesh_terms[doc.id] = list(entry.get("MESHES") or [])
    missing = test_ids - {q.id for q in out.questions}
    if missing:
        log.warning("%d test PMIDs of %s are not in %s", len(missing), gt_path, path)
    assign_splits(out.questions, test_ids, dev_fraction, seed)
    return out


def load_hf_pubmedqa(
    config: str = "pqa_labeled",
    split: str = "train",
    cache_dir: str | None = None,
    test_ground_truth: str | Path | None = None,
    dev_fraction: float = 0.1,
    seed: int = 0,
) -> PubMedQA:
    """Load ``qiaojin/PubMedQA`` (``pqa_labeled`` | ``pqa_artificial`` | ``pqa_unlabeled``)
    with the ``datasets`` library (needs internet or a filled ``cache_dir``).

    Question.split is ``split`` unless ``test_ground_truth`` is given (then as in
    :func:`load_pqal`).

    Example: ``load_hf_pubmedqa("pqa_labeled", cache_dir="data/hf")`` -> a :class:`PubMedQA` of
    1,000 questions, each ``split="train"``.
    """
    try:
        import datasets
    except ImportError as err:
        raise ImportError(
            "load_hf_pubmedqa needs the Hugging Face `datasets` library: `pip install datasets`, "
            f"or use load_pqal() on a local ori_pqal.json ({GET_DATA_HINT})"
        ) from err
    ds = datasets.load_dataset("qiaojin/PubMedQA", config, split=split, cache_dir=cache_dir)
    out = PubMedQA()
    for record in ds:
        if not any(c.strip() for c in record["context"]["contexts"]):
            log.warning(
                "qiaojin/PubMedQA %s: pubid %s has no contexts, skipped", config, record["pubid"]
            )
            out.skipped += 1
            continue
        q, doc, meshes = convert_hf_record(record)
        q.split = split
        out.questions.append(q)
        out.documents.append(doc)
        out.mesh_terms[doc.id] = meshes
    if test_ground_truth:
        assign_splits(
            out.questions, set(map(str, _read_json(Path(test_ground_truth)))), dev_fraction, seed
        )
    return out
