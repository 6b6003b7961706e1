"""The one budget unit (gralc.encoding.budget): all-MiniLM-L6-v2 word-pieces, whatever the
encoder, for eval's budgeted metrics and the graph search's window alike; checked with e5
(another tokenizer), whose own word-pieces differ from MiniLM's on the same texts."""

from __future__ import annotations

import numpy as np
import pytest

from gralc.chunking.chunk import Chunk
from gralc.encoding import DocumentEncoder, EncoderConfig
from gralc.encoding.budget import PieceCounter, budget_counter
from gralc.knowledge.corpus_graph import CorpusGraph
from gralc.retrieval.graph.search import GraphIndex, GraphSearchConfig, GraphSearcher

TEXTS = [
    "Immunohistochemistry revealed strong expression of TNF-α and IL-1β in the synovium.",
    "The hazard ratio for cardiovascular death was 0.78 (95% CI 0.64–0.95) after adjustment.",
    "Metformin remains the first-line therapy for type 2 diabetes mellitus in most guidelines.",
]
CHUNKS = [Chunk("d", f"d::{i}", t, 0, len(t), 0, 0, embedding=np.eye(4, dtype=np.float32)[i])
          for i, t in enumerate(TEXTS)]


def own_pieces(encoder: DocumentEncoder) -> list[int]:
    return [len(encoder.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in TEXTS]


@pytest.fixture(scope="module")
def minilm(minilm_path) -> DocumentEncoder:
    return DocumentEncoder(EncoderConfig(model=str(minilm_path), device="cpu"))


def test_budgets_count_minilm_word_pieces_whatever_the_encoder(minilm, enpt):
    unit = own_pieces(minilm)
    assert own_pieces(enpt) != unit  # two tokenizers that count the same texts differently
    for encoder in (minilm, enpt, None):
        counter = budget_counter(encoder)
        assert [len(counter(c)) for c in CHUNKS] == unit
    # the end of each word-piece, relative to the chunk: where a budget cuts the last chunk
    ends = PieceCounter(minilm.tokenizer)(CHUNKS[0])
    assert len(ends) == unit[0] and ends[-1] == len(TEXTS[0])


def test_the_graph_search_window_counts_the_same_unit(minilm, enpt):
    """Local search keeps graph chunks until ``budget`` word-pieces: MiniLM's, handed the
    counter of a MiniLM or an e5 pipeline, or none."""
    empty = GraphIndex(CorpusGraph(), [], [], [], np.zeros((0, 4), np.float32), np.zeros((0, 4), np.float32))
    config = GraphSearchConfig(budget=64)
    unit = own_pieces(minilm)
    for pieces in (budget_counter(minilm), budget_counter(enpt), None):
        searcher = GraphSearcher("graph_local", CHUNKS, empty, config=config, pieces=pieces)
        assert searcher.pieces.tolist() == unit


@pytest.mark.slow
def test_gralc_search_and_eval_count_one_budget_with_e5(enpt_folder, tmp_path):
    """An e5 index with its corpus graph: the product's graph search (Retriever, gralc search)
    and eval's graph rows size ``graph.search.budget`` in the same MiniLM word-pieces (before,
    gralc search counted e5's own: 21,664 pieces over the demo chunks against 20,057)."""
    from gralc import index as index_cli
    from gralc.data.benchmarks import demo_benchmark
    from gralc.data.demo import DEMO_DIR
    from gralc.evaluation.methods import RunSettings, graph_searcher
    from gralc.inference import Retriever

    out = tmp_path / "e5_index"
    assert index_cli.main([str(DEMO_DIR / "articles"), "--out", str(out), "--strategy", "late",
                           "--searcher", "graph_local", f"encoder.model={enpt_folder}"]) == 0
    retriever = Retriever.load(out)
    encoder, chunks = retriever.pipeline.encoder, retriever.index.chunks
    product = retriever.graph_searcher().pieces.tolist()
    bench = demo_benchmark()  # eval.py's settings: RunSettings(pieces=budget_counter(encoder))
    evaluation = graph_searcher("graph_local", bench, chunks, retriever.graph, retriever.pipeline,
                                RunSettings(pieces=budget_counter(encoder)),
                                np.zeros((len(bench.questions), encoder.dim), np.float32))
    minilm = budget_counter()
    assert product == evaluation.pieces.tolist() == [len(minilm(c)) for c in chunks]
    assert product != [len(encoder.tokenizer(c.text, add_special_tokens=False)["input_ids"]) for c in chunks]
