"""A summary report per community (SemRAG eq. 3, GraphRAG's community reports).

Extractive by default: the community's most central concepts (weighted degree inside the
community) and the most central sentences of its member chunks (a sentence scores the summed
centrality of the community concepts it mentions), within ``words`` words. Generative when a
``summarize(prompt) -> text`` callable is given (e.g. an OpenAI-compatible chat endpoint,
:func:`gralc.evaluation.generation.ChatClient`): the prompt holds the central concepts, their
relations and the extractive sentences; a failed call keeps the extractive report.

A report's ``centrality`` is its member-chunk count over the largest at its level (0..1),
the "importance" global search weighs beside relevance.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gralc.documents.model import Document
from gralc.knowledge.communities import Community
from gralc.knowledge.corpus_graph import CorpusGraph, read_format, sentence_concepts
from gralc.knowledge.mention import EntityMention
from gralc.runinfo import write_json_atomic

logger = logging.getLogger(__name__)
FORMAT = "gralc-community-reports"
MODES = ("extractive", "generative")


@dataclass
class ReportConfig:
    """``words``: word budget of a report's sentences; ``top_concepts``: concepts listed;
    ``min_nodes``: smaller communities get no report; ``mode``: extractive | generative.

    >>> ReportConfig(words=80).mode
    'extractive'
    """

    words: int = 150
    top_concepts: int = 8
    min_nodes: int = 2
    mode: str = "extractive"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"graph.reports.mode={self.mode!r}: use one of {', '.join(MODES)}")
        if self.words < 1 or self.top_concepts < 1 or self.min_nodes < 1:
            raise ValueError("graph.reports: words, top_concepts and min_nodes must be >= 1")


@dataclass
class CommunityReport:
    """The report of one community (:func:`build_reports`): its ``community_id`` and ``level``,
    a ``title`` (its three most central concept names), the report ``text``, its most central
    concept ids (``concepts``), the ids of every chunk its concepts occur in, its
    ``centrality`` (0..1 at its level) and the extractive sentences it quotes.

    >>> CommunityReport("L1-0", 1, "Metformin, HbA1c", "Metformin lowers HbA1c.", ["D008687"], ["d1::c0"]).centrality
    0.0
    """
    community_id: str
    level: int
    title: str
    text: str
    concepts: list[str]
    chunk_ids: list[str]
    centrality: float = 0.0
    sentences: list[list] = field(default_factory=list)  # [doc_id, start, end] of each sentence


def _centrality(graph: CorpusGraph, nodes: list[str]) -> dict[str, float]:
    members = set(nodes)
    out = {}
    for n in nodes:
        inside = sum(w for m, w in graph.neighbours(n).items() if m in members)
        out[n] = inside + 1e-3 * graph.nodes[n].mentions  # mentions break ties
    top = max(out.values(), default=1.0) or 1.0
    return {n: v / top for n, v in out.items()}


def build_reports(
    graph: CorpusGraph,
    communities: Sequence[Community],
    documents: Sequence[tuple[Document, Sequence[EntityMention]]],
    config: ReportConfig | None = None,
    summarize: Callable[[str], str] | None = None,
) -> list[CommunityReport]:
    """One report per community of at least ``min_nodes`` concepts, every level.

    Example: ``build_reports(graph, detect_communities(graph), [(p.doc, p.mentions) for p in prepared])[0].title``
    -> the first community's three most central concept names joined by ``", "``.
    """
    cfg = config or ReportConfig()
    if cfg.mode == "generative" and summarize is None:
        raise ValueError("graph.reports.mode=generative needs an endpoint (generation.base_url / "
                         "generation.model); or use mode=extractive")
    # sentence -> concepts, and concept -> sentences (document order)
    sentences: list[tuple[str, int, int, str, frozenset[str]]] = []
    for doc, mentions in documents:
        for s, ids in sentence_concepts(doc, mentions):
            sentences.append((doc.id, s.start, s.end, doc.text[s.start:s.end], ids))
    by_concept: dict[str, list[int]] = {}
    for k, (*_, ids) in enumerate(sentences):
        for cid in ids:
            by_concept.setdefault(cid, []).append(k)

    reports: list[CommunityReport] = []
    for level in sorted({c.level for c in communities}):
        at_level = [c for c in communities if c.level == level and len(c.nodes) >= cfg.min_nodes]
        sizes = {c.id: len(set().union(*(graph.nodes[n].chunks for n in c.nodes))) for c in at_level}
        largest = max(sizes.values(), default=1) or 1
        for c in at_level:
            reports.append(_report(graph, c, sentences, by_concept, cfg, sizes[c.id] / largest, summarize))
    return reports


def _report(graph, community, sentences, by_concept, cfg, centrality, summarize) -> CommunityReport:
    cent = _centrality(graph, community.nodes)
    top = sorted(community.nodes, key=lambda n: (-cent[n], n))[: cfg.top_concepts]
    names = [graph.nodes[n].name for n in top]
    scored: dict[int, float] = {}
    for n in community.nodes:
        for k in by_concept.get(n, ()):
            scored[k] = scored.get(k, 0.0) + cent[n]
    picked, words = [], 0
    for k in sorted(scored, key=lambda k: (-scored[k], k)):
        n_words = len(sentences[k][3].split())
        if words + n_words > cfg.words and picked:
            continue
        picked.append(k)
        words += n_words
        if words >= cfg.words:
            break
    picked.sort()
    title = ", ".join(names[:3])
    body = " ".join(" ".join(sentences[k][3].split()) for k in picked)
    text = f"{title}. Key concepts: {'; '.join(names)}. {body}".strip()
    if summarize is not None:
        relations = sorted({(graph.nodes[a].name, r, graph.nodes[b].name)
                            for a in top for b in top if a < b
                            for r in graph.edges.get((a, b), _NO_EDGE).relations})
        prompt = (
            "Write a short factual summary report (at most "
            f"{cfg.words} words) of this group of biomedical concepts from a document corpus.\n"
            f"Concepts: {'; '.join(names)}\n"
            + (f"Relations: {'; '.join(f'{a} {r} {b}' for a, r, b in relations)}\n" if relations else "")
            + f"Evidence sentences:\n{body}"
        )
        try:
            text = f"{title}. {summarize(prompt).strip()}"
        except Exception as exc:  # an endpoint failure keeps the extractive report
            logger.warning("community %s: generative report failed (%s); kept the extractive one",
                           community.id, exc)
    chunk_ids = sorted(set().union(*(graph.nodes[n].chunks for n in community.nodes)))
    return CommunityReport(community.id, community.level, title, text, top, chunk_ids, centrality,
                           [[sentences[k][0], sentences[k][1], sentences[k][2]] for k in picked])


class _NoEdge:
    relations: frozenset[str] = frozenset()


_NO_EDGE = _NoEdge()


def save_reports(reports: Sequence[CommunityReport], path: str | Path) -> Path:
    """``reports`` as JSON at ``path``; returns the path.

    >>> import tempfile
    >>> save_reports([CommunityReport("L0-0", 0, "Metformin", "Text.", ["D008687"], ["c0"])], tempfile.mkdtemp() + "/r.json").name
    'r.json'
    """
    write_json_atomic(path, {"format": FORMAT, "reports": [asdict(r) for r in reports]})
    return Path(path)


def load_reports(path: str | Path) -> list[CommunityReport]:
    """The reports :func:`save_reports` wrote to ``path``; FileNotFoundError / ValueError
    otherwise.

    >>> import tempfile
    >>> path = save_reports([CommunityReport("L0-0", 0, "Metformin", "Text.", ["D008687"], ["c0"])], tempfile.mkdtemp() + "/r.json")
    >>> load_reports(path)[0].title
    'Metformin'
    """
    d = read_format(path, FORMAT, "community reports")
    try:
        return [CommunityReport(**r) for r in d["reports"]]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: malformed community reports ({exc}); rebuild the graph") from exc


__all__ = ["CommunityReport", "ReportConfig", "build_reports", "load_reports", "save_reports"]
