"""Linking coverage on COVID-QA dev: the built-in demo vocabulary against the full MeSH 2024.

For each vocabulary (``demo``: ``PipelineConfig()``'s knowledge, the 438-term built-in list;
``full``: :func:`gralc.experiments.real_data.knowledge_overrides`, the MeSH 2024 thesaurus, tree,
pharmacological actions and HSDN), :func:`gralc.evaluation.linking_coverage.linking_coverage` measures
the share of questions and of fixed 256-word-piece chunks (no overlap; cut as
``gralc.chunking.fixed`` cuts, so the measure does not depend on a model) with at least one
linked concept, mentions per 1,000 word-pieces (the pipeline encoder's tokenizer) and the 20
concepts found in the most articles.

    python -m gralc.experiments.linking_coverage --out docs/results      # ~1 min on 2 cores

Writes ``OUT/linking_coverage.json`` (with the run metadata, configs and git hash) and the
table ``OUT/linking_coverage.md`` generated from it.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict
from pathlib import Path

from gralc.experiments.published import publish_result
from gralc.experiments.real_data import SHARED_DATA, knowledge_overrides
from gralc.runinfo import run_metadata

VOCABULARIES = ("demo", "full")
LABELS = {"demo": "demo (built-in, 438 terms)", "full": "full MeSH 2024"}
ROWS = [  # (key, label, format)
    ("concepts", "descriptors in the vocabulary", "{:,}"),
    ("terms", "terms (names and synonyms)", "{:,}"),
    ("questions_with_concept", "questions with >= 1 concept", "{:.1%}"),
    ("chunks_with_concept", "256-word-piece chunks with >= 1 concept", "{:.1%}"),
    ("articles_with_concept", "articles with >= 1 concept", "{:.1%}"),
    ("mentions_per_1000_pieces", "mentions per 1,000 word-pieces (articles)", "{:.1f}"),
    ("question_mentions_per_1000_pieces", "mentions per 1,000 word-pieces (questions)", "{:.1f}"),
    ("distinct_concepts_articles", "distinct concepts in the articles", "{:,}"),
    ("distinct_concepts_questions", "distinct concepts in the questions", "{:,}"),
    ("link_seconds", "linking + chunking seconds (all texts)", "{:.1f}"),
]


def measure(name: str, tokenizer, questions: list[str], articles: list[str], shared: Path,
            chunk_size: int, top: int) -> dict:
    """One vocabulary's coverage, with its knowledge config and size."""
    from gralc.config import load_config, to_dict
    from gralc.evaluation.linking_coverage import linking_coverage
    from gralc.knowledge.linker import EntityLinker
    from gralc.pipeline import PipelineConfig, load_knowledge

    cfg = load_config(PipelineConfig, None,
                      [] if name == "demo" else knowledge_overrides(shared, prefix=""))
    t0 = time.perf_counter()
    vocab, kb = load_knowledge(cfg.knowledge)  # as Pipeline builds it
    linker = EntityLinker(vocab, cfg.knowledge.linker)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    cov = linking_coverage(linker, tokenizer, questions, articles, chunk_size, top)
    return {"knowledge": to_dict(cfg.knowledge), "concepts": len(vocab), "terms": vocab.num_terms(),
            "relations": kb.sources_used, "load_seconds": load_s,
            "link_seconds": time.perf_counter() - t0, **cov}


def markdown(report: dict) -> str:
    """The tables of a ``linking_coverage.json`` payload."""
    res = report["results"]
    names = [n for n in VOCABULARIES if n in res]
    any_ = res[names[0]]
    lines = [
        f"Linking coverage on {Path(report['args']['data']).name}: {any_['articles']} articles, "
        f"{any_['questions']} questions, {any_['chunks']} chunks of {any_['chunk_size_pieces']} "
        f"word-pieces (no overlap; {report['tokenizer']} tokenizer), "
        f"{any_['article_pieces']:,} word-pieces; git {report['git_hash']}.",
        "",
        "| measure | " + " | ".join(LABELS[n] for n in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for key, label, fmt in ROWS:
        lines.append(f"| {label} | " + " | ".join(fmt.format(res[n][key]) for n in names) + " |")
    for n in names:
        lines += ["", f"**{LABELS[n]}**: the {len(res[n]['top_concepts'])} concepts found in the "
                  "most articles", "", "| # | id | name | articles | share of articles | mentions |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {i} | {c['id']} | {c['name']} | {c['articles']} | {c['article_share']:.0%} | "
                  f"{c['mentions']:,} |" for i, c in enumerate(res[n]["top_concepts"], 1)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=SHARED_DATA / "covidqa" / "covidqa_dev.json",
                    help="SQuAD-format JSON (whole articles)")
    ap.add_argument("--shared-data", type=Path, default=SHARED_DATA,
                    help="folder holding mesh/ and relations/ (the full MeSH 2024 graph)")
    ap.add_argument("--chunk-size", type=int, default=256, help="word-pieces per chunk")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path("docs/results"))
    args = ap.parse_args(argv)
    if not args.data.is_file():
        ap.error(f"--data {args.data}: no such file (COVID-QA dev, SQuAD format)")
    knowledge_overrides(args.shared_data)  # a missing MeSH file is named before any work
    from gralc.data.benchmarks import squad_benchmark
    from gralc.encoding.encoder import DocumentEncoder
    from gralc.pipeline import PipelineConfig

    t0 = time.perf_counter()
    bench = squad_benchmark(args.data)
    questions = [q.text for q in bench.questions]
    articles = [d.text for d in bench.documents]
    enc_cfg = PipelineConfig().encoder
    enc_cfg.device, enc_cfg.cache_dir = "cpu", None
    encoder = DocumentEncoder(enc_cfg)  # the pipeline encoder's tokenizer counts word-pieces
    results = {n: measure(n, encoder.tokenizer, questions, articles, args.shared_data,
                          args.chunk_size, args.top) for n in VOCABULARIES}
    report = run_metadata({"args": {k: str(v) for k, v in vars(args).items()},
                           "tokenizer": encoder.model_id, "encoder": asdict(enc_cfg),
                           "results": results, "seconds": time.perf_counter() - t0})
    print(markdown(report))
    publish_result("linking_coverage", report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
