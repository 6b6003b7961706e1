"""Export a trained GraLC checkpoint for inference (:mod:`gralc.model.persistence`).

    python -m gralc.export outputs/train/checkpoints/best-....ckpt --out exports/gralc
    python -m gralc.export CKPT --out DIR scoring.late_interaction=0.8 scoring.cut_unit=sentence

The export-time scoring is the experiment's ``scoring`` section (recorded in the checkpoint:
``configs/experiment/covidqa_trained.yaml`` holds the settings of record), each
``scoring.KEY=value`` (or its flag) replacing one field.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields

from omegaconf import OmegaConf

from gralc.cli import add_debug_flag, add_verbose_flag, configure_output, run
from gralc.model.persistence import (  # noqa: F401  (load_* re-exported for scripts)
    ADAPTER_DIR,
    ENCODER_DIR,
    INFERENCE_YAML,
    export,
    load_model,
    load_trained,
)
from gralc.model.scoring_config import ScoringConfig


def main(argv: list[str] | None = None) -> int:
    """The command line (``argv``: None reads ``sys.argv``) inside the error boundary of
    :mod:`gralc.cli`: 0, or 2 after one message for a user's mistake (``--debug`` /
    ``GRALC_DEBUG=1``: its traceback)."""
    return run(_main, argv)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Export a GraLC training checkpoint for inference")
    parser.add_argument("checkpoint", help="a .ckpt written by train.py")
    parser.add_argument("overrides", nargs="*", metavar="scoring.KEY=value",
                        help="export-time scoring, anywhere on the line (keys: "
                             f"{', '.join(f.name for f in fields(ScoringConfig))}); default: the "
                             "experiment's scoring section recorded in the checkpoint, else as trained")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--force", action="store_true",
                        help="--out holds other files: move them aside to OUT.replaced-<time>")
    parser.add_argument("--sentence-evidence", type=float, default=None, metavar="W",
                        help="score chunks with their best sentence group mixed in at weight W "
                             "(model.sentence_evidence; 0: chunks alone); default: the checkpoint's")
    parser.add_argument("--evidence-sentences", type=int, default=None, metavar="K",
                        help="sentences per group for --sentence-evidence (model.evidence_sentences)")
    parser.add_argument("--late-interaction", type=float, default=None, metavar="M",
                        help="mix the MaxSim of the question's word-pieces with each chunk's "
                             "token vectors into the score at weight M (model.late_interaction; "
                             "0: off); default: the checkpoint's")
    parser.add_argument("--phrase-weight", type=float, default=None, metavar="G",
                        help="add G x the term-pair BM25 (consecutive stemmed terms, normalised per "
                             "question) to the score (model.phrase_weight; 0: off); default: the "
                             "checkpoint's")
    parser.add_argument("--concept-weight", type=float, default=None, metavar="C",
                        help="add C x the concept match (BM25 over linked concept ids, normalised "
                             "per question) to the score (model.concept_weight; 0: off); default: "
                             "the checkpoint's")
    parser.add_argument("--cut-unit", choices=["word", "sentence"], default=None,
                        help="where the hard cuts of the learned boundary scores may fall "
                             "(pipeline.chunking.boundary.cut_unit); default: the checkpoint's")
    add_debug_flag(parser)
    add_verbose_flag(parser)
    args = parser.parse_intermixed_args(argv)  # key=value anywhere on the line
    configure_output(args.verbose)
    settings = ScoringConfig.from_dict(scoring_settings(args))
    # a user's mistake (OutputDirError included) propagates to gralc.cli.run: one message and
    # exit 2 (--debug: its traceback)
    out = export(args.checkpoint, args.out, force=args.force, settings=settings)
    exported = OmegaConf.load(out / INFERENCE_YAML)
    print(OmegaConf.to_yaml(exported.learned_values), end="")
    m = exported.model_config
    print(f"sentence evidence: {m.get('sentence_evidence', 0.0)} "
          f"({m.get('evidence_sentences', 1)} sentence(s) per group); "
          f"late interaction: {m.get('late_interaction', 0.0)}; term-pair BM25: "
          f"{m.get('phrase_weight', 0.0)}; concept match: {m.get('concept_weight', 0.0)}; cuts at: "
          f"{exported.pipeline_config.chunking.boundary.get('cut_unit', 'word')} starts")
    if "lora" in exported:
        print(f"LoRA encoder: {exported.encoder_id} ({out / ENCODER_DIR}, adapter {out / ADAPTER_DIR})")
    print(f"exported to {out}")
    return 0


def scoring_settings(args: argparse.Namespace) -> dict:
    """The export-time settings of the command line: ``scoring.KEY=value`` and the flags
    spelling the same keys (``--late-interaction 0.8`` = ``scoring.late_interaction=0.8``);
    one key given twice with two values is refused."""
    import yaml

    flags = {"sentence_evidence": args.sentence_evidence, "evidence_sentences": args.evidence_sentences,
             "late_interaction": args.late_interaction, "phrase_weight": args.phrase_weight,
             "concept_weight": args.concept_weight, "cut_unit": args.cut_unit}
    out = {k: v for k, v in flags.items() if v is not None}
    for item in args.overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.startswith("scoring."):
            raise ValueError(f"{item!r}: gralc.export takes scoring.KEY=value "
                             f"(KEY one of {', '.join(f.name for f in fields(ScoringConfig))})")
        key = key.removeprefix("scoring.")
        value = yaml.safe_load(raw) if raw else None
        if key in out and out[key] != value:
            raise ValueError(f"scoring.{key} given twice ({out[key]!r} and {value!r}): give it once")
        out[key] = value
    return out


if __name__ == "__main__":
    sys.exit(main())
