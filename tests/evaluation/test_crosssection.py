"""Cross-section question generator: templates, gold evidence, pitfall 8, determinism, JSONL."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from gralc.data.crosssection_questions import (
    TEMPLATES,
    GeneratorConfig,
    first_author_year,
    generate_questions,
    main,
    template_of,
)  # fmt: skip
from gralc.data.question_io import read_jsonl, write_jsonl
from gralc.documents.model import Citation, Document, Paragraph, Reference, Section, TextBuilder
from gralc.knowledge.linker import EntityLinker
from gralc.knowledge.vocabulary import Concept, Vocabulary

# (section title, imrad type, level, [paragraphs]); level-2 sections belong to the previous
# level-1 section. The direct Methods paragraph names no technique: the only method term
# ("Mann-Whitney test") is in the "Statistical analysis" subsection (pitfall 8).
ARTICLE = [
    ("Introduction", "introduction", 1, [
        "Collagen-induced arthritis (CIA) is a widely studied experimental model of rheumatoid "
        "arthritis in susceptible mouse strains, and interleukin-6 (IL-6) is thought to drive "
        "the joint inflammation seen in affected animals over several weeks.",
        "In this work we investigated whether IL-6 contributes to the severity of CIA in aged "
        "female mice, because earlier reports on older animals remained inconclusive and small.",
    ]),
    ("Materials and methods", "methods", 1, [
        "Female mice aged twelve months were immunised at the base of the tail and monitored "
        "three times every week for clinical signs of joint swelling in all four paws.",
    ]),
    ("Statistical analysis", "methods", 2, [
        "Group differences in disease scores were compared using the Mann-Whitney test, and "
        "values below 0.05 were regarded as significant throughout this whole study.",
    ]),
    ("Results", "results", 1, [
        "Aged mice with CIA showed increased IL-6 in serum at the peak of disease compared "
        "with young animals of the same strain (Mann-Whitney test, P below 0.01 overall).",
        "Clinical scores rose steadily during the second and third week after the booster "
        "immunisation and reached a plateau at day forty in every animal that was monitored.",
    ]),
    ("Discussion", "discussion", 1, [
        "The rise of IL-6 in aged animals agrees with earlier reports of cytokine changes in "
        "arthritic joints, although those studies examined only young animals of other strains.",
        "A limitation is that the Mann-Whitney test ignores the repeated measures over time, "
        "so that the clinical course in single animals could not be modelled in any detail.",
    ]),
]  # fmt: skip
CITING = "p07"  # the first discussion paragraph cites B3
REFERENCE = "Smith J, Doe A. Title. J Biol. 2004;3:1-10."
#: question slot label -> surface forms in the article (case-insensitive)
SLOTS = {
    "Mann-Whitney test": ["Mann-Whitney test"],
    "interleukin-6": ["IL-6", "interleukin-6"],
    "collagen-induced arthritis": ["CIA", "collagen-induced arthritis"],
}


def build_article(doc_id: str = "PMC1") -> Document:
    tb = TextBuilder()
    title = tb.add("Interleukin-6 in arthritis of aged mice")
    sections: list[Section] = []
    paragraphs: list[Paragraph] = []
    for n, (name, typ, level, texts) in enumerate(ARTICLE):
        ts, te = tb.add(name)
        parent = sections[-1] if level == 2 else None
        sec = Section(f"s{n}", name, level, typ, ts, te, ts, te, parent.id if parent else None)
        for text in texts:
            ps, pe = tb.add(text)
            para = Paragraph(f"p{len(paragraphs) + 1:02d}", ps, pe, sec.id)
            paragraphs.append(para)
            sec.paragraph_ids.append(para.id)
            sec.end = pe
        if parent is not None:
            parent.subsections.append(sec)
            parent.end = sec.end
        else:
            sections.append(sec)
    doc = Document(doc_id, tb.text, "Interleukin-6 in arthritis of aged mice", *title,
                   sections=sections, paragraphs=paragraphs)  # fmt: skip
    cite = doc.paragraph(CITING)
    at = doc.text.index("earlier reports", cite.start)
    doc.citations = [Citation(at, at + 15, "B3", CITING)]
    doc.references = [Reference("B1", "Jones K. Other. Cell. 1999;1:2-3."),
                      Reference("B3", REFERENCE)]  # fmt: skip
    return doc


def copied_run(question: str, text: str, n: int = 9) -> str | None:
    """A run of ``n`` consecutive article words inside the question, if any."""
    words = lambda s: re.findall(r"\w+", s.lower())  # noqa: E731
    body = " " + " ".join(words(text)) + " "
    q = words(question)
    for i in range(len(q) - n + 1):
        if " " + " ".join(q[i : i + n]) + " " in body:
            return " ".join(q[i : i + n])
    return None


def expected_gold(doc: Document, q) -> list[str]:
    """Independent gold: paragraphs of the required top-level types holding a slot form."""
    forms = [f.lower() for label, fs in SLOTS.items() if label.lower() in q.text.lower()
             for f in fs]  # fmt: skip
    assert forms, f"no known slot term in {q.text!r}"
    out = []
    for p in doc.paragraphs:
        typ = doc.top_level_type(p.section_id)
        text = doc.text[p.start : p.end].lower()
        cites = template_of(q) == "cross_study" and p.id == CITING
        if typ in q.gold_section_types and (cites or any(f in text for f in forms)):
            out.append(p.id)
    return out


def test_reference_author_year():
    assert first_author_year(REFERENCE) == ("Smith", "2004")
    assert first_author_year("Da Silva JA Hall GM The effects Clin Rheumatol 1992 6 196") == (
        "Da Silva", "1992")
    # a page number "1808" is not the year; a glued PMC reference still parses
    assert first_author_year("Weisberg SP Leibel RL 2003 Obesity J Clin Invest 112 1796 "
                             "1808 14679176") == ("Weisberg", "2003")  # fmt: skip
    assert first_author_year("ZhangNYoungRComplementation of Rz. Mol Gen Genet 1999 262 "
                             "659") == ("Zhang", "1999")  # fmt: skip
    assert first_author_year("WHO. Global report. Geneva.") is None


def test_all_templates_with_gold_types_and_paragraphs():
    doc = build_article()
    questions = generate_questions([doc], GeneratorConfig(seed=0))
    by_template = {template_of(q): q for q in questions}
    assert set(by_template) == set(TEMPLATES)
    for name, q in by_template.items():
        assert q.gold_section_types == list(TEMPLATES[name].types), name
        assert q.gold_doc_id == "PMC1" and q.id.startswith(f"PMC1::{name}::")
        assert q.gold_paragraph_ids == expected_gold(doc, q), (name, q.text)
        found = {doc.top_level_type(doc.paragraph(p).section_id) for p in q.gold_paragraph_ids}
        assert found == set(q.gold_section_types), name
        assert copied_run(q.text, doc.text) is None, (name, q.text)
    cross = by_template["cross_study"]
    assert "Smith et al. (2004)" in cross.text
    assert CITING in cross.gold_paragraph_ids


def test_subsection_paragraphs_count_as_methods():
    """Pitfall 8: the method term lives only under "Statistical analysis" (a subsection)."""
    doc = build_article()
    stats = "p04"
    assert doc.section(doc.paragraph(stats).section_id).title == "Statistical analysis"
    questions = generate_questions([doc], GeneratorConfig(seed=0))
    method_qs = [q for q in questions if "methods" in q.gold_section_types]
    assert {template_of(q) for q in method_qs} == {"method_result", "method_discussion"}
    for q in method_qs:
        assert "Mann-Whitney test" in q.text
        assert stats in q.gold_paragraph_ids
        assert "p03" not in q.gold_paragraph_ids  # direct Methods paragraph: no method term
    limits = next(q for q in method_qs if template_of(q) == "method_discussion")
    assert limits.gold_paragraph_ids == ["p04", "p08"]  # results paragraph p05 not required


def test_deterministic_for_a_seed_and_seed_dependent():
    docs = [build_article("PMC1"), build_article("PMC2")]
    config = GeneratorConfig(seed=0, per_article=8)
    first = generate_questions(docs, config)
    assert first == generate_questions(docs, config)
    texts = {seed: [q.text for q in generate_questions(docs, GeneratorConfig(seed=seed))]
             for seed in range(6)}  # fmt: skip
    assert len({tuple(t) for t in texts.values()}) > 1  # several terms fit some slots
    counts = Counter(q.gold_doc_id for q in first)
    assert max(counts.values()) <= 8 and set(counts) == {"PMC1", "PMC2"}
    assert len({q.id for q in first}) == len(first)


def test_per_article_limit_and_template_subset():
    doc = build_article()
    one = generate_questions([doc], GeneratorConfig(per_article=1))
    assert len(one) == 1
    only = generate_questions([doc], GeneratorConfig(templates=("cross_study",)))
    assert [template_of(q) for q in only] == ["cross_study"]
    with pytest.raises(ValueError, match="unknown template"):
        GeneratorConfig(templates=("nope",))


def test_no_question_without_both_section_types():
    doc = build_article()
    doc.sections = [s for s in doc.sections if s.imrad_type != "discussion"]
    doc.paragraphs = [p for p in doc.paragraphs if p.id not in ("p07", "p08")]
    names = {template_of(q) for q in generate_questions([doc])}
    assert names == {"method_result", "intro_result"}


def test_linker_slots():
    vocab = Vocabulary({
        "D1": Concept("D1", "Interleukin-6", ["IL-6"]),
        "D2": Concept("D2", "Arthritis, Experimental", ["collagen-induced arthritis", "CIA"]),
        "D3": Concept("D3", "Aging", ["aged"]),
    })  # fmt: skip
    doc = build_article()
    questions = generate_questions([doc], GeneratorConfig(), linker=EntityLinker(vocab))
    names = {template_of(q) for q in questions}
    assert names == set(TEMPLATES)
    for q in questions:
        found = {doc.top_level_type(doc.paragraph(p).section_id) for p in q.gold_paragraph_ids}
        assert found == set(q.gold_section_types)
        assert copied_run(q.text, doc.text) is None
    rd = next(q for q in questions if template_of(q) == "result_discussion")
    assert re.search(r"finding on (IL-6|aged)\?", rd.text)  # concepts in results AND discussion


def test_jsonl_round_trip_and_cli(tmp_path):
    doc = build_article()
    questions = generate_questions([doc])
    path = write_jsonl(questions, tmp_path / "q" / "questions.jsonl")
    assert read_jsonl(path) == questions
    (tmp_path / "demo.jsonl").write_text(
        '{"id": "d1", "question": "Why?", "gold_doc_id": "PMC9", "kind": "method_result", '
        '"gold_section_types": ["methods", "results"], "gold_paragraph_ids": ["p1"], '
        '"long_answer": ""}\n\n', encoding="utf-8")  # fmt: skip
    (demo,) = read_jsonl(tmp_path / "demo.jsonl")
    assert demo.text == "Why?" and demo.gold_section_types == ["methods", "results"]
    (tmp_path / "bad.jsonl").write_text('{"id": "x", "text": "t"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: .*gold_doc_id"):
        read_jsonl(tmp_path / "bad.jsonl")
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing"), "--out", str(tmp_path / "x.jsonl")])
    demo_articles = Path(__file__).resolve().parents[2] / "gralc" / "data" / "demo" / "articles"
    assert main([str(demo_articles), "--out", str(tmp_path / "demo_q.jsonl"), "--seed", "1"]) == 0
    written = read_jsonl(tmp_path / "demo_q.jsonl")
    assert written and all(q.kind in TEMPLATES and len(q.gold_section_types) == 2
                           for q in written)  # fmt: skip


def test_real_pmc_articles(shared_data):
    from gralc.documents.imrad import is_imrad
    from gralc.documents.jats import parse_jats

    files = sorted((shared_data / "pmc").rglob("*.nxml"))[::11][:10]
    docs = [d for d in (parse_jats(f) for f in files) if is_imrad(d)]
    assert len(docs) >= 8
    questions = generate_questions(docs, GeneratorConfig(seed=0))
    per_doc = Counter(q.gold_doc_id for q in questions)
    assert all(per_doc[d.id] >= 1 for d in docs), per_doc
    by_id = {d.id: d for d in docs}
    for q in questions:
        doc = by_id[q.gold_doc_id]
        assert len(q.gold_section_types) == 2 and q.gold_paragraph_ids
        found = {doc.top_level_type(doc.paragraph(p).section_id) for p in q.gold_paragraph_ids}
        assert found == set(q.gold_section_types), q
        assert copied_run(q.text, doc.text) is None, q.text
    counts = Counter(template_of(q) for q in questions)
    print(f"\n{len(docs)} real articles, {len(questions)} questions: {dict(counts)}")
    assert len(counts) >= 4
