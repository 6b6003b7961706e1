"""Where published result files live (``docs/results/NAME.json``) and how an experiment puts
one there; the tables are rendered from them by :mod:`gralc.experiments.tables` (which imports
the experiments' renderers, so the experiments import this module, never that one)."""

from __future__ import annotations

from pathlib import Path

from gralc.experiments.real_data import REPO

RESULTS = REPO / "docs" / "results"


def run_arguments(ap, what: str) -> None:
    """``--cache-dir`` (encodings and features), ``--out FOLDER`` (where ``what`` is written),
    then :func:`report_arguments`: the arguments of a driver that writes one result file.

    Example: ``run_arguments(ap, "two_stage.json")``."""
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--out", help=f"folder for {what}")
    report_arguments(ap, what)


def report_arguments(ap, what: str) -> None:
    """``--report JSON`` (only print the tables of an earlier run's ``what``) and ``--publish
    NAME`` (with it: copy it to docs/results/NAME.json, rendered by gralc.experiments.tables)."""
    ap.add_argument("--report", type=Path, metavar="JSON", help=f"only print the tables of a {what}")
    ap.add_argument("--publish", metavar="NAME", help="with --report: copy it to docs/results/NAME.json "
                    "(its table: python -m gralc.experiments.tables)")


def publish_result(name: str, saved: dict, folder: Path = RESULTS) -> Path:
    """Write ``folder/name.json`` (atomically) and say how its table is generated."""
    from gralc.runinfo import write_json_atomic

    path = Path(folder) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, saved)
    print(f"wrote {path}; its table: python -m gralc.experiments.tables")
    return path


def print_report(path: Path, publish: str | None, report) -> int:
    """``--report JSON [--publish NAME]`` of a driver: print ``report(saved)`` of the result
    file at ``path`` (read as data, no interpolation of its values); with ``publish`` also save
    it as docs/results/NAME.json. Returns 0.

    Example: ``print_report(Path("out/two_stage.json"), None, two_stage_cv.report)`` -> ``0``."""
    from gralc.safe_load import read_json_untrusted

    saved = read_json_untrusted(Path(path), allow_interpolation=True)
    print(report(saved))
    if publish:
        publish_result(publish, saved)
    return 0


def finish_result(saved: dict, out: str | Path | None, filename: str, publish: str | None, report) -> int:
    """The end of a driver that writes one result file: print ``report(saved)``, write it to
    ``out/filename`` (atomically) when ``out`` is given, and publish it as
    docs/results/NAME.json when ``publish`` is. Returns 0.

    Example: ``finish_result(saved, "results/x", "paired_runs.json", None, report)`` -> ``0``."""
    from gralc.runinfo import write_json_atomic

    print(report(saved))
    if out:
        write_json_atomic(Path(out) / filename, saved)
    if publish:
        publish_result(publish, saved)
    return 0
