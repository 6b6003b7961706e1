"""``gralc qrels [data settings] --out PATH [--index INDEX] [--format trec|beir]``.

Standard IR judgement files from any GraLC benchmark (the ``data.*`` settings of ``gralc
eval``: ``data=squad data.path=covidqa.json``, ``data=demo``, ``data=pubmedqa ...``, ...):

* ``--index INDEX``: TREC qrels at the **evidence** level: for every question the chunks of that
  index holding its answer span or gold paragraph, by the rule ``gralc eval`` scores with
  (``evidence.min_coverage``), so ``gralc search INDEX --queries ... --format trec`` scored
  against them by trec_eval, pytrec_eval or ranx gives GraLC's ``ev_mrr``;
* no ``--index``: TREC qrels at the **document** level (``--level doc`` runs);
* ``--format beir``: the benchmark as a BEIR folder (``corpus.jsonl``, ``queries.jsonl``,
  ``qrels/test.tsv``), for any BEIR tool, or for ``gralc index`` / ``gralc eval data=beir``.

    gralc qrels data=squad data.path=covidqa_dev.json --format beir --out covidqa_beir
    gralc qrels data=demo --index outputs/demo_index --out demo.qrels"""

from __future__ import annotations

import sys
from pathlib import Path

from gralc.cli import CommandParser, Settings, command_main


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc qrels`` takes (for ``--help``)."""
    from gralc.data.benchmarks import DataConfig
    from gralc.evaluation.methods import EvidenceConfig

    return [Settings("the benchmark (as gralc eval's data.*; data=NAME selects a config)", DataConfig, "data."),
            Settings("the evidence rule (with --index)", EvidenceConfig, "evidence.")]


def parser() -> CommandParser:
    """The command line of ``gralc qrels``."""
    p = CommandParser("gralc qrels", description="Write a benchmark's judgements as TREC qrels "
                      "(evidence level over an index's chunks, or document level) or as a BEIR "
                      "folder.", settings=settings, epilog=__doc__.split("\n\n")[-1])
    p.add_argument("--out", required=True, help="the qrels file (trec) or folder (beir) to write")
    p.add_argument("--index", help="an index folder: judge its chunks at the evidence level")
    p.add_argument("--format", choices=("trec", "beir"), default="trec")
    p.add_argument("--split", default="test", help="--format beir: the qrels split's name")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out file; a folder holding other files: move "
                        "them aside to OUT.replaced-<time>")
    return p



def _main(argv: list[str]) -> int:
    args = parser().start(argv)
    bad = [s for s in args.settings if not s.startswith(("data", "evidence."))]
    if bad:
        raise ValueError(f"{' '.join(bad)}: gralc qrels takes data.* and evidence.* settings")
    if args.format == "beir" and args.index:
        raise ValueError("--index judges an index's chunks (TREC qrels); --format beir writes the "
                         "benchmark itself: drop one")
    from gralc.artefacts import check_output_dir, write_artefact
    from gralc.config import CONFIG_DIR, load_config
    from gralc.data.benchmarks import load_benchmarks
    from gralc.evaluation.config import EvalConfig

    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", args.settings)
    out = Path(args.out)
    inputs = [p for p in (cfg.data.path, args.index) if p]
    if args.format == "beir":
        check_output_dir(out, "beir", args.force, inputs)  # before any reading
    elif out.is_dir():
        raise IsADirectoryError(f"--out {out} is a folder; TREC qrels are one file")
    elif out.exists() and not args.force:
        raise FileExistsError(f"--out {out} exists: choose another file, or --force to replace it")
    benches = load_benchmarks(cfg.data)
    if len(benches) != 1:
        raise ValueError(f"{cfg.data.name}: {len(benches)} benchmarks ({', '.join(b.name for b in benches)}); "
                         "choose one with data.split=...")
    bench = benches[0]
    if args.format == "beir":
        from gralc.data.beir import write_beir

        with write_artefact(out, "beir", args.force, inputs) as tmp:
            write_beir(bench, tmp, split=args.split)  # whole, then swapped in
        print(f"{bench.name}: {len(bench.documents)} documents, {len(bench.questions)} questions "
              f"into the BEIR folder {out}")
        return 0
    from gralc.retrieval.trec import document_qrels, write_trec_qrels

    if args.index:
        from gralc.evaluation.trec import evidence_qrels
        from gralc.retrieval.indexes.dense import ChunkIndex

        chunks = ChunkIndex.load(args.index).chunks
        check_same_texts(chunks, bench, args.index)
        qrels = evidence_qrels(bench.questions, chunks, bench.documents, cfg.evidence.min_coverage)
        level = f"evidence level, the chunks of {args.index}"
    else:
        qrels = document_qrels(bench.questions)
        level = "document level"
    n = write_trec_qrels(qrels, out)
    print(f"{bench.name}: {n} judgements of {len(qrels)} questions ({level}) into {out}")
    return 0


main = command_main(_main)


def check_same_texts(chunks, bench, index: str) -> None:
    """Evidence spans are offsets into the benchmark's document texts: an index whose chunks do
    not cut those very texts (the same documents parsed another way, another corpus) would give
    wrong qrels, so it is refused, naming the first chunk that differs."""
    texts = {d.id: d.text for d in bench.documents}
    judged = 0
    for c in chunks:
        text = texts.get(c.doc_id)
        if text is None:
            continue  # a document no question asks about
        judged += 1
        if text[c.char_start:c.char_end] != c.text:
            raise ValueError(f"{index}: chunk {c.chunk_id} is not the text of {c.doc_id} as "
                             f"{bench.name} reads it (characters {c.char_start}-{c.char_end} differ): "
                             "index the corpus the benchmark reads (the same files, the same reader)")
    if not judged:
        raise ValueError(f"{index}: none of its chunks belongs to a document of {bench.name}: index "
                         "the benchmark's corpus")


if __name__ == "__main__":
    sys.exit(main())
