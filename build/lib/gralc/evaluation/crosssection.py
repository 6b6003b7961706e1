"""Kept so ``python -m gralc.evaluation.crosssection`` still runs: the generator moved to
:mod:`gralc.data.crosssection_questions` (use ``python -m gralc.data.crosssection_questions``)."""

import sys

from gralc.data.crosssection_questions import main

if __name__ == "__main__":
    sys.exit(main())
