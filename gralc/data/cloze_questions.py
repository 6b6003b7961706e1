"""Cloze questions: extractive-QA-like training questions written from unlabelled articles.

    python -m gralc.data.cloze_questions DIR --out cloze.json --vocabulary thesaurus.tsv

Mimics COVID-QA's annotators on any corpus (JATS, plain text; no labels), in the spirit of
cloze translation for unsupervised QA (Lewis et al., ACL 2019): pick a body sentence, an
answer span in it (a linked concept mention, or a number with its unit), replace the span by
``what`` and keep at most ``window`` words on each side ("Mother-to-child transmission is the
main cause of HIV-1 infection in children." -> "What is the main cause of HIV-1 infection in
children?"). The output is a SQuAD-format JSON file, trained as an extra source through
``mix=[{name: squad, path: FILE, weight: W}]``. Deterministic: each article has its own
``random.Random(f"{seed}:{doc.id}")``. The rules in full: docs/data.md."""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gralc.documents.model import Document, Paragraph

#: a number with an optional unit (an answer when no concept mention is usable)
NUMBER = re.compile(
    r"(?<![\w.])\d+(?:[.,]\d+)?(?:\s?(?:%|percent|days?|weeks?|months?|years?|hours?|h|min|"
    r"minutes?|mg|kg|g|ml|mL|μg|µg|nm|μm|µm|mm|cm|°C|fold|patients|cases|cells))?(?![\w])"
)
#: bracketed citation markers and similar noise kept out of questions
CITATION = re.compile(r"\s*\[[^\]]{0,40}\]|\s*\((?:[^()]{0,60}(?:\d{4}[a-z]?|Fig|Table|et al)[^()]{0,40})\)")
WORD = re.compile(r"\S+")


@dataclass
class ClozeConfig:
    """``per_article``: max questions per article; a sentence qualifies with ``min_words`` to
    ``max_words`` words; the question keeps at most ``window`` words on each side of the
    answer; ``min_question_words``: shorter questions are dropped.

    >>> ClozeConfig(per_article=10).window
    10
    """

    per_article: int = 40
    min_words: int = 8
    max_words: int = 50
    window: int = 10
    min_question_words: int = 5
    seed: int = 0

    def __post_init__(self) -> None:
        if self.per_article < 1 or self.window < 1 or self.min_words < 1:
            raise ValueError(f"ClozeConfig: per_article, window and min_words must be >= 1, got {self}")
        if self.max_words < self.min_words:
            raise ValueError(f"ClozeConfig: max_words={self.max_words} < min_words={self.min_words}")


@dataclass(frozen=True)
class Cloze:
    """One question: its text and the answer span ``[start, end)`` in the article context.

    >>> Cloze("metformin was titrated over what", "8 weeks", 120, 127).answer
    '8 weeks'
    """

    question: str
    answer: str
    start: int
    end: int


def article_context(doc: Document) -> tuple[str, list[tuple[int, Paragraph]]]:
    """The article as COVID-QA gives it: title, then every body paragraph (captions and
    formulas left out), separated by blank lines. Returns the context and each kept
    paragraph with its offset in the context.

    >>> from gralc.documents.plaintext import document_from_text
    >>> context, kept = article_context(document_from_text("# T\\n\\n## Methods\\n\\nIt took 8 weeks.", "d1"))
    >>> context, [(offset, p.id) for offset, p in kept]
    ('T\\n\\nIt took 8 weeks.', [(3, 'p0001')])
    """
    parts, where, pos = [], [], 0
    if doc.title.strip():
        parts.append(doc.title.strip())
        pos = len(parts[0]) + 2
    for p in doc.paragraphs:
        if p.kind in ("caption", "formula"):
            continue
        text = doc.text[p.start : p.end]
        if not text.strip():
            continue
        parts.append(text)
        where.append((pos, p))
        pos += len(text) + 2
    return "\n\n".join(parts), where


