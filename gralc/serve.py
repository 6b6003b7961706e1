"""``gralc serve INDEX [--host 127.0.0.1] [--port 8000] [search.KEY=value ...]``: an index as an
HTTP JSON service.

``POST /search`` takes ``{"question": "...", "k": 10}`` or ``{"questions": [...], "k": 10}`` and
answers the hits ``gralc search --format json`` prints; ``GET /health`` says which index is
served; ``/docs`` and ``/openapi.json`` describe the API. Requests that arrive together are
searched as one batch (:class:`BatchingSearcher`); an index rebuilt in place is loaded,
verified and swapped in whole between two batches. A bad request is a 4xx with a message;
nothing is logged per request. How it behaves, in full: docs/inference.md, "Serving an index
over HTTP". FastAPI on uvicorn (why: docs/architecture.md), not a hand-written socket loop.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gralc.cli import CommandParser, command_main, route_settings

log = logging.getLogger(__name__)

#: the most questions one request may send (a larger request is a 413-like 422, said so)
MAX_QUESTIONS = 1024
#: the most hits per question
MAX_K = 1000


class BatchingSearcher:
    """Concurrent searches gathered into :meth:`Retriever.search_batch` calls, and the index
    they run on swapped atomically when it is rebuilt.

    ``search(questions, k)`` (a coroutine) queues the request; :meth:`run` takes the first
    request waiting, adds every request arriving within ``max_wait_s`` up to ``max_batch``
    questions, and searches them as one batch on one index (the retriever current when the
    batch starts) in one worker thread (torch and FAISS already use every core). ``load()``
    returns a new retriever; :meth:`watch` calls it when the index's manifest changes and
    swaps it in only once it loaded and verified.

    >>> import asyncio
    >>> class Echo:  # any object with search_batch and a len()-able index
    ...     index = [0]
    ...     def search_batch(self, questions, k): return [[q] * k for q in questions]
    >>> async def two():
    ...     searcher = BatchingSearcher(lambda: Echo(), None, max_wait_s=0.01)
    ...     task = asyncio.ensure_future(searcher.run())
    ...     got = await asyncio.gather(searcher.search(["a"], 1), searcher.search(["b", "c"], 2))
    ...     task.cancel()
    ...     return got, searcher.batches
    >>> asyncio.run(two())
    ([[['a']], [['b', 'b'], ['c', 'c']]], 1)
    """

    def __init__(self, load, signature, max_batch: int = 64, max_wait_s: float = 0.005) -> None:
        self.load, self.signature = load, signature
        self.max_batch, self.max_wait_s = max_batch, max_wait_s
        self.retriever = load()
        self.loaded_signature = signature() if signature else None
        self.loaded_at = time.time()
        self.reloads, self.batches, self.questions = 0, 0, 0
        self.reload_error: str | None = None
        self._queue: asyncio.Queue | None = None
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="gralc-search")

    @property
    def queue(self) -> asyncio.Queue:
        """The requests waiting, made on first use (inside the running event loop)."""
        if self._queue is None:  # made inside the running loop
            self._queue = asyncio.Queue()
        return self._queue

    async def search(self, questions: list[str], k: int) -> list[list[Any]]:
        """The hits of ``questions`` (``k`` each), searched with whatever else is waiting."""
        future = asyncio.get_running_loop().create_future()
        await self.queue.put((questions, k, future))
        return await future

    async def run(self) -> None:
        """The batching loop (runs until cancelled)."""
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self.queue.get()]
            size, deadline = len(batch[0][0]), loop.time() + self.max_wait_s
            while size < self.max_batch:
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    item = await asyncio.wait_for(self.queue.get(), left)
                except TimeoutError:
                    break
                batch.append(item)
                size += len(item[0])
            retriever = self.retriever  # one index for the whole batch
            questions = [q for qs, _, _ in batch for q in qs]
            depth = max(k for _, k, _ in batch)
            try:
                runs = await loop.run_in_executor(self._worker, retriever.search_batch, questions, depth)
            except Exception as exc:  # noqa: BLE001 (each waiting request gets the error)
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            self.batches, self.questions = self.batches + 1, self.questions + len(questions)
            start = 0
            for qs, k, future in batch:
                if not future.done():  # a client that went away
                    future.set_result([run[:k] for run in runs[start : start + len(qs)]])
                start += len(qs)

    async def watch(self, every_s: float) -> None:
        """Reload the index when its manifest changes (runs until cancelled)."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(every_s)
            now = self.signature()
            if now is None or now == self.loaded_signature:
                continue
            try:  # loaded and verified beside the old index, which keeps serving meanwhile
                fresh = await loop.run_in_executor(None, self.load)
            except Exception as exc:  # noqa: BLE001 (a rebuild in progress, or a broken one)
                message = f"the index changed but does not load yet ({exc}); still serving the one loaded"
                if message != self.reload_error:
                    log.warning("%s", message)
                self.reload_error = message
                continue
            self.retriever, self.loaded_signature = fresh, now
            self.loaded_at, self.reloads, self.reload_error = time.time(), self.reloads + 1, None
            log.warning("index reloaded: %d chunks", len(fresh.index))

    def close(self) -> None:
        """Stop the search thread (at server shutdown)."""
        self._worker.shutdown(wait=False, cancel_futures=True)


