"""The per-document knowledge subgraph G_k over the concepts linked in a document.

Nodes are the document's linked concepts (first-mention order), optionally followed by their
1-hop neighbours in the knowledge sources (the paper extracts "1-hop neighborhoods" for each
linked concept). Edges are typed, stored in both directions with the same type:

* ``is_a`` / ``part_of``: MeSH tree parent-child (tree number ``A01.236`` is a child of
  ``A01``); ``part_of`` for the Anatomy tree (A), ``is_a`` for the others;
* ``pharm_action``: MeSH pharmacological action (drug -> action class);
* ``has_symptom``: disease -> symptom (HSDN);
* UMLS ``MRREL.RRF`` relations (``is_a``, ``part_of``, ``may_treat``, ``causes``);
* ``co_occurs``: two concepts mentioned in the same sentence.

Relation ids (``edge_type``) index :attr:`KnowledgeBase.relation_names`, the same list for
every document of a knowledge base.
"""

from __future__ import annotations

import bisect
import csv
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import torch

from gralc.knowledge.mention import EntityMention
from gralc.knowledge.vocabulary import Vocabulary
from gralc.safe_load import require_file

#: MRREL ``RELA`` (or ``REL`` when RELA is empty) -> (relation, True if the edge goes
#: CUI2 -> CUI1). UMLS reads a row as "CUI2 <RELA> CUI1"; inverse labels flip the direction.
MRREL_RELATIONS: dict[str, tuple[str, bool]] = {
    "isa": ("is_a", True),
    "inverse_isa": ("is_a", False),
    "PAR": ("is_a", False),
    "CHD": ("is_a", True),
    "part_of": ("part_of", True),
    "has_part": ("part_of", False),
    "may_treat": ("may_treat", True),
    "may_be_treated_by": ("may_treat", False),
    "cause_of": ("causes", True),
    "has_cause": ("causes", False),
    "causative_agent_of": ("causes", True),
    "has_causative_agent": ("causes", False),
}


@dataclass
class RelationSources:
    """Which relation sources to use. Paths are optional files in their public formats:
    ``pharm_action_tsv`` (columns DescriptorUI, PharmActionUI; or NLM's ``descYYYY.xml``,
    whose records list their pharmacological actions: the file ``python -m gralc.knowledge
    download`` fetches), ``disease_symptom_tsv`` (HSDN: disease_id, symptom_id, as
    dhimmel/hsdn's ``data/symptoms-DO.tsv``), ``mrrel`` (UMLS MRREL.RRF).

    >>> RelationSources(pharm_action_tsv="data/mesh/desc2024.xml").cooccurrence
    True
    """

    #: link concepts whose MeSH tree numbers are parent and child
    tree: bool = True
    pharm_action_tsv: str | None = None
    disease_symptom_tsv: str | None = None
    mrrel: str | None = None
    #: link concepts mentioned in one sentence of the document
    cooccurrence: bool = True


def _read_pairs(path: str | Path, src_col: str, dst_col: str) -> list[tuple[str, str]]:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"relation file not found: {path}; fix the path in RelationSources")
    require_file(path, "relation file")
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        if not {src_col, dst_col} <= set(reader.fieldnames or []):
            raise ValueError(f"{path}: expected columns {src_col} and {dst_col}")
        return [(row[src_col], row[dst_col]) for row in reader if row[src_col] and row[dst_col]]


def read_pharm_actions(path: str | Path) -> list[tuple[str, str]]:
    """(descriptor, pharmacological action) UI pairs of a TSV (DescriptorUI, PharmActionUI)
    or of NLM's descriptor XML ``descYYYY.xml`` (each record's ``PharmacologicalActionList``,
    streamed).

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "pa.tsv"; _ = f.write_text("DescriptorUI\\tPharmActionUI\\nD008687\\tD007004\\n")
    >>> read_pharm_actions(f)
    [('D008687', 'D007004')]
    """
    path = Path(path)
    if path.suffix.lower() != ".xml":
        return _read_pairs(path, "DescriptorUI", "PharmActionUI")
    if not path.exists():
        raise FileNotFoundError(f"relation file not found: {path}; fix the path in RelationSources")
    require_file(path, "relation file")
    from lxml import etree

    pairs: list[tuple[str, str]] = []
    try:
        for _, rec in etree.iterparse(str(path), tag="DescriptorRecord", events=("end",)):
            uid = rec.findtext("DescriptorUI")
            for action in rec.iterfind(
                "PharmacologicalActionList/PharmacologicalAction/DescriptorReferredTo/DescriptorUI"
            ):
                if uid and action.text:
                    pairs.append((uid, action.text.strip()))
            rec.clear()
            while rec.getprevious() is not None:  # free the records already read
                del rec.getparent()[0]
    except etree.XMLSyntaxError as err:
        raise ValueError(f"{path}: XML error ({err}); expected NLM's descYYYY.xml") from err
    return pairs


