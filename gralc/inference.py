"""Inference API: chunk documents, index a corpus with a strategy (or a trained GraLC model)
and search it.

    from gralc import Chunker, Retriever
    chunks = Chunker("structure_aware")("# Title\\n\\n## Methods\\n\\nMetformin was titrated ...")
    r = Retriever.build("articles/", strategy="structure_aware")      # or model="export/"
    r.save("index/")
    hits = Retriever.load("index/").search("What dose of metformin ...?", k=10)

A corpus is a path (an article, a folder, a BEIR folder, a JSON corpus), a
:class:`~gralc.documents.model.Document`, or a list of them (:func:`gralc.pipeline.load_documents`).
An index directory holds the FAISS index, the chunk metadata and ``retriever.json``, so
``load`` rebuilds the same query encoder and scorer; a trained model's index names its model
by digest and relative path (``save(..., bundle_model=True)`` copies it in), and
``searcher="hybrid"`` adds a fused BM25 index. Details: docs/inference.md.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from gralc.artefacts import model_digest, verify_artefact, write_artefact
from gralc.atomic import write_text_atomic
from gralc.config import config_conflicts, load_config, to_dict
from gralc.data.demo import check_vocabulary
from gralc.documents.model import Document
from gralc.encoding.budget import budget_counter
from gralc.model.query_features import question_concepts
from gralc.pipeline import (
    RUNTIME_KEYS,
    Pipeline,
    PipelineConfig,
    load_documents,
)
from gralc.retrieval.graph.search import GRAPH_SEARCHERS, GraphConfig, GraphIndex
from gralc.retrieval.hits import Hit
from gralc.retrieval.indexes.bm25 import BM25Index
from gralc.retrieval.indexes.dense import ChunkIndex, IndexConfig
from gralc.retrieval.indexes.folder import read_json
from gralc.retrieval.indexes.fusion import FusionConfig, fuse
from gralc.retrieval.trained.candidates import CandidateConfig
from gralc.retrieval.trained.token_codec import TokenCodec, TokenCodecConfig

logger = logging.getLogger(__name__)
RETRIEVER_FILE = "retriever.json"
MODEL_DIR = "model"  # the trained model's export, when the index carries it
LEXICAL_DIR = "lexical"
PHRASE_DIR = "phrase"  # the term-pair BM25 of a model with model.phrase_weight > 0
CONCEPTS_DIR = "concepts"  # the concept match of a model with model.concept_weight > 0
GRAPH_DIR = "graph"
SEARCHERS = ("dense", "hybrid", *GRAPH_SEARCHERS)


@dataclass
class RetrieverSpec:
    """What was indexed and how: ``strategy`` (a registered chunker, or ``gralc`` for a
    trained model), ``model`` (export dir / checkpoint for ``gralc``).
    A trained model searches in two stages (``search``: the fields of
    :class:`~gralc.retrieval.trained.candidates.CandidateConfig`, :mod:`gralc.retrieval.trained.search`).
    ``searcher``: dense | hybrid (BM25 over the same chunks fused by ``fusion``, the fields
    of :class:`~gralc.retrieval.indexes.fusion.FusionConfig`) | graph_local | graph_global (SemRAG's
    search of the corpus graph saved in ``graph/``). ``graph``: the
    :class:`~gralc.retrieval.graph.search.GraphConfig` it was built with (None: no graph).

    >>> RetrieverSpec(strategy="late", searcher="hybrid").model is None
    True
    """

    strategy: str = "structure_aware"
    #: the trained model: in ``retriever.json`` a path relative to the index folder
    #: (``model`` when the index carries it); in memory, once loaded, its absolute path
    model: str | None = None
    pipeline: dict[str, Any] = field(default_factory=dict)
    searcher: str = "dense"
    fusion: dict[str, Any] = field(default_factory=dict)
    #: SHA-256 of the model's weights when the index was built (``load`` refuses another model)
    model_sha256: str | None = None
    graph: dict[str, Any] | None = None
    #: a trained model's two-stage search (:class:`~gralc.retrieval.trained.candidates.CandidateConfig`)
    search: dict[str, Any] = field(default_factory=dict)
    #: where the model was when the index was built (absolute; a last place to look)
    model_origin: str | None = None
    #: the encoder's content when the index was built (:func:`gralc.encoding.models.encoder_digest`)
    encoder_sha256: str | None = None
    #: every file of the index beside ``retriever.json`` (but a carried ``model/``) -> its
    #: SHA-256 when written: the files are one index (:func:`check_bound_files`)
    bound_files: dict[str, str] | None = None
    #: the knowledge files questions are linked with (:func:`gralc.pipeline.knowledge_files`)
    #: -> their SHA-256 when the index was built
    knowledge_sha256: dict[str, str] | None = None

    def __post_init__(self) -> None:
        """Each field of the type it holds (a ``retriever.json`` is read, never trusted): a
        TypeError naming the field, which :meth:`Retriever.load` reports as one message."""
        kinds = {"strategy": str, "model": (str, type(None)), "pipeline": dict, "searcher": str,
                 "fusion": dict, "model_sha256": (str, type(None)), "graph": (dict, type(None)),
                 "search": dict, "model_origin": (str, type(None)), "encoder_sha256": (str, type(None)),
                 "bound_files": (dict, type(None)), "knowledge_sha256": (dict, type(None))}
        for name, kind in kinds.items():
            if not isinstance(getattr(self, name), kind):
                raise TypeError(f"field {name!r} holds {type(getattr(self, name)).__name__} "
                                f"{str(getattr(self, name))[:40]!r}")


def _check_encoder(spec: RetrieverSpec, model: str, spec_file: Path) -> None:
    """Refuse, before any answer, an encoder whose content is not the one the index was built
    with (replaced by another of the same width, or damaged in place)."""
    from gralc.encoding.models import encoder_digest, resolve_model

    now = encoder_digest(model)
    if now is not None and now != spec.encoder_sha256:
        raise ValueError(f"encoder {resolve_model(model)} is not the encoder this index was built "
                         f"with ({spec_file} records another SHA-256 of its files): it was replaced "
                         "or changed since; restore it, or rebuild the index with this encoder")


def knowledge_digests(knowledge) -> dict[str, str]:
    """``{role: SHA-256}`` of every knowledge file a pipeline with ``knowledge`` reads.

    >>> from gralc.pipeline import KnowledgeConfig
    >>> sorted(knowledge_digests(KnowledgeConfig()))
    ['tree_file', 'vocabulary']
    """
    from gralc.encoding.models import file_digests
    from gralc.pipeline import knowledge_files

    return file_digests(knowledge_files(knowledge))


def _check_knowledge(spec: RetrieverSpec, knowledge, spec_file: Path) -> None:
    """Refuse, before any answer, knowledge files (vocabulary, tree numbers, relation tables)
    other than those the index was built with: questions are linked with them at every search,
    so another vocabulary would silently change every concept score."""
    from gralc.pipeline import knowledge_files

    recorded = spec.knowledge_sha256
    if not isinstance(recorded, dict):
        raise ValueError(f"{spec_file} records no knowledge digests (knowledge_sha256): an index "
                         "written before GraLC pinned its vocabulary; rebuild the index")
    files = knowledge_files(knowledge)
    if set(files) != set(recorded):
        raise ValueError(f"{spec_file}: the index was built with knowledge files {sorted(recorded)}, "
                         f"its settings now name {sorted(files)}: rebuild the index")
    for role, path in files.items():
        if not Path(path).is_file():
            raise FileNotFoundError(f"{role} {path} not found: the index {spec_file.parent} links "
                                    "questions with it; restore it, or rebuild the index")
    now = knowledge_digests(knowledge)
    for role, path in files.items():
        if now[role] != recorded[role]:
            raise ValueError(f"{role} {path} is not the file this index was built with ({spec_file} "
                             "records another SHA-256): it was replaced or edited since, and every "
                             "question's concepts would change; restore it, or rebuild the index")


def write_spec(folder: Path, spec: dict[str, Any]) -> None:
    """``retriever.json``, written after every other file of the index in ``folder``: ``spec``
    with ``bound_files``, the SHA-256 of each of those files (a carried ``model/`` excepted:
    its own digest is ``model_sha256``).

    >>> import tempfile; d = Path(tempfile.mkdtemp()); _ = (d / "chunks.jsonl").write_text("")
    >>> write_spec(d, {"strategy": "late"}); sorted(json.loads((d / RETRIEVER_FILE).read_text())["bound_files"])
    ['chunks.jsonl']
    """
    from gralc.safe_load import file_sha256

    bound = {p.relative_to(folder).as_posix(): file_sha256(p) for p in sorted(folder.rglob("*"))
             if p.is_file() and p.name != RETRIEVER_FILE and not p.name.startswith(".")
             and p.relative_to(folder).parts[0] != MODEL_DIR}
    write_text_atomic(folder / RETRIEVER_FILE, json.dumps({**spec, "bound_files": bound}, indent=2))


def check_bound_files(directory: Path, spec: RetrieverSpec) -> None:
    """ValueError unless ``spec.bound_files`` names exactly the index's files (a carried
    ``model/`` excepted) with the SHA-256s its verified manifest lists: files of two indexes
    mixed, a reordered chunk list, a BM25 folder or token table of another index are refused
    even when only the manifest was signed again; an index written without them, too.

    Example: ``check_bound_files(Path("index/"), Retriever.load("index/").spec)`` -> ``None``
    (an index as :meth:`Retriever.save` wrote it); a ``chunks.jsonl`` swapped in -> ValueError.
    """
    from gralc.artefacts import listed_files, read_marker

    spec_file = directory / RETRIEVER_FILE
    listed = {rel: entry.get("sha256") for rel, entry in (listed_files(read_marker(directory)) or {}).items()
              if rel != RETRIEVER_FILE and Path(rel).parts[0] != MODEL_DIR and isinstance(entry, dict)}
    bound = spec.bound_files
    if not isinstance(bound, dict) or not all(isinstance(v, str) for v in bound.values()):
        raise ValueError(f"{spec_file} does not bind the index's files (an index written before "
                         "GraLC recorded them, or edited): rebuild the index")
    for rel in sorted(set(listed) | set(bound)):
        if listed.get(rel) != bound.get(rel):
            raise ValueError(f"{directory / rel} is not the file this index was built with ({spec_file} "
                             f"{'records another SHA-256 for it' if rel in bound and rel in listed else 'does not list it' if rel in listed else 'lists it, the folder lacks it'}): "
                             "files of two indexes were mixed, or one was replaced; rebuild the index")


def _model_bm25(folder: Path, n_chunks: int, field: str, what: str) -> BM25Index:
    """A BM25 index a trained model's score reads (scores only), checked against the index."""
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} missing: the model adds {what}; rebuild the index with --model")
    bm25 = BM25Index.load(folder, records=False)
    if len(bm25) != n_chunks or bm25.config.field != field:
        raise ValueError(f"{folder}: {len(bm25)} chunks of field {bm25.config.field!r}, the dense index "
                         f"{n_chunks} chunks of field {field!r}: rebuild the index")
    return bm25


