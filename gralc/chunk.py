"""``gralc chunk FILE [--strategy NAME | --model EXPORT] [key=value ...]``: chunk one document.

    gralc chunk --list
    gralc chunk article.nxml --strategy structure_aware --decoder dp
    gralc chunk notes.md chunking.boundary.max_tokens=512 --format jsonl
    gralc chunk ori_pqal.json --pmid 21645374 --strategy late
    gralc chunk article.nxml --model exports/gralc --plot boundaries.png

Input: one article (JATS ``.nxml``/``.xml``, ``.txt``/``.md``) or ONE entry of a PubMedQA
``ori_pqal.json`` (``--pmid``; default the first); ``--model``: the chunks a trained model
makes, with its own settings. ``table`` prints every chunk and the ASCM quality metrics,
``jsonl`` one ``Chunk.to_dict()`` a line; bad input exits with code 2. The options in full:
docs/inference.md."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from gralc.cli import CommandParser, Settings, command_main, pipeline_overrides
from gralc.safe_load import read_json_untrusted, require_file

if TYPE_CHECKING:
    from gralc.chunking.base import PreparedDocument
    from gralc.chunking.chunk import Chunk
    from gralc.documents.model import Document

RENAMED = {"--vocabulary": "knowledge.vocabulary=PATH",
           "--strategy list": "--list"}


class UsageError(ValueError):
    """Bad command-line input (missing file, unknown strategy, unknown PMID): exit code 2."""


def strategy_descriptions() -> dict[str, str]:
    """Registered strategy name -> first sentence of its class docstring."""
    from gralc.chunking import registered

    out = {}
    for name, cls in sorted(registered().items()):
        para = (cls.__doc__ or "").strip().split("\n\n")[0]
        text = " ".join(para.split()).replace("``", "")
        out[name] = re.split(r"(?<=\.)\s", text, maxsplit=1)[0]
    return out


def check_strategy(name: str) -> None:
    """A :class:`UsageError` listing the strategies unless ``name`` is one."""
    from gralc.chunking import registered

    if name not in registered():
        raise UsageError(
            f"unknown strategy {name!r}; available: {', '.join(sorted(registered()))} (or 'list')"
        )


def load_document(path: Path, pmid: str | None = None) -> Document:
    """An article file (JATS ``.nxml``/``.xml``, ``.txt``/``.md``), or one entry of a PubMedQA
    JSON (``pmid``, default the first entry)."""
    from gralc.documents.corpus import parse_document
    from gralc.documents.pubmedqa import convert_record

    if not path.exists():
        raise UsageError(f"input file not found: {path}; pass an article (.nxml, .xml, .txt, .md) "
                         "or ori_pqal.json")
    require_file(path, "input file")
    if path.suffix.lower() != ".json":
        if pmid is not None:
            raise UsageError(f"--pmid applies to a PubMedQA JSON file, not to {path}")
        return parse_document(path)
    data = read_json_untrusted(path, allow_interpolation=True)
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
def load_pipeline(overrides: tuple[str, ...] = ()):
    """A :class:`~gralc.pipeline.Pipeline` (encoder + linker), cached per process;
    ``overrides``: ``key=value`` pipeline settings (typed loader, as every CLI)."""
    from gralc.config import load_config
    from gralc.pipeline import Pipeline, PipelineConfig

    return Pipeline(load_config(PipelineConfig, None, overrides))


def chunk_document(
    pipeline, doc: Document, strategy: str, decoder: str | None = None
) -> tuple[PreparedDocument, list[Chunk]]:
    """Prepare (encode + link) ``doc`` and chunk it; ``decoder``: the structure-aware one
    (None: the pipeline's ``chunking.boundary.decoder``)."""
    prepared = pipeline.prepare([doc], progress=False)[0]
    return prepared, make_chunker(pipeline, strategy, decoder).chunk(prepared)


def make_chunker(pipeline, strategy: str, decoder: str | None = None):
    """The ``strategy`` chunker of ``pipeline``'s chunking settings (``decoder``: the
    structure-aware one; None: the pipeline's ``chunking.boundary.decoder``)."""
    from gralc.pipeline import build_chunker

    cfg = pipeline.config.chunking
    if decoder is not None:
        cfg = dataclasses.replace(cfg, boundary=dataclasses.replace(cfg.boundary, decoder=decoder))
    return build_chunker(strategy, pipeline.encoder, cfg)


def boundary_signals(pipeline, prepared: PreparedDocument, strategy: str, decoder: str | None = None):
    """The per-token boundary signals a strategy cuts on (structure-aware, DP over sentences),
    for ``--plot``; None for a strategy without them."""
    chunker = make_chunker(pipeline, strategy, decoder)
    if not hasattr(chunker, "signals"):
        return None
    return chunker.signals(prepared, chunker.tokens(prepared))


def chunk_with_model(model: str, doc: Document, overrides: tuple[str, ...] = ()
                     ) -> tuple[object, PreparedDocument, list[Chunk]]:
    """``(pipeline, prepared document, chunks)`` of a trained model (an export, checkpoint or
    run folder) run with its own settings (``overrides``: runtime keys only)."""
    from gralc.inference import trained_model
    from gralc.pipeline import Pipeline

    scorer, config = trained_model(model, None, overrides)
    pipeline = Pipeline(config)
    prepared = pipeline.prepare([doc], progress=False)[0]
    return pipeline, prepared, scorer.chunk(pipeline, [prepared])


def quality(pipeline, prepared: PreparedDocument, chunks: list[Chunk]) -> dict[str, float | None]:
    """ASCM metrics of the chunking. Multi-level indexes are measured on their finest level
    (``sentences``); sentence vectors for SCS are ``encoder.encode_texts`` of each sentence."""
    from gralc.chunking.boundaries import recommendation_evidence_pairs
    from gralc.chunking.quality import (
        entity_preservation_rate,
        recommendation_evidence_linking_rate,
        semantic_coherence,
    )

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
    """Print ``Chunk.to_dict()`` of each chunk as one JSON line (no embeddings)."""
    for c in chunks:
        print(json.dumps(c.to_dict(with_embedding=False), ensure_ascii=False))


def print_table(doc: Document, chunks: list[Chunk], metrics: dict[str, float | None]) -> None:
    """Print the chunks as a rich table (spans, size, section path, IMRaD types, entity count,
    boundary scores; the level for multi-level indexes), then each quality metric."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from gralc.terminal import for_terminal

    # corpus text (ids, section titles) as plain Text: no rich markup, no terminal controls
    table = Table(title=Text(for_terminal(f"{doc.id}: {len(chunks)} {chunks[0].strategy if chunks else ''} chunks")))
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
        table.add_row(*(Text(for_terminal(v)) for v in [*row, *([c.level] if multilevel else [])]))
    console = Console(width=None if sys.stdout.isatty() else 160)  # 80 columns when piped
    console.print(table)
    for name, value in metrics.items():
        console.print(f"{name}: {'n/a' if value is None else f'{value:.3f}'}")


def settings() -> list[Settings]:
    """The ``key=value`` settings ``gralc chunk`` takes (for ``--help``)."""
    from gralc.pipeline import PipelineConfig

    return [Settings("pipeline (with --model: runtime keys only)", PipelineConfig,
                     optional_prefix="pipeline.")]


def parser() -> CommandParser:
    """The command line of ``gralc chunk``."""
    p = CommandParser("gralc chunk", description="Chunk one document with a strategy or a "
                      "trained model and show the chunks.", settings=settings, renamed=RENAMED)
    p.add_argument("file", type=Path, nargs="?",
                   help="an article (.nxml, .xml, .txt, .md) or ori_pqal.json")
    p.add_argument("--strategy", default="structure_aware",
                   help="a chunking strategy (default structure_aware; --list lists them)")
    p.add_argument("--model", help="a trained GraLC export, checkpoint or run folder: its chunks "
                                    "(instead of --strategy)")
    p.add_argument("--list", action="store_true", help="list the strategies and stop")
    p.add_argument("--decoder", choices=("peak", "dp"), default=None,
                   help="structure-aware boundary decoder (chunking.boundary.decoder; default peak)")
    p.add_argument("--format", choices=("table", "jsonl"), default="table")
    p.add_argument("--plot", metavar="FILE.png", help="draw the boundary scores and cuts into a PNG")
    p.add_argument("--pmid", default=None, help="PubMedQA entry (default: the first)")
    return p



def _main(argv: list[str]) -> int:
    p = parser()
    args = p.start(argv)
    if args.list or args.strategy == "list":
        for name, text in strategy_descriptions().items():
            print(f"{name}\t{text}")
        return 0
    overrides = pipeline_overrides(args.settings)
    if args.model and "--strategy" in argv:
        raise UsageError("--model chunks with the trained model: drop --strategy")
    if not args.model:
        check_strategy(args.strategy)
    if args.file is None:
        raise UsageError("no input file given: pass an article (.nxml, .xml, .txt, .md) or ori_pqal.json")
    doc = load_document(args.file, args.pmid)
    if args.model:
        if args.decoder:
            raise UsageError("--decoder: a trained model decodes its own boundary scores; drop it")
        pipeline, prepared, chunks = chunk_with_model(args.model, doc, tuple(overrides))
    else:
        if not any(o.split("=")[0].endswith("knowledge.vocabulary") for o in overrides):
            from gralc.data.demo import check_vocabulary

            check_vocabulary(None, args.file)
        pipeline = load_pipeline(tuple(overrides))
        prepared, chunks = chunk_document(pipeline, doc, args.strategy, args.decoder)
    if args.format == "jsonl":
        print_jsonl(chunks)
    else:
        print_table(doc, chunks, quality(pipeline, prepared, chunks))
    if args.plot:
        from gralc.chunking.plots import plot_boundaries

        signals = None if args.model else boundary_signals(pipeline, prepared, args.strategy, args.decoder)
        drawn = plot_boundaries(prepared, chunks, args.plot, signals=signals)
        print(f"boundary scores drawn: {drawn}", file=sys.stderr if args.format == "jsonl" else sys.stdout)
    return 0


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
