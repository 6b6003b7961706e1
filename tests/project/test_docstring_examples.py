"""Docstrings show one example (issue 56): every name ``gralc`` exports and each of its public
methods has one (strict); every module-level public function and class of the library layers
has one, except those listed in ``LEFT`` (a ratchet: the list only shrinks); and the doctests
(``>>>``) of the library layers run and pass.

An example is a docstring holding ``>>>`` (a doctest, run here) or ``Example`` (a literal
``Example: ``call(...)`` -> result`` line or an ``Example::`` block, for calls that load an
encoder or need files)."""

from __future__ import annotations

import ast
import doctest
import importlib
import inspect
import random
from pathlib import Path

import numpy as np
import pytest
import torch

import gralc

REPO = Path(__file__).resolve().parents[2]
#: the library layers (docs/architecture.md): these packages and top-level modules of gralc/
LIBRARY_PACKAGES = ("documents", "knowledge", "encoding", "chunking", "model", "retrieval", "data",
                    "training", "evaluation")
LIBRARY_MODULES = ("pipeline", "inference", "atomic", "safe_load", "runinfo", "cli", "artefacts",
                   "config", "record_store")

#: how many module-level public functions and classes of the library layers still have no
#: example (of 622, issue 56): all in files another part of issue 56 was rewriting. The number
#: only goes down; ``python tests/project/test_docstring_examples.py`` prints today's list
LEFT_COUNT = 45
#: their names: the list only shrinks (a name that gains an example, or goes, must leave it)
LEFT = {
    "gralc/model/gralc_model.py:GraLCModel",
    "gralc/model/gralc_model.py:pad_stack",
    "gralc/model/gralc_model.py:span_concepts",
    "gralc/model/model_card.py:dev_scores",
    "gralc/model/model_card.py:model_card",
    "gralc/model/persistence.py:TrainedModel",
    "gralc/model/persistence.py:load_model",
    "gralc/model/persistence.py:load_trained",
    "gralc/model/score_inputs.py:ScoreInputBuilder",
    "gralc/model/score_inputs.py:ScoreInputs",
    "gralc/model/score_inputs.py:ScoreTerms",
    "gralc/model/score_inputs.py:Scorer",
    "gralc/model/score_inputs.py:TextScorer",
    "gralc/model/score_inputs.py:batch_inputs",
    "gralc/model/score_inputs.py:chunk_concept_ids",
    "gralc/model/score_inputs.py:chunk_texts",
    "gralc/retrieval/trained/scorer.py:ScoreIndexes",
    "gralc/retrieval/trained/scorer.py:TrainedScorer",
    "gralc/retrieval/trained/search.py:Questions",
    "gralc/retrieval/trained/search.py:Scores",
    "gralc/retrieval/trained/search.py:TrainedSearch",
    "gralc/retrieval/trained/token_codec.py:TokenCodec",
    "gralc/retrieval/trained/token_codec.py:TokenCodecConfig",
    "gralc/retrieval/trained/token_codec.py:load_codec_dir",
    "gralc/retrieval/trained/token_codec.py:save_codec_dir",
    "gralc/retrieval/trained/token_store.py:TokenStore",
    "gralc/retrieval/trained/token_store.py:train_codec",
    "gralc/training/config.py:CallbacksConfig",
    "gralc/training/config.py:CheckpointConfig",
    "gralc/training/config.py:EarlyStoppingConfig",
    "gralc/training/config.py:LoaderConfig",
    "gralc/training/config.py:LoraConfig",
    "gralc/training/config.py:MixSource",
    "gralc/training/config.py:OptimConfig",
    "gralc/training/config.py:PairsConfig",
    "gralc/training/config.py:TrainConfig",
    "gralc/training/config.py:TrainerConfig",
    "gralc/training/config.py:has_dev_split",
    "gralc/training/config.py:training_paths",
    "gralc/training/config.py:validate",
    "gralc/training/config.py:validate_mix",
    "gralc/training/lit_module.py:GraLCLitModule",
    "gralc/training/lit_module.py:NonFiniteLossError",
    "gralc/training/lit_module.py:Queries",
    "gralc/training/lit_module.py:info_nce",
}


def has_example(doc: str | None) -> bool:
    return bool(doc) and (">>>" in doc or "Example" in doc)


def library_files() -> list[Path]:
    files = [f for pkg in LIBRARY_PACKAGES for f in sorted((REPO / "gralc" / pkg).rglob("*.py"))]
    return files + [REPO / "gralc" / f"{m}.py" for m in LIBRARY_MODULES]


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def public_definitions() -> dict[str, bool]:
    """``path:name`` of every module-level public function and class of the library layers ->
    whether its docstring holds an example."""
    found = {}
    for path in library_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                    and not node.name.startswith("_"):
                key = f"{path.relative_to(REPO).as_posix()}:{node.name}"
                found[key] = has_example(ast.get_docstring(node))
    return found


def exported_api() -> dict[str, object]:
    """Every name ``gralc`` exports and each public method (``__call__`` included) of the
    exported classes, by dotted name."""
    api: dict[str, object] = {}
    for name in gralc._EXPORTS:
        obj = getattr(gralc, name)
        api[name] = obj
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if attr.startswith("_") and attr != "__call__":
                    continue
                if isinstance(value, classmethod | staticmethod):
                    value = value.__func__
                elif isinstance(value, property):
                    value = value.fget
                if inspect.isfunction(value):
                    api[f"{name}.{attr}"] = value
    return api


def test_every_exported_name_and_method_shows_an_example():
    api = exported_api()
    assert {"Retriever.build", "Retriever.search", "Chunker.__call__", "load_config"} <= set(api)
    missing = sorted(name for name, obj in api.items() if not has_example(inspect.getdoc(obj)))
    assert not missing, f"public API without an example in its docstring: {missing}"


def test_no_new_definition_without_an_example_and_the_left_list_only_shrinks():
    found = public_definitions()
    assert len(found) > 500  # the walk found the library
    without = {key for key, ok in found.items() if not ok}
    new = sorted(without - LEFT)
    assert not new, f"public functions / classes without an example (add one: '>>>' or 'Example'): {new}"
    done = sorted(LEFT - without)
    assert not done, f"these have an example now or are gone: remove them from LEFT: {done}"
    assert len(without) <= LEFT_COUNT == len(LEFT), "LEFT_COUNT is the number of names in LEFT"


def doctest_modules() -> list[str]:
    return [module_name(f) for f in library_files() if ">>>" in f.read_text(encoding="utf-8")]


def test_the_public_api_modules_hold_doctests():
    modules = set(doctest_modules())
    api_modules = set(gralc._EXPORTS.values())
    assert api_modules <= modules, sorted(api_modules - modules)


@pytest.mark.parametrize("name", doctest_modules())
def test_doctests_pass(name):
    # a doctest that builds a torch module draws from the global generators: restore them, so
    # the tests after these see the same random state as without them
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    try:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, report=True)
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} doctests failed (above)"


if __name__ == "__main__":  # today's list without an example, to update LEFT
    missing = sorted(key for key, ok in public_definitions().items() if not ok)
    print(f"LEFT_COUNT = {len(missing)}\nLEFT = {{")
    print("".join(f'    "{key}",\n' for key in missing) + "}")
