"""Fuzzing the readers of untrusted input (issue 45): no input may crash a parser.

Hypothesis feeds generated inputs to the JATS reader, the plain-text/Markdown reader, the
SQuAD reader, the BEIR folder reader and the question path (question files of every format,
PubMedQA, the question text itself):
random nesting of known JATS tags around random text, random bytes, random Unicode including
unpaired surrogates and control characters, JSON of any shape and depth. Every input must end
in a document whose offsets are exact, or in the project's own user error (a
``DocumentParseError``, or a plain ``ValueError`` naming the file and entry); anything else (a
``RecursionError``, ``TypeError``, ``KeyError``, ``UnicodeEncodeError``, ...) fails the test.

One CI run tries ``GRALC_FUZZ_EXAMPLES`` inputs per test (default :data:`CI_EXAMPLES` = 400:
3 600 inputs over the 9 tests, about 40 s on two loaded cores); each test asserts how many it
tried and the module prints the total (``fuzz: 3600 inputs tried (...)``). A longer campaign:
``GRALC_FUZZ_EXAMPLES=20000 pytest tests/reliability/test_fuzz_readers.py`` (docs/fuzzing.md).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gralc.data.beir import beir_benchmarks
from gralc.data.benchmarks import squad_benchmark
from gralc.data.question_io import QUERY_FORMATS, read_jsonl, read_queries
from gralc.documents.errors import DocumentParseError
from gralc.documents.jats import parse_jats
from gralc.documents.plaintext import parse_plain_text, parse_text_file
from gralc.documents.pubmedqa import load_pqal
from gralc.documents.question import clean_question_text
from gralc.documents.squad import iter_squad_contexts, read_squad

#: inputs per test in CI; the whole file then runs in about 40 s on two loaded cores
CI_EXAMPLES = 400
EXAMPLES = int(os.environ.get("GRALC_FUZZ_EXAMPLES", CI_EXAMPLES))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])  # fmt: skip
#: inputs tried, per reader
TRIED: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def report_inputs_tried(request):
    """Print how many inputs this run tried (visible in the CI log without ``-s``)."""
    yield
    total = sum(TRIED.values())
    line = f"fuzz: {total} inputs tried ({', '.join(f'{k} {v}' for k, v in sorted(TRIED.items()))})"
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        print(line)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line("")
        reporter.write_line(line)


def run_counted(name: str, fuzz) -> None:
    """Run one Hypothesis test and check it tried the inputs it was set to."""
    before = TRIED[name]
    fuzz()
    assert TRIED[name] - before >= EXAMPLES, f"{name}: only {TRIED[name] - before} inputs tried"


def is_user_error(exc: BaseException) -> bool:
    """The project's user errors: a DocumentParseError, or a ValueError raised as such (not a
    UnicodeError or JSONDecodeError leaking out of a library)."""
    return isinstance(exc, DocumentParseError) or type(exc) is ValueError

# ----- strategies ---------------------------------------------------------------------------
#: characters a reader must survive, mixed into arbitrary Unicode
ODD_CHARS = ["\ud800", "\udcff", "\udfff", "\x00", "\x01", "\x0b", "\x0c", "\r", "\x85", "\u2028",
             "\ufeff", "\u00a0", "\u2009", "\u3002", "\uffff", "\U0010ffff", "\u0301", ".", "!",
             "?", " ", "\n", "\t", "#", '"', ")", "&", "<", ">"]  # fmt: skip
chars = st.one_of(st.characters(exclude_categories=()), st.sampled_from(ODD_CHARS))
any_text = st.text(chars, max_size=60)
words = st.sampled_from(["Results", "Methods", "The cells grew.", "E. coli", "p < 0.05.", "e.g.",
                         "Introduction", "et al.", "Fig. 1", "x", "  ", "\u00a0", "1.2", "\n\n",
                         "1."])  # fmt: skip
prose = st.lists(st.one_of(words, any_text), max_size=4).map(" ".join)

# JATS: known tags (block, inline, MathML, skipped) nested at random
JATS_TAGS = ["p", "sec", "title", "label", "caption", "bold", "italic", "sup", "sc", "xref",
             "list", "list-item", "def-list", "def-item", "term", "def", "boxed-text", "fig",
             "table-wrap", "table", "disp-formula", "inline-formula", "mml:math", "mml:mrow",
             "mml:mi", "mml:annotation", "break", "fn", "disp-quote", "statement",
             "supplementary-material", "ref-list", "ref", "mixed-citation", "pub-id", "ack",
             "abstract", "body", "back", "floats-group", "alternatives", "tex-math"]  # fmt: skip
ATTRS = st.sampled_from(["", ' id="s1"', ' id="abstract"', ' id="s0"', ' ref-type="bibr" rid="r1"',
                         ' ref-type="fig" rid="f1 f2"', ' ref-type="supplementary-material" rid="x"',
                         ' list-type="bullet"', ' sec-type="methods"', ' abstract-type="toc"',
                         ' pub-id-type="pmid"', ' sec-type="display-objects"'])  # fmt: skip
#: text XML allows (most of it: a file with a control character is merely malformed)
xml_chars = st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="\ufffe\uffff")
xml_text = st.one_of(
    words.map(escape), words.map(escape), st.text(xml_chars, max_size=30).map(escape),
    st.sampled_from(["&amp;", "&lt;", "&#x2009;", "&#160;", "&#x1F600;", "<![CDATA[a<b]]>",
                     "<!-- c -->", "<?pi x?>"]))  # fmt: skip
#: one of these in a file makes it malformed (or, for ``&nbsp;``, an undeclared entity)
BAD_XML = st.sampled_from(["&nbsp;", "&undeclared;", "&#0;", "&#xD800;", "]]>", "\x01", "\ud800",
                           "<p>", "</sec>", "&", "<"])  # fmt: skip
#: the tags that hold text, twice as likely
TAGS = st.one_of(st.sampled_from(JATS_TAGS), st.sampled_from(["p", "sec", "title", "bold", "list-item"]))
element = st.recursive(
    xml_text,
    lambda inner: st.tuples(TAGS, ATTRS, st.lists(inner, max_size=4))
    .map(lambda t: f"<{t[0]}{t[1]}>{''.join(t[2])}</{t[0]}>"),
    max_leaves=40)  # fmt: skip
#: one chain of tags nested up to past the XML parser's limit (2048)
deep_chain = st.tuples(st.lists(st.sampled_from(JATS_TAGS), min_size=1, max_size=3),
                       st.one_of(st.integers(1, 50), st.integers(50, 1500), st.integers(1500, 2060)),
                       xml_text).map(
    lambda t: "".join(f"<{t[0][i % len(t[0])]}>" for i in range(t[1])) + t[2]
    + "".join(f"</{t[0][i % len(t[0])]}>" for i in reversed(range(t[1]))))  # fmt: skip
DOCTYPES = st.sampled_from(["", '<!DOCTYPE article PUBLIC "-//NLM//DTD JATS" "JATS.dtd">',
                            '<!DOCTYPE article [<!ENTITY e "entity text">]>',
                            '<!DOCTYPE article [<!ENTITY x SYSTEM "file:///etc/hostname">]>'])  # fmt: skip


@st.composite
def jats_articles(draw) -> bytes:
    front = draw(st.lists(st.one_of(element, deep_chain), max_size=2))
    wraps = st.sampled_from(["%s", "<p>%s</p>", "<sec><title>T</title><p>Text.</p>%s</sec>"])
    body = [draw(wraps).replace("%s", part)
            for part in draw(st.lists(st.one_of(element, element, deep_chain), min_size=1, max_size=4))]
    ns = ' xmlns:mml="http://www.w3.org/1998/Math/MathML"'
    xml = (f"{draw(DOCTYPES)}<article{ns}><front><article-meta><title-group><article-title>"
           f"{draw(xml_text)}</article-title></title-group>{''.join(front)}</article-meta></front>"
           f"<body>{''.join(body)}</body></article>")
    if draw(st.integers(0, 4)) == 4:  # about one in five: one malformed spot
        at = draw(st.integers(0, len(xml)))
        xml = xml[:at] + draw(BAD_XML) + xml[at:]
    return xml.encode("utf-8", "surrogatepass")  # a surrogate becomes bytes that are not UTF-8


@st.composite
def mutated(draw, source) -> bytes:
    """``source`` bytes with a few random bytes overwritten, inserted or cut."""
    data = bytearray(draw(source))
    for _ in range(draw(st.integers(0, 4))):
        pos = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["set", "insert", "cut"]))
        if op == "set" and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif op == "insert":
            data[pos:pos] = draw(st.binary(max_size=8))
        else:
            del data[pos : pos + draw(st.integers(1, 16))]
    return bytes(data)


# plain text: lines that look like headings, labels and metadata, mixed with anything
TEXT_LINES = ["# Title", "## Methods", "###### Deep", "####### seven", "Abstract:", "Abstract: nan",
              "Text: Body.", "1. Introduction", "2.1 Statistical analysis", "1.1.1.1.1.1.1.1 Deep",
              "Materials and methods", "References", "DOI: 10.1000/xyz", "SHORT TITLE", "```", "~~~",
              "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC1/", "Smith, J; Doe, A", "", "",
              "Date: 2020-01-01", "Results", "The cells grew. They died!"]  # fmt: skip
plain_texts = st.lists(st.one_of(st.sampled_from(TEXT_LINES), any_text), max_size=30).map("\n".join)
huge_lines = st.tuples(st.sampled_from(["a", ".", "10.1234/", "A. ", "# ", "1.", "x!", " "]),
                       st.integers(1, 50_000)).map(lambda t: "Title\n\n" + t[0] * t[1])  # fmt: skip

# JSON of any shape; strings with surrogates are written as \udXXX escapes by json.dumps
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                      any_text, prose)  # fmt: skip
JSON_KEYS = st.sampled_from(["data", "paragraphs", "context", "qas", "question", "answers", "text",
                             "answer_start", "id", "document_id", "title", "gold_doc_id"])
json_any = st.recursive(json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.one_of(any_text, JSON_KEYS), inner, max_size=4)), max_leaves=20)
deep_json = st.tuples(st.sampled_from(["[", '{"a":']), st.integers(1, 120_000)).map(
    lambda t: t[0] * t[1] + "1" + ("]" if t[0] == "[" else "}") * t[1])


@st.composite
def squad_files(draw) -> bytes:
    """A SQuAD skeleton with random values (any JSON, any text) in its slots, or junk."""
    def slot(good):
        return draw(st.one_of(good, json_any)) if draw(st.integers(0, 4)) == 0 else draw(good)

    context = draw(st.one_of(plain_texts, any_text))
    qas = [{"id": slot(st.integers()), "question": slot(any_text),
            "answers": slot(st.lists(st.fixed_dictionaries(
                {"text": st.one_of(any_text, st.just(context[:10])),
                 "answer_start": st.integers(-5, len(context) + 5)}), max_size=2))}
           for _ in range(draw(st.integers(0, 3)))]  # fmt: skip
    paras = [{"context": slot(st.just(context)), "qas": slot(st.just(qas)),
              "document_id": slot(any_text)} for _ in range(draw(st.integers(0, 2)))]
    raw = {"data": slot(st.just([{"title": slot(any_text), "paragraphs": slot(st.just(paras))}]))}
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=200))
    if kind == 1:
        return ('{"data": ' + draw(deep_json) + "}").encode()
    text = json.dumps(raw if kind > 2 else draw(json_any))
    return text.encode() if kind != 2 else draw(mutated(st.just(text.encode())))


@st.composite
def question_lines(draw) -> bytes:
    """A JSON Lines question file: good rows, rows with odd values, junk lines, junk bytes."""
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        row = {"id": draw(st.one_of(st.text(max_size=5), st.integers(), json_any)),
               draw(st.sampled_from(["text", "question"])): draw(st.one_of(any_text, prose, json_any)),
               "gold_doc_id": draw(st.one_of(st.just("d1"), json_any))}  # fmt: skip
        for key in draw(st.lists(st.sampled_from(["long_answer", "kind", "gold_section_types",
                                                  "evidence_spans", "gold_paragraph_ids"]), max_size=2)):
            row[key] = draw(json_any)
        kind = draw(st.integers(0, 9))
        line = json.dumps(row) if kind > 2 else json.dumps(draw(json_any)) if kind == 2 else draw(deep_json)
        lines.append(line.encode() if kind else draw(st.binary(max_size=40)))
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n", b"\n\n"]))


ID_KEYS = st.sampled_from(["_id", "id", "qid", "query_id", "title"])
TEXT_KEYS = st.sampled_from(["text", "question", "query", "title"])
TSV_CELLS = st.one_of(st.sampled_from(["qid", "text", "id", "query", "query-id", "corpus-id",
                                       "score", "1", "0", "2", "-1", "1.5", "q1", "d1", " "]),
                      any_text)  # fmt: skip


@st.composite
def query_files(draw) -> bytes:
    """A question file of any format: JSON lines with any id/text keys, TSV-like rows, plain
    lines, junk bytes, mixed."""
    lines = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 4))
        if kind == 0:
            line = json.dumps({draw(ID_KEYS): draw(st.one_of(st.integers(), any_text, json_any)),
                               draw(TEXT_KEYS): draw(st.one_of(any_text, prose, json_any))})
        elif kind == 1:
            line = "\t".join(draw(st.lists(TSV_CELLS, min_size=1, max_size=4)))
        elif kind == 2:
            line = draw(st.one_of(prose, any_text))
        elif kind == 3:
            line = json.dumps(draw(json_any))
        else:
            lines.append(draw(st.binary(max_size=30)))
            continue
        lines.append(line.encode("utf-8", "surrogatepass"))
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


@st.composite
def beir_corpora(draw) -> bytes:
    """A BEIR corpus.jsonl: entries with odd values, repeated ids, junk lines."""
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        row = {"_id": draw(st.one_of(st.sampled_from(["d1", "d2", "1"]), st.integers(0, 3), json_any)),
               "title": draw(st.one_of(st.none(), any_text, prose, json_any)),
               "text": draw(st.one_of(plain_texts, any_text, json_any))}  # fmt: skip
        kind = draw(st.integers(0, 9))
        line = json.dumps(row) if kind > 1 else json.dumps(draw(json_any)) if kind else draw(any_text)
        lines.append(line.encode("utf-8", "surrogatepass"))
    return b"\n".join(lines) + b"\n"


# ----- the readers -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="gralc-fuzz-") as d:
        yield Path(d)


def _jats(data: bytes, check_offsets) -> None:
    try:
        doc = parse_jats(data, source="fuzz.nxml")
    except DocumentParseError:
        return
    check_offsets(doc, one_line=True)


def test_jats_reader_on_generated_articles(check_offsets):
    @FUZZ
    @given(jats_articles())
    def fuzz(data: bytes) -> None:
        TRIED["jats"] += 1
        _jats(data, check_offsets)

    run_counted("jats", fuzz)


def test_jats_reader_on_mutated_bytes(check_offsets):
    @FUZZ
    @given(mutated(jats_articles()))
    def fuzz(data: bytes) -> None:
        TRIED["jats bytes"] += 1
        _jats(data, check_offsets)

    run_counted("jats bytes", fuzz)


def test_plain_text_reader(workdir, check_offsets):
    @FUZZ
    @given(st.one_of(plain_texts, plain_texts, any_text, huge_lines),
           st.sampled_from(["auto", "plain", "cord19", "markdown"]),
           st.one_of(st.none(), st.none(), any_text, st.sampled_from(TEXT_LINES)))  # fmt: skip
    def fuzz(raw: str, fmt: str, title: str | None) -> None:
        TRIED["plain text"] += 1
        try:
            doc, offsets = parse_plain_text(raw, "fuzz", fmt=fmt, title=title)
        except DocumentParseError:
            return
        check_offsets(doc)
        clean = raw.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        if len(clean) == len(raw):  # raw text copied verbatim (surrogates as U+FFFD)
            for rs, ds, n in offsets.segments:
                assert doc.text[ds : ds + n] == clean[rs : rs + n]

    run_counted("plain text", fuzz)


def test_plain_text_files_from_bytes(workdir, check_offsets):
    @FUZZ
    @given(st.one_of(mutated(plain_texts.map(lambda s: s.encode("utf-8", "surrogatepass"))),
                     st.binary(max_size=300)), st.sampled_from([".txt", ".md"]))  # fmt: skip
    def fuzz(data: bytes, suffix: str) -> None:
        TRIED["plain text bytes"] += 1
        path = workdir / f"fuzz{suffix}"
        path.write_bytes(data)
        try:
            doc = parse_text_file(path)
        except DocumentParseError:
            return
        check_offsets(doc)

    run_counted("plain text bytes", fuzz)


def test_squad_reader_and_its_questions(workdir, check_offsets):
    @FUZZ
    @given(squad_files())
    def fuzz(data: bytes) -> None:
        TRIED["squad"] += 1
        path = workdir / "fuzz.json"
        path.write_bytes(data)
        try:
            raw = read_squad(path)
            docs = [c.doc for c in iter_squad_contexts(path, raw, lambda _m: None)]
            bench = squad_benchmark(path)
        except (DocumentParseError, ValueError) as exc:
            assert is_user_error(exc), repr(exc)
            assert str(path) in str(exc)
            return
        for doc in docs + bench.documents:
            check_offsets(doc)
        by_id = {d.id: d for d in bench.documents}
        for q in bench.questions:
            q.text.encode("utf-8")
            n = len(by_id[q.gold_doc_id].text)
            assert all(0 <= s <= e <= n for s, e in q.evidence_spans)

    run_counted("squad", fuzz)


def test_question_files(workdir):
    @FUZZ
    @given(question_lines())
    def fuzz(data: bytes) -> None:
        TRIED["question files"] += 1
        path = workdir / "questions.jsonl"
        path.write_bytes(data)
        try:
            questions = read_jsonl(path)
        except (DocumentParseError, ValueError) as exc:
            assert is_user_error(exc), repr(exc)
            assert str(path) in str(exc)
            return
        for q in questions:
            assert all(isinstance(v, str) for v in (q.id, q.text, q.gold_doc_id))
            (q.id + q.text + q.gold_doc_id + q.long_answer).encode("utf-8")

    run_counted("question files", fuzz)


def test_question_files_of_every_format(workdir):
    @FUZZ
    @given(query_files(), st.sampled_from([".jsonl", ".tsv", ".txt", ".dat"]),
           st.sampled_from([None, *QUERY_FORMATS]))  # fmt: skip
    def fuzz(data: bytes, suffix: str, fmt: str | None) -> None:
        TRIED["query files"] += 1
        path = workdir / f"queries{suffix}"
        path.write_bytes(data)
        try:
            queries = read_queries(path, fmt)
        except (DocumentParseError, ValueError) as exc:
            assert is_user_error(exc), repr(exc)
            assert str(exc).startswith(str(path)) and "accepted:" in str(exc), str(exc)
            return
        ids = [qid for qid, _ in queries]
        assert len(set(ids)) == len(ids)
        for qid, text in queries:
            assert qid and text.strip()
            (qid + text).encode("utf-8")

    run_counted("query files", fuzz)


def test_beir_folders(workdir, check_offsets):
    @FUZZ
    @given(beir_corpora(), query_files(), st.lists(st.lists(TSV_CELLS, max_size=5).map("\t".join), max_size=5))
    def fuzz(corpus: bytes, queries: bytes, qrels: list[str]) -> None:
        TRIED["beir"] += 1
        folder = workdir / "beir"
        (folder / "qrels").mkdir(parents=True, exist_ok=True)
        (folder / "corpus.jsonl").write_bytes(corpus)
        (folder / "queries.jsonl").write_bytes(queries)
        (folder / "qrels" / "test.tsv").write_bytes("\n".join(qrels).encode("utf-8", "surrogatepass"))
        try:
            bench, = beir_benchmarks(folder)
        except (DocumentParseError, ValueError) as exc:
            assert is_user_error(exc), repr(exc)
            assert str(folder) in str(exc), str(exc)
            return
        by_id = {d.id: d for d in bench.documents}
        for doc in bench.documents:
            check_offsets(doc)
        for q in bench.questions:
            assert q.gold_doc_id in by_id and set(q.relevance) <= set(by_id)
            assert all(g > 0 for g in q.relevance.values())
            assert q.evidence_spans == [[0, len(by_id[q.gold_doc_id].text)]]

    run_counted("beir", fuzz)


def test_question_text_and_pubmedqa(workdir, check_offsets):
    @FUZZ
    @given(st.one_of(any_text, json_any), st.one_of(st.lists(any_text, max_size=3), json_any),
           st.one_of(st.lists(st.sampled_from(["BACKGROUND", "", "UNLABELLED"]), max_size=3), json_any))  # fmt: skip
    def fuzz(question, contexts, labels) -> None:
        TRIED["questions"] += 1
        try:
            cleaned = clean_question_text(question, "fuzz")
        except ValueError as exc:  # not a string, or no letter / digit left (the question gate)
            assert is_user_error(exc)
            assert not isinstance(question, str) or "no letters or digits" in str(exc)
        else:  # control and format characters removed, surrogates replaced, never longer
            assert len(cleaned) <= len(question)
            cleaned.encode("utf-8")
        path = workdir / "ori_pqal.json"
        (workdir / "test_ground_truth.json").write_text("{}", encoding="utf-8")
        path.write_text(json.dumps({"1": {"QUESTION": question, "CONTEXTS": contexts,
                                          "LABELS": labels}}), encoding="utf-8")  # fmt: skip
        try:
            data = load_pqal(path)
        except (DocumentParseError, ValueError) as exc:
            assert is_user_error(exc), repr(exc)
            return
        for q, doc in zip(data.questions, data.documents):
            q.text.encode("utf-8")
            check_offsets(doc)

    run_counted("questions", fuzz)