class KnowledgeBase:
    """Relation tables loaded once: ``relations[name][source_id] -> set of target ids``.

    >>> KnowledgeBase(None, RelationSources(tree=False)).neighbours("D008687")
    []
    """

    def __init__(self, vocabulary: Vocabulary | None, sources: RelationSources | None = None):
        self.sources = sources or RelationSources()
        self.relations: dict[str, dict[str, set[str]]] = {}
        self.sources_used: list[str] = []
        src = self.sources
        if src.tree:
            self._load_tree(vocabulary)
        if src.pharm_action_tsv:
            self._add("pharm_action", read_pharm_actions(src.pharm_action_tsv))
            self.sources_used.append("pharm_action")
        if src.disease_symptom_tsv:
            self._add(
                "has_symptom", _read_pairs(src.disease_symptom_tsv, "disease_id", "symptom_id")
            )
            self.sources_used.append("disease_symptom")
        if src.mrrel:
            self._load_mrrel(src.mrrel, vocabulary)
            self.sources_used.append("mrrel")
        if src.cooccurrence:
            self.sources_used.append("cooccurrence")
        self.relation_names: list[str] = list(self.relations)
        if src.cooccurrence:
            self.relation_names.append("co_occurs")

    def _add(self, name: str, pairs) -> None:
        table = self.relations.setdefault(name, {})
        for a, b in pairs:
            if a != b:
                table.setdefault(a, set()).add(b)

    def _load_tree(self, vocabulary: Vocabulary | None) -> None:
        tree_index = vocabulary.tree_index() if vocabulary is not None else {}
        if not tree_index:
            warnings.warn(
                "RelationSources.tree: the vocabulary has no MeSH tree numbers (load "
                "them with Vocabulary.add_tree_file); tree relations not used",
                stacklevel=3,
            )
            return
        pairs: dict[str, list[tuple[str, str]]] = {"is_a": [], "part_of": []}
        for tree_number, child in tree_index.items():
            parent = tree_index.get(tree_number.rpartition(".")[0])
            if parent is not None:
                pairs["part_of" if tree_number.startswith("A") else "is_a"].append((child, parent))
        for name, rel_pairs in pairs.items():
            self._add(name, rel_pairs)
        self.sources_used.append("mesh_tree")

    def _load_mrrel(self, path: str | Path, vocabulary: Vocabulary | None) -> None:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"MRREL file not found: {path}; fix RelationSources.mrrel")
        require_file(path, "relation file")
        known = vocabulary.concepts if vocabulary is not None else None
        by_name: dict[str, list[tuple[str, str]]] = {}
        with path.open(encoding="utf-8") as f:
            for line_no, line in enumerate(f, 1):
                cols = line.split("|")
                if len(cols) < 15:
                    raise ValueError(f"{path}:{line_no}: not MRREL.RRF (expected >= 15 fields)")
                cui1, rel, cui2, rela, suppress = cols[0], cols[3], cols[4], cols[7], cols[14]
                mapped = MRREL_RELATIONS.get(rela or rel)
                if mapped is None or suppress in ("O", "E", "Y"):
                    continue
                if known is not None and (cui1 not in known or cui2 not in known):
                    continue
                name, cui2_to_cui1 = mapped
                by_name.setdefault(name, []).append((cui2, cui1) if cui2_to_cui1 else (cui1, cui2))
        for name in sorted(by_name):
            self._add(name, by_name[name])

    def neighbours(self, concept_id: str) -> list[str]:
        """Forward 1-hop neighbours through every loaded relation (tree parents, action
        classes, symptoms, ...), sorted; reverse neighbours (children, all drugs of an
        action class) are left out as they can number thousands."""
        out: set[str] = set()
        for table in self.relations.values():
            out |= table.get(concept_id, set())
        return sorted(out - {concept_id})


