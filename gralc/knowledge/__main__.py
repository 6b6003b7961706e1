"""Command line: ``python -m gralc.knowledge download|link``.

python -m gralc.knowledge download --year 2024 --out data/mesh
python -m gralc.knowledge link article.nxml --vocabulary data/mesh/desc2024.xml
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gralc.knowledge.download import MESH_BASE_URL, OfflineError, download_mesh


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
    if not path.is_file():
        raise FileNotFoundError(f"input file not found: {path}")
    if path.suffix.lower() in (".nxml", ".xml"):
        try:
            from gralc.documents.jats import parse_jats
        except ImportError as err:
            raise ImportError(
                f"JATS parsing needs gralc.documents.jats ({err}); pass a .txt file"
            ) from err
        return parse_jats(path).text
    return path.read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gralc.knowledge")
    sub = parser.add_subparsers(dest="command", required=True)
    dl = sub.add_parser("download", help="download NLM's descYYYY.xml and mtreesYYYY.bin")
    dl.add_argument("--year", type=int, default=2024)
    dl.add_argument("--out", type=Path, required=True, help="output folder")
    dl.add_argument("--base-url", default=MESH_BASE_URL)
    dl.add_argument("--force", action="store_true", help="download again if present")
    ln = sub.add_parser("link", help="print the concept mentions of a text or JATS file")
    ln.add_argument("file", type=Path)
    ln.add_argument(
        "--vocabulary",
        type=Path,
        required=True,
        help="descYYYY.xml, thesaurus-terms .tsv, MRCONSO.RRF or a saved linker .json",
    )
    ln.add_argument("--trees", type=Path, default=None, help="optional mtreesYYYY.bin")
    args = parser.parse_args(argv)
    try:
        if args.command == "download":
            for path in download_mesh(args.year, args.out, args.base_url, force=args.force):
                print(path)
        else:
            text = _read_text(args.file)
            linker = _load_linker(args.vocabulary, args.trees)
            print("start\tend\tconcept_id\tsurface\tname")
            for m in linker.link(text):
                print(f"{m.start}\t{m.end}\t{m.concept_id}\t{m.surface}\t{m.name}")
    except (OfflineError, FileNotFoundError, ValueError, ImportError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