def answer_spans(sentence: str, mentions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Candidate answers in ``sentence`` (character spans): concept mentions first, then
    numbers with their units; none covering the whole sentence's content.

    >>> s = "Metformin was titrated over 8 weeks in 40 patients."
    >>> [s[a:b] for a, b in answer_spans(s, [(0, 9)])]
    ['Metformin', '8 weeks', '40 patients']
    """
    spans = [(s, e) for s, e in mentions if 0 <= s < e <= len(sentence)]
    spans += [m.span() for m in NUMBER.finditer(sentence)]

    def free(s: int, e: int) -> bool:  # a whole word (not part of "Tie-2", "IL-6/8"), not a [ref]
        left, right = sentence[:s].rstrip()[-1:], sentence[e:].lstrip()[:1]
        glued = (s > 0 and (sentence[s - 1].isalnum() or sentence[s - 1] in "-/")) or (
            e < len(sentence) and (sentence[e].isalnum() or sentence[e] in "-/"))
        return not glued and not (left in "[," and right in "],–-" and left and right)

    spans = [(s, e) for s, e in spans if free(s, e)]
    words = len(WORD.findall(sentence))
    return [(s, e) for s, e in spans if len(WORD.findall(sentence[s:e])) <= max(1, words // 3)]


def cloze_question(sentence: str, start: int, end: int, window: int) -> str:
    """``sentence`` with ``[start, end)`` replaced by ``what``, at most ``window`` words kept on
    each side, citation markers and the final punctuation removed, as a question.

    >>> cloze_question("Metformin was titrated over 8 weeks.", 28, 35, window=10)
    'Metformin was titrated over what?'
    """
    before = CITATION.sub("", sentence[:start]).split()[-window:]
    after = CITATION.sub("", sentence[end:]).split()[:window]
    if after:
        after[-1] = after[-1].rstrip(".;:,")
    words = [*before, "what", *after]
    text = re.sub(r"\s+([,;:)])", r"\1", " ".join(w for w in words if w)).rstrip(",;: ")
    return text[0].upper() + text[1:] + "?"


def _content(text: str) -> set[str]:
    return {w.lower().strip(".,;:()[]") for w in text.split()} - {""}


def article_clozes(doc: Document, config: ClozeConfig, linker=None) -> tuple[str, list[Cloze]]:
    """The article context and up to ``config.per_article`` cloze questions over it.

    Example: ``context, clozes = article_clozes(doc, ClozeConfig())`` -> the article's context and
    up to 40 :class:`Cloze` questions whose answers lie in it.
    """
    context, where = article_context(doc)
    rng = random.Random(f"{config.seed}:{doc.id}")
    counts: Counter[str] = Counter()  # normalised sentence -> occurrences in the article
    sentences = []  # (start in the context, sentence text, normalised text)
    for ctx_off, para in where:
        for s in para.sentences:
            text = doc.text[s.start : s.end]
            key = " ".join(text.split()).lower()
            counts[key] += 1
            if config.min_words <= len(WORD.findall(text)) <= config.max_words:
                sentences.append((ctx_off + s.start - para.start, text, key))
    rng.shuffle(sentences)
    out: list[Cloze] = []
    for ctx_start, text, key in sentences:
        if len(out) >= config.per_article:
            break
        if counts[key] > 1 or context[ctx_start : ctx_start + len(text)] != text:
            continue
        mentions = [(m.start, m.end) for m in linker.link(text)] if linker is not None else []
        spans = answer_spans(text, mentions)
        if not spans:
            continue
        s, e = spans[rng.randrange(len(spans))]
        answer = text[s:e].strip()
        question = cloze_question(text, s, e, config.window)
        if len(question.split()) < config.min_question_words or _content(answer) <= _content(question):
            continue
        lead = len(text[s:e]) - len(text[s:e].lstrip())
        out.append(Cloze(question, answer, ctx_start + s + lead, ctx_start + s + lead + len(answer)))
    return context, out


def cloze_squad(docs: list[Document], config: ClozeConfig | None = None, linker=None) -> dict:
    """A SQuAD-format dict (``version``, ``data``) of every article with at least one question.

    Example: ``cloze_squad(load_corpus("gralc/data/demo/articles").documents)["data"][0]["title"]``
    -> the first article's title (its ``paragraphs[0]`` holds the context and the questions).
    """
    config = config or ClozeConfig()
    data = []
    for doc in docs:
        context, clozes = article_clozes(doc, config, linker)
        if not clozes:
            continue
        qas = [{"id": f"{doc.id}::cloze::{n}", "question": c.question, "is_impossible": False,
                "answers": [{"text": c.answer, "answer_start": c.start}]} for n, c in enumerate(clozes)]
        data.append({"title": doc.title, "paragraphs": [{"context": context, "document_id": doc.id,
                                                         "qas": qas}]})
    return {"version": "gralc-cloze-1", "data": data}


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: None reads ``sys.argv``): writes the corpus's cloze questions
    as SQuAD JSON to ``--out`` (a ``.json`` file) and prints their count; returns 0.

    Example: ``main(["gralc/data/demo/articles", "--out", "clozes.json"])`` -> ``0``, with
    ``clozes.json`` written and the question count printed.
    """
    from gralc.data.generator_cli import generator_inputs, generator_parser
    from gralc.runinfo import write_json_atomic

    ap = generator_parser("python -m gralc.data.cloze_questions",
                          "Write cloze training questions (SQuAD JSON) from a corpus.",
                          "output SQuAD-format JSON file", per_article=40)
    ap.add_argument("--window", type=int, default=10)
    args = ap.parse_args(argv)
    out = Path(args.out)
    if out.suffix != ".json":
        ap.error(f"--out {out}: give a .json file (SQuAD format)")
    loaded, linker = generator_inputs(ap, args)
    config = ClozeConfig(per_article=args.per_article, window=args.window, seed=args.seed)
    squad = cloze_squad(loaded.documents, config, linker)
    write_json_atomic(out, squad)
    n = sum(len(a["paragraphs"][0]["qas"]) for a in squad["data"])
    print(f"{n} cloze questions over {len(squad['data'])} of {len(loaded.documents)} articles "
          f"({len(loaded.skipped)} skipped) -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
