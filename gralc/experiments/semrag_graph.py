"""SemRAG's graph search (corpus graph, communities, local / global search), measured.

    python -m gralc.experiments.semrag_graph --parts covidqa pmc cost --out results/semrag

Parts: ``covidqa`` (COVID-QA dev: SemRAG local / global graph search over semantic chunks vs
semantic chunking alone, its hybrid, BM25 and the best untrained GraLC rows, at equal
retrieved-text budgets), ``pmc`` (the PMC template questions, where a graph should help
most), ``cost`` (the graph's build time against the encoder pass it rides on, and the memory
of a graph over 10k chunks) and ``concepts`` (what MeSH links in the COVID-QA questions).
Every number is printed as a table and written to ``OUT/semrag.json`` with the run metadata.
Knowledge: the full MeSH 2024 graph of the shared data folder
(:mod:`gralc.experiments.real_data`; ``--set pipeline.knowledge.vocabulary=...`` replaces it).
The parts in full: docs/experiments.md."""

from __future__ import annotations

import argparse
import logging
import platform
import time
import tracemalloc
from pathlib import Path

from gralc.config import CONFIG_DIR, load_config
from gralc.encoding.precision import native_bf16
from gralc.evaluation.config import EvalConfig
from gralc.experiments.real_data import (
    SHARED_DATA,
    knowledge_overrides,
    names_vocabulary,
    require_real_graph,
)
from gralc.runinfo import blas_kernel, run_metadata, write_json_atomic
from gralc.safe_load import read_json_untrusted

SHARED = SHARED_DATA
GRAPH_ROWS = ["semantic", "semantic_graph_local", "semantic_graph_global", "semantic_hybrid"]
ROWS = {
    "covidqa": [*GRAPH_ROWS, "bm25", "structure_aware", "structure_aware_hybrid", "multilevel_hybrid"],
    "pmc": [*GRAPH_ROWS, "bm25", "structure_aware", "structure_aware_hybrid", "section_diverse"],
}
METRICS = ["ev_recall@256wp", "ev_recall@512wp", "ev_recall@1024wp", "ev_mrr", "ev_recall@5",
           "wa_ndcg@10", "mrr", "cross_section_recall@5"]
logger = logging.getLogger("gralc.experiments.semrag_graph")


def run_eval(part: str, out: Path, extra: list[str]) -> dict:
    from gralc.evaluation.run import evaluate

    if part == "covidqa":
        data = ["data=squad", f"data.path={SHARED}/covidqa/covidqa_dev.json"]
    else:
        questions = out / "pmc_questions.jsonl"
        if not questions.is_file():
            from gralc.data.crosssection_questions import main as make_questions

            make_questions([str(SHARED / "pmc"), "--out", str(questions), "--vocabulary",
                            f"{SHARED}/mesh/mesh2024_thesaurus_terms.tsv"])
        data = ["data=pmc", f"data.path={SHARED}/pmc", "data.conditions=[full]",
                f"data.questions={questions}"]
    mesh = [] if names_vocabulary(extra) else knowledge_overrides(SHARED)
    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", [
        *data, *mesh, f"methods=[{','.join(ROWS[part])}]", f"paths.output_dir={out / part}",
        "paths.force=true", "progress=false", "resume=true", *extra])
    require_real_graph(cfg, f"gralc.experiments.semrag_graph {part}")
    results, _ = evaluate(cfg)
    return {r.method: {**r.metrics, **{k: v for k, v in r.chunk_stats.items()},
                       **{f"t_{k}": v for k, v in r.timings.items()}} for r in results}


