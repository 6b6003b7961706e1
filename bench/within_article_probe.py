"""Where is within-article nDCG@10 lost, and do inference-time changes win it back? A probe.

COVID-QA questions have one answer span each, so a question's within-article nDCG@10 is
``1 / log2(1 + r)`` with r the rank of the first chunk that hits the answer among its
article's chunks (:mod:`gralc.evaluation.evidence`). For each fold model of an earlier
``bench.covidqa_cv`` run (its selected checkpoint), this prints the distribution of r on the
held-out folds at ``--record W M`` and then scores a grid of inference-time changes, each
choice made on the fold's dev split (inside its training folds) by evidence MRR:

* sentence evidence W (``--sentence-evidence``) and late-interaction weight M (``--weights``);
* **query word-piece weighting** of MaxSim (``--query-weighting``): ``uniform`` (the product's
  mean over the question's word-pieces), ``stopwords`` (word-pieces of English stopwords,
  question words and punctuation get weight 0) or ``idf`` (weight = BM25 idf of the word-piece
  over the searched chunks, as BERTScore weights tokens);
* **neighbour smoothing** (``--neighbour`` d): ``score'(c) = score(c) + d * max(score of the
  chunks just before and after c in its document)``;
* **sentence MaxSim** (``--sentence-maxsim`` v): MaxSim is mixed with its value over the
  chunk's best sentence, ``(1 - v) * MaxSim(chunk) + v * max over the chunk's sentences of
  MaxSim(sentence)``: SQuAD-style questions paraphrase one sentence, and chunk-level MaxSim
  also rewards question words matched far apart;
* **a length penalty** (``--length-penalty`` c): ``score'(c) = score(c) - c * log(n / 128)``,
  n = the chunk's word-pieces (MaxSim takes a max over a chunk's tokens, so longer chunks
  score higher by construction);
* **a bigram (term-pair) BM25** (``--bigram`` g, the product's ``model.phrase_weight``),
  **the chunk text encoded on its own** (``--isolated`` e), **the section heading**
  (``--heading`` h: cosine of the question to the chunk's section path);
* **where the cuts fall** (``--cut-unit word sentence``: the trained boundary scores decoded
  at any word start, as trained, or at sentence starts only, ``BoundaryConfig.cut_unit``).

    python -m bench.within_article_probe --run results/cv_late/lora_lexical_small_late

The probe says whether one should be a product option; two became one: the term-pair BM25
(``model.phrase_weight``) and sentence-start cuts (``pipeline.chunking.boundary.cut_unit``).
"""

from __future__ import annotations

import argparse
import bisect
import itertools
import logging
import math
import re
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from bm25s.stopwords import STOPWORDS_EN

from bench.covidqa_cv import DEFAULT_DATA, covidqa_setup, dev_side
from bench.late_interaction_cv import means, print_table, selected_checkpoint
from bench.real_data import require_real_graph
from gralc.chunking.chunk import Chunk
from gralc.data.folds import cv_side
from gralc.evaluation.evidence import overlap, resolve_evidence, span_hits
from gralc.evaluation.trained_rows import trained_scores
from gralc.model.hybrid_scorer import normalise_lexical
from gralc.model.late_interaction import piece_best
from gralc.pipeline import Pipeline, with_runtime
from gralc.retrieval.bm25 import BM25Config, BM25Index
from gralc.retrieval.ranking import rank_order
from gralc.retrieval.token_codec import TokenCodecConfig
from gralc.retrieval.trained_scorer import TrainedScorer
from gralc.runinfo import run_metadata, write_json_atomic

QUESTION_WORDS = {"what", "which", "who", "whom", "how", "why", "when", "where", "does", "do",
                  "did", "has", "have", "had", "were", "been", "can"}
RANK_BINS = ((1, 1), (2, 2), (3, 3), (4, 5), (6, 10), (11, 10**9))
# questions that name no topic, only "the study / report / paper": the annotated span is one
# of several valid answers in the article (a pattern written after reading the rank > 10
# questions; a diagnostic, never a filter of the protocol's metrics)
GENERIC = re.compile(r"\b(this|the) (study|report|paper|review|article)\s*\?", re.I)