class Retriever:
    """A searchable index plus the encoder (and trained scorer) that built it.

    :meth:`build` chunks and indexes a corpus (a path, Documents, or a list of them) with a
    strategy or a trained model; :meth:`save` writes it as a folder that travels (a trained
    model is named by digest and by its path relative to the index, or carried inside it);
    :meth:`load` opens one; :meth:`search` / :meth:`search_batch` return :class:`Hit` lists
    (the chunk with its document, character span, section path and IMRaD types, the score and
    its parts).

    >>> r = Retriever.build("gralc/data/demo/articles", strategy="late")      # doctest: +SKIP
    >>> r.save("index/")                                                      # doctest: +SKIP
    >>> hit = Retriever.load("index/").search("What limits adherence?", k=1)[0]  # doctest: +SKIP
    >>> hit.chunk.doc_id, hit.chunk.section_path, hit.components              # doctest: +SKIP
    ('PMC9000001', ['Discussion'], {'cos': 0.41})
    """

    def __init__(self, spec: RetrieverSpec, index: ChunkIndex, pipeline: Pipeline, scorer: Any = None,
                 lexical: BM25Index | None = None, graph: GraphIndex | None = None,
                 phrase: BM25Index | None = None, concepts: BM25Index | None = None):
        self.spec, self.index, self.pipeline, self.scorer = spec, index, pipeline, scorer
        self.lexical, self.graph, self.phrase, self.concepts = lexical, graph, phrase, concepts
        self.fusion = FusionConfig(**spec.fusion)
        self._graph_searcher = None
        self._trained_search = None
        self.search_config = CandidateConfig(**(spec.search or {}))

    # ----- building ----------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        corpus: str | Path | Document | Sequence[str | Path | Document],
        strategy: str = "structure_aware",
        model: str | Path | None = None,
        pipeline_config: PipelineConfig | None = None,
        index_config: IndexConfig | None = None,
        files: Sequence[Path] | None = None,
        batch_docs: int = 32,
        searcher: str = "dense",
        fusion: FusionConfig | None = None,
        overrides: Sequence[str] = (),
        graph: GraphConfig | bool | None = None,
        search: CandidateConfig | None = None,
        token_codec: TokenCodecConfig | TokenCodec | None = None,
        progress: bool = True,
    ) -> Retriever:
        """Parse ``corpus``, chunk, index. ``corpus``: a path (a JATS / text file, a folder of
        them, a BEIR folder, ori_pqal.json, a SQuAD-format JSON), a Document, or a list of
        them (:func:`~gralc.pipeline.load_documents`).

        >>> from gralc.data.demo import demo_articles
        >>> r = Retriever.build(demo_articles()[:2], strategy="late")   # doctest: +SKIP
        >>> r.search("What limits metformin adherence?", k=1)[0].chunk.doc_id   # doctest: +SKIP
        'PMC9000001'

        ``files``: index only these files of ``corpus`` (one shard, :mod:`gralc.shard_index`),
        in the given order; an unreadable one is skipped with a warning, as in a directory.
        ``searcher="hybrid"`` adds BM25 over the same chunks, fused by ``fusion``.
        ``overrides``: ``key=value`` pipeline settings (``knowledge.vocabulary=...``) applied
        to ``pipeline_config`` (a trained model's own config with ``model``: only runtime keys
        may change there, anything else is an error naming both values).
        ``graph`` (a :class:`GraphConfig`, or True for the defaults; implied by a graph
        searcher): grow the corpus knowledge graph batch by batch and save it with the index.
        A trained model's index: ``search`` its two-stage search settings; ``token_codec``
        how its chunks' token vectors are stored (a config: the codec is trained on the
        corpus's first tokens; a trained codec, e.g. the one every shard of a build shares).
        ``progress``: a bar over the documents on a terminal (never into a log file).
        """
        if searcher not in SEARCHERS:
            raise ValueError(f"searcher {searcher!r}: use one of {', '.join(SEARCHERS)}")
        if graph is True or (graph is None and searcher in GRAPH_SEARCHERS):
            graph = GraphConfig()
        if graph and model is not None:
            raise ValueError("the corpus graph and graph searchers run over a baseline strategy's "
                             "chunks: use --strategy (e.g. semantic) instead of --model")
        if model is not None:
            from gralc.model.persistence import resolve_model

            model = resolve_model(model)  # an export, a checkpoint, or a run folder's choice
        if overrides and model is None:  # validated before any parsing or encoding
            pipeline_config = load_config(PipelineConfig, None, overrides, base=pipeline_config)
        if model is None:  # before any parsing or encoding
            from gralc.chunking import registered

            if strategy not in registered():
                raise ValueError(f"unknown strategy {strategy!r}; available: "
                                 f"{', '.join(sorted(registered()))}")
        docs = load_documents(corpus) if files is None else read_files(files)
        label = str(corpus) if isinstance(corpus, str | Path) else f"{len(docs)} documents given"
        if not docs:
            raise ValueError(f"{label}: no documents could be read (see the warnings above)")
        scorer = None
        if model is not None:
            scorer, pipeline_config = trained_model(model, pipeline_config, overrides)
            if token_codec is not None:
                scorer.token_codec = token_codec
            strategy = "gralc"
        else:
            from gralc.data.demo import is_demo_corpus

            demo = all(d.source and is_demo_corpus(d.source) for d in docs)  # the demo's own articles
            check_vocabulary((pipeline_config or PipelineConfig()).knowledge.vocabulary, label, demo)
        pipeline = Pipeline(pipeline_config or PipelineConfig())
        chunks = []
        corpus_graph, linked = None, []
        if graph:
            from gralc.knowledge.corpus_graph import CorpusGraph

            corpus_graph = CorpusGraph(graph.corpus)
        # documents stream through encode -> chunk in batches: only chunks are kept, never
        # every document's token vectors at once (that would need ~36 GB for 2,359 articles)
        # a bar on a terminal only (tqdm's disable=None), log lines written above it
        with tqdm(total=len(docs), desc="indexing", unit="doc", disable=None if progress else True) as bar, \
                (nullcontext() if bar.disable else logging_redirect_tqdm()):
            for start in range(0, len(docs), batch_docs):
                prepared = pipeline.prepare(docs[start : start + batch_docs], progress=False)
                if scorer is not None:
                    batch = scorer.chunk(pipeline, prepared, reset=start == 0)
                else:
                    batch = pipeline.chunk(prepared, strategy, progress=False)
                chunks.extend(batch)
                if corpus_graph is not None:  # the graph grows with each indexed batch
                    linked.extend((p.doc, p.mentions) for p in prepared)
                    corpus_graph.add([(p.doc, p.mentions) for p in prepared], batch)
                bar.update(len(prepared))
        graph_index = None
        if corpus_graph is not None:
            graph_index = finish_index_graph(corpus_graph, linked, pipeline, graph)
        index = ChunkIndex(pipeline.encoder.dim, index_config)
        index.add(chunks)
        lexical = phrase = concepts = None
        if scorer is not None:  # the BM25 indexes the model's score reads (and a fusion's)
            made = scorer.indexes(chunks, lexical=searcher == "hybrid")
            lexical, phrase, concepts = made.lexical, made.phrase, made.concepts
        elif searcher == "hybrid":
            lexical = BM25Index()
            lexical.index(chunks)
        spec = RetrieverSpec(strategy=strategy, model=None if model is None else str(Path(model).resolve()),
                             pipeline=to_dict(pipeline.config), searcher=searcher,
                             fusion=to_dict(fusion or FusionConfig()),
                             model_sha256=None if model is None else model_digest(model),
                             graph=to_dict(graph) if graph else None,
                             search=to_dict(search or CandidateConfig()) if model is not None else {})
        logger.info("indexed %d documents into %d chunks (%s, %s)", len(docs), len(chunks), strategy, searcher)
        return cls(spec, index, pipeline, scorer, lexical, graph_index, phrase, concepts)

    def save(self, directory: str | Path, force: bool = False, inputs: Sequence[str | Path] = (),
             extra: dict[str, Any] | None = None, bundle_model: bool = False) -> Path:
        """Write every file of the index (FAISS, BM25, ``retriever.json``, the trained model's
        entity table, ``extra`` JSON files by name) into one temporary folder, then swap it in
        (:mod:`gralc.artefacts`: a folder holding other files needs ``force``; ``inputs`` may
        not overlap it). A trained model is named by digest and by its path relative to
        ``directory``; ``bundle_model``: copy its export into the index (``model/``), so the
        index folder alone is enough to search.

        Example::

            Retriever.build(gralc.load_documents(demo_articles()[:3])).save("index/")  # -> Path('index')
        """
        directory = Path(directory)
        spec = dict(self.spec.__dict__)
        if self.spec.model is not None:
            model = Path(self.spec.model).resolve()
            if bundle_model and not model.is_dir():
                raise ValueError(f"bundle_model: {model} is a checkpoint; export it (gralc export) "
                                 "and index with the export to carry the model in the index")
            spec["model"] = MODEL_DIR if bundle_model else \
                Path(os.path.relpath(model, directory.resolve())).as_posix()
            spec["model_origin"] = str(model)
        elif bundle_model:
            raise ValueError("bundle_model: this index was built without a trained model (--model)")
        from gralc.encoding.models import encoder_digest

        spec["encoder_sha256"] = encoder_digest(self.pipeline.config.encoder.model)
        spec["knowledge_sha256"] = knowledge_digests(self.pipeline.config.knowledge)
        with write_artefact(directory, "index", force, inputs) as tmp:
            self.index.write_to(tmp, encoder_id=self.pipeline.encoder.model_id,
                                pipeline_config=self.spec.pipeline)
            # the BM25 indexes score the index's own chunks: chunks.jsonl holds their records
            for name, bm25 in ((LEXICAL_DIR, self.lexical), (PHRASE_DIR, self.phrase),
                               (CONCEPTS_DIR, self.concepts)):
                if bm25 is not None:
                    (tmp / name).mkdir()
                    bm25.write_to(tmp / name, records=False)
            if self.scorer is not None:
                self.scorer.save_index_state(tmp, self.index.chunks)
            if self.graph is not None:
                self.graph.save(tmp / GRAPH_DIR)
            if bundle_model:
                copy_export(Path(self.spec.model), tmp / MODEL_DIR)
            for name, payload in (extra or {}).items():
                (tmp / name).write_text(json.dumps(payload, indent=2))
            write_spec(tmp, spec)  # last: it binds every file written before it
        return directory

    @classmethod
    def load(cls, directory: str | Path, search: Sequence[str] = (),
             model: str | Path | None = None) -> Retriever:
        """Open an index (read-only; large arrays memory-mapped). ``search``: ``key=value``
        overrides of a trained model's two-stage search settings (``exhaustive=true``,
        ``dense=200``, ...; :class:`~gralc.retrieval.trained.candidates.CandidateConfig`). ``model``:
        where the trained model that built the index is now (default: the path recorded
        relative to the index, the copy the index carries, or where it was built); it must be
        that model (same SHA-256).

        Example::

            len(Retriever.load("index/").index)   # -> 27 (the chunks saved in the save() example)
        """
        from gralc.config import config_from_dict

        directory = Path(directory)
        spec_file = directory / RETRIEVER_FILE
        if not spec_file.is_file():
            raise FileNotFoundError(
                f"{spec_file} not found: {directory} is not a GraLC index; build one with "
                "`gralc index CORPUS --out DIR`"
            )
        verify_artefact(directory, ("index",))  # every file as written, before any answer
        try:
            raw = read_json(spec_file)
            if isinstance(raw, dict) and isinstance(raw.get("candidates"), int):
                raw.pop("candidates")  # an unused setting of indexes before two-stage search
            spec = RetrieverSpec(**raw)
            search_cfg = config_from_dict(CandidateConfig, spec.search or {}, f"{spec_file} (search)")
        except TypeError as exc:
            raise ValueError(f"{spec_file}: unexpected content ({exc}); rebuild the index") from None
        check_bound_files(directory, spec)
        if spec.encoder_sha256 is None:
            raise ValueError(f"{spec_file} records no encoder digest (encoder_sha256): rebuild the index")
        # validated in memory: loading never writes into the index folder (read-only storage,
        # concurrent readers)
        pipeline_cfg = config_from_dict(PipelineConfig, spec.pipeline, f"{spec_file} (pipeline)")
        spec.fusion = to_dict(config_from_dict(FusionConfig, spec.fusion, f"{spec_file} (fusion)"))
        if search:
            if spec.model is None:
                raise ValueError(f"search settings {list(search)} apply to a trained model's index; "
                                 f"{directory} was built with --strategy {spec.strategy}")
            search_cfg = load_config(CandidateConfig, None, list(search), base=search_cfg)
        if model is not None and spec.model is None:
            raise ValueError(f"--model applies to a trained model's index; {directory} was built "
                             f"with --strategy {spec.strategy}")
        index = ChunkIndex.load(directory)
        scorer = None
        if spec.model is not None:
            from gralc.retrieval.trained.scorer import TrainedScorer

            spec.model = str(find_model(directory, spec, model))
            scorer = TrainedScorer.load(spec.model)
            scorer.load_index_state(directory, len(index))
            # the model's own encoder (a LoRA export's merged encoder lies inside the export,
            # wherever it is now), the index's runtime settings
            pipeline_cfg.encoder.model = scorer.pipeline_config.encoder.model
        _check_encoder(spec, pipeline_cfg.encoder.model, spec_file)
        _check_knowledge(spec, pipeline_cfg.knowledge, spec_file)
        lexical = None
        if spec.searcher == "hybrid" or (scorer is not None and scorer.lexical):
            # a trained model reads BM25 scores only: the index's own chunk list serves the hits
            lexical = BM25Index.load(directory / LEXICAL_DIR, records=False)
            if len(lexical) != len(index):
                raise ValueError(f"{directory / LEXICAL_DIR}: {len(lexical)} chunks, the dense index "
                                 f"{len(index)}: rebuild the index")
            if spec.searcher == "hybrid":  # its hits are the index's chunks, row for row
                lexical.chunks = index.chunks
        phrase = concepts = None
        if scorer is not None and scorer.phrase:
            phrase = _model_bm25(directory / PHRASE_DIR, len(index), "text",
                                 "a term-pair BM25 (model.phrase_weight > 0)")
        if scorer is not None and scorer.concept:
            concepts = _model_bm25(directory / CONCEPTS_DIR, len(index), "concepts",
                                   "the concept match (model.concept_weight > 0)")
        graph = None
        if (directory / GRAPH_DIR).is_dir():
            graph = GraphIndex.load(directory / GRAPH_DIR)
        elif spec.searcher in GRAPH_SEARCHERS:
            raise FileNotFoundError(f"{directory / GRAPH_DIR} missing: the index's searcher is "
                                    f"{spec.searcher}; rebuild it with --searcher {spec.searcher}")
        spec.search = to_dict(search_cfg)
        return cls(spec, index, Pipeline(pipeline_cfg), scorer, lexical, graph, phrase, concepts)

    # ----- searching ---------------------------------------------------------------------
    def search(self, question: str, k: int = 10) -> list[Hit]:
        """Top-k chunks; ``Hit.components`` holds the score's parts (``cos``, ``kg_prox``; and
        ``dense``, ``lexical``, ``fused`` for a hybrid index; a trained model's ``bm25``,
        ``phrase_bm25``, ``concept_bm25``, ``maxsim``).

        Example::

            hit = Retriever.load("index/").search("What limits metformin adherence?", k=2)[0]
            hit.chunk.doc_id, hit.chunk.section_path, hit.components   # -> ('PMC9000001', ['Abstract'], {'cos': 0.467...})
        """
        return self.search_batch([question], k)[0]

    def search_batch(self, questions: Sequence[str], k: int = 10) -> list[list[Hit]]:
        """:meth:`search` of several questions, encoded and scored as one batch where the
        searcher allows (a trained model, dense and hybrid indexes).

        Example::

            runs = Retriever.load("index/").search_batch(["What limits metformin adherence?", "How was HbA1c measured?"], k=1)
            [[h.chunk.section_path for h in run] for run in runs]   # -> [[['Abstract']], [['Results']]]
        """
        if isinstance(questions, str):
            raise TypeError("questions must be a list of strings, not one string")
        from gralc.documents.question import clean_question_text

        # the one question gate (bounded length, no invisible-only questions)
        questions = [clean_question_text(q, f"question {i + 1}") for i, q in enumerate(questions)]
        if not questions:
            return []
        if self.spec.searcher in GRAPH_SEARCHERS:
            q = self.pipeline.encoder.encode_queries(questions).numpy().astype(np.float32)
            concepts = question_concepts(self.pipeline.linker, questions)
            return [self.graph_searcher().query(v, ids, k) for v, ids in zip(q, concepts)]
        depth = k if self.spec.searcher != "hybrid" else max(k, self.fusion.candidates)
        if self.scorer is None:
            q = self.pipeline.encoder.encode_queries(questions).numpy().astype(np.float32)
            dense = [[Hit(c, s, {"cos": s}) for c, s in run] for run in self.index.search(q, depth)]
        else:
            dense = self.trained_search().search_batch(questions, depth)
        if self.spec.searcher != "hybrid":
            return dense
        lexical = self.lexical.search(questions, depth)
        return [fuse(d, lex, self.fusion, k) for d, lex in zip(dense, lexical)]

    def trained_search(self):
        """The :class:`~gralc.retrieval.trained.search.TrainedSearch` of a trained model's
        index (built once; its ``config`` is this index's ``search`` settings).

        Example: ``Retriever.load("index/").trained_search().config.exhaustive`` -> ``False``
        (an index built with ``model="export/"``; a strategy's index raises ValueError)."""
        if self.scorer is None:
            raise ValueError("this index was built without a trained model (--model)")
        if self._trained_search is None:
            from gralc.retrieval.trained.search import TrainedSearch

            self._trained_search = TrainedSearch(self.scorer, self.pipeline, self.index,
                                                 self.lexical, self.phrase, self.search_config,
                                                 self.concepts)
        return self._trained_search

    def graph_searcher(self):
        """The :class:`~gralc.retrieval.graph.search.GraphSearcher` of this index (built once).

        Example: ``Retriever.build(docs, strategy="semantic", graph=True).graph_searcher().kind``
        -> ``'graph_local'`` (an index without a corpus graph raises ValueError)."""
        if self._graph_searcher is None:
            from gralc.config import config_from_dict
            from gralc.retrieval.graph.search import GraphSearcher

            if self.graph is None:
                raise ValueError("this index has no corpus graph: rebuild it with --graph")
            cfg = config_from_dict(GraphConfig, self.spec.graph or {}, "retriever.json (graph)")
            kind = self.spec.searcher if self.spec.searcher in GRAPH_SEARCHERS else "graph_local"
            self._graph_searcher = GraphSearcher(
                kind, self.index.chunks, self.graph, config=cfg.search, vectors=self.index.vectors,
                pieces=budget_counter(self.pipeline.encoder))  # eval's unit: MiniLM word-pieces
        return self._graph_searcher


