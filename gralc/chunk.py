"""Command line: chunk one document with any registered strategy and show the chunks.

python -m gralc.chunk article.nxml --strategy structure_aware --decoder dp
python -m gralc.chunk ori_pqal.json --pmid 21645374 --strategy late --format jsonl
python -m gralc.chunk --strategy list
python -m gralc.chunk article.nxml chunking.boundary.max_tokens=512 --strategy structure_aware

Input: one JATS file, or ONE entry of a PubMedQA ``ori_pqal.json`` (``--pmid``; default the
first). Mentions come from the pipeline's entity linker (``--vocabulary``, default the bundled
demo vocabulary). ``table`` prints every chunk and the ASCM quality metrics (SCS, EPR, ERL);
``jsonl`` prints ``Chunk.to_dict()`` per line (no embeddings). Bad input exits with code 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

from gralc.chunking import registered
from gralc.chunking.base import PreparedDocument
from gralc.chunking.boundaries import recommendation_evidence_pairs
from gralc.chunking.chunk import Chunk
from gralc.chunking.quality import (
    entity_preservation_rate,
    recommendation_evidence_linking_rate,
    semantic_coherence,
)
from gralc.cli import add_verbose_flag, configure_output, pipeline_overrides
from gralc.documents.model import Document


class UsageError(ValueError):
    """Bad command-line input (missing file, unknown strategy, unknown PMID): exit code 2."""


def strategy_descriptions() -> dict[str, str]:
    """Registered strategy name -> first sentence of its class docstring."""
    out = {}
    for name, cls in sorted(registered().items()):
        para = (cls.__doc__ or "").strip().split("\n\n")[0]
        text = " ".join(para.split()).replace("``", "")
        out[name] = re.split(r"(?<=\.)\s", text, maxsplit=1)[0]
    return out


def check_strategy(name: str) -> None:
    if name not in registered():
        raise UsageError(
            f"unknown strategy {name!r}; available: {', '.join(sorted(registered()))} (or 'list')"
        )


def load_document(path: Path, pmid: str | None = None) -> Document:
    """A JATS file, or one entry of a PubMedQA JSON (``pmid``, default the first entry)."""
    from gralc.documents.jats import parse_jats
    from gralc.documents.pubmedqa import convert_record

    if not path.is_file():
        raise UsageError(f"input file not found: {path}; pass a JATS .nxml file or ori_pqal.json")
    if path.suffix.lower() != ".json":
        if pmid is not None:
            raise UsageError(f"--pmid applies to a PubMedQA JSON file, not to {path}")
        return parse_jats(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not data:
        raise UsageError(f"{path}: expected a PubMedQA object PMID -> entry (ori_pqal.json)")
    pmid = pmid if pmid is not None else next(iter(data))
    if pmid not in data:
        examples = ", ".join(list(data)[:5])
        raise UsageError(f"PMID {pmid!r} is not in {path} ({len(data)} entries, e.g. {examples})")
    e = data[pmid]
    try:
        _, doc = convert_record(
            pmid, e["QUESTION"], e["CONTEXTS"], e["LABELS"], e.get("LONG_ANSWER", ""),
            e.get("final_decision", ""),
        )  # fmt: skip
    except (KeyError, TypeError) as err:
        raise UsageError(
            f"{path}: entry {pmid} is not in the ori_pqal.json format ({err!r})"
        ) from err
    return doc


@lru_cache(maxsize=2)
def load_pipeline(vocabulary: str | None, model: str, overrides: tuple[str, ...] = ()):
    """A :class:`~gralc.pipeline.Pipeline` (encoder + linker), cached per process;
    ``overrides``: ``key=value`` pipeline settings (typed loader, as every CLI)."""
    from gralc.config import load_config
    from gralc.encoding.encoder import EncoderConfig
    from gralc.pipeline import KnowledgeConfig, Pipeline, PipelineConfig

    base = PipelineConfig(
        encoder=EncoderConfig(model=model), knowledge=KnowledgeConfig(vocabulary=vocabulary)
    )
    return Pipeline(load_config(PipelineConfig, None, overrides, base=base) if overrides else base)


def chunk_document(
    pipeline, doc: Document, strategy: str, decoder: str
) -> tuple[PreparedDocument, list[Chunk]]:
    """Prepare (encode + link) ``doc`` and chunk it; ``decoder`` is the structure-aware one."""
    from gralc.pipeline import build_chunker

    cfg = pipeline.config.chunking
    cfg = dataclasses.replace(cfg, boundary=dataclasses.replace(cfg.boundary, decoder=decoder))
    prepared = pipeline.prepare([doc], progress=False)[0]
    return prepared, build_chunker(strategy, pipeline.encoder, cfg).chunk(prepared)


def quality(pipeline, prepared: PreparedDocument, chunks: list[Chunk]) -> dict[str, float | None]:
    """ASCM metrics of the chunking. Multi-level indexes are measured on their finest level
    (``sentences``); sentence vectors for SCS are ``encoder.encode_texts`` of each sentence."""
    doc = prepared.doc
    finest = [c for c in chunks if c.level in ("chunk", "sentences")]
    sents = [s for s in doc.sentences if s.end > s.start]
    vecs = pipeline.encoder.encode_texts([doc.text[s.start : s.end] for s in sents])
    return {
        "semantic coherence (SCS)": semantic_coherence(finest, sents, vecs),
        "entity preservation rate (EPR)": entity_preservation_rate(finest, prepared.mentions),
        "recommendation-evidence linking rate (ERL)": recommendation_evidence_linking_rate(
            finest, recommendation_evidence_pairs(doc)
        ),
    }


def print_jsonl(chunks: list[Chunk]) -> None:
    for c in chunks:
        print(json.dumps(c.to_dict(with_embedding=False), ensure_ascii=False))


def print_table(doc: Document, chunks: list[Chunk], metrics: dict[str, float | None]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{doc.id}: {len(chunks)} {chunks[0].strategy if chunks else ''} chunks")
    multilevel = any(c.level != "chunk" for c in chunks)
    columns = ["#", "chars", "tokens", "size", "section path", "IMRaD", "entities", "boundary"]
    for col in columns + (["level"] if multilevel else []):
        table.add_column(col, overflow="fold", no_wrap=col in ("chars", "tokens"))
    for i, c in enumerate(chunks):
        scores = " ".join(f"{k}={v + 0.0:.2f}" for k, v in c.boundary_scores.items())
        row = [
            str(i), f"{c.char_start}-{c.char_end}", f"{c.token_start}-{c.token_end}",
            str(c.n_tokens), " > ".join(t or "(untitled)" for t in c.section_path),
            ",".join(c.imrad_types), str(len(c.entity_ids)), scores,
        ]  # fmt: skip
        table.add_row(*row, *([c.level] if multilevel else []))
    console = Console(width=None if sys.stdout.isatty() else 160)  # 80 columns when piped
    console.print(table)
    for name, value in metrics.items():
        console.print(f"{name}: {'n/a' if value is None else f'{value:.3f}'}")


def main(argv: list[str] | None = None) -> int:
    """The command line inside the error boundary of :mod:`gralc.cli` (exit 2 after one
    message for a user's mistake; ``--debug`` / ``GRALC_DEBUG=1``: its traceback)."""
    from gralc.cli import run

    return run(_main, argv)


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gralc.chunk", description=__doc__.split("\n")[0]
    )
    parser.add_argument("file", type=Path, nargs="?", help="JATS .nxml file or ori_pqal.json")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="pipeline settings, e.g. chunking.boundary.max_tokens=512")
    parser.add_argument("--strategy", required=True, help="registered strategy name, or 'list'")
    parser.add_argument("--decoder", choices=("peak", "dp"), default="peak")
    parser.add_argument("--format", choices=("table", "jsonl"), default="table")
    parser.add_argument("--vocabulary", default=None, help="MeSH/UMLS vocabulary (default: demo)")
    parser.add_argument("--model", default="all-MiniLM-L6-v2", help="encoder id or folder")
    parser.add_argument("--pmid", default=None, help="PubMedQA entry (default: the first)")
    add_verbose_flag(parser)
    args = parser.parse_intermixed_args(argv)  # key=value anywhere on the line
    configure_output(args.verbose)
    if args.strategy == "list":
        for name, text in strategy_descriptions().items():
            print(f"{name}\t{text}")
        return 0
    check_strategy(args.strategy)
    if args.file is None:
        raise UsageError("no input file given: pass a JATS .nxml file or ori_pqal.json")
    if args.vocabulary is not None and not Path(args.vocabulary).exists():
        raise UsageError(f"vocabulary not found: {args.vocabulary}")
    doc = load_document(args.file, args.pmid)
    if not any(o.split("=")[0].endswith("knowledge.vocabulary") for o in args.overrides):
        from gralc.data.demo import check_vocabulary

        check_vocabulary(args.vocabulary, args.file)
    pipeline = load_pipeline(args.vocabulary, args.model, tuple(pipeline_overrides(args.overrides)))
    prepared, chunks = chunk_document(pipeline, doc, args.strategy, args.decoder)
    if args.format == "jsonl":
        print_jsonl(chunks)
    else:
        print_table(doc, chunks, quality(pipeline, prepared, chunks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
