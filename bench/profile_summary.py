"""Where a training run's time goes: inclusive shares of named frames in a py-spy profile.

    py-spy record -r 10 -f raw -o prof.txt -- python -m gralc.experiments.training_cost --arm record=
    python bench/profile_summary.py prof.txt --out docs/results/training_profile.json

py-spy (``pip install py-spy``; a sampling profiler, not a dependency of GraLC) writes one line
per distinct stack: ``frame;frame;... COUNT``. A phase's share is the share of samples whose
stack holds one of its frames (inclusive time; phases may nest, so shares need not sum to 1).
The phases are GraLC's own functions (:data:`PHASES`); the table: ``python -m
gralc.experiments.tables``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gralc.runinfo import run_metadata, write_json_atomic  # noqa: E402

#: phase -> frame substrings (function name and file) that mark it
PHASES = {
    "whole run (trainer.fit and the features before it)": ("train (gralc/training/run.py",),
    "features: encode, link, featurise (cold cache)": ("build_training_data (gralc/training/datamodule.py",),
    "training steps (forward, backward, optimiser)": ("training_step (", "backward ("),
    "  encoder forward over the step's windows": ("training_views (gralc/training/lit_module.py",),
    "  backward": ("backward (torch/_tensor.py",),
    "  questions through the adapted encoder": ("encode_questions (gralc/encoding/lora.py",),
    "  chunking + score (model forward, scores)": ("forward (gralc/model/gralc_model.py", "batch_scores ("),
    "validation (initial + one per epoch)": ("_validation_pass (gralc/training/lit_module.py",),
    "  encoder forward over the dev corpus": ("features (gralc/training/lit_module.py",),
    "encoder windows, training + validation (LoraEncoder.encode_windows)": ("encode_windows (gralc/encoding/lora.py",),
}


def summarise(lines: list[str]) -> dict:
    """``{samples, phases: {name: share}}`` of py-spy raw ``lines``.

    >>> summarise(["a (x.py:1);b (y.py:2) 3", "a (x.py:1) 1"])["samples"]
    4
    """
    total, hits = 0, dict.fromkeys(PHASES, 0)
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        for name, marks in PHASES.items():
            if any(m in stack for m in marks):
                hits[name] += n
    return {"samples": total, "phases": {k: v / total if total else 0.0 for k, v in hits.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("profile", type=Path, help="py-spy raw output (-f raw)")
    ap.add_argument("--rate", type=float, default=10.0, help="the -r it was sampled at (Hz)")
    ap.add_argument("--what", default="", help="what was profiled (the command)")
    ap.add_argument("--out", type=Path, help="JSON result file")
    args = ap.parse_args(argv)
    saved = summarise(args.profile.read_text(encoding="utf-8").splitlines())
    saved["seconds"] = saved["samples"] / args.rate
    saved["what"] = args.what
    for name, share in saved["phases"].items():
        print(f"{100 * share:5.1f} %  {share * saved['seconds']:7.1f} s  {name}")
    if args.out:
        write_json_atomic(args.out, run_metadata(saved))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
