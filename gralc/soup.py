"""``gralc soup MODEL MODEL ... --out SOUP.ckpt [--weights W1,W2,...]``: a model soup.

One checkpoint whose weights are the weighted mean of several checkpoints fine-tuned from the
same initial weights (Wortsman et al., ICML 2022; :mod:`gralc.training.soup`), e.g. a run
selected on a dev split and its refit on every document. An ingredient is a ``.ckpt`` or a run
folder (the checkpoint its run selected). Then ``gralc export SOUP.ckpt --out DIR``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gralc.cli import CommandParser, command_main


def _main(argv: list[str]) -> int:
    ap = CommandParser("gralc soup", description=__doc__.split("\n\n")[1].replace("\n", " "),
                       takes_settings=False)
    ap.add_argument("checkpoints", nargs="+",
                    help="training checkpoints (.ckpt) or run folders (their selected model) of "
                         "one initialisation")
    ap.add_argument("--weights", default=None, metavar="W1,W2,...",
                    help="one weight per checkpoint, comma-separated (default: uniform)")
    ap.add_argument("--out", required=True, help="the soup checkpoint (.ckpt) to write")
    args = ap.parse(argv)
    if Path(args.out).exists():
        ap.error(f"--out {args.out} exists; choose a new path (nothing is overwritten)")
    weights = None
    if args.weights is not None:
        try:
            weights = [float(w) for w in args.weights.split(",") if w.strip()]
        except ValueError:
            ap.error(f"--weights {args.weights}: comma-separated numbers, one per checkpoint")
    from gralc.training.soup import soup

    print(soup(args.checkpoints, args.out, weights))
    return 0


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
