"""Evaluate methods and trained models: ``python eval.py [key=value ...]`` = ``gralc eval``.

A thin entry point kept where the design names it (:mod:`gralc.eval` is the command; its
``--help`` lists every setting). Works from any folder: the configs ship in the package.
"""

import sys

from gralc.eval import main

if __name__ == "__main__":
    sys.exit(main())
