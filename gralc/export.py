"""``gralc export MODEL --out DIR [scoring.KEY=value ...]``: a trained model for inference.

``MODEL``: a run folder of ``gralc train`` (the checkpoint its run selected, ``best_checkpoint``
in its ``result.json``) or a ``.ckpt``. The export-time scoring is the experiment's
``scoring`` section recorded in the checkpoint (``gralc/configs/experiment/covidqa_trained.yaml``
holds the settings of record), each ``scoring.KEY=value`` replacing one field
(:mod:`gralc.model.persistence`).

    gralc export outputs/train --out exports/gralc
    gralc export outputs/train/checkpoints/last.ckpt --out DIR scoring.late_interaction=0.8
"""

from __future__ import annotations

import sys

from gralc.cli import CommandParser, Settings, command_main

#: the flags of GraLC 0.1 (one per key gralc export took then), and their spelling now
RENAMED = {f"--{k.replace('_', '-')}": f"scoring.{k}=VALUE" for k in (
    "sentence_evidence", "evidence_sentences", "late_interaction", "phrase_weight",
    "concept_weight", "cut_unit")}


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc export`` takes (for ``--help``): the
    inference-only scoring, then the trained score terms an export may replace."""
    from dataclasses import fields

    from gralc.chunking.boundaries import BoundaryConfig
    from gralc.model.model_config import ModelConfig
    from gralc.model.scoring_config import ScoringConfig, export_keys

    def others(schema: type) -> tuple[str, ...]:
        return tuple(f"scoring.{f.name}" for f in fields(schema) if f.name not in export_keys())

    return [Settings("inference-only scoring (unset: as recorded in the checkpoint, else off)",
                     ScoringConfig, "scoring.", skip=("scoring.overrides",)),
            Settings("trained score terms an export may replace (unset: as recorded, else as trained)",
                     ModelConfig, "scoring.", skip=others(ModelConfig)),
            Settings("where the hard cuts may fall (unset: as recorded, else as trained)",
                     BoundaryConfig, "scoring.", skip=others(BoundaryConfig))]


def parser() -> CommandParser:
    """The command line of ``gralc export``."""
    p = CommandParser("gralc export", description=__doc__.split("\n\n", 1)[1].split("\n\n")[0],
                      settings=settings, renamed=RENAMED)
    p.add_argument("model", metavar="MODEL", help="a run folder of `gralc train`, or a .ckpt")
    p.add_argument("--out", required=True, help="export folder to write")
    p.add_force()
    return p



def _main(argv: list[str]) -> int:
    args = parser().start(argv)
    from omegaconf import OmegaConf

    from gralc.model.model_card import MODEL_CARD
    from gralc.model.persistence import ADAPTER_DIR, ENCODER_DIR, INFERENCE_YAML, export

    settings = scoring_settings(args.settings)
    # a user's mistake (OutputDirError included) propagates to gralc.cli.run: one message and
    # exit 2 (--debug: its traceback)
    out = export(args.model, args.out, force=args.force, settings=settings)
    exported = OmegaConf.load(out / INFERENCE_YAML)
    print(OmegaConf.to_yaml(exported.learned_values), end="")
    m = exported.model_config
    print(f"sentence evidence: {m.get('sentence_evidence', 0.0)} "
          f"({m.get('evidence_sentences', 1)} sentence(s) per group); "
          f"late interaction: {exported.scoring.late_interaction}; term-pair BM25: "
          f"{m.get('phrase_weight', 0.0)}; concept match: {m.get('concept_weight', 0.0)}; cuts at: "
          f"{exported.pipeline_config.chunking.boundary.get('cut_unit', 'word')} starts")
    if "lora" in exported:
        print(f"LoRA encoder: {exported.encoder_id} ({out / ENCODER_DIR}, adapter {out / ADAPTER_DIR})")
    print(f"exported {exported.get('source_checkpoint', args.model)} to {out} (recipe, data, dev "
          f"metrics and limits: {out / MODEL_CARD})")
    return 0


main = command_main(_main)


def scoring_settings(items: list[str]) -> dict:
    """The export-time settings of the command line (``scoring.KEY=value``); one key given
    twice with two values is refused."""
    import yaml

    from gralc.model.scoring_config import scoring_keys

    out: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.startswith("scoring."):
            raise ValueError(f"{item!r}: gralc export takes scoring.KEY=value "
                             f"(KEY one of {', '.join(scoring_keys())})")
        key = key.removeprefix("scoring.")
        value = yaml.safe_load(raw) if raw else None
        if key in out and out[key] != value:
            raise ValueError(f"scoring.{key} given twice ({out[key]!r} and {value!r}): give it once")
        out[key] = value
    return out


if __name__ == "__main__":
    sys.exit(main())
