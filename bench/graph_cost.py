"""What the graph costs in training: seconds per training step of the record's recipe with the
built-in demo list (the record's runs) against the full MeSH 2024 graph, and the full graph
without the GAT (``model.use_kg=false``), measured in one run on one machine (issue 44's bar:
the graph parts at most 1.2x the record's seconds per epoch).

Each arm trains the COVID-QA fold-0 training side (``gralc.experiments.crossval``'s
``lora_lexical_small_late``) for ``--batches`` batches of one epoch, after a warm-up epoch of
``--warmup`` batches (features are built and cached before timing; validation is off). The demo
arm is here only to time the record: nothing it trains is scored.

    python -m bench.graph_cost --batches 30 --out docs/results
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from gralc.experiments.crossval import DEFAULT_DATA, seconds_per_batch
from gralc.experiments.published import publish_result
from gralc.experiments.real_data import knowledge_overrides
from gralc.runinfo import run_metadata

VARIANT = "lora_lexical_small_late"


def arms() -> dict[str, list[str]]:
    full = knowledge_overrides()
    return {"record: demo list (438 terms)": [],
            "full MeSH 2024 graph": full,
            "full MeSH 2024, no GAT (model.use_kg=false)": [*full, "model.use_kg=false"]}


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
        results[name] = seconds_per_batch(overrides, args.batches, args.cache_dir, args.data,
                                          args.repeats, VARIANT)
        print(f"{name}: {statistics.fmean(results[name]):.2f} s per batch", flush=True)
    base = statistics.fmean(results["record: demo list (438 terms)"])
    saved = run_metadata({"args": vars(args), "seconds_per_batch": results,
                          "ratio_to_record": {k: statistics.fmean(v) / base for k, v in results.items()},
                          "variant": VARIANT, "seconds": time.perf_counter() - t0})
    publish_result("graph_cost", saved, Path(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