def cost(out: Path) -> dict:
    """Build time of the graph vs the encoder pass; memory of a 10k-chunk graph."""
    from dataclasses import replace

    from gralc.data.benchmarks import squad_benchmark
    from gralc.documents.model import Document
    from gralc.evaluation.methods import RunSettings, method_graph
    from gralc.knowledge.communities import detect_communities
    from gralc.knowledge.corpus_graph import build_corpus_graph
    from gralc.pipeline import Pipeline, PipelineConfig, load_documents
    from gralc.retrieval.graph.communities import build_reports
    from gralc.retrieval.graph.search import GraphConfig

    pcfg = load_config(PipelineConfig, None, knowledge_overrides(SHARED, prefix=""))
    pipeline = Pipeline(replace(pcfg, encoder=replace(pcfg.encoder, cache_dir=None)))
    bench = squad_benchmark(SHARED / "covidqa" / "covidqa_dev.json")
    t0 = time.perf_counter()
    prepared = pipeline.prepare(bench.documents, progress=False)  # uncached: the real pass
    t_encode = time.perf_counter() - t0
    n_tokens = sum(len(p.tokens.offsets) for p in prepared)
    chunks = [c for p in prepared for c in pipeline.chunker("late").chunk(p)]
    index = method_graph(prepared, chunks, pipeline, RunSettings(graph=GraphConfig()))
    t = index.timings
    res = {"encoder_pass_s": t_encode, "tokens": n_tokens, "chunks": len(chunks), **t,
           "ratio_total": t["graph_total_s"] / t_encode,
           "ratio_without_vectors": (t["graph_total_s"] - t["graph_embed_s"]) / t_encode,
           **index.stats()}

    # memory: every COVID-QA and PMC article, chunks of 3 sentences (no encoder needed)
    docs: list[Document] = list(bench.documents)
    for sub in sorted((SHARED / "pmc").iterdir()):
        docs += load_documents(sub)
    linked = [(d, pipeline.linker.link(d.text)) for d in docs]
    spans = []
    for d in docs:
        sents = sorted(d.sentences, key=lambda s: s.start)
        for i in range(0, len(sents), 3):
            group = sents[i : i + 3]
            spans.append(_Span(d.id, f"{d.id}:{i // 3}", group[0].start, group[-1].end))
    spans = spans[:10_000]
    cfg = GraphConfig()
    tracemalloc.start()
    t0 = time.perf_counter()
    graph = build_corpus_graph(linked, spans, pipeline.knowledge_base, cfg.corpus)
    comms = detect_communities(graph, cfg.communities)
    reports = build_reports(graph, comms, linked, cfg.reports)
    t_build = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    path = graph.save(out / "graph_10k.json")
    res.update({
        "mem_docs": len(docs), "mem_chunks": len(spans), "mem_nodes": len(graph.nodes),
        "mem_edges": len(graph.edges), "mem_communities": len(comms), "mem_reports": len(reports),
        "mem_build_s": t_build, "mem_peak_mb": peak / 2**20,
        "mem_vectors_mb": (len(graph.nodes) + len(reports)) * pipeline.encoder.dim * 4 / 2**20,
        "mem_json_mb": path.stat().st_size / 2**20,
    })
    return res


class _Span:
    def __init__(self, doc_id: str, chunk_id: str, start: int, end: int) -> None:
        self.doc_id, self.chunk_id, self.char_start, self.char_end = doc_id, chunk_id, start, end


def question_concepts(top: int = 5) -> dict:
    """COVID-QA questions linked as documents are: questions without a concept, and the most
    frequent concepts with the share of the 49 articles mentioning each."""
    from collections import Counter

    from gralc.data.benchmarks import squad_benchmark
    from gralc.knowledge.linker import EntityLinker
    from gralc.model.query_features import link_questions
    from gralc.pipeline import PipelineConfig, load_knowledge

    pcfg = load_config(PipelineConfig, None, knowledge_overrides(SHARED, prefix=""))
    vocab, _ = load_knowledge(pcfg.knowledge)
    linker = EntityLinker(vocab, pcfg.knowledge.linker)
    bench = squad_benchmark(SHARED / "covidqa" / "covidqa_dev.json")
    in_docs = Counter(cid for d in bench.documents for cid in {m.concept_id for m in linker.link(d.text)})
    per_q = [{m.concept_id for m in ms} for ms in link_questions(linker, [q.text for q in bench.questions])]
    counts = Counter(cid for ids in per_q for cid in ids)
    return {"questions": len(per_q), "without_concept": sum(not ids for ids in per_q),
            "top": [{"id": cid, "name": vocab[cid].name, "questions": n,
                     "article_share": in_docs[cid] / len(bench.documents)}
                    for cid, n in counts.most_common(top)]}