def trained_model(model: str | Path, pipeline_config: PipelineConfig | None = None,
                  overrides: Sequence[str] = ()):
    """``(TrainedScorer, the pipeline config it runs with)``: the model's own saved settings,
    ``overrides`` applied; only runtime keys (encoder.device, cache_dir, batch_size, ...) may
    differ from the model's, anything else is an error naming both values.

    Example: ``scorer, config = trained_model("runs/a/export", overrides=["encoder.device=cpu"])`` ->
    the model and its own pipeline config (``encoder.model=...`` there: ValueError).
    """
    from gralc.retrieval.trained.scorer import TrainedScorer

    scorer = TrainedScorer.load(model)
    if overrides:
        pipeline_config = load_config(PipelineConfig, None, overrides,
                                      base=pipeline_config or scorer.pipeline_config)
    if pipeline_config is not None:  # the model runs with its own settings
        conflicts = config_conflicts(scorer.pipeline_config, pipeline_config, RUNTIME_KEYS)
        if conflicts:
            raise ValueError(
                f"{model} was trained with other pipeline settings than those given: "
                f"{'; '.join(conflicts)}. A trained model always runs with its saved "
                "settings: drop these overrides (runtime keys such as "
                "encoder.device / cache_dir / batch_size may differ)"
            )
    return scorer, pipeline_config or scorer.pipeline_config


