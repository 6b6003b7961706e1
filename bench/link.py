"""Benchmark the entity linker with the full MeSH 2024 thesaurus over real PMC articles.

Usage: python -m bench.link [DATA_DIR] [--out DIR]   (default: ../shared/data beside the
repository, or $GRALC_SHARED_DATA; --out docs/results)
Prints a markdown table: vocabulary load and automaton build seconds, cache save/load,
linking throughput (MB of Document.text per second, best of 5, wall and CPU; the linker is
single-threaded, so this is MB/s per core: the bar is >= 5), mentions per 1k words, and a
bare Aho-Corasick pass over the ~30k lower-cased descriptor names (no word boundaries, no
selection) for comparison. Writes the numbers to ``OUT/linking_speed.json`` (with the run
metadata) and the table to ``OUT/linking_speed.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import ahocorasick
import numpy as np

from gralc.experiments.real_data import SHARED_DATA
from gralc.experiments.tables import write_table
from gralc.knowledge.linker import EntityLinker
from gralc.knowledge.vocabulary import Vocabulary
from gralc.runinfo import run_metadata

DEFAULT_DIR = SHARED_DATA
#: the linking speed bar: MB of text per second on one core
BAR_MB_S = 5.0


def _texts(pmc: Path) -> tuple[list[str], str]:
    """Document.text of every article (gralc.documents.jats), else lxml body text."""
    files = sorted(pmc.rglob("*.nxml"))
    try:
        from gralc.documents.jats import parse_jats

        return [parse_jats(f).text for f in files], "Document.text (parse_jats)"
    except Exception as err:  # parser missing or failing: fall back to raw body text
        from lxml import etree

        print(f"note: parse_jats unavailable ({err}); using lxml body text", file=sys.stderr)
        texts = []
        for f in files:
            body = etree.parse(str(f)).getroot().find(".//body")
            texts.append(" ".join(body.itertext()) if body is not None else "")
        return texts, "lxml body itertext"


def _best_of(fn, repeat: int = 5) -> tuple[float, float]:
    """Best wall and best CPU seconds of ``fn()`` over ``repeat`` runs."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.link", description=__doc__.split("\n")[0])
    ap.add_argument("data", nargs="?", type=Path, default=DEFAULT_DIR, help="shared data folder")
    ap.add_argument("--out", type=Path, default=Path("docs/results"),
                    help="folder for linking_speed.json and linking_speed.md")
    args = ap.parse_args(argv)
    data = args.data
    terms = data / "mesh" / "mesh2024_thesaurus_terms.tsv"
    if not terms.is_file() or not (data / "pmc").is_dir():
        print(f"error: {data} lacks mesh/mesh2024_thesaurus_terms.tsv or pmc/", file=sys.stderr)
        return 1
    texts, source = _texts(data / "pmc")
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    words = sum(len(t.split()) for t in texts)

    start = time.perf_counter()
    vocab = Vocabulary.from_thesaurus_tsv(terms)
    load_s = time.perf_counter() - start
    linker = EntityLinker(vocab)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "linker.json"
        save_s, _ = _best_of(lambda: linker.save(cache), 1)
        load_cache_s, _ = _best_of(lambda: EntityLinker.load(cache), 1)
        cache_mb = cache.stat().st_size / 1e6
    n_mentions = sum(len(m) for m in linker.link_documents(texts))
    wall, cpu = _best_of(lambda: linker.link_documents(texts))

    names = {c.name.lower() for c in vocab.concepts.values()}
    bare = ahocorasick.Automaton(ahocorasick.STORE_INTS)
    for i, name in enumerate(names):
        bare.add_word(name, i)
    bare.make_automaton()
    lowered = [t.lower() for t in texts]
    bare_wall, bare_cpu = _best_of(lambda: [sum(1 for _ in bare.iter(t)) for t in lowered])

    load_avg = os.getloadavg()[0]
    payload = run_metadata({
        "args": {"data": str(data), "out": str(args.out)},
        "text": {"articles": len(texts), "source": source, "megabytes": megabytes, "words": words},
        "vocabulary": {"file": str(terms), "descriptors": len(vocab), "terms": vocab.num_terms(),
                       "automaton_keys": linker.num_keys},
        "thesaurus_load_s": load_s, "automaton_build_s": linker.build_seconds,
        "cache_save_s": save_s, "cache_load_s": load_cache_s, "cache_mb": cache_mb,
        "link_wall_s": wall, "link_cpu_s": cpu, "link_mb_per_s_wall": megabytes / wall,
        "link_mb_per_s_cpu": megabytes / cpu, "bar_mb_per_s": BAR_MB_S,
        "bar_met": megabytes / cpu >= BAR_MB_S, "mentions": n_mentions,
        "mentions_per_1k_words": 1000 * n_mentions / words,
        "bare_ac_mb_per_s_wall": megabytes / bare_wall, "bare_ac_mb_per_s_cpu": megabytes / bare_cpu,
        "load_average_1min": load_avg, "threads": 1, "repeats": 5, "numpy": np.__version__,
    })
    print(write_table("linking_speed", payload, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
