"""tests/ mirrors the package: each folder of tests/ is a package of gralc/ (tests/retrieval/trained
for gralc/retrieval/trained), except the repository-level checks (tests/project), the guarantees
(tests/reliability) and fixture data; a loose tests/test_NAME.py tests a top-level module of
gralc/ (or the facade, test_api.py)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS, PACKAGE = REPO / "tests", REPO / "gralc"
#: folders that are not a package's tests
OWN = {"project", "reliability", "fixtures", "__pycache__"}
#: loose modules -> the top-level module of gralc/ they test
LOOSE = {
    "test_api.py": "__init__.py",  # the facade: from gralc import Retriever
    "test_cli_overrides.py": "cli.py",
    "test_quiet_output.py": "cli.py",
    "test_commands.py": "commands.py",
    "test_config_parts.py": "config.py",
    "test_settings.py": "config.py",
    "test_graph_index.py": "graph.py",
}


def test_every_test_folder_is_a_package():
    strays = [str(d.relative_to(TESTS)) for d in sorted(TESTS.rglob("*")) if d.is_dir()
              and not OWN & set(d.relative_to(TESTS).parts)
              and not (PACKAGE / d.relative_to(TESTS)).is_dir()]
    assert not strays, f"test folders that mirror no package of gralc/: {strays}"


def test_every_loose_test_module_tests_a_top_level_module():
    strays = []
    for path in sorted(TESTS.glob("test_*.py")):
        target = LOOSE.get(path.name, path.name.removeprefix("test_"))
        if not (PACKAGE / target).is_file():
            strays.append(path.name)
    assert not strays, (f"tests/{strays}: name a top-level module of gralc/ (test_MODULE.py) or "
                        "move into the folder of its package")