def train_token_codec(corpus: str | Path, model: str | Path, config: TokenCodecConfig | None = None,
                      batch_docs: int = 32, overrides: Sequence[str] = ()) -> TokenCodec:
    """The token codec a single ``Retriever.build(corpus, model=model)`` trains: on the first
    ``config.train_tokens`` token vectors of the corpus (its sorted files, in batches of
    ``batch_docs`` documents), for every shard of a sharded build to share.

    Example: ``train_token_codec("articles/", "runs/a/export")`` -> the codec every shard of
    ``gralc shard build --model runs/a/export`` stores its token vectors with.
    """
    scorer, pipeline_config = trained_model(model, None, overrides)
    if not scorer.uses_tokens:
        raise ValueError(f"{model} does not score with late interaction (scoring.late_interaction=0): "
                         "its indexes store no token vectors and need no codec")
    scorer.token_codec = config or TokenCodecConfig()
    docs = load_documents(corpus)
    if not docs:
        raise ValueError(f"{corpus}: no documents could be read (see the warnings above)")
    pipeline = Pipeline(pipeline_config)
    for start in range(0, len(docs), batch_docs):
        scorer.chunk(pipeline, pipeline.prepare(docs[start : start + batch_docs], progress=False),
                     reset=start == 0)
        if scorer.table.codec is not None:
            break
    return scorer.table.finish().codec