@dataclass
class ConceptGraph:
    """G_k: ``concept_ids[i]`` is node i (the first ``num_mentioned`` are mentioned in the
    document, the rest are added neighbours); ``edge_index`` (2, E) int64 holds each edge in
    both directions, ``edge_type`` (E,) int64 indexes ``relation_names``.

    >>> from gralc.knowledge.mention import EntityMention
    >>> g = build_concept_graph([EntityMention(0, 9, "D008687", "Metformin", "Metformin"),
    ...                          EntityMention(17, 22, "D006442", "HbA1c", "Glycated Hemoglobin")], [(0, 23)], KnowledgeBase(None, RelationSources(tree=False)))
    >>> g.concept_ids, g.relation_names, g.edge_index.tolist()
    (['D008687', 'D006442'], ['co_occurs'], [[0, 1], [1, 0]])
    """

    concept_ids: list[str]
    edge_index: torch.Tensor
    edge_type: torch.Tensor
    relation_names: list[str]
    sources_used: list[str]
    num_mentioned: int

    def node_of(self, mentions: Sequence[EntityMention]) -> torch.Tensor:
        """(M,) int64 node index of each mention's concept."""
        index = {cid: i for i, cid in enumerate(self.concept_ids)}
        return torch.tensor([index[m.concept_id] for m in mentions], dtype=torch.long)

    def edges_of(self, relation: str) -> set[tuple[str, str]]:
        """Directed (concept, concept) pairs of one relation (both directions present)."""
        rid = self.relation_names.index(relation)
        mask = self.edge_type == rid
        src, dst = self.edge_index[:, mask].tolist()
        return {(self.concept_ids[a], self.concept_ids[b]) for a, b in zip(src, dst)}

    def to_pyg(self):
        """A ``torch_geometric.data.Data`` with ``num_nodes``, ``edge_index``, ``edge_type``."""
        from torch_geometric.data import Data

        return Data(
            num_nodes=len(self.concept_ids), edge_index=self.edge_index, edge_type=self.edge_type
        )


def build_concept_graph(
    mentions: Sequence[EntityMention],
    sentence_spans: Sequence[tuple[int, int]] | Sequence[object],
    kb: KnowledgeBase,
    add_neighbours: bool = False,
    max_neighbours: int = 5,
) -> ConceptGraph:
    """Build G_k from a document's mentions (offsets in ``Document.text``) and its sentence
    spans (``(start, end)`` pairs or objects with ``start``/``end``, e.g. ``Sentence``).
    ``add_neighbours`` adds up to ``max_neighbours`` 1-hop neighbours per mentioned concept.

    >>> from gralc.knowledge.mention import EntityMention
    >>> ms = [EntityMention(0, 9, "D008687", "Metformin", "Metformin"), EntityMention(17, 22, "D006442", "HbA1c", "HbA1c")]
    >>> build_concept_graph(ms, [(0, 10), (11, 23)], KnowledgeBase(None, RelationSources(tree=False))).edge_index.shape
    torch.Size([2, 0])
    """
    concept_ids = list(dict.fromkeys(m.concept_id for m in mentions))
    num_mentioned = len(concept_ids)
    if add_neighbours:
        extra: dict[str, None] = {}
        mentioned = set(concept_ids)
        for cid in concept_ids:
            new = [n for n in kb.neighbours(cid) if n not in mentioned]
            extra.update(dict.fromkeys(new[:max_neighbours]))
        concept_ids += list(extra)
    index = {cid: i for i, cid in enumerate(concept_ids)}
    edges: set[tuple[int, int, int]] = set()
    for rid, name in enumerate(kb.relation_names):
        table = kb.relations.get(name, {})
        for cid, i in index.items():
            for target in table.get(cid, ()):
                j = index.get(target)
                if j is not None:
                    edges.update({(i, j, rid), (j, i, rid)})
    if "co_occurs" in kb.relation_names:
        edges |= _cooccurrence_edges(
            mentions, sentence_spans, index, kb.relation_names.index("co_occurs")
        )
    ordered = sorted(edges)
    edge_index = torch.tensor([[e[0] for e in ordered], [e[1] for e in ordered]], dtype=torch.long)
    edge_type = torch.tensor([e[2] for e in ordered], dtype=torch.long)
    return ConceptGraph(
        concept_ids,
        edge_index.reshape(2, -1),
        edge_type,
        list(kb.relation_names),
        list(kb.sources_used),
        num_mentioned,
    )


def _cooccurrence_edges(mentions, sentence_spans, index, rid) -> set[tuple[int, int, int]]:
    spans = sorted(
        (s.start, s.end) if hasattr(s, "start") else (int(s[0]), int(s[1])) for s in sentence_spans
    )
    starts = [s for s, _ in spans]
    per_sentence: dict[int, set[int]] = {}
    for m in mentions:
        k = bisect.bisect_right(starts, m.start) - 1
        if k >= 0 and m.start < spans[k][1]:
            per_sentence.setdefault(k, set()).add(index[m.concept_id])
    edges: set[tuple[int, int, int]] = set()
    for nodes in per_sentence.values():
        for i, j in combinations(sorted(nodes), 2):
            edges.update({(i, j, rid), (j, i, rid)})
    return edges
