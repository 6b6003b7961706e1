"""constraints.txt pins every package the install resolves to; it must agree with
pyproject.toml (each dependency pinned, each pin inside its range) and with what is installed
(CI installs through it, so a drift means a dependency was upgraded without a deliberate
`make lock` commit)."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
UNPINNED = {"torch"}  # the CPU / CUDA wheel is the user's choice (TORCH_SPEC in the Makefile)


def pins() -> dict[str, str]:
    out = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin (name==version)"
            out[canonicalize_name(name)] = version
    return out


def requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["dev"]]]


def test_every_dependency_is_pinned_inside_its_range():
    pinned = pins()
    for req in requirements():
        name = canonicalize_name(req.name)
        if name in UNPINNED:
            assert name not in pinned, f"{name} must stay unpinned (TORCH_SPEC chooses the wheel)"
            continue
        assert name in pinned, f"{req.name} (pyproject.toml) is not pinned in constraints.txt: run make lock"
        assert req.specifier.contains(pinned[name], prereleases=True), \
            f"constraints.txt pins {name}=={pinned[name]}, outside pyproject.toml's {req}"


def test_the_installed_dependencies_are_the_pinned_ones():
    pinned = pins()
    for req in requirements():
        name = canonicalize_name(req.name)
        if name in UNPINNED:
            continue
        installed = metadata.version(req.name)
        assert installed == pinned[name], (f"{name} {installed} is installed, constraints.txt pins "
                                           f"{pinned[name]}: reinstall with make, or make lock")
