"""One trained search: a trained model scores questions against chunks at inference only in
gralc/retrieval/trained/search.py (``TrainedSearch``; exhaustive search is its setting), so
no second scoring path (like the removed ``TrainedScorer.score_all``) can appear unseen."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: where the model's score may be called, and why
ALLOWED = {
    "gralc/model": "the model itself (score -> score_parts -> its hybrid scorer)",
    "gralc/training/lit_module.py": "training and validation (Lightning)",
    "gralc/retrieval/trained/search.py": "the one trained search",
}
#: the model's score entry points: called on anything (``score_parts``), or on a model (``score``,
#: ``hybrid``: ``model.score(...)``, ``self.model.hybrid(...)``)
ANY_RECEIVER = {"score_parts", "_score_parts"}
MODEL_RECEIVER = {"score", "hybrid"}


def _is_model(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "model") or \
        (isinstance(node, ast.Attribute) and node.attr == "model")


def _score_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, call)`` of every call of the model's score in ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            if name in ANY_RECEIVER or (name in MODEL_RECEIVER and _is_model(node.func.value)):
                found.append((node.lineno, ast.unparse(node.func)))
    return found


def _sources() -> list[Path]:
    files = [*(ROOT / "gralc").rglob("*.py"), *(ROOT / "bench").rglob("*.py"),
             *(ROOT / "tools").rglob("*.py"), ROOT / "train.py", ROOT / "eval.py"]
    return sorted(p for p in files if p.is_file())


def test_the_finder_sees_every_call_of_the_models_score():
    code = """
def a(model, scorer, s, index):
    model.score(q, e, m, chunks)
    scorer.model.score_parts(q, e, m, chunks)
    s.model.hybrid(q, v, e, m, ev, ec)
    anything.score_parts(q)
    index.score(q)  # not a model: another ranker
    bm25.scores(q)
"""
    assert [c for _, c in _score_calls(ast.parse(code))] == [
        "model.score", "scorer.model.score_parts", "s.model.hybrid", "anything.score_parts"]


def test_only_the_trained_search_scores_with_the_model():
    bad = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if any(rel == place or rel.startswith(place + "/") for place in ALLOWED):
            continue
        bad += [f"{rel}:{line} {call}()" for line, call in _score_calls(ast.parse(path.read_text("utf-8")))]
    assert bad == [], ("score questions with a trained model through "
                       "gralc.retrieval.trained.search.TrainedSearch (search.exhaustive=true or "
                       f"TrainedSearch.scores for every chunk), not a second path: {bad}")
