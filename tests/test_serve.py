"""``gralc serve``: the HTTP service over an index (issue 59). A real index, a real uvicorn
server on loopback started and stopped here, real HTTP clients; every request loop bounded."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from gralc.inference import Retriever
from gralc.serve import MAX_QUESTIONS, BatchingSearcher, make_app, manifest_signature

QUESTIONS = ["How long was the incubation period in ferrets?", "How many days of fever did mice have?",
             "Which animals coughed?", "When were the ferrets studied?"]


def _corpus(folder: Path, extra: bool = False) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "a.txt").write_text("Ferret cough study\n\nAbstract: Ferrets cough.\n\nIntroduction\n\n"
                                  "Coughing ferrets were studied in 2019. The incubation period "
                                  "was four days.\n", encoding="utf-8")
    (folder / "b.md").write_text("# Mouse fever\n\n## Results\n\nMice had fever for two days.\n", encoding="utf-8")
    if extra:
        (folder / "c.md").write_text("# Hamster study\n\n## Methods\n\nHamsters were infected intranasally.\n",
                                     encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    Retriever.build(_corpus(root / "corpus"), strategy="late").save(root / "index")
    return root


class Served:
    """A uvicorn server in a thread on a free loopback port; stopped by ``stop()``."""

    def __init__(self, app) -> None:
        import uvicorn

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start in 30 s"
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()
        assert not self.thread.is_alive()


@pytest.fixture
def served(index):
    directory = index / "index"
    searcher = BatchingSearcher(lambda: Retriever.load(directory), manifest_signature(directory),
                                max_batch=64, max_wait_s=0.02)
    server = Served(make_app(searcher, str(directory), watch_s=0.2))
    yield server, searcher
    server.stop()


def _ids(hits) -> list[str]:
    return [h["chunk_id"] for h in hits]


def test_search_answers_what_the_retriever_answers_and_health_says_what_is_served(served, index):
    server, searcher = served
    direct = Retriever.load(index / "index")
    with httpx.Client(base_url=server.url, timeout=60) as client:
        health = client.get("/health").json()
        assert health["status"] == "ok" and health["chunks"] == len(direct.index)
        assert health["manifest_sha256"] == manifest_signature(index / "index")()[2]
        one = client.post("/search", json={"question": QUESTIONS[0], "k": 3}).json()["hits"]
        many = client.post("/search", json={"questions": QUESTIONS, "k": 2}).json()["results"]
        assert "/search" in client.get("/openapi.json").json()["paths"]
    expected = direct.search(QUESTIONS[0], 3)
    assert _ids(one) == [h.chunk.chunk_id for h in expected]
    assert [h["score"] for h in one] == pytest.approx([float(h.score) for h in expected], abs=1e-5)
    assert one[0]["doc_id"] == "a" and {"section_path", "char_start", "text", "components"} <= set(one[0])
    assert [r["question"] for r in many] == QUESTIONS
    assert [_ids(r["hits"]) for r in many] == [[h.chunk.chunk_id for h in run]
                                                for run in direct.search_batch(QUESTIONS, 2)]


def test_concurrent_clients_are_batched_and_each_gets_its_own_answer(served, index):
    server, searcher = served
    direct = Retriever.load(index / "index")
    expected = {q: [h.chunk.chunk_id for h in direct.search(q, 2)] for q in QUESTIONS}
    asked = [QUESTIONS[i % len(QUESTIONS)] for i in range(48)]

    def ask(question: str) -> list[str]:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            response = client.post("/search", json={"question": question, "k": 2})
            assert response.status_code == 200, response.text
            return _ids(response.json()["hits"])

    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(ask, asked))
    assert got == [expected[q] for q in asked]  # no answer crossed to another request
    assert searcher.questions == 48 and searcher.batches < 48  # requests were searched together


def test_bad_requests_are_4xx_with_a_message(served):
    server, _ = served
    with httpx.Client(base_url=server.url, timeout=60) as client:
        cases = [({}, 422, "give 'question'"),
                 ({"question": "a", "questions": ["b"]}, 422, "not both"),
                 ({"question": "Which dose?", "k": 0}, 422, "greater than or equal to 1"),
                 ({"question": "Which dose?", "colour": 1}, 422, "colour"),
                 ({"questions": []}, 422, "'questions' is empty"),
                 ({"questions": ["Which dose?"] * (MAX_QUESTIONS + 1)}, 422, f"at most {MAX_QUESTIONS}"),
                 ({"question": 7}, 422, "valid string"),
                 ({"question": "\u200b\ufeff"}, 400, "no letters or digits"),
                 ({"questions": ["Which dose?", " "]}, 400, "question 2: the question has no letters")]
        for body, status, words in cases:
            response = client.post("/search", json=body)
            assert response.status_code == status, (body, response.text)
            assert words in json.dumps(response.json()), (body, response.text)
        form = client.post("/search", content=b'{"question": "Which animals coughed?"}',
                           headers={"content-type": "application/x-www-form-urlencoded"})  # curl -d
        assert form.status_code == 200 and form.json()["hits"]
        garbage = client.post("/search", content=b"\xff{not json", headers={"content-type": "application/json"})
        assert 400 <= garbage.status_code < 500 and garbage.json()["detail"]
        assert client.get("/search").status_code == 405
        assert client.post("/search", json={"question": "Which animals coughed?"}).status_code == 200  # still serving


@pytest.mark.slow  # a subprocess or two encoder loads: make test-all (CI) runs it
def test_a_rebuilt_index_is_swapped_in_whole_while_clients_keep_searching(served, index, tmp_path):
    """Readers never see a mixed index: every answer during the rebuild comes whole from the old
    index or whole from the new one, and none fails."""
    server, searcher = served
    directory = index / "index"
    old = {q: [h.chunk.chunk_id for h in Retriever.load(directory).search(q, 3)] for q in QUESTIONS}
    answers, stop = [], threading.Event()

    def keep_asking() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for i in range(400):  # bounded
                if stop.is_set():
                    break
                q = QUESTIONS[i % len(QUESTIONS)]
                response = client.post("/search", json={"question": q, "k": 3})
                answers.append((q, response.status_code, _ids(response.json().get("hits", []))))

    asker = threading.Thread(target=keep_asking)
    asker.start()
    try:
        Retriever.build(_corpus(tmp_path / "corpus", extra=True), strategy="late").save(directory, force=True)
        new = {q: [h.chunk.chunk_id for h in Retriever.load(directory).search(q, 3)] for q in QUESTIONS}
        deadline = time.monotonic() + 60
        while searcher.reloads < 1:
            assert time.monotonic() < deadline, f"not reloaded in 60 s: {searcher.reload_error}"
            time.sleep(0.1)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            health = client.get("/health").json()
            after = client.post("/search", json={"questions": QUESTIONS, "k": 3}).json()["results"]
    finally:
        stop.set()
        asker.join(timeout=120)
    assert health["reloads"] == 1 and health["chunks"] == len(Retriever.load(directory).index)
    assert [_ids(r["hits"]) for r in after] == [new[q] for q in QUESTIONS]
    assert answers and all(status == 200 for _, status, _ in answers)
    assert all(ids in (old[q], new[q]) for q, _, ids in answers)


def test_a_broken_rebuild_keeps_the_old_index_serving(served, index):
    server, searcher = served
    marker = index / "index" / ".gralc-artefact.json"
    saved = marker.read_bytes()
    try:
        marker.write_bytes(saved.replace(b'"files"', b'"filez"', 1))  # a manifest that does not verify
        deadline = time.monotonic() + 30
        while searcher.reload_error is None:
            assert time.monotonic() < deadline, "the watcher never tried the changed manifest"
            time.sleep(0.1)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            assert client.post("/search", json={"question": QUESTIONS[0]}).status_code == 200
            assert "does not load yet" in client.get("/health").json()["reload_error"]
    finally:
        marker.write_bytes(saved)
    assert searcher.reloads == 0


@pytest.mark.slow  # a subprocess or two encoder loads: make test-all (CI) runs it
def test_the_command_serves_and_refuses_bad_arguments(index):
    from gralc.serve import main

    assert main([str(index / "index"), "--port", "0"]) == 2
    assert main([str(index / "index"), "bogus.key=1"]) == 2
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "gralc", "serve", str(index / "index"), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline, health = time.monotonic() + 120, None
        while health is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json()
            except httpx.HTTPError:
                time.sleep(0.3)
        assert health and health["status"] == "ok", proc.stderr.read() if proc.poll() is not None else "no answer"
        hits = httpx.post(f"http://127.0.0.1:{port}/search", json={"question": QUESTIONS[1]}, timeout=60).json()
        assert hits["hits"][0]["doc_id"] == "b"
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=60)
    assert f"on http://127.0.0.1:{port}" in err and "POST /search" not in out
    assert "Traceback" not in err and "INFO" not in err  # nothing per request, no library chatter


@pytest.mark.slow  # a server subprocess: make test-all (CI) runs it
def test_the_load_test_counts_every_answer_and_stops_its_server(index, tmp_path):
    """gralc.experiments.serve_load: its server on a free loopback port, bounded by requests
    and time, every answer counted, no error, the server gone afterwards, the table renders."""
    from gralc.experiments.search_cost import memory_mb
    from gralc.experiments.serve_load import load_test
    from gralc.experiments.tables import serve_load_md

    got = load_test(index / "index", QUESTIONS, clients=3, seconds=60, max_requests=24)
    assert got["answered"] == 24 and got["n_errors"] == 0 and got["chunks"] > 0
    assert got["latency_ms"]["p50"] <= got["latency_ms"]["p99"] and got["server_questions"] >= 24
    assert got["rss_mb"]["after_warmup"] > 0 and got["rss_mb"]["end"] > 0
    assert memory_mb(got["server_pid"]) is None  # stopped and reaped
    assert "| 24 |" in serve_load_md(got)
