"""The data layer: benchmark configs and loaders (:mod:`~gralc.data.benchmarks`), question
files (:mod:`~gralc.data.question_io`), the cross-section question generator
(:mod:`~gralc.data.crosssection_questions`) and the bundled demo corpus
(:mod:`gralc.data.demo`). Training and evaluation both read from here."""