def manifest_signature(directory: Path):
    """A callable giving the index's manifest's identity (size, mtime, SHA-256), None while it
    is missing (a rebuild between removing and writing it)."""
    from gralc.artefacts import MARKER
    from gralc.safe_load import file_sha256

    manifest = Path(directory) / MARKER

    def signature() -> tuple | None:
        try:
            stat = manifest.stat()
            return stat.st_size, stat.st_mtime_ns, file_sha256(manifest)
        except OSError:
            return None

    return signature


def hit_json(rank: int, hit) -> dict:
    """A hit as ``gralc search --format json`` prints it, in plain JSON numbers."""
    from gralc.search import hit_record

    record = hit_record(rank, hit)
    record["score"] = float(record["score"])
    record["components"] = {k: float(v) for k, v in record["components"].items()}
    return record


class SearchRequest(BaseModel):
    """The body of ``POST /search``: one question (``question``) or several (``questions``),
    ``k`` hits each.

    >>> SearchRequest(question="Which dose?").k
    10
    """

    model_config = ConfigDict(extra="forbid")
    question: str | None = Field(None, description="one question")
    questions: list[str] | None = Field(None, max_length=MAX_QUESTIONS,
                                        description=f"several questions (at most {MAX_QUESTIONS})")
    k: int = Field(10, ge=1, le=MAX_K, description="hits per question")

    @model_validator(mode="after")
    def one_of(self):
        """Exactly one of ``question`` / ``questions``, and not an empty list."""
        if (self.question is None) == (self.questions is None):
            raise ValueError("give 'question' (one string) or 'questions' (a list of strings), not both")
        if self.questions is not None and not self.questions:
            raise ValueError("'questions' is empty")
        return self


