"""Generation evaluation against a local OpenAI-compatible HTTP server (stdlib, in a thread)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from gralc.chunking.chunk import Chunk
from gralc.config import CONFIG_DIR
from gralc.documents.question import Question
from gralc.evaluation.generation import (
    GenerationConfig,
    GenerationError,
    evaluate_generation,
    generate_answers,
    token_f1,
)


class FakeChat:
    """Records requests; fails the first ``fail`` ones with HTTP 500; then answers with the
    text of the first context line (``[1] (...) text``)."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    return self._send(404, {"error": "not found"})
                if outer.fail > 0:
                    outer.fail -= 1
                    return self._send(500, {"error": "overloaded"})
                user = body["messages"][-1]["content"]
                first = next(line for line in user.splitlines() if line.startswith("[1] "))
                answer = first.split(") ", 1)[1]
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": answer}}]})

            def _send(self, code, payload):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def server():
    fake = FakeChat()
    yield fake
    fake.server.shutdown()
    fake.server.server_close()


def chunk(doc: str, i: int, section: str, text: str) -> Chunk:
    return Chunk(doc, f"{doc}:{i}", text, 0, len(text), section_ids=[section],
                 section_path=[section.capitalize(), "Sub"])


def run_for(first_text: str) -> list[tuple[Chunk, float]]:
    secs = ["results", "results", "methods", "discussion", "results", "intro", "intro"]
    chunks = [chunk("d1", 0, secs[0], first_text)]
    chunks += [chunk("d1" if i < 5 else "d2", i, secs[i], f"other passage number {i}") for i in range(1, 7)]
    return [(c, 1.0 - 0.1 * i) for i, c in enumerate(chunks)]


def config(url: str, **kw) -> GenerationConfig:
    return GenerationConfig(enabled=True, base_url=url, model="tiny-test", api_key="k-123",
                            retries=2, backoff_s=0.01, timeout_s=5, **kw)


def test_token_f1_hand_cases():
    assert token_f1("Aspirin reduces risk.", "aspirin reduces risk") == 1.0
    assert token_f1("The aspirin", "aspirin") == 1.0  # article dropped
    # pred {aspirin, reduces, stroke}, ref has 7 tokens
    # overlap 3: p = 3/3, r = 3/7, f1 = 2*1*(3/7)/(1+3/7) = 0.6
    assert token_f1("aspirin reduces stroke", "aspirin reduces risk of stroke quite significantly") == pytest.approx(0.6)
    # multiset overlap: "yes yes no" vs "yes no no": overlap yes:1 + no:1 = 2, p = r = 2/3
    assert token_f1("yes yes no", "yes no no") == pytest.approx(2 / 3)
    assert token_f1("completely different", "aspirin reduces risk") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("the", "aspirin") == 0.0


def test_request_shape_and_f1_against_long_answer(server):
    q = Question("q1", "Does aspirin lower the chance of stroke in adults?", "d1",
                 long_answer="aspirin reduces risk")
    run = run_for("aspirin reduces risk")
    cfg = config(server.url)
    metrics = evaluate_generation([q], [run], cfg)
    # the model's answer equals the long answer (1.0) though the question text differs
    assert token_f1("aspirin reduces risk", q.text) < 0.3
    assert metrics["gen_f1"] == 1.0
    # top-5: (d1, results), (d1, methods), (d1, discussion) -> 3 distinct pairs
    assert metrics["gen_section_diversity@5"] == 3.0 and metrics["n_generation_questions"] == 1.0

    (req,) = server.requests
    assert req["model"] == "tiny-test" and req["temperature"] == 0 and req["max_tokens"] == 256
    roles = [m["role"] for m in req["messages"]]
    assert roles == ["system", "user"]
    user = req["messages"][1]["content"]
    assert q.text in user
    ctx = [line for line in user.splitlines() if line.startswith("[")]
    assert len(ctx) == 5 and ctx[0] == "[1] (d1 | Results > Sub) aspirin reduces risk"
    assert "other passage number 5" not in user  # only the top 5 chunks
    assert server.headers[0]["Authorization"] == "Bearer k-123"


def test_f1_uses_long_answer_not_question(server):
    q = Question("q2", "aspirin reduces risk", "d1", long_answer="statins lower cholesterol levels")
    metrics = evaluate_generation([q], [run_for("aspirin reduces risk")], config(server.url))
    assert metrics["gen_f1"] == 0.0  # would be 1.0 if scored against the question


def test_missing_long_answer_raises_before_calling(server):
    q = Question("q3", "What is shown?", "d1")
    with pytest.raises(ValueError, match="no long_answer.*q3"):
        evaluate_generation([q], [run_for("x")], config(server.url))
    assert server.requests == []


def test_retry_after_500_then_success(server):
    server.fail = 1
    q = Question("q4", "Q?", "d1", long_answer="a")
    answers = generate_answers([q], [run_for("the answer text")], config(server.url))
    assert answers == ["the answer text"] and len(server.requests) == 2


def test_persistent_500_gives_clear_error(server):
    server.fail = 10
    with pytest.raises(GenerationError, match="HTTP 500.*overloaded"):
        generate_answers([Question("q5", "Q?", "d1", long_answer="a")], [run_for("x")], config(server.url))
    assert len(server.requests) == 3  # 1 + 2 retries


def test_connection_refused_is_clear():
    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = config(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(GenerationError, match=rf"cannot reach http://127.0.0.1:{port}/v1/chat/completions.*base_url"):
        generate_answers([Question("q6", "Q?", "d1", long_answer="a")], [run_for("x")], cfg)


def test_config_errors():
    with pytest.raises(ValueError, match="generation.model is empty"):
        generate_answers([Question("q", "Q?", "d1")], [run_for("x")], GenerationConfig())
    with pytest.raises(ValueError, match="1 questions but 2 runs"):
        generate_answers([Question("q", "Q?", "d1")], [run_for("x")] * 2, config("http://127.0.0.1:1/v1"))


@pytest.mark.slow  # a whole eval.py run (~2 min loaded); the requests and F1: the tests above
def test_eval_scores_generation_for_every_row(server, tmp_path):
    """eval.py generation.enabled=true: each row's top chunks answer the questions with a gold
    long answer, and gen_f1 lands in its metrics and the report (the key never on disk)."""
    from gralc.config import load_config
    from gralc.evaluation.config import EvalConfig
    from gralc.evaluation.run import evaluate

    out = tmp_path / "results"
    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml", [
        "methods=[bm25,naive_bm25]", "generation.enabled=true", f"generation.base_url={server.url}",
        "generation.model=tiny-test", "generation.api_key=k-secret", "generation.retries=0",
        f"paths.output_dir={out}", "progress=false"])
    results, _ = evaluate(cfg)
    assert {r.method for r in results} == {"naive_bm25", "bm25"}
    for r in results:
        assert 0 < r.metrics["gen_f1"] <= 1 and r.metrics["n_generation_questions"] == 39
    assert len(server.requests) == 2 * 39
    assert "generation" in (out / "tables.md").read_text()
    assert not any("k-secret" in p.read_text(errors="ignore") for p in out.rglob("*") if p.is_file())


def test_eval_refuses_generation_without_a_model(tmp_path):
    from gralc.config import load_config
    from gralc.evaluation.config import EvalConfig
    from gralc.evaluation.run import evaluate

    cfg = load_config(EvalConfig, CONFIG_DIR / "eval.yaml",
                      ["generation.enabled=true", f"paths.output_dir={tmp_path / 'o'}"])
    with pytest.raises(ValueError, match="generation.model"):
        evaluate(cfg)
    assert not (tmp_path / "o").exists()
