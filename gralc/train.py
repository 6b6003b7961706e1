"""``gralc train [key=value ...]``: train GraLC's learnable parts contrastively (Lightning).

    gralc train paths.output_dir=outputs/run1 trainer.max_epochs=3
    gralc train data=pubmedqa data.path=/path/to/ori_pqal.json
    gralc train experiment=covidqa_trained data.path=covidqa_dev.json   # the model of record
    gralc train resume=last paths.output_dir=outputs/run1     # continue a killed run
    gralc train paths.output_dir=outputs/run1 paths.force=true  # move the old run1 aside
    gralc train --print-config experiment=covidqa_trained     # the resolved settings, nothing run

Settings: ``gralc/configs/train.yaml`` (shipped in the package), then ``group=name``
selections (``data=``, ``model=``, ``experiment=``) and ``key=value`` overrides, validated
against :class:`gralc.training.config.TrainConfig` before any work. A folder holding another
run's checkpoints or result.json is refused (exit code 2) unless the run continues it
(``resume=last`` / ``auto``); ``paths.force=true`` moves it aside (docs/training.md)."""

from __future__ import annotations

import sys

from gralc.cli import CommandParser, Settings, command_main, configure_output


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc train`` takes (for ``--help``)."""
    from gralc.training.config import TrainConfig

    return [Settings("training (gralc/configs/train.yaml overrides these defaults)", TrainConfig)]


def groups_help(schema: type, config: str) -> str:
    """The config groups ``schema`` can load (``data=demo|pmc|...``, the experiments whose keys
    it has), as ``--help`` lists them. A group file fits when every key it sets is a setting of
    the schema (checked on the YAML itself: ``--help`` must answer at once)."""
    import yaml

    from gralc.config import CONFIG_DIR

    lines = ["config groups (group=name loads gralc/configs/<group>/<name>.yaml):"]
    for folder in sorted(p for p in CONFIG_DIR.iterdir() if p.is_dir() and p.name != "sweep"):
        names = []
        for f in sorted(folder.glob("*.yaml")):
            values = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            fits = _fits(schema, values) if folder.name == "experiment" else \
                _fits(getattr(schema, "__dataclass_fields__", {}).get(folder.name) and
                      _field_type(schema, folder.name), values)
            if fits:
                names.append(f.stem)
        if names:
            lines.append(f"  {folder.name}={'|'.join(names)}")
    return "\n".join(lines)


def _field_type(schema: type, name: str):
    import typing

    return typing.get_type_hints(schema).get(name)


def _fits(schema, values) -> bool:
    """Whether every key of ``values`` (a YAML mapping) is a setting of ``schema``."""
    import dataclasses

    if not (isinstance(schema, type) and dataclasses.is_dataclass(schema)):
        return False
    if not isinstance(values, dict):
        return False
    fields = {f.name for f in dataclasses.fields(schema)}
    for key, value in values.items():
        if key not in fields:
            return False
        sub = _field_type(schema, key)
        if isinstance(sub, type) and dataclasses.is_dataclass(sub) and isinstance(value, dict) \
                and not _fits(sub, value):
            return False
    return True


def parser(prog: str, description: str, settings_fn, config: str, schema: str) -> CommandParser:
    """The command line of ``gralc train`` / ``gralc eval``: settings, ``--print-config``;
    ``schema``: ``module:Class`` of the config (imported only for ``--help``)."""
    import importlib

    def schema_class() -> type:
        module, name = schema.split(":")
        return getattr(importlib.import_module(module), name)

    p = CommandParser(prog, description=description, settings=lambda: settings_fn(),
                      help_extra=lambda: groups_help(schema_class(), config))
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved settings (YAML) and stop")
    return p


def config_command(argv: list[str], prog: str, module_doc: str, settings_fn, config: str,
                   schema: str):
    """The shared start of ``gralc train`` and ``gralc eval``: parse ``argv`` (``parser``),
    set up the output, load and validate the config (``config`` in gralc/configs, then the
    settings; ``schema``: ``module:Class``). Returns ``(args, cfg)``, or ``None`` after
    ``--print-config`` printed the resolved settings."""
    import importlib

    from gralc.config import CONFIG_DIR, load_config, to_yaml

    description = module_doc.split("\n\n")[0].split(": ", 1)[1].strip("`")
    args = parser(prog, description, settings_fn, config, schema).parse(argv)
    configure_output(args.verbose)
    module, name = schema.split(":")
    cfg = load_config(getattr(importlib.import_module(module), name), CONFIG_DIR / config, args.settings)
    if args.print_config:
        print(to_yaml(cfg), end="")
        return None
    return args, cfg



def _main(argv: list[str]) -> int:
    started = config_command(argv, "gralc train", __doc__, settings, "train.yaml",
                             "gralc.training.config:TrainConfig")
    if started is None:
        return 0
    args, cfg = started
    import json

    from gralc.training.run import train

    configure_output(args.verbose)  # again: importing Lightning reset its loggers' levels
    result = train(cfg)
    print(json.dumps(result, indent=2))
    return 0


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
