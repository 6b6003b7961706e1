"""Research drivers: GraLC's experiments, composed from the library below them.

Each module is one experiment's command line (``python -m gralc.experiments.<name>``): the
cross-validation by article of the training recipes (:mod:`.crossval`, the variants are the
files of ``gralc/configs/experiment/cv/``), inference-time settings chosen on each fold's dev split
(:mod:`.inference_cv`), the final model (:mod:`.final_model`), the graph's trial
(:mod:`.graph_trial`), two-stage search against the exhaustive score (:mod:`.two_stage_cv`),
PubMedQA* (:mod:`.pubmedqa`), and the generated result tables (:mod:`.tables`). They run
from a repository checkout on the shared real data
(:mod:`gralc.experiments.real_data`); the product never imports them.

Layer: the top (tests/project/test_layers.py): experiments compose the library and its command lines;
nothing in gralc/ imports them.
"""