class JsonBodies:
    """ASGI middleware: every POST body is read as JSON whatever its ``Content-Type`` says
    (``curl -d '{...}'`` sends ``application/x-www-form-urlencoded``), since the API takes JSON only."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-type"]
            scope = {**scope, "headers": [*headers, (b"content-type", b"application/json")]}
        await self.app(scope, receive, send)


def make_app(searcher: BatchingSearcher, index: str, watch_s: float = 2.0):
    """The FastAPI application over ``searcher`` (its batching loop and, when ``watch_s`` > 0,
    its index watcher run while the application does).

    Example::

        app = make_app(BatchingSearcher(lambda: Retriever.load("index/"), manifest_signature(Path("index/"))), "index/")
        uvicorn.run(app, port=8000)   # then: curl -d '{"question": "Which dose?"}' localhost:8000/search
    """
    from fastapi import FastAPI, HTTPException

    from gralc.documents.question import clean_question_text

    @asynccontextmanager
    async def lifespan(_app):
        tasks = [asyncio.ensure_future(searcher.run())]
        if watch_s > 0:
            tasks.append(asyncio.ensure_future(searcher.watch(watch_s)))
        yield
        for task in tasks:
            task.cancel()
        searcher.close()

    app = FastAPI(title="GraLC search", version=_version(), lifespan=lifespan,
                  description=f"Search the GraLC index `{index}`.")
    app.add_middleware(JsonBodies)

    @app.post("/search")
    async def search(request: SearchRequest) -> dict:
        """Hits of one question (``{"hits": [...]}``) or of several (``{"results": [{"question",
        "hits"}, ...]}``), best first."""
        asked = [request.question] if request.question is not None else request.questions
        try:  # the one question gate, per request, so no batch fails on another client's input
            questions = [clean_question_text(q, f"question {i + 1}") for i, q in enumerate(asked)]
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
        runs = await searcher.search(questions, request.k)
        hits = [[hit_json(rank, h) for rank, h in enumerate(run, 1)] for run in runs]
        if request.question is not None:
            return {"hits": hits[0]}
        return {"results": [{"question": q, "hits": h} for q, h in zip(questions, hits)]}

    @app.get("/health")
    async def health() -> dict:
        """Which index is served: its chunks, manifest digest, when it was loaded, reloads, and
        the work done (batches, questions)."""
        signature = searcher.loaded_signature
        return {"status": "ok", "index": index, "chunks": len(searcher.retriever.index),
                "manifest_sha256": signature[2] if signature else None,
                "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(searcher.loaded_at)),
                "reloads": searcher.reloads, "reload_error": searcher.reload_error,
                "batches": searcher.batches, "questions": searcher.questions}

    return app


def _version() -> str:
    from gralc.commands import version

    return version()


def parser() -> CommandParser:
    """The command line of ``gralc serve``."""
    from gralc.search import settings

    p = CommandParser("gralc serve", description=__doc__.split("\n\n", 1)[1].split("\n\n")[0],
                      settings=settings)
    p.add_argument("index", help="a folder written by `gralc index`")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: "
                                                       "this machine only; 0.0.0.0: every interface)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--max-batch", type=int, default=64, help="questions searched together at most (default 64)")
    p.add_argument("--max-wait-ms", type=float, default=5.0,
                   help="how long a question waits for others to batch with (default 5 ms)")
    p.add_argument("--watch-s", type=float, default=2.0,
                   help="check the index's manifest every N seconds, reload it when rebuilt (0: never)")
    p.add_argument("--model", help="the trained model that built the index, if it moved")
    p.add_argument("--access-log", action="store_true", help="log every request (uvicorn's access log)")
    return p


def _main(argv: list[str]) -> int:
    p = parser()
    args = p.start(argv)
    keys = route_settings(args.settings, ("search",))
    if keys[""]:
        p.error(f"unknown setting(s) {' '.join(keys[''])}: gralc serve takes search.KEY=value")
    if not 0 < args.port < 65536:
        p.error(f"--port must be 1-65535, got {args.port}")
    if args.max_batch < 1 or args.max_wait_ms < 0 or args.watch_s < 0:
        p.error("--max-batch must be >= 1, --max-wait-ms and --watch-s >= 0")
    import uvicorn

    from gralc.search import load_index

    directory = Path(args.index)
    searcher = BatchingSearcher(lambda: load_index(args.index, keys["search"], args.model),
                                manifest_signature(directory), args.max_batch, args.max_wait_ms / 1000)
    app = make_app(searcher, args.index, args.watch_s)
    print(f"serving {args.index} ({len(searcher.retriever.index)} chunks) on http://{args.host}:{args.port} "
          f"(POST /search, GET /health, API: /docs); Ctrl-C stops", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=args.access_log)
    return 0


main = command_main(_main)


if __name__ == "__main__":
    sys.exit(main())
