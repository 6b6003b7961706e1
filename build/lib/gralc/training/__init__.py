"""Contrastive training of GraLC's learnable parts (GAT, fusion MLP, lambda, alpha, gamma,
tau, beta): ``features`` (the feature cache: JSON + safetensors), ``pairs`` (question ->
positive chunks), ``datamodule``, ``lit_module``, ``config`` (``TrainConfig``), ``run``
(``train(cfg)``). The model itself and its inputs: :mod:`gralc.model`. Optional LoRA adapters
on the encoder: ``lora.enabled`` (:mod:`gralc.encoding.lora`). Export: :mod:`gralc.export`."""