def finish_index_graph(corpus_graph, linked, pipeline: Pipeline, config: GraphConfig) -> GraphIndex:
    """Relations, communities, reports and vectors of a graph grown while indexing.

    Example: ``finish_index_graph(corpus_graph, linked, pipeline, GraphConfig()).stats()`` -> the
    graph's concept, edge, community and report counts (``Retriever.build(..., graph=True)``).
    """
    from gralc.knowledge.concept_embeddings import ConceptEmbedder
    from gralc.retrieval.graph.search import finish_graph_index

    corpus_graph.add_relations(pipeline.knowledge_base)
    embedder = ConceptEmbedder(pipeline.encoder.encode_texts, k=config.concept_synonyms)
    index = finish_graph_index(corpus_graph, linked, lambda t: pipeline.encoder.encode_texts(t).numpy(),
                               config, pipeline.vocabulary,
                               concept_vectors=lambda cs: embedder.embed(cs).numpy())
    logger.info("corpus graph: %d concepts, %d edges, %d communities, %d reports",
                len(corpus_graph.nodes), len(corpus_graph.edges), len(index.communities), len(index.reports))
    return index


def read_files(files: Sequence[Path]) -> list:
    """Documents of each file in order; unreadable files are logged and skipped.

    Example: ``[d.id for d in read_files(demo_articles()[:2])]`` -> ``['PMC9000001', 'PMC9000002']``.
    """
    docs = []
    for path in files:
        try:
            docs.extend(load_documents(path))
        except Exception as exc:  # one bad file must not stop a shard (as in load_corpus)
            logger.warning("skipping %s: %s: %s", path, type(exc).__name__, exc)
    return docs


