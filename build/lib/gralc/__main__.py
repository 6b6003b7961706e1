"""``python -m gralc``: the ``gralc`` command (:mod:`gralc.commands`)."""

import sys

from gralc.commands import main

if __name__ == "__main__":
    sys.exit(main())
