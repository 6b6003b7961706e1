"""The indexing pipeline: documents -> prepared documents -> chunks with vectors.

``Pipeline(PipelineConfig())`` owns one encoder and one entity linker and prepares every
document ONCE (whole-document token embeddings, from the on-disk cache when configured, and
entity mentions in ``Document.text`` coordinates); any registered strategy then chunks the
prepared documents. Training and evaluation share it, so nothing is encoded twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from gralc.chunking import registered
from gralc.chunking.base import PreparedDocument
from gralc.chunking.boundaries import BoundaryConfig
from gralc.chunking.chunk import Chunk
from gralc.chunking.fixed import FixedConfig
from gralc.chunking.late import LateConfig
from gralc.chunking.multilevel import MultiLevelConfig
from gralc.chunking.semantic import SemanticConfig
from gralc.documents.model import Document
from gralc.encoding.encoder import DocumentEncoder, EncoderConfig
from gralc.knowledge.concept_graph import KnowledgeBase, RelationSources
from gralc.knowledge.linker import EntityLinker, LinkerConfig
from gralc.knowledge.vocabulary import Vocabulary, load_vocabulary
from gralc.safe_load import read_json_untrusted

logger = logging.getLogger(__name__)


@dataclass
class KnowledgeConfig:
    """Where concepts and relations come from. ``vocabulary``: a MeSH thesaurus TSV,
    ``descYYYY.xml`` or UMLS ``MRCONSO.RRF`` (None: the demo corpus's bundled vocabulary);
    ``tree_file``: ``mtreesYYYY.bin`` (None with the demo vocabulary: its bundled tree).

    >>> KnowledgeConfig(vocabulary="data/mesh/desc2024.xml").tree_file is None
    True
    """

    vocabulary: str | None = None
    tree_file: str | None = None
    relations: RelationSources = field(default_factory=RelationSources)
    linker: LinkerConfig = field(default_factory=LinkerConfig)
    #: add up to 5 one-hop neighbours of each mentioned concept to a document's concept graph
    add_neighbours: bool = False


@dataclass
class ChunkingConfig:
    """Parameters of every strategy (the paper's defaults), each config beside its chunker
    (:class:`~gralc.chunking.fixed.FixedConfig`, ...).

    >>> ChunkingConfig().fixed.size
    256
    """

    fixed: FixedConfig = field(default_factory=FixedConfig)
    semantic: SemanticConfig = field(default_factory=SemanticConfig)
    late: LateConfig = field(default_factory=LateConfig)
    boundary: BoundaryConfig = field(default_factory=BoundaryConfig)
    multilevel: MultiLevelConfig = field(default_factory=MultiLevelConfig)


@dataclass
class PipelineConfig:
    """Every setting of the indexing pipeline: the ``encoder``
    (:class:`~gralc.encoding.encoder.EncoderConfig`), where concepts come from (``knowledge``,
    :class:`KnowledgeConfig`) and every strategy's parameters (``chunking``,
    :class:`ChunkingConfig`). :func:`gralc.config.load_config` builds one from a YAML file and
    ``key=value`` settings, as :class:`gralc.inference.Retriever` and :class:`gralc.inference.Chunker`
    read theirs.

    >>> from gralc import PipelineConfig, load_config
    >>> load_config(PipelineConfig, overrides=["chunking.boundary.max_tokens=512"]).chunking.boundary.max_tokens
    512
    """

    encoder: EncoderConfig = field(default_factory=EncoderConfig)
    knowledge: KnowledgeConfig = field(default_factory=KnowledgeConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)


#: Pipeline settings that change how fast, not what, is computed (free to differ from the
#: settings a trained model was saved with).
RUNTIME_KEYS = (
    "encoder.cache_dir",
    "encoder.device",
    "encoder.batch_size",
    "encoder.precision",
    "encoder.stream_tokens",
)
#: The settings a trained model's input features depend on.
MODEL_INPUT_KEYS = (
    "encoder.",
    "knowledge.",
    "chunking.boundary.window",
    "chunking.boundary.struct_weights",
)


def with_runtime(saved: PipelineConfig, current: PipelineConfig) -> PipelineConfig:
    """``saved`` (a trained model's pipeline config) with ``current``'s runtime encoder
    settings (:data:`RUNTIME_KEYS`: cache, device, batch size, precision).

    >>> from gralc.config import load_config
    >>> saved = PipelineConfig(); current = load_config(PipelineConfig, overrides=["encoder.batch_size=2"])
    >>> with_runtime(saved, current).encoder.batch_size
    2
    """
    from dataclasses import replace

    runtime = {k.split(".", 1)[1]: getattr(current.encoder, k.split(".", 1)[1]) for k in RUNTIME_KEYS}
    return replace(saved, encoder=replace(saved.encoder, **runtime))


def load_knowledge(cfg: KnowledgeConfig) -> tuple[Vocabulary, KnowledgeBase]:
    """The vocabulary (with tree numbers) and the relation tables the config names.

    >>> vocabulary, kb = load_knowledge(KnowledgeConfig())  # the bundled demo vocabulary
    >>> vocabulary.concepts["D008687"].name
    'Metformin'
    """
    if cfg.vocabulary is None:
        from gralc.knowledge.builtin import builtin_tree_path, builtin_vocabulary_path

        vocab = load_vocabulary(builtin_vocabulary_path())
        tree = cfg.tree_file or str(builtin_tree_path())
    else:
        vocab = load_vocabulary(cfg.vocabulary)
        tree = cfg.tree_file
    if tree:
        vocab.add_tree_file(tree)
    return vocab, KnowledgeBase(vocab, cfg.relations)


def knowledge_files(cfg: KnowledgeConfig) -> dict[str, str]:
    """Every file :func:`load_knowledge` reads for ``cfg``, by role (``vocabulary``,
    ``tree_file``, each relation table set): what an index pins by digest, since the question's
    concepts are linked with them at every search.

    >>> sorted(knowledge_files(KnowledgeConfig()))
    ['tree_file', 'vocabulary']
    """
    from gralc.knowledge.builtin import builtin_tree_path, builtin_vocabulary_path

    files = {"vocabulary": str(cfg.vocabulary or builtin_vocabulary_path()),
             "tree_file": str(cfg.tree_file or (builtin_tree_path() if cfg.vocabulary is None else ""))}
    for name in ("pharm_action_tsv", "disease_symptom_tsv", "mrrel"):
        files[f"relations.{name}"] = str(getattr(cfg.relations, name, None) or "")
    return {role: path for role, path in files.items() if path}


#: the ``chunking`` section each strategy reads (a training run's pipeline has ``boundary`` alone)
STRATEGY_SECTIONS = {"fixed": "fixed", "semantic": "semantic", "late": "late",
                     "multilevel": "multilevel", "structure_aware": "boundary",
                     "dp_sentences": "boundary"}


def build_chunker(name: str, encoder: DocumentEncoder, cfg: ChunkingConfig) -> Any:
    """Instantiate the registered strategy ``name`` with its parameters from ``cfg``.

    Example: ``build_chunker("fixed", pipeline.encoder, ChunkingConfig())`` -> a
    :class:`~gralc.chunking.fixed.FixedSizeChunker` with ``chunking.fixed``'s settings.
    """
    strategies = registered()
    if name not in strategies:
        raise ValueError(f"unknown chunking strategy {name!r}; available: {', '.join(sorted(strategies))}")
    section = STRATEGY_SECTIONS.get(name)
    params: dict[str, Any] = {} if section is None else {"config": getattr(cfg, section)}
    return strategies[name](encoder, **params)


class Pipeline:
    """Encoder + linker + strategies, sharing one preparation per document.

    Example: ``Pipeline(PipelineConfig()).chunk(pipeline.prepare(load_documents(demo_articles()[:1])), "late")``
    -> the first demo article's late chunks (the encoder and linker load once per Pipeline).
    """

    def __init__(self, config: PipelineConfig | None = None) -> None:
        self.config = config or PipelineConfig()
        self.encoder = DocumentEncoder(self.config.encoder)
        self.vocabulary, self.knowledge_base = load_knowledge(self.config.knowledge)
        self.linker = EntityLinker(self.vocabulary, self.config.knowledge.linker)
        self._chunkers: dict[str, Any] = {}

    def prepare(self, docs: list[Document], progress: bool = True) -> list[PreparedDocument]:
        """Whole-document token embeddings and entity mentions for each document."""
        tokens = self.encoder.encode_documents([d.text for d in docs], progress=progress)
        return [
            PreparedDocument(doc=d, tokens=t, mentions=self.linker.link(d.text))
            for d, t in zip(docs, tokens)
        ]

    def chunker(self, name: str) -> Any:
        """The strategy ``name`` (:func:`build_chunker` on this pipeline's encoder and chunking
        settings), built once and reused."""
        if name not in self._chunkers:
            self._chunkers[name] = build_chunker(name, self.encoder, self.config.chunking)
        return self._chunkers[name]

    def chunk(
        self, prepared: list[PreparedDocument], strategy: str, progress: bool = True
    ) -> list[Chunk]:
        """All chunks of all documents by one strategy, in document order."""
        chunker = self.chunker(strategy)
        out: list[Chunk] = []
        for p in tqdm(prepared, desc=f"chunk:{strategy}", disable=None if progress else True):
            out.extend(chunker.chunk(p))
        return out


def _load_path(path: str | Path) -> list[Document]:
    """Documents from a JATS / ``.txt`` / ``.md`` article file, a directory of them, a BEIR
    folder (its ``corpus.jsonl``; or that file), a PubMedQA JSON file, or a SQuAD-format JSON
    file of whole articles (COVID-QA: one document per context, as ``gralc eval data=squad``
    reads them)."""
    from gralc.documents.beir import beir_file, is_beir_folder, read_beir_corpus
    from gralc.documents.corpus import load_corpus, parse_document
    from gralc.documents.pubmedqa import load_pqal
    from gralc.documents.squad import is_squad, load_squad_documents

    path = Path(path)
    if is_beir_folder(path) or (path.name == "corpus.jsonl" and path.is_file()):
        return read_beir_corpus(beir_file(path, "corpus.jsonl") if path.is_dir() else path)[0]
    if path.is_dir():
        result = load_corpus(path)
        for skipped, reason in result.skipped:
            logger.warning("skipped %s: %s", skipped, reason)
        return result.documents
    if not path.exists():
        raise FileNotFoundError(
            f"{path} does not exist: pass a JATS/.txt/.md article, a folder of them, a BEIR folder, "
            "ori_pqal.json or a SQuAD-format JSON"
        )
    if path.suffix == ".json":
        try:
            squad = is_squad(read_json_untrusted(path, allow_interpolation=True))
        except ValueError:  # not UTF-8, not JSON
            squad = False  # load_pqal names the problem
        if squad:
            return load_squad_documents(path, lambda message: logger.warning("%s", message))
        return load_pqal(path).documents
    return [parse_document(path)]


def load_documents(source: Any) -> list[Document]:
    """Documents from whatever a user has: a :class:`Document`, a path (an article, a folder
    of them, a BEIR folder, ori_pqal.json, a SQuAD-format JSON: :func:`_load_path`),
    or a list mixing both. A string that is no existing path is an error pointing at
    :func:`gralc.documents.plaintext.document_from_text` (text is never guessed from a typo'd
    path).

    >>> from gralc.data.demo import demo_articles
    >>> docs = load_documents(demo_articles()[:2])
    >>> [d.id for d in docs]
    ['PMC9000001', 'PMC9000002']
    """
    if isinstance(source, Document):
        return [source]
    if isinstance(source, str | Path):
        if not Path(source).exists():
            raise FileNotFoundError(
                f"{str(source)[:200]} does not exist: pass an article, a folder of them, a BEIR "
                "folder or a JSON corpus; for a text, gralc.document_from_text(text)")
        return _load_path(source)
    if isinstance(source, Sequence | set | frozenset) and not isinstance(source, bytes):
        out: list[Document] = []
        for item in source:
            if not isinstance(item, Document | str | Path):
                raise TypeError(f"a corpus list holds Documents and paths, not {type(item).__name__}")
            out.extend(load_documents(item))
        ids = [d.id for d in out]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
            raise ValueError(f"two documents share an id ({', '.join(dup)}): give each its own")
        return out
    raise TypeError(f"documents come from a Document, a path or a list of them, not "
                    f"{type(source).__name__}")