def find_model(directory: Path, spec: RetrieverSpec, model: str | Path | None = None) -> Path:
    """The trained model of the index ``directory``: ``model`` when given, else the first of
    (the path recorded relative to the index, where it was built) that holds the model with
    the recorded SHA-256. A missing model is named by its digest, with the fix.

    Example: ``find_model(Path("index"), spec)`` -> ``Path('/abs/runs/a/export')``: where the model
    with ``spec.model_sha256`` is now (else FileNotFoundError with the fix).
    """
    spec_file = directory / RETRIEVER_FILE
    digest = spec.model_sha256
    if not isinstance(digest, str):
        raise ValueError(f"{spec_file} records no model_sha256: rebuild the index with --model")
    if model is not None:
        from gralc.model.persistence import resolve_model

        given = resolve_model(model)
        if model_digest(given) != digest:
            raise ValueError(f"--model {model} is not the model that built {directory} (its SHA-256 "
                             f"differs from {digest[:12]}... in {spec_file}): pass that model's "
                             "export, or rebuild the index with this one")
        return given
    recorded = Path(spec.model)
    candidates = [recorded if recorded.is_absolute() else directory / recorded]
    if spec.model_origin:
        candidates.append(Path(spec.model_origin))
    changed = []
    for cand in candidates:
        if cand.exists():
            if model_digest(cand) == digest:
                return cand.resolve()
            changed.append(str(cand))
    if changed:
        raise ValueError(f"the model at {changed[0]} changed since {directory} was built (its SHA-256 "
                         f"differs from {digest[:12]}... in {spec_file}): its chunks and vectors came "
                         "from the old model; restore that model, pass it with --model PATH, or "
                         "rebuild the index")
    raise FileNotFoundError(
        f"the model that built {directory} (SHA-256 {digest[:12]}...) is not at {spec.model} "
        f"(relative to the index){f' nor at {spec.model_origin}' if spec.model_origin else ''}: "
        "move the export back beside the index, pass it with --model PATH (gralc search INDEX "
        "--model PATH), or rebuild the index with --bundle-model to carry the model inside it")