def bigram_bm25(texts: list[str], queries: list[str]) -> np.ndarray:
    """(Q, K) BM25 over **pairs of consecutive terms** (the product's
    ``BM25Index(BM25Config(ngram=2))``, ``model.phrase_weight``'s term), each row divided by
    its maximum (:func:`gralc.model.hybrid_scorer.normalise_lexical`): a phrase-match term (a
    sequential-dependence feature) beside the unigram BM25 the model already holds."""
    index = BM25Index(BM25Config(ngram=2))
    index.index([Chunk("probe", str(i), t, 0, len(t)) for i, t in enumerate(texts)])
    return normalise_lexical(torch.as_tensor(index.score_matrix(queries))).numpy()


def isolated_cosine(scorer: TrainedScorer, base_pipe: Pipeline, texts: list[str],
                    queries: list[str]) -> np.ndarray:
    """(Q, K) cosine of each question to each chunk text encoded **on its own** (no document
    context; the naive dense view) by the model's adapted encoder, whole chunk read."""
    enc = Pipeline(with_runtime(scorer.pipeline_config, base_pipe.config)).encoder
    chunks = enc.encode_texts(texts, max_length=enc.max_window)
    return (enc.encode_queries(queries) @ chunks.T).numpy()


def heading_cosine(scorer: TrainedScorer, base_pipe: Pipeline, chunks: list,
                   queries: list[str]) -> np.ndarray:
    """(Q, K) cosine of each question to the **section heading path** of each chunk (its
    ``section_path`` titles joined by " / ", outermost first: the heading a contextual chunk
    header would prepend), both encoded by the model's adapted encoder; 0 for a chunk with no
    heading. The structure tree's one signal the chunk's own tokens miss when the chunk starts
    mid-section ("What is the conclusion of this study?" vs a chunk under "Conclusions")."""
    enc = Pipeline(with_runtime(scorer.pipeline_config, base_pipe.config)).encoder
    paths = [" / ".join(t for t in c.section_path if t) for c in chunks]
    heads = sorted({h for h in paths if h})
    if not heads:
        return np.zeros((len(queries), len(chunks)))
    cos = (enc.encode_queries(queries) @ enc.encode_texts(heads, max_length=64).T).numpy()
    col = {h: i for i, h in enumerate(heads)}
    out = np.zeros((len(queries), len(chunks)))
    for j, h in enumerate(paths):
        if h:
            out[:, j] = cos[:, col[h]]
    return out


def stopword_weights(text: str, offsets: list[tuple[int, int]]) -> list[float]:
    """0 for a word-piece of a stopword, a question word or punctuation, else 1 (all 1 when
    every piece would get 0); ``offsets``: each word-piece's character span in ``text``."""
    stop = set(STOPWORDS_EN) | QUESTION_WORDS
    out = []
    for a, b in offsets:
        lo, hi = a, b
        while lo > 0 and text[lo - 1].isalnum():
            lo -= 1
        while hi < len(text) and text[hi].isalnum():
            hi += 1
        word = text[lo:hi].lower()
        out.append(0.0 if not any(ch.isalnum() for ch in text[a:b]) or word in stop else 1.0)
    return out if any(out) else [1.0] * len(out)


def idf_weights(piece_ids: list[int], df: Counter, n_chunks: int) -> list[float]:
    """BM25 idf ``log((N - df + 0.5) / (df + 0.5) + 1)`` of each word-piece over N chunks."""
    return [math.log((n_chunks - df[t] + 0.5) / (df[t] + 0.5) + 1.0) for t in piece_ids]


def weighted_maxsim(per_piece: list[torch.Tensor], weights: list[list[float]]) -> torch.Tensor:
    """(Q, K) MaxSim with each question's word-pieces (``per_piece``: its
    :func:`gralc.model.late_interaction.piece_best`) averaged with ``weights`` (one per piece) instead of uniformly;
    uniform weights give :func:`gralc.model.late_interaction.maxsim`."""
    rows = []
    for best, w in zip(per_piece, weights, strict=True):
        wt = torch.tensor(w, dtype=best.dtype)
        rows.append((wt[:, None] * best).sum(0) / wt.sum())
    return torch.stack(rows)


