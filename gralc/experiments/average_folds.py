"""Weight averaging along training, by cross-validation: each fold's model is the average of
two checkpoints of that fold (e.g. the selected end of epoch 2 of one run and the end of
epoch 3 of its continuation), every floating weight ``(1 - t) * a + t * b``, LoRA adapters and
learned scalars alike (:func:`gralc.experiments.crossval.interpolated_checkpoint`; checkpoint averaging,
as stochastic weight averaging does along one trajectory). The folds are written as a
``gralc.experiments.crossval`` variant folder (``checkpoints/best-avg.ckpt`` plus the fold's
``initial.ckpt`` and ``config.yaml`` from ``--a``), so ``gralc.experiments.inference_cv`` scores
them with the protocol's dev choices::

    python -m gralc.experiments.average_folds --a results/cv_late/lora_lexical_small_late \
        --b results/cv_late_ep3/lora_lexical_small_late --out results/cv_avg/lora_lexical_small_late
    python -m gralc.experiments.inference_cv --run results/cv_avg/lora_lexical_small_late --sentence-evidence 0.3

A soup of three runs of one recipe: average two (t = 0.5), then move that a third of the way
to the third run's selected models (``--b-checkpoint selected --t 0.3333333333333333``).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from gralc.experiments.crossval import interpolated_checkpoint
from gralc.experiments.inference_cv import selected_checkpoint
from gralc.safe_load import load_torch
from gralc.training.soup import check_one_initialisation


def second_checkpoint(b: Path, b_checkpoint: str) -> Path:
    """Fold ``b``'s checkpoint to average in: ``checkpoints/<b_checkpoint>``, or with
    ``selected`` the model the protocol selected in that fold (:func:`selected_checkpoint`)."""
    return selected_checkpoint(b) if b_checkpoint == "selected" else b / "checkpoints" / b_checkpoint


def check_fold(a: Path, b: Path, out: Path, b_checkpoint: str) -> None:
    """Refuse, by name, a fold whose inputs are missing, started from other initial weights
    (another seed) or whose ``out`` already holds files."""
    for need in (a / "initial.ckpt", second_checkpoint(b, b_checkpoint)):
        if not need.is_file():
            raise SystemExit(f"{need}: missing; --a and --b must be gralc.experiments.crossval variant folders "
                             "holding the folds asked for")
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"{out}: already holds files; choose a new --out")
    first, second = selected_checkpoint(a), second_checkpoint(b, b_checkpoint)  # or their message
    try:  # models of two seeds do not average (gralc.training.soup)
        check_one_initialisation([first, second], [load_torch(p, what="training checkpoint (.ckpt)")
                                                   for p in (first, second)])
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def average_fold(a: Path, b: Path, out: Path, t: float, b_checkpoint: str) -> Path:
    """Write ``out/checkpoints/best-avg.ckpt`` (fold ``a``'s selected model averaged with
    ``b/checkpoints/<b_checkpoint>``) and copy ``a``'s ``initial.ckpt`` / ``config.yaml``
    (inputs and ``out`` as :func:`check_fold` accepts them)."""
    second = second_checkpoint(b, b_checkpoint)
    first = selected_checkpoint(a)
    target = interpolated_checkpoint(str(first), str(second), t, out / "checkpoints" / "best-avg.ckpt")
    for name in ("initial.ckpt", "config.yaml"):
        if (a / name).is_file():
            shutil.copy2(a / name, out / name)
    print(f"{out.name}: {first} + {second} (t={t:g}) -> {target}")
    return Path(target)


def main(argv: list[str] | None = None) -> int:
    """The command line (``python -m gralc.experiments.average_folds --help``): writes each fold's averaged model; 0 on success."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="variant folder whose selected fold models are averaged")
    ap.add_argument("--b", required=True, help="variant folder holding the second checkpoint of each fold")
    ap.add_argument("--b-checkpoint", default="last.ckpt",
                    help="file name under each --b fold's checkpoints/, or 'selected': the model "
                         "gralc.experiments.crossval selected in that fold (best trained epoch or initial.ckpt)")
    ap.add_argument("--t", type=float, default=0.5, help="weight of the --b checkpoint")
    ap.add_argument("--folds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if not 0.0 <= args.t <= 1.0:
        ap.error(f"--t must lie in [0, 1], got {args.t}")
    folds = [(Path(args.a) / f"fold{k}", Path(args.b) / f"fold{k}", Path(args.out) / f"fold{k}") for k in args.folds]
    for a, b, out in folds:  # every fold checked before any is written
        check_fold(a, b, out, args.b_checkpoint)
    for k in args.folds:
        average_fold(Path(args.a) / f"fold{k}", Path(args.b) / f"fold{k}", Path(args.out) / f"fold{k}",
                     args.t, args.b_checkpoint)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
