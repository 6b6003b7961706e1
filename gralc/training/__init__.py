"""Contrastive training of GraLC's learnable parts (GAT, fusion MLP, lambda, alpha, gamma,
tau, beta): ``features`` (frozen per-document tensors, cached), ``pairs`` (question ->
positive chunks), ``datamodule``, ``lit_module``, ``config`` (``TrainConfig``), ``run``
(``train(cfg)``), ``demo_stage`` (``make demo``). Export: :mod:`gralc.export`."""