def copy_export(export: Path, dest: Path) -> None:
    """Copy the files a trained model's export lists in its manifest (verified first; a user's
    own files beside them are left behind) into ``dest``.

    Example: ``copy_export(Path("runs/a/export"), Path("index/model"))`` copies the export's
    listed files and its manifest (``save(..., bundle_model=True)`` does this).
    """
    import shutil

    from gralc.artefacts import MARKER, listed_files, read_marker

    root = verify_artefact(export, ("export",))
    for rel in sorted(listed_files(read_marker(root)) or {}):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / rel, dest / rel)
    shutil.copy2(root / MARKER, dest / MARKER)


class Chunker:
    """Chunk documents or text with a strategy or a trained model, as ``gralc chunk`` does.

    ``strategy``: a registered chunking strategy (``structure_aware``, ``late``, ``fixed``,
    ``semantic``, ``multilevel``, ``dp_sentences``); ``model``: a trained GraLC export,
    checkpoint or run folder instead (its own settings; ``settings`` then only runtime keys);
    ``settings``: ``key=value`` pipeline settings (``encoder.model=...``,
    ``knowledge.vocabulary=...``, ``chunking.boundary.max_tokens=512``). The encoder loads once
    per Chunker. Call it on a string (read as a Markdown / plain-text article), a Document, a
    path, or a list of them; it returns the chunks, each with its character and token span,
    section path, IMRaD types, entity ids and boundary scores.

    >>> chunker = Chunker("structure_aware")                                   # doctest: +SKIP
    >>> chunks = chunker("# Titration\\n\\n## Methods\\n\\nMetformin was titrated over eight weeks.")  # doctest: +SKIP
    >>> chunks[0].section_path, chunks[0].char_start, chunks[0].char_end       # doctest: +SKIP
    (['Methods'], 0, 60)
    """

    def __init__(self, strategy: str = "structure_aware", model: str | Path | None = None,
                 settings: Sequence[str] = ()) -> None:
        from gralc.chunking import registered

        self.strategy, self.scorer = strategy, None
        if model is not None:
            self.strategy = "gralc"
            self.scorer, config = trained_model(model, None, list(settings))
        else:
            if strategy not in registered():
                raise ValueError(f"unknown strategy {strategy!r}; available: {', '.join(sorted(registered()))}")
            config = load_config(PipelineConfig, None, list(settings))
        self.pipeline = Pipeline(config)

    def __call__(self, source: str | Path | Document | Sequence[str | Path | Document]) -> list:
        """The chunks of ``source`` (the class docstring), documents in order. A string that
        names no existing file is read as text when it holds a line break, is long, or has no
        file suffix; ``notes.txt`` that does not exist is an error, never chunked as text.

        Example::

            [(c.section_path, c.char_end) for c in Chunker()("# Titration\\n\\n## Methods\\n\\nMetformin was titrated over 8 weeks.")]
            # -> [(['Methods'], 56)]
        """
        from gralc.documents.plaintext import document_from_text

        if isinstance(source, str) and not Path(source).exists() and ("\n" in source or len(source) > 255
                                                                      or not Path(source).suffix):
            docs = [document_from_text(source)]
        else:
            docs = load_documents(source)
        prepared = self.pipeline.prepare(docs, progress=False)
        if self.scorer is not None:
            return self.scorer.chunk(self.pipeline, prepared)
        return self.pipeline.chunk(prepared, self.strategy, progress=False)
