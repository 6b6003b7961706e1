"""Reproducibility helpers: seeds, deterministic flags, git hash, run metadata files."""

from __future__ import annotations

import os
import platform
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gralc.atomic import write_json_atomic, write_text_atomic  # noqa: F401  (write_json_atomic: its long-standing home for callers)

REPO_ROOT = Path(__file__).resolve().parents[1]


def seed_everything(seed: int, deterministic: bool = True) -> None:
    """Seed python, numpy and torch; turn on deterministic algorithms when asked.

    Example: ``seed_everything(0)`` before a run makes ``torch.rand(1)`` and ``np.random.rand()``
    repeat across runs (and turns on deterministic torch algorithms).
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def git_hash() -> str:
    """Commit hash of the code (``+dirty`` when the work tree has changes), or ``unknown``.

    Example: ``git_hash()`` -> ``'b727934dcf2a...+dirty'`` (40 hex digits) in a checkout with
    changes, ``'unknown'`` outside one.
    """
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO_ROOT, capture_output=True, text=True, check=True,
        ).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance() -> dict[str, str]:
    """The one record of which code wrote a file: ``{"gralc_version", "git_hash"}``
    (:func:`git_hash`: ``unknown`` outside a git checkout). Run metadata, artefact manifests
    and index ``meta.json`` files all carry it under these keys. (Index folders written before
    this record carried ``git_hash: null`` outside a checkout and no ``+dirty``; nothing
    reads the value back, so they load unchanged.)

    >>> sorted(provenance())
    ['git_hash', 'gralc_version']
    """
    import gralc

    return {"gralc_version": gralc.__version__, "git_hash": git_hash()}


def blas_kernel() -> str:
    """Which OpenBLAS core type this process runs with (benchmarks print it).

    Example: ``blas_kernel()`` -> ``'default (auto-detected)'``, or ``OPENBLAS_CORETYPE``'s value
    (``'SkylakeX'``) when set.
    """
    return os.environ.get("OPENBLAS_CORETYPE", "default (auto-detected)")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``), else what ``platform`` knows.

    >>> isinstance(cpu_model(), str)
    True
    """
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def run_metadata(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Git hash, versions, host facts and time, for a file saved next to every result.

    Example: ``sorted(run_metadata({"seed": 0}))`` -> ``['argv', 'cpu_count', 'cpu_model',
    'created', 'git_hash', 'gralc_version', 'openblas_coretype', 'platform', 'python', 'seed', 'torch']``.
    """
    meta = {
        **provenance(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "openblas_coretype": blas_kernel(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": sys.argv,
    }
    meta.update(extra or {})
    return meta


def expand_run_dir(path: str) -> str:
    """Replace ``{run_id}`` in an output path by a per-run id, so sweep agents and array
    jobs never share a directory: the W&B run id, else the SLURM array/job id (the same on
    every DDP rank of a job), else the start time and process id.

    >>> expand_run_dir("results/fixed")
    'results/fixed'
    """
    if "{run_id}" not in path:
        return path
    env = os.environ
    if env.get("WANDB_RUN_ID"):
        run_id = env["WANDB_RUN_ID"]
    elif env.get("SLURM_ARRAY_JOB_ID"):
        run_id = f"{env['SLURM_ARRAY_JOB_ID']}_{env.get('SLURM_ARRAY_TASK_ID', '0')}"
    elif env.get("SLURM_JOB_ID"):
        run_id = env["SLURM_JOB_ID"]
    else:
        run_id = time.strftime("%Y%m%d_%H%M%S") + f"_{os.getpid()}"
    return path.replace("{run_id}", run_id)


def wandb_run_id(out: Path) -> str:
    """The W&B run id of the run folder ``out``: read from ``out/wandb_run_id.txt``, else
    created (and written by rank 0), so a resumed or requeued run continues the same W&B run.

    >>> import tempfile; out = Path(tempfile.mkdtemp())
    >>> wandb_run_id(out) == wandb_run_id(out)
    True
    """
    from pytorch_lightning.utilities.rank_zero import rank_zero_only

    path = out / "wandb_run_id.txt"
    if path.is_file():
        return path.read_text().strip()
    run_id = uuid.uuid4().hex[:12]  # W&B ids: short, lowercase alphanumeric
    if rank_zero_only.rank == 0:
        write_text_atomic(path, run_id + "\n")
    return run_id


def wandb_logger(settings: Any, config: dict[str, Any], out: Path, job_type: str) -> Any:
    """The one W&B path of ``gralc train`` and ``gralc eval``: a Lightning ``WandbLogger`` for
    ``settings`` (a :class:`gralc.config.WandbConfig`) logging ``config``, its files in
    ``out/wandb`` and its id kept in ``out`` (:func:`wandb_run_id`). Training hands it to the
    Trainer; evaluation logs to its ``.experiment`` (the ``wandb`` run, created on rank 0).

    >>> from gralc.config import WandbConfig  # doctest: +SKIP
    >>> wandb_logger(WandbConfig(enabled=True), {}, Path("out"), "eval").experiment.log({"a": 1})  # doctest: +SKIP
    """
    from pytorch_lightning.loggers import WandbLogger

    return WandbLogger(project=settings.project, entity=settings.entity, offline=settings.offline,
                       name=settings.name, save_dir=str(out), config=config,
                       id=wandb_run_id(out), resume="allow", job_type=job_type,
                       mode="offline" if settings.offline else "online")  # the setting over WANDB_MODE
