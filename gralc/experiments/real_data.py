"""Real data for the benches: where it lives, and the knowledge graph it is linked with.

Every bench that trains or scores on real data links with the full MeSH 2024 graph of the
shared data folder (``../shared/data`` beside the repository, or ``$GRALC_SHARED_DATA``):
the thesaurus terms, the tree, the pharmacological actions and HSDN's disease -> symptom
edges. The built-in 438-term vocabulary (``PipelineConfig()``'s default) is for the demo
corpus only; a real-data run on it is refused (:func:`require_real_graph`).

    from gralc.experiments.real_data import knowledge_overrides, real_pipeline_config
    knowledge_overrides()          # ["pipeline.knowledge.vocabulary=.../mesh2024_thesaurus_terms.tsv", ...]
    real_pipeline_config(["encoder.device=cpu"])   # PipelineConfig with the full MeSH, checked
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: the repository checkout this module runs from (research drivers read its configs/)
REPO = Path(__file__).resolve().parents[2]
#: the read-only real data (the same resolution as tests/conftest.py)
SHARED_DATA = Path(os.environ.get("GRALC_SHARED_DATA", REPO.parent / "shared" / "data"))
#: KnowledgeConfig key -> file of the shared data folder: the full MeSH 2024 graph
KNOWLEDGE_FILES = {
    "knowledge.vocabulary": "mesh/mesh2024_thesaurus_terms.tsv",
    "knowledge.tree_file": "mesh/mtrees2024_style.bin",
    "knowledge.relations.pharm_action_tsv": "mesh/mesh2024_pharmacological_action.tsv",
    "knowledge.relations.disease_symptom_tsv": "relations/hsdn_disease_symptom.tsv",
}
#: how to fix a run that would link real data with the demo list
FIX = ("link real data with the full MeSH 2024: use gralc.experiments.real_data.knowledge_overrides() "
       "(the benches' default), or set pipeline.knowledge.vocabulary (+ tree_file, "
       "relations.pharm_action_tsv, relations.disease_symptom_tsv) to your MeSH files, e.g. "
       "those of `gralc mesh --year 2024 --out data/mesh`")


class DemoVocabularyRefused(SystemExit):
    """A run on real data whose pipeline links with the built-in demo vocabulary. Exits
    with status 2 (as a command-line error); ``str()`` is the message."""

    def __init__(self, message: str) -> None:
        super().__init__(2)
        self.message = message

    def __str__(self) -> str:
        return self.message


def require_files(*paths: Path) -> None:
    """Exit 2 with one message naming the first of ``paths`` that is missing (a driver's or a
    benchmark's input from the shared data folder).

    Example: ``require_files(SHARED_DATA / "pmc", SHARED_DATA / "mesh")``."""
    for path in paths:
        if not Path(path).exists():
            print(f"error: {path} not found (see ../shared/data/README.md)", file=sys.stderr)
            raise SystemExit(2)


def knowledge_overrides(shared: str | Path | None = None, prefix: str = "pipeline.", *,
                        mesh: str | Path | None = None, hsdn: str | Path | None = None) -> list[str]:
    """``key=value`` overrides that link with the full MeSH 2024 graph of the ``shared`` data
    folder (default :data:`SHARED_DATA`): thesaurus terms, tree, pharmacological actions and
    HSDN disease -> symptom (``mesh``: another folder of the three MeSH files; ``hsdn``:
    another HSDN file). ``prefix``: ``"pipeline."`` for train.py / eval.py configs, ``""``
    for a :class:`~gralc.pipeline.PipelineConfig`. A missing file is named in a
    ``SystemExit`` message, before anything is loaded."""
    root = Path(shared) if shared is not None else SHARED_DATA
    out = []
    for key, name in KNOWLEDGE_FILES.items():
        path = root / name
        if mesh is not None and name.startswith("mesh/"):
            path = Path(mesh) / name.removeprefix("mesh/")
        elif hsdn is not None and key.endswith("disease_symptom_tsv"):
            path = Path(hsdn)
        if not path.is_file():
            raise SystemExit(
                f"error: the full MeSH 2024 graph for real data needs {path}, which does not "
                f"exist: point GRALC_SHARED_DATA at the shared data folder (see its README.md), "
                f"or pass your own pipeline.knowledge.* overrides")
        out.append(f"{prefix}{key}={path}")
    return out


def names_vocabulary(overrides: Sequence[str], prefix: str = "pipeline.") -> bool:
    """Whether ``overrides`` set the vocabulary themselves (``{prefix}knowledge.vocabulary=``)."""
    return any(o.startswith(f"{prefix}knowledge.vocabulary=") for o in overrides)


def with_real_knowledge(overrides: Sequence[str], shared: str | Path | None = None,
                        prefix: str = "pipeline.") -> list[str]:
    """``overrides`` preceded by :func:`knowledge_overrides`, unless they name their own
    vocabulary (then they are taken as they are: the caller's knowledge files, checked by
    the config loader and :func:`require_real_graph`)."""
    if names_vocabulary(overrides, prefix):
        return list(overrides)
    return [*knowledge_overrides(shared, prefix), *overrides]


def pipeline_part(overrides: Sequence[str]) -> list[str]:
    """The ``pipeline.knowledge.*`` and ``pipeline.encoder.model`` entries of train.py / eval.py
    ``overrides`` (what the untrained rows share with training), as
    :class:`~gralc.pipeline.PipelineConfig` overrides (prefix removed)."""
    return [o.removeprefix("pipeline.") for o in overrides
            if o.startswith(("pipeline.knowledge.", "pipeline.encoder.model="))]


def require_real_graph(config: Any, what: str) -> None:
    """Refuse (:class:`DemoVocabularyRefused`, message on stderr) a run of ``what`` on real
    data whose pipeline has no vocabulary configured, i.e. would link with the built-in
    demo list. ``config``: a PipelineConfig, KnowledgeConfig, or a config with a
    ``pipeline`` (TrainConfig, EvalConfig)."""
    knowledge = getattr(getattr(config, "pipeline", config), "knowledge", config)
    if getattr(knowledge, "vocabulary", None):
        return
    message = (f"error: {what} runs on real data, but its pipeline links with the built-in "
               f"438-term demo vocabulary (pipeline.knowledge.vocabulary is not set): {FIX}")
    print(message, file=sys.stderr)
    raise DemoVocabularyRefused(message)


def real_pipeline_config(overrides: Sequence[str] = (), what: str = "this bench",
                         shared: str | Path | None = None):
    """A :class:`~gralc.pipeline.PipelineConfig` linking with the full MeSH 2024 graph
    (``overrides``: PipelineConfig keys, applied after it; knowledge keys among them win),
    checked by :func:`require_real_graph`."""
    from gralc.config import load_config
    from gralc.pipeline import PipelineConfig

    cfg = load_config(PipelineConfig, None, with_real_knowledge(overrides, shared, prefix=""))
    require_real_graph(cfg, what)
    return cfg