def smooth_neighbours(score: np.ndarray, chunks: list, d: float) -> np.ndarray:
    """``score + d * max(score of the previous and next chunk of the same document)`` (Q, K);
    a chunk alone in its document counts its own score."""
    if d == 0:
        return score
    order = sorted(range(len(chunks)), key=lambda j: (chunks[j].doc_id, chunks[j].char_start))
    prev, nxt = np.arange(len(chunks)), np.arange(len(chunks))
    for a, b in zip(order, order[1:]):
        if chunks[a].doc_id == chunks[b].doc_id:
            nxt[a], prev[b] = b, a
    idx = np.arange(len(chunks))
    best = np.maximum(np.where(prev == idx, -np.inf, score[:, prev]), np.where(nxt == idx, -np.inf, score[:, nxt]))
    return score + d * np.where(np.isfinite(best), best, score)


def length_penalty(score: np.ndarray, n_pieces: np.ndarray, c: float) -> np.ndarray:
    """``score - c * log(n / 128)`` (Q, K) for chunks of ``n_pieces`` (K,) word-pieces."""
    return score - c * np.log(np.maximum(n_pieces, 1) / 128.0)[None, :] if c else score


def sentence_units(chunks: list, prepared: list, token_chunk: torch.Tensor) -> tuple[torch.Tensor, np.ndarray]:
    """Split every chunk's token rows (``token_chunk`` (T,): chunk row of each token vector,
    chunk by chunk in order, tokens ``token_start..token_end`` of its document) by the
    document sentence each token starts in: ``(unit of each token (T,), chunk of each unit (U,))``."""
    docs = {p.doc.id: p for p in prepared}
    unit_of, unit_chunk, pos = [], [], 0
    for j, c in enumerate(chunks):
        n = int((token_chunk[pos:pos + c.token_end - c.token_start] == j).sum())
        if n != c.token_end - c.token_start:
            raise ValueError(f"chunk {j}: {n} token vectors for tokens {c.token_start}..{c.token_end}")
        p = docs[c.doc_id]
        starts = [x.start for x in p.doc.sentences]
        keys = {}
        for t in range(c.token_start, c.token_end):
            k = max(0, bisect.bisect_right(starts, int(p.tokens.offsets[t, 0])) - 1)
            if k not in keys:
                keys[k] = len(unit_chunk)
                unit_chunk.append(j)
            unit_of.append(keys[k])
        pos += n
    if pos != len(token_chunk):
        raise ValueError(f"{len(token_chunk)} token vectors, chunks cover {pos}")
    return torch.tensor(unit_of), np.array(unit_chunk)


def best_unit(unit_score: np.ndarray, unit_chunk: np.ndarray, n_chunks: int) -> np.ndarray:
    """(Q, K): each chunk's best unit score from ``unit_score`` (Q, U)."""
    out = np.full((unit_score.shape[0], n_chunks), -np.inf)
    for u, j in enumerate(unit_chunk):
        np.maximum(out[:, j], unit_score[:, u], out=out[:, j])
    return out


