"""Command lines of the knowledge layer: ``gralc mesh`` and ``gralc link``.

    gralc mesh --year 2024 --out data/mesh                  # NLM's desc2024.xml + mtrees2024.bin
    gralc link article.nxml knowledge.vocabulary=data/mesh/desc2024.xml
    gralc link notes.txt                                    # the built-in 438-term MeSH subset

(also ``python -m gralc.knowledge download|link`` with the same arguments).
"""

from __future__ import annotations

import sys
from pathlib import Path

from gralc.knowledge.download import MESH_BASE_URL, download_mesh
from gralc.safe_load import require_file


def _load_linker(vocabulary: Path, trees: Path | None):
    from gralc.knowledge.linker import EntityLinker
    from gralc.knowledge.vocabulary import load_vocabulary

    if vocabulary.suffix == ".json":
        return EntityLinker.load(vocabulary)
    vocab = load_vocabulary(vocabulary)
    if trees is not None:
        vocab.add_tree_file(trees)
    return EntityLinker(vocab)


def _read_text(path: Path) -> str:
    """``Document.text`` of a JATS file (``.nxml``/``.xml``), else the file's text."""
    if not path.exists():
        raise FileNotFoundError(f"input file not found: {path}")
    require_file(path, "input file")
    if path.suffix.lower() in (".nxml", ".xml"):
        try:
            from gralc.documents.jats import parse_jats
        except ImportError as err:
            raise ImportError(
                f"JATS parsing needs gralc.documents.jats ({err}); pass a .txt file"
            ) from err
        return parse_jats(path).text
    return path.read_text(encoding="utf-8")


LINK_KEYS = ("knowledge.vocabulary", "knowledge.tree_file")


def _link(argv: list[str], prog: str = "gralc link") -> int:
    from gralc.cli import CommandParser

    p = CommandParser(prog, description="Print the concept mentions (longest match) of a text or "
                      "JATS file: start, end, concept id, surface form, name (TSV).",
                      renamed={"--vocabulary": "knowledge.vocabulary=PATH",
                               "--trees": "knowledge.tree_file=PATH"},
                      epilog="settings:\n  knowledge.vocabulary=PATH  descYYYY.xml, thesaurus-terms "
                             ".tsv, MRCONSO.RRF or a saved linker .json\n"
                             "                            (default: the built-in 438-term MeSH subset)\n"
                             "  knowledge.tree_file=PATH   mtreesYYYY.bin (optional)")
    p.add_argument("file", type=Path, help="a .nxml / .xml (JATS) or text file")
    args = p.start(argv)
    given = {}
    for item in args.settings:
        key, _, value = item.partition("=")
        key = key.removeprefix("pipeline.")
        if key not in LINK_KEYS:
            raise ValueError(f"{item}: gralc link takes {' and '.join(k + '=PATH' for k in LINK_KEYS)}")
        given[key] = value
    text = _read_text(args.file)
    vocabulary = given.get("knowledge.vocabulary")
    if vocabulary is None:
        from gralc.knowledge.builtin import builtin_tree_path, builtin_vocabulary_path

        vocabulary, trees = builtin_vocabulary_path(), builtin_tree_path()
    trees = given.get("knowledge.tree_file", None if "knowledge.vocabulary" in given else trees)
    linker = _load_linker(Path(vocabulary), Path(trees) if trees else None)
    print("start\tend\tconcept_id\tsurface\tname")
    for m in linker.link(text):
        print(f"{m.start}\t{m.end}\t{m.concept_id}\t{m.surface}\t{m.name}")
    return 0


def _download(argv: list[str], prog: str = "gralc mesh") -> int:
    from gralc.cli import CommandParser

    p = CommandParser(prog, description="Download NLM's MeSH descriptors (descYYYY.xml) and tree "
                      "numbers (mtreesYYYY.bin) for knowledge.vocabulary= / knowledge.tree_file=.",
                      takes_settings=False)
    p.add_argument("--year", type=int, default=2024)
    p.add_argument("--out", type=Path, required=True, help="output folder")
    p.add_argument("--base-url", default=MESH_BASE_URL)
    p.add_argument("--force", action="store_true", help="download again if present")
    args = p.start(argv)
    for path in download_mesh(args.year, args.out, args.base_url, force=args.force):
        print(path)
    return 0


def link_main(argv: list[str] | None = None) -> int:
    """``gralc link FILE [knowledge.vocabulary=PATH]`` inside the error boundary (exit 2).

    Example: ``link_main(["gralc/data/demo/articles/PMC9000001.nxml"])`` -> ``0``, printing each
    concept mention of the article (built-in vocabulary).
    """
    from gralc.cli import run

    return run(_link, argv)


def download_main(argv: list[str] | None = None) -> int:
    """``gralc mesh --out DIR [--year 2024]`` inside the error boundary (exit 2).

    Example: ``download_main(["--out", "data/mesh", "--year", "2024"])`` -> ``0`` once
    ``desc2024.xml`` and ``mtrees2024.bin`` are in ``data/mesh`` (2 when offline, with the fix).
    """
    from gralc.cli import run

    return run(_download, argv)


def main(argv: list[str] | None = None) -> int:
    """``python -m gralc.knowledge download|link ...`` (the package's own command line).

    Example: ``main(["link", "gralc/data/demo/articles/PMC9000001.nxml"])`` -> ``0``.
    """
    from gralc.cli import run

    args = list(sys.argv[1:] if argv is None else argv)
    commands = {"download": _download, "link": _link}
    if not args or args[0] not in commands:
        print("usage: python -m gralc.knowledge download|link ...  (also: gralc mesh, gralc link)",
              file=sys.stderr if args else sys.stdout)
        return 2 if args and args[0] not in ("-h", "--help") else 0
    name = args[0]
    return run(lambda rest: commands[name](rest, f"python -m gralc.knowledge {name}"), args[1:])


if __name__ == "__main__":
    sys.exit(main())