def table(part: str, rows: dict) -> str:
    keys = [m for m in METRICS if any(m in r for r in rows.values())]
    head = "| row | " + " | ".join(k.replace("ev_recall@", "ev R@").replace("wa_ndcg@10", "wa nDCG@10")
                                    for k in keys) + " | chunks | mean wp |"
    lines = [f"**{part}**", "", head, "|" + "---|" * (len(keys) + 3)]
    for name, r in rows.items():
        lines.append(f"| {name} | " + " | ".join(f"{r[k]:.3f}" if k in r else "" for k in keys)
                     + f" | {int(r.get('n_chunks', 0))} | {r.get('pieces_mean', float('nan')):.0f} |")
    graph = next((r for n, r in rows.items() if "graph" in n), None)
    if graph:
        lines += ["", "graph: " + ", ".join(f"{k.removeprefix('graph_')} {v:.0f}" for k, v in graph.items()
                                            if k.startswith("graph_")),
                  "graph timings: " + ", ".join(f"{k.removeprefix('t_')} {v:.1f} s" for k, v in graph.items()
                                               if k.startswith("t_graph"))]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", nargs="+", default=["covidqa", "pmc", "cost"],
                    choices=["covidqa", "pmc", "cost", "concepts"])
    ap.add_argument("--set", nargs="*", default=[], help="extra eval.py key=value overrides (graph.*)")
    ap.add_argument("--out", default="results/semrag")
    ap.add_argument("--threads", type=int, default=0,
                    help="torch threads (0: torch's default); 1 keeps timings fair on a shared machine")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    bf16, why = native_bf16(torch.device("cpu"))
    header = (f"CPU: {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
              f"native bf16: {'yes' if bf16 else 'no'} ({why}; eval's encoder runs at "
              f"pipeline.encoder.precision, fp32 unless set), BLAS kernel: {blas_kernel()}")
    print(header)
    prior = out / "semrag.json"  # parts of an earlier run are kept unless run again
    result: dict = read_json_untrusted(prior, allow_interpolation=True) if prior.is_file() else {}
    result["run"] = run_metadata({"argv": argv, "header": header})
    for part in args.parts:
        if part == "concepts":
            c = result["concepts"] = question_concepts()
            print(f"\n**concepts**: {c['without_concept']} of {c['questions']} questions link no concept; most "
                  "linked: " + "; ".join(f"{t['name']} ({t['questions']} questions, {t['article_share']:.0%} "
                                         "of the articles)" for t in c["top"]))
        elif part == "cost":
            result["cost"] = cost(out)
            c = result["cost"]
            print(f"\n**cost** (COVID-QA, {c['chunks']} late chunks, {c['tokens']} tokens)\n\n"
                  f"| encoder pass | graph | communities | reports | vectors | graph total | ratio | ratio w/o vectors |\n"
                  f"|---|---|---|---|---|---|---|---|\n"
                  f"| {c['encoder_pass_s']:.1f} s | {c['graph_build_s']:.2f} s | {c['graph_communities_s']:.2f} s "
                  f"| {c['graph_reports_s']:.2f} s | {c['graph_embed_s']:.1f} s | {c['graph_total_s']:.1f} s "
                  f"| {c['ratio_total']:.2f}x | {c['ratio_without_vectors']:.3f}x |\n\n"
                  f"10k-chunk graph ({c['mem_docs']} articles, {c['mem_chunks']} chunks of 3 sentences): "
                  f"{c['mem_nodes']} concepts, {c['mem_edges']} edges, {c['mem_communities']} communities, "
                  f"{c['mem_reports']} reports in {c['mem_build_s']:.1f} s; peak {c['mem_peak_mb']:.0f} MiB "
                  f"(+ {c['mem_vectors_mb']:.1f} MiB vectors), {c['mem_json_mb']:.1f} MiB JSON")
        else:
            result[part] = run_eval(part, out, args.set)
            print("\n" + table(part, result[part]))
        write_json_atomic(out / "semrag.json", result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
