"""Train GraLC's learnable parts contrastively.

    python train.py [key=value ...]
    python train.py paths.output_dir=outputs/run1 trainer.max_epochs=3
    python train.py data=pubmedqa data.path=/path/to/ori_pqal.json
    python train.py resume=last paths.output_dir=outputs/run1     # continue a killed run
    python train.py paths.output_dir=outputs/run1 paths.force=true  # move the old run1 aside

A folder that already holds another run's checkpoints or result.json is refused before any
work (exit code 2) unless the run continues it (resume=last / auto); paths.force=true moves
its content aside to <folder>.replaced-<time>, never deleting it.

Config schema: gralc/training/config.py; defaults: configs/train.yaml.
"""

from __future__ import annotations

import json
import sys

from gralc.cli import configure_output, pop_verbose, run
from gralc.config import load_config
from gralc.training.config import TrainConfig
from gralc.training.run import train


def main(argv: list[str]) -> int:
    verbose, argv = pop_verbose(argv)  # -v / -vv beside the key=value settings
    configure_output(verbose)
    cfg = load_config(TrainConfig, "configs/train.yaml", argv)
    result = train(cfg)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(run(main))
