"""One question side: a question reaches the encoder through one function
(``DocumentEncoder.read_questions``), the entity linker through one
(``gralc.model.query_features.link_questions``), and every retrieved-text budget is counted by
one counter (``gralc.encoding.budget.budget_counter``). These tests walk the package and fail
where a second implementation appears in a shape a pattern can catch: a new tokenizer call (or
a word-piece count, ``add_special_tokens=False``), a new ``.link(`` call, a second definition
of the question encoders. A site that is not about questions or budgets joins the lists below,
with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gralc"

#: (module, function) -> why it may call a tokenizer or count word-pieces itself
TOKENIZER_SITES = {
    ("encoding/encoder.py", "read_questions"): "the one question path (batching, one truncation length)",
    ("encoding/encoder.py", "_check_questions"): "the length warning of the same questions",
    ("encoding/encoder.py", "_special_tokens"): "probes the model's special tokens",
    ("encoding/encoder.py", "_prefix_tokens"): "probes the query / passage prefixes",
    ("encoding/encoder.py", "encode_documents"): "documents (late chunking)",
    ("encoding/encoder.py", "_mean_pool"): "passages (encode_texts: chunks, concept names)",
    ("encoding/lora.py", "token_ids"): "a document's ids for the adapted windows",
    ("encoding/budget.py", "prime"): "the one budget counter (MiniLM word-pieces)",
    ("chunking/sentence_spans.py", "tokenize_offsets"): "document offsets for the chunkers",
    ("experiments/encoder_trial.py", "encoding_cost"): "a report: each encoder's own tokens "
                                                       "per MiniLM word-piece",
}

#: (module, function) -> why it may call the entity linker itself (on documents, not questions)
LINK_SITES = {
    ("model/query_features.py", "link_questions"): "the one place a question is linked",
    ("pipeline.py", "prepare"): "documents",
    ("shard_index.py", "_merge_graphs"): "documents",
    ("knowledge/linker.py", "link_documents"): "documents",
    ("knowledge/__main__.py", "_link"): "the linker's command line: the text a user gives",
    ("data/cloze_questions.py", "article_clozes"): "articles, to write questions from",
    ("data/crosssection_questions.py", "linker_terms"): "documents, to write questions from",
    ("evaluation/linking_coverage.py", "linking_coverage"): "articles and their chunks",
    ("experiments/semrag_graph.py", "cost"): "documents",
    ("experiments/semrag_graph.py", "question_concepts"): "documents",
}

#: the question encoders: defined once, in encoder.py (LoRA's encode_questions delegates)
QUESTION_ENCODERS = {"read_questions", "encode_questions", "encode_queries", "encode_query_tokens"}


def _calls(tree: ast.AST) -> list[tuple[int, str, str | None, ast.Call]]:
    """``(line, called name, enclosing function, node)`` of every call in ``tree``."""
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def enclosing(node: ast.AST) -> str | None:
        while node in parent:
            node = parent[node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                return node.name
        return None

    calls = sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)),
                   key=lambda n: (n.lineno, n.col_offset))
    return [(n.lineno, _name(n), enclosing(n), n) for n in calls]


def _name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _counts_pieces(call: ast.Call) -> bool:
    """A call to a tokenizer, or any call that asks for word-pieces without special tokens."""
    return _name(call) == "tokenizer" or any(
        k.arg == "add_special_tokens" and isinstance(k.value, ast.Constant) and k.value.value is False
        for k in call.keywords)


def _sites(check) -> list[tuple[str, int, str | None]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, name, func, node in _calls(ast.parse(path.read_text(encoding="utf-8"))):
            if check(name, node):
                out.append((rel, line, func))
    return out


def test_the_finders_see_a_second_question_encoder_and_a_second_budget_count():
    code = """
def encode_my_questions(enc, texts):
    return enc.tokenizer(texts, padding=True)
def budget(tok, chunk):
    return len(tok(chunk.text, add_special_tokens=False)["input_ids"])
def mine(linker, q):
    return [m.concept_id for m in linker.link(q)]
"""
    calls = _calls(ast.parse(code))
    assert [(n, f) for _, n, f, node in calls if _counts_pieces(node)] == [
        ("tokenizer", "encode_my_questions"), ("tok", "budget")]
    assert [(n, f) for _, n, f, _ in calls if n == "link"] == [("link", "mine")]


def test_only_the_one_question_path_and_the_one_budget_counter_tokenize():
    bad = [f"gralc/{rel}:{line} in {func}" for rel, line, func in _sites(lambda n, node: _counts_pieces(node))
           if (rel, func) not in TOKENIZER_SITES]
    assert bad == [], ("questions reach the encoder through DocumentEncoder.read_questions (its "
                       "batchings: ONE_BY_ONE, PADDED, IN_ORDER), budgets are counted by "
                       f"gralc.encoding.budget.budget_counter; a tokenizer call elsewhere: {bad}")


def test_only_link_questions_links_a_question():
    bad = [f"gralc/{rel}:{line} in {func}" for rel, line, func in _sites(
        lambda n, node: n in ("link", "link_documents")) if (rel, func) not in LINK_SITES]
    assert bad == [], ("a question's mentions come from gralc.model.query_features.link_questions "
                       f"and its concept ids from question_concepts; a linker call elsewhere: {bad}")


def test_the_question_encoders_are_defined_once():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in QUESTION_ENCODERS:
                found.append((rel, node.name, node))
    elsewhere = [(rel, name) for rel, name, _ in found if rel != "encoding/encoder.py"]
    assert elsewhere == [("encoding/lora.py", "encode_questions")], elsewhere
    lora = next(node for rel, _, node in found if rel == "encoding/lora.py")
    assert [n for _, n, _, _ in _calls(lora)] [:1] == ["read_questions"], (
        "LoraEncoder.encode_questions hands its adapted pass to DocumentEncoder.read_questions")
    assert sorted(name for rel, name, _ in found if rel == "encoding/encoder.py") == sorted(QUESTION_ENCODERS)
