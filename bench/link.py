"""Benchmark the entity linker with the full MeSH 2024 thesaurus over real PMC articles.

Usage: python -m bench.link [DATA_DIR]   (default: ../shared/data beside the repository)
Prints a markdown table: vocabulary load and automaton build seconds, cache save/load,
linking throughput (MB of Document.text per second, best of 5, wall and CPU), mentions per
1k words, and a bare Aho-Corasick pass over the ~30k lower-cased descriptor names (no word
boundaries, no selection) for comparison.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import ahocorasick
import numpy as np

from gralc.knowledge.linker import EntityLinker
from gralc.knowledge.vocabulary import Vocabulary

DEFAULT_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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
    data = Path(argv[0]) if argv else DEFAULT_DIR
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

    rows = [
        ("text", f"{len(texts)} articles, {source}, {megabytes:.2f} MB, {words:,} words"),
        (
            "vocabulary",
            f"{len(vocab):,} descriptors, {vocab.num_terms():,} terms, "
            f"{linker.num_keys:,} automaton keys",
        ),
        ("thesaurus TSV load (s)", f"{load_s:.2f}"),
        ("automaton build (s)", f"{linker.build_seconds:.2f}"),
        ("cache save / load (s)", f"{save_s:.2f} / {load_cache_s:.2f} ({cache_mb:.0f} MB JSON)"),
        ("link throughput, wall (MB/s)", f"{megabytes / wall:.2f}"),
        ("link throughput, CPU (MB/s)", f"{megabytes / cpu:.2f}"),
        ("mentions", f"{n_mentions:,} ({1000 * n_mentions / words:.1f} per 1k words)"),
        ("bare AC iter, 30k names, no boundaries, wall (MB/s)", f"{megabytes / bare_wall:.2f}"),
        ("bare AC iter, 30k names, no boundaries, CPU (MB/s)", f"{megabytes / bare_cpu:.2f}"),
        ("load average (1 min)", f"{os.getloadavg()[0]:.2f}"),
        (
            "BLAS",
            f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'default')}, "
            f"numpy {np.__version__} (the linker uses no BLAS)",
        ),
    ]
    print("| measure | value |\n|---|---|")
    for key, value in rows:
        print(f"| {key} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