def scored(scorer: TrainedScorer, bench, base_pipe: Pipeline, weight: float, weightings: list[str],
           sentences: bool = False, cut_unit: str | None = None):
    """``(chunks, model scores (Q, K) without late interaction, {weighting: MaxSim (Q, K)},
    word-pieces per chunk (K,))``; with ``sentences``, ``late["sentence"]`` holds the best
    sentence's uniform MaxSim per chunk. ``cut_unit`` (``word`` | ``sentence``) overrides the
    model's saved ``BoundaryConfig.cut_unit`` for decoding its chunks."""
    if cut_unit is not None:
        scorer.model.boundary_config = replace(scorer.model.boundary_config, cut_unit=cut_unit)
    scorer.model.config = replace(scorer.model.config, sentence_evidence=weight, late_interaction=0.0)
    pipe = Pipeline(with_runtime(scorer.pipeline_config, base_pipe.config))
    prepared = pipe.prepare(bench.documents, progress=False)
    s = trained_scores(scorer, bench, prepared, pipe)
    scorer.model.config = replace(scorer.model.config, late_interaction=0.5)
    scorer.token_codec = TokenCodecConfig(kind="float16")  # the exact token vectors
    scorer.chunk(pipe, prepared)  # the same chunks, now with their token vectors
    scorer.model.config = replace(scorer.model.config, late_interaction=0.0)
    every = scorer.chunk_set(np.stack([c.embedding for c in s.chunks]))
    token_vectors, token_chunk = every.token_vectors, every.token_chunk
    enc, texts = pipe.encoder, [q.text for q in bench.questions]
    q_tok, q_mask = enc.encode_query_tokens(texts)
    special = set(enc.tokenizer.all_special_ids)
    df: Counter = Counter()
    n_pieces = np.zeros(len(s.chunks))
    for j, c in enumerate(s.chunks):
        ids = enc.tokenizer(c.text, add_special_tokens=False)["input_ids"]
        df.update(set(ids))
        n_pieces[j] = len(ids)
    weights: dict[str, list[list[float]]] = {w: [] for w in weightings}
    for i, text in enumerate(texts):
        e = enc.tokenizer(text, truncation=True, max_length=enc.query_max_length, return_offsets_mapping=True)
        kept = [(t, o) for t, o in zip(e["input_ids"], e["offset_mapping"]) if t not in special]
        assert len(kept) == int(q_mask[i].sum()), "word-pieces differ from encode_query_tokens"
        for w in weightings:
            weights[w].append([1.0] * len(kept) if w == "uniform"
                              else stopword_weights(text, [o for _, o in kept]) if w == "stopwords"
                              else idf_weights([t for t, _ in kept], df, len(s.chunks)))
    per_piece = [piece_best(q_tok[i, q_mask[i]], token_vectors, token_chunk, len(s.chunks))
                 for i in range(len(texts))]
    late = {w: weighted_maxsim(per_piece, weights[w]).numpy() for w in weightings}
    if sentences:
        token_unit, unit_chunk = sentence_units(s.chunks, prepared, token_chunk)
        by_unit = torch.stack([piece_best(q_tok[i, q_mask[i]], token_vectors, token_unit,
                                          len(unit_chunk)).mean(0) for i in range(len(texts))]).numpy()
        late["sentence"] = best_unit(by_unit, unit_chunk, len(s.chunks))
    return s.chunks, torch.stack(s.graph).numpy(), late, n_pieces


def first_hit_ranks(bench, chunks: list, score: np.ndarray) -> tuple[list[int], list[int]]:
    """Per question, the rank of the first chunk hitting its evidence among its article's
    chunks, and the rank of the first hitting **paragraph** when the article's paragraphs
    (MTEB's unit) are ranked by their best overlapping chunk's score (ties in reading order);
    0 when none hits."""
    docs = {d.id: d for d in bench.documents}
    doc_of = np.array([c.doc_id for c in chunks])
    by_chunk, by_paragraph = [], []
    for i, q in enumerate(bench.questions):
        doc = docs[q.gold_doc_id]
        evidence = resolve_evidence(q, doc)
        own = np.flatnonzero(doc_of == q.gold_doc_id)
        order = [own[j] for j in rank_order([chunks[j] for j in own], score[i][own], len(own))]
        hit = [any(span_hits((chunks[j].char_start, chunks[j].char_end), e) for e in evidence) for j in order]
        by_chunk.append(hit.index(True) + 1 if any(hit) else 0)
        pars = [(p.start, p.end) for p in doc.paragraphs]
        best = [max((score[i][j] for j in own if overlap(p, (chunks[j].char_start, chunks[j].char_end))),
                    default=-np.inf) for p in pars]
        ranked = sorted(range(len(pars)), key=lambda j: -best[j])  # stable: reading order on ties
        hit = [any(span_hits(pars[j], e) for e in evidence) for j in ranked]
        by_paragraph.append(hit.index(True) + 1 if any(hit) else 0)
    return by_chunk, by_paragraph


def print_ranks(title: str, ranks: list[int]) -> None:
    """Markdown table: share of questions per first-hit rank bin and its nDCG@10 gain."""
    n = len(ranks)
    print(f"\n# {title}, {n} held-out questions (nDCG@10 {ndcg(ranks):.3f})\n")
    print("| rank | share | nDCG@10 contribution |\n|---|---|---|")
    for lo, hi in RANK_BINS:
        sel = [r for r in ranks if lo <= r <= hi]
        label = str(lo) if lo == hi else f"{lo}-{hi}" if hi < 10**9 else f">{lo - 1}"
        print(f"| {label} | {len(sel) / n:.3f} | {ndcg(sel) * len(sel) / n:.3f} |")
    print(f"| no hit | {ranks.count(0) / n:.3f} | 0 |")


