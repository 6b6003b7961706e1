"""What the graph costs in training: seconds per training step of the record's recipe with the
built-in demo list (the record's runs) against the full MeSH 2024 graph, and the full graph
without the GAT (``model.use_kg=false``), measured in one run on one machine (issue 44's bar:
the graph parts at most 1.2x the record's seconds per epoch).

Each arm trains the COVID-QA fold-0 training side (``gralc.experiments.crossval``'s
``lora_lexical_small_late``) for ``--batches`` batches of one epoch, after a warm-up epoch of
``--warmup`` batches (features are built and cached before timing; validation is off). The demo
arm is here only to time the record: nothing it trains is scored.

    python -m gralc.experiments.graph_cost --batches 30 --out docs/results
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from gralc.config import CONFIG_DIR, load_config
from gralc.data.real_knowledge import knowledge_overrides
from gralc.experiments.crossval import DEFAULT_DATA, fold_overrides
from gralc.experiments.published import publish_result
from gralc.runinfo import run_metadata
from gralc.training.callbacks import EpochTimer
from gralc.training.config import TrainConfig
from gralc.training.run import train

VARIANT = "lora_lexical_small_late"


def arms() -> dict[str, list[str]]:
    full = knowledge_overrides()
    return {"record: demo list (438 terms)": [],
            "full MeSH 2024 graph": full,
            "full MeSH 2024, no GAT (model.use_kg=false)": [*full, "model.use_kg=false"]}


def timed(overrides: list[str], batches: int, cache_dir: str, data: str, repeats: int) -> list[float]:
    """Seconds per batch of ``repeats`` one-epoch runs of ``batches`` batches (the first run
    also builds and caches the features, so it is not timed)."""
    out = []
    for i in range(repeats + 1):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = load_config(TrainConfig, CONFIG_DIR / "train.yaml", [
                *fold_overrides(data, (5, 0, 0), Path(tmp), cache_dir, 1, 2, VARIANT), *overrides,
                f"trainer.limit_train_batches={batches if i else 2}", "trainer.validate_before_fit=false",
                "callbacks.early_stopping.enabled=false", "loader.dev_fraction=0"])
            timer = EpochTimer()
            train(cfg, callbacks=[timer])
            if i:
                out.append(timer.seconds[0] / batches)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--out", default="docs/results")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    results = {}
    for name, overrides in arms().items():
        results[name] = timed(overrides, args.batches, args.cache_dir, args.data, args.repeats)
        print(f"{name}: {statistics.fmean(results[name]):.2f} s per batch", flush=True)
    base = statistics.fmean(results["record: demo list (438 terms)"])
    saved = run_metadata({"args": vars(args), "seconds_per_batch": results,
                          "ratio_to_record": {k: statistics.fmean(v) / base for k, v in results.items()},
                          "variant": VARIANT, "seconds": time.perf_counter() - t0})
    publish_result("graph_cost", saved, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
