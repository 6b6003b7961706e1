"""Contrastive training of GraLC's learnable parts (GAT, fusion MLP, lambda, alpha, gamma,
tau, beta): ``features`` (frozen per-document tensors, cached), ``pairs`` (question ->
positive chunks), ``datamodule``, ``lit_module``, ``config`` (``TrainConfig``), ``run``
(``train(cfg)``), ``demo_stage`` (``make demo``). Optional LoRA adapters on the encoder:
``lora.enabled`` (:mod:`gralc.encoding.lora`). Export: :mod:`gralc.export`."""
