"""``evaluate(cfg)``: every configured method on every configured benchmark."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from tqdm.contrib.logging import logging_redirect_tqdm

from gralc.artefacts import check_output_dir, claim_dir, output_lock
from gralc.config import WandbConfig, to_dict
from gralc.data.benchmarks import load_benchmarks
from gralc.data.demo import check_vocabulary
from gralc.evaluation.config import EvalConfig
from gralc.evaluation.evidence import budget_counter
from gralc.evaluation.methods import (
    DEFAULT_METHODS,
    MethodResult,
    RunSettings,
    check_methods,
    chunk_key,
    evaluate_method,
    make_chunker,
    method_graph,
)
from gralc.pipeline import Pipeline
from gralc.retrieval.graph.search import GRAPH_SEARCHERS
from gralc.runinfo import expand_run_dir, seed_everything, write_json_atomic
from gralc.safe_load import read_json_untrusted

logger = logging.getLogger(__name__)


def output_dir(cfg: EvalConfig) -> Path:
    """The results folder of ``cfg``: ``paths.output_dir`` (default ``results/{run_id}``) with
    ``{run_id}`` expanded (:func:`~gralc.runinfo.expand_run_dir`).

    >>> from gralc.config import load_config
    >>> output_dir(load_config(EvalConfig, overrides=["paths.output_dir=results/demo"]))
    PosixPath('results/demo')
    """
    return Path(expand_run_dir(cfg.paths.output_dir or "results/{run_id}"))


#: a model's row name: what a file name, a W&B key and a table cell can all carry
MODEL_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


def named_models(cfg: EvalConfig) -> list[tuple[str, str]]:
    """``(row name, model path)`` of every model of ``cfg.models``, checked before any work: a
    list gives ``gralc`` for one model and a name after each path for several (the shortest
    unique tail of the path: ``runs/a/export`` and ``runs/b/export`` are ``a_export`` and
    ``b_export``); a mapping names them. Names must be unique, fit :data:`MODEL_NAME`, and
    none of a model's rows (:func:`~gralc.evaluation.trained_rows.row_names`) may be another
    row's name (a method's or another model's).

    >>> from gralc.config import load_config
    >>> named_models(load_config(EvalConfig, overrides=["models=[runs/a/export,runs/b/export]"]))
    [('a_export', 'runs/a/export'), ('b_export', 'runs/b/export')]
    """
    from gralc.evaluation.trained_rows import row_names

    models = cfg.models if cfg.models is not None else []
    if isinstance(models, str):
        models = [models]
    if isinstance(models, dict):
        pairs = [(str(k), v) for k, v in models.items()]
    elif isinstance(models, list | tuple):
        pairs = _path_names([str(m) for m in models]) if len(models) > 1 else \
            [("gralc", m) for m in models]
    else:
        raise ValueError(f"models={models!r}: give a list of models (models=[A,B]) or a mapping "
                         "name -> model (models={baseline: A, mine: B})")
    out = []
    for name, path in pairs:
        if not isinstance(path, str) or not path:
            raise ValueError(f"models: {name}: {path!r} is not a path to a trained model")
        if not MODEL_NAME.match(name):
            raise ValueError(f"models: the name {name!r} must start with a letter and hold only "
                             "letters, digits, _ . -")
        out.append((name, path))
    seen: dict[str, str] = {m: f"the method {m}" for m in cfg.methods}
    for name, path in out:
        for row in row_names(name):
            if row in seen:
                raise ValueError(f"models: {name} ({path}) adds the row {row!r}, which is already "
                                 f"{seen[row]}: name the models differently (models={{NAME: PATH, ...}})")
            seen[row] = f"a row of the model {name} ({path})"
    return out


def _path_names(paths: list[str]) -> list[tuple[str, str]]:
    """Names after paths: the shortest tail of path parts (joined by ``_``) unique among them."""
    parts = [[re.sub(r"[^A-Za-z0-9_.-]+", "_", p) for p in Path(path).parts if p not in ("/", ".")]
             for path in paths]
    for n in range(1, max(map(len, parts), default=1) + 1):
        names = ["_".join(p[-n:]) or "model" for p in parts]
        if len(set(names)) == len(names):
            break
    names = [name if MODEL_NAME.match(name) else f"m_{name}" for name in names]
    if len(set(names)) != len(names):
        raise ValueError(f"models={paths}: two entries name the same model; give each once, or "
                         "name them (models={a: PATH, b: PATH})")
    return list(zip(names, paths))


def check_reference(cfg: EvalConfig) -> None:
    """``significance.reference`` must name a row: an unknown name is refused (a typo), a known
    row this run does not include is warned about (its gains table is left out). A row name of
    GraLC 0.1 (``gralc_graph``, ...) is read as today's (:data:`ROW_ALIASES`).

    >>> from gralc.config import load_config
    >>> check_reference(load_config(EvalConfig, overrides=["significance.reference=bm25"])) is None
    True
    """
    from gralc.evaluation.trained_rows import ROW_ALIASES, row_names

    reference = cfg.significance.reference
    if reference in ROW_ALIASES:
        reference = cfg.significance.reference = ROW_ALIASES[reference]
    trained = [row for name, _ in named_models(cfg) for row in row_names(name)]
    if reference is None or reference in cfg.methods or reference in trained:
        return
    if reference not in [m.name for m in DEFAULT_METHODS] + row_names("gralc"):
        raise ValueError(f"significance.reference={reference}: no such row; name a method "
                         f"({', '.join(cfg.methods)}), a model's row, or significance.reference=null")
    logger.warning("significance.reference=%s is not among this run's rows: no gains table "
                   "(add it to methods=[...] or choose another reference)", reference)


def evaluate(cfg: EvalConfig) -> tuple[list[MethodResult], Path]:
    """Run the configured methods and write the report; returns results and the run dir.

    Example: ``results, out = evaluate(load_config(EvalConfig, CONFIG_DIR / "eval.yaml", ["data=demo"]))``
    -> one :class:`MethodResult` per row and benchmark, and the folder the report went to.
    """
    seed_everything(cfg.seed)
    by_name = {m.name: m for m in DEFAULT_METHODS}
    unknown = [m for m in cfg.methods if m not in by_name]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; available: {', '.join(by_name)}")
    specs = [by_name[m] for m in cfg.methods]
    check_methods(specs)
    if cfg.generation.enabled and not cfg.generation.model:
        raise ValueError("generation.enabled=true needs generation.model (the endpoint's model "
                         "name) and generation.base_url; see configs/eval.yaml")
    models = named_models(cfg)  # validated before any encoding
    for name, model_path in models:
        if not Path(model_path).exists():
            raise FileNotFoundError(f"models: {name}={model_path}: no such checkpoint, export or "
                                    "run folder")
    check_reference(cfg)
    if cfg.paths.cache_dir and cfg.pipeline.encoder.cache_dir is None:
        cfg.pipeline.encoder.cache_dir = cfg.paths.cache_dir
    out = output_dir(cfg)
    inputs = run_inputs(cfg)
    check_output_dir(out, "eval_results", cfg.paths.force, inputs, *OUT_KEYS)  # before any encoding
    from gralc.model.persistence import load_trained

    for name, model_path in models:  # each model loads (safely, every file checked) before any encoding
        try:
            load_trained(model_path)
        except (ValueError, FileNotFoundError) as exc:
            kind = FileNotFoundError if isinstance(exc, FileNotFoundError) else ValueError
            raise kind(f"models: {name}={model_path}: {exc}") from None
    with output_lock(out):  # one writer of a results folder at a time, taken before any work
        digest = _settings_digest(cfg)
        check_vocabulary(cfg.pipeline.knowledge.vocabulary,
                         f"data={cfg.data.name} {cfg.data.path or ''}".strip(), cfg.data.name == "demo")
        started = time.perf_counter()
        pipeline = Pipeline(cfg.pipeline)
        out = claim_dir(out, "eval_results", cfg.paths.force, inputs, *OUT_KEYS)
        settings = RunSettings(tuple(cfg.ks), cfg.candidates, cfg.index, cfg.fusion, cfg.evidence,
                               budget_counter(pipeline.encoder), cfg.generation, cfg.graph,
                               cfg.search)
        results: list[MethodResult] = []
        timings: dict[str, float] = {}
        prepared_for: dict[int, list] = {}
        # a bar over the rows on a terminal only (tqdm's disable=None), log lines above it
        with tqdm(total=0, desc="rows", unit="row", disable=None if cfg.progress else True) as bar, \
                (nullcontext() if bar.disable else logging_redirect_tqdm()):
            for bench in load_benchmarks(cfg.data, linker=pipeline.linker, cv_side="test"):
                bar.total += len(specs) + len(models)
                bar.refresh()
                t0 = time.perf_counter()
                key = id(bench.documents)  # splits of one corpus share the same document list
                if key not in prepared_for:
                    prepared_for[key] = pipeline.prepare(bench.documents, progress=cfg.progress)
                prepared = prepared_for[key]
                timings[f"{bench.name}/prepare_s"] = time.perf_counter() - t0
                logger.info("%s: %d documents, %d questions", bench.name, len(bench.documents), len(bench.questions))
                q_vecs = pipeline.encoder.encode_queries([q.text for q in bench.questions]).numpy()
                chunked: dict[tuple, tuple[list, float]] = {}  # rows with one chunking share one pass
                graphs: dict[tuple, object] = {}  # and one corpus graph
                for spec in _ticked(specs, bar):
                    row_file = out / "rows" / _file_name(f"{bench.name}__{spec.name}.json")
                    if cfg.resume and (done := _read_saved(row_file, digest)) is not None:
                        logger.info("%s / %s: kept from %s", bench.name, spec.name, row_file)
                        results.append(done)
                        continue
                    ck = chunk_key(spec)
                    if ck not in chunked:
                        t1 = time.perf_counter()
                        chunker = make_chunker(pipeline, spec)
                        chunked[ck] = ([c for p in prepared for c in chunker.chunk(p)], time.perf_counter() - t1)
                    chunks, t_chunk = chunked[ck]
                    if spec.searcher in GRAPH_SEARCHERS and ck not in graphs:
                        graphs[ck] = method_graph(prepared, chunks, pipeline, settings)
                    result = evaluate_method(spec, bench, prepared, pipeline, settings, chunks=chunks,
                                             q_vecs=q_vecs, graph_index=graphs.get(ck))
                    result.timings["chunk_s"] = t_chunk
                    results.append(result)
                    write_json_atomic(row_file, {"settings": digest, **asdict(result)})  # survives a kill
                    logger.info("%s / %s: ev_recall@5=%.4f mrr=%.4f", bench.name, spec.name,
                                result.metrics.get("ev_recall@5", float("nan")), result.metrics["mrr"])
                for name, model_path in _ticked(models, bar):
                    from gralc.artefacts import model_digest
                    from gralc.evaluation.trained_rows import evaluate_trained
                    from gralc.model.persistence import resolve_model

                    model_path = str(resolve_model(model_path))  # a run folder: its selected model
                    row_file = out / "rows" / _file_name(f"{bench.name}__model__{name}.json")
                    model_key = f"{digest}:{model_digest(model_path)}"  # the model's weights too
                    if cfg.resume and (done := _read_saved(row_file, model_key, rows=True)) is not None:
                        logger.info("%s / %s: kept from %s", bench.name, name, row_file)
                        results.extend(done)
                        continue
                    rows = evaluate_trained(model_path, bench, prepared, pipeline, settings, prefix=name)
                    results.extend(rows)
                    write_json_atomic(row_file, {"settings": model_key, "rows": [asdict(r) for r in rows]})
        timings["total_s"] = time.perf_counter() - started
        _write(results, out, cfg, timings)
        return results, out


def _ticked(items, bar):
    """``items``, one step of ``bar`` after each (one ``continue``d included)."""
    for item in items:
        yield item
        bar.update()


def _write(results: list[MethodResult], out: Path, cfg: EvalConfig, timings: dict[str, float]) -> None:
    from gralc.evaluation.report import PAPER_REFERENCE, write_report

    config = to_dict(cfg)
    if config["generation"]["api_key"]:
        config["generation"]["api_key"] = "<redacted>"  # never written into a results folder
    write_report(results, out, config, timings, paper=PAPER_REFERENCE, significance=cfg.significance)
    try:
        from gralc.evaluation.plots import write_plots

        write_plots(results, out)
    except ImportError:  # pragma: no cover - plots module optional at import time
        logger.warning("plots unavailable")
    if cfg.wandb.enabled:
        _log_wandb(results, cfg.wandb, out, config)  # the API key redacted there too


#: how eval.py spells the output folder's options in its messages
OUT_KEYS = ("paths.output_dir=", "paths.force=true")  # (out_key, force_key)


def run_inputs(cfg: EvalConfig) -> list[str]:
    """Every path a run reads (corpus, models, knowledge files, caches): the output folder may
    overlap none of them.

    Example: ``run_inputs(cfg)`` -> ``[data.path, each model, the knowledge files, the caches]``
    (as strings; unset ones left out).
    """
    k = cfg.pipeline.knowledge
    paths = [cfg.data.path, *(path for _, path in named_models(cfg)), k.vocabulary, k.tree_file,
             *(v for v in to_dict(k.relations).values() if isinstance(v, str)),
             cfg.paths.cache_dir, cfg.pipeline.encoder.cache_dir]
    return [str(p) for p in paths if p]


def data_fingerprint(paths: list[str | None]) -> str:
    """SHA-256 over the files of ``paths`` (folders walked in order): their names and contents
    (files over 64 MiB: size and modification time), so a changed corpus reruns its rows.

    >>> import tempfile
    >>> len(data_fingerprint([tempfile.mkdtemp(), None]))
    64
    """
    from gralc.artefacts import file_sha256

    digest = hashlib.sha256()
    for root in paths:
        if not root or not Path(root).exists():
            digest.update(f"{root}:absent\n".encode())
            continue
        base = Path(root)
        files = [base] if base.is_file() else sorted(f for f in base.rglob("*") if f.is_file())
        for f in files:
            st = f.stat()
            content = file_sha256(f) if st.st_size <= 64 << 20 else f"{st.st_size}:{st.st_mtime_ns}"
            digest.update(f"{f.relative_to(base) if f != base else f.name}:{content}\n".encode())
    return digest.hexdigest()


def _settings_digest(cfg: EvalConfig) -> str:
    """What a row's numbers depend on: every setting but the row list, paths, display and the
    gains report, and the data it reads (the corpus, the knowledge files)."""
    settings = {k: v for k, v in to_dict(cfg).items()
                if k not in ("methods", "models", "paths", "progress", "resume", "wandb", "significance")}
    k = cfg.pipeline.knowledge
    settings["data_sha256"] = data_fingerprint(
        [cfg.data.path, k.vocabulary, k.tree_file,
         *(v for v in to_dict(k.relations).values() if isinstance(v, str))])
    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _read_saved(path: Path, key: str, rows: bool = False):
    """What an earlier run saved in ``path`` with the same ``key`` (settings, data and, for a
    trained model's ``rows``, its weights): one row, or the list of a model's rows; None when
    absent, written with another key, or unreadable (the row then runs again)."""
    if not path.is_file():
        return None
    try:
        data = read_json_untrusted(path, allow_interpolation=True)
        if data.pop("settings") != key:
            logger.info("%s was written with other settings, data or weights: running it again", path)
            return None
        return [MethodResult(**r) for r in data["rows"]] if rows else MethodResult(**data)
    except (ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring %s (%s): running it again", path, exc)
        return None


def print_tables(results: list[MethodResult]) -> None:
    """Per benchmark: ranking metrics, then structural metrics, with chunk statistics.

    Example: ``print_tables(evaluate(cfg)[0])`` prints, per benchmark, the ranking and the
    structural metrics of every row on the terminal.
    """
    from gralc.evaluation.report import (
        TABLE5_COLUMNS,
        benchmarks_of,
        evidence_columns,
        generic_columns,
        print_table,
    )

    ranking = [c for c in generic_columns(results)
               if not c.startswith(("seccov", "cross_section", "ev_", "wa_"))]
    structural = [c for c in TABLE5_COLUMNS if any(c in r.metrics for r in results)]
    for bench in benchmarks_of(results):
        evidence = evidence_columns([r for r in results if r.benchmark == bench])
        if evidence:
            print_table(results, bench, evidence)
        print_table(results, bench, ranking)
        if structural:
            print_table(results, bench, structural)


def _log_wandb(results: list[MethodResult], settings: WandbConfig, out: Path,
               config: dict[str, Any]) -> None:
    from gralc.runinfo import wandb_logger

    run = wandb_logger(settings, config, out, "eval").experiment
    single = len({r.method for r in results}) == 1  # sweeps over one method: short names too
    for r in results:
        run.log({f"{r.benchmark}/{r.method}/{k}": v for k, v in r.metrics.items()})
        if single:
            run.log({f"{r.benchmark}/{k}": v for k, v in r.metrics.items()})
    run.finish()
