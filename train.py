"""Train GraLC's learnable parts: ``python train.py [key=value ...]`` = ``gralc train``.

A thin entry point kept where the design names it (:mod:`gralc.train` is the command; its
``--help`` lists every setting). Works from any folder: the configs ship in the package.
"""

import sys

from gralc.train import main

if __name__ == "__main__":
    sys.exit(main())