def print_generic(texts: list[str], ranks: list[int], paragraph_ranks: list[int]) -> dict:
    """Markdown table: nDCG@10 (chunks, paragraphs) of the questions :data:`GENERIC` matches
    and of the rest; returns the same numbers."""
    out = {}
    for label, keep in (("generic (names only 'this study / report')", True), ("the rest", False)):
        sel = [i for i, t in enumerate(texts) if bool(GENERIC.search(t)) == keep]
        out[label] = {"questions": len(sel), "chunks": ndcg([ranks[i] for i in sel]),
                      "paragraphs": ndcg([paragraph_ranks[i] for i in sel])}
    print("\n# within-article nDCG@10 by question kind\n")
    print("| questions | n | nDCG@10 chunks | nDCG@10 paragraphs |\n|---|---|---|---|")
    for label, r in out.items():
        print(f"| {label} | {r['questions']} | {r['chunks']:.3f} | {r['paragraphs']:.3f} |")
    return out


def ndcg(ranks: list[int]) -> float:
    """Mean nDCG@10 of questions with one evidence span whose first hit is at ``ranks``."""
    return sum(1 / math.log2(1 + r) for r in ranks if 0 < r <= 10) / max(1, len(ranks))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="a bench.covidqa_cv variant folder (fold0, ...)")
    ap.add_argument("--data", default=str(DEFAULT_DATA))
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-folds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--sentence-evidence", type=float, nargs="+", default=[0.3, 0.5])
    ap.add_argument("--weights", type=float, nargs="+", default=[0.6, 0.8])
    ap.add_argument("--neighbour", type=float, nargs="+", default=[0.0, 0.1, 0.2])
    ap.add_argument("--sentence-maxsim", type=float, nargs="+", default=[0.0])
    ap.add_argument("--length-penalty", type=float, nargs="+", default=[0.0])
    ap.add_argument("--isolated", type=float, nargs="+", default=[0.0],
                    help="weights e of the cosine of each chunk's text encoded ON ITS OWN by the same "
                         "adapted encoder: score' = (1 - e) score + e cos (isolated_cosine)")
    ap.add_argument("--bigram", type=float, nargs="+", default=[0.0],
                    help="weights g of a bigram BM25 term added to the score (bigram_bm25)")
    ap.add_argument("--heading", type=float, nargs="+", default=[0.0],
                    help="weights h of the cosine of the question to the chunk's section heading "
                         "path, added to the score (heading_cosine)")
    ap.add_argument("--cut-unit", nargs="+", default=["word"], choices=["word", "sentence"],
                    help="where the trained model's hard cuts may fall at inference "
                         "(BoundaryConfig.cut_unit; the models were trained with their own)")
    ap.add_argument("--query-weighting", nargs="+", default=["uniform", "stopwords", "idf"],
                    choices=["uniform", "stopwords", "idf"])
    ap.add_argument("--record-cut", default="word", choices=["word", "sentence"],
                    help="the cut unit of the rank distribution's row (among --cut-unit)")
    ap.add_argument("--record", type=float, nargs=2, default=[0.3, 0.8], metavar=("W", "M"),
                    help="the export of record's W and M (uniform, no smoothing): rank distribution")
    ap.add_argument("--cache-dir", default="data/cache")
    ap.add_argument("--out", default=None, help="folder for within_article_probe.json (default: --run)")
    args = ap.parse_args(argv)
    if (args.record[0] not in args.sentence_evidence or args.record[1] not in args.weights
            or "uniform" not in args.query_weighting or 0 not in args.neighbour or 0 not in args.length_penalty
            or 0 not in args.sentence_maxsim or 0 not in args.bigram
            or 0 not in args.isolated or 0 not in args.heading or args.record_cut not in args.cut_unit):
        ap.error("--record W and M must be among --sentence-evidence and --weights, 'uniform' among "
                 "--query-weighting, 0 among --neighbour, --length-penalty, --sentence-maxsim, --bigram, --isolated and --heading, --record-cut among --cut-unit")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    t0 = time.perf_counter()
    models = {k: selected_checkpoint(Path(args.run) / f"fold{k}") for k in args.train_folds}  # before the data
    bench, base_pipe, _, settings = covidqa_setup(args.data, args.cache_dir)
    grid = list(itertools.product(args.cut_unit, args.query_weighting, args.sentence_evidence, args.weights, args.neighbour,
                                  args.length_penalty, args.sentence_maxsim, args.bigram, args.isolated,
                                  args.heading))
    table: dict[str, list[dict]] = {}
    ranks: list[int] = []
    paragraph_ranks: list[int] = []
    texts: list[str] = []
    for k in args.train_folds:
        scorer = TrainedScorer.load(models[k])
        require_real_graph(scorer.pipeline_config, f"bench.within_article_probe ({models[k]})")
        side = cv_side(bench, args.folds, k, args.seed, "train")
        splits = {"dev": dev_side(side, side.documents, "lora_lexical_small", []),
                  "test": cv_side(bench, args.folds, k, args.seed, "test")}
        res = {}
        for name, split in splits.items():
            for cu, w in itertools.product(args.cut_unit, args.sentence_evidence):
                chunks, graph, late, n_pieces = scored(scorer, split, base_pipe, w, args.query_weighting,
                                                       sentences=any(args.sentence_maxsim), cut_unit=cu)
                bigram = bigram_bm25([c.text for c in chunks], [q.text for q in split.questions]) \
                    if any(args.bigram) else 0.0
                iso = isolated_cosine(scorer, base_pipe, [c.text for c in chunks],
                                      [q.text for q in split.questions]) if any(args.isolated) else 0.0
                heading = heading_cosine(scorer, base_pipe, chunks, [q.text for q in split.questions]) \
                    if any(args.heading) else 0.0
                for _, qw, _, m, d, c, v, gb, e, h in [g for g in grid if g[0] == cu and g[2] == w]:
                    mixed = (1 - v) * late[qw] + v * late["sentence"] if v else late[qw]
                    score = length_penalty(smooth_neighbours((1 - m) * graph + m * mixed, chunks, d), n_pieces, c)
                    score = (1 - e) * (score + gb * bigram) + e * iso + h * heading
                    res[name, cu, qw, w, m, d, c, v, gb, e, h] = means(split, chunks, score, settings)
                    if name == "test" and (cu, qw, w, m, d, c, v, gb, e, h) == (
                            args.record_cut, "uniform", *args.record, 0, 0, 0, 0, 0, 0):
                        by_chunk, by_paragraph = first_hit_ranks(split, chunks, score)
                        ranks += by_chunk
                        paragraph_ranks += by_paragraph
                        texts += [q.text for q in split.questions]
        for g in grid:
            table.setdefault("{} {} W={:g} M={:g} d={:g} c={:g} v={:g} g={:g} e={:g} h={:g}".format(*g), []).append(res[("test", *g)])
        families = {f"{qw}: cut unit, W, M, d, c, v, g, e, h chosen on dev": [g for g in grid if g[1] == qw]
                    for qw in args.query_weighting}
        families.update({f"cut at {cu}: W, M, d, c, v, g, e, h chosen on dev": [g for g in grid if g[0] == cu]
                         for cu in args.cut_unit})
        families["all: chosen on dev"] = grid
        for label, cands in families.items():
            best = max(sorted(cands), key=lambda g: res[("dev", *g)]["ev_mrr"])
            table.setdefault(label, []).append({**res[("test", *best)], "chosen": "{} {} {:g} {:g} {:g} {:g} {:g} {:g} {:g} {:g}".format(*best)})
        print(f"fold {k} ({time.perf_counter() - t0:.0f} s)", flush=True)
    record = f"cut at {args.record_cut}, W={args.record[0]:g} M={args.record[1]:g}"
    print_ranks(f"within-article rank of the first evidence chunk, {record}", ranks)
    print_ranks(f"within-article rank of the first evidence paragraph (paragraphs scored by their "
                f"best chunk), {record}", paragraph_ranks)
    kinds = print_generic(texts, ranks, paragraph_ranks)
    print(f"\n# COVID-QA dev, folds {args.train_folds} of {args.folds} by article; models: {args.run}\n")
    print_table(table)
    write_json_atomic(Path(args.out or args.run) / "within_article_probe.json",
                      run_metadata({"args": vars(args), "rows": table, "ranks": ranks, "paragraph_ranks": paragraph_ranks,
                                    "by_question_kind": kinds,
                                    "seconds": time.perf_counter() - t0}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
