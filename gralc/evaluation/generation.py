"""Optional generation evaluation (paper Sect. 3.5), scored against a GOLD answer.

For each question the top-k retrieved chunks (with their section paths) and the question go
to an OpenAI-compatible chat endpoint (``POST {base_url}/chat/completions``, temperature 0;
vLLM, llama.cpp server, OpenAI...). The answer is scored with SQuAD-style token F1 against the
question's ``long_answer`` (PubMedQA's LONG_ANSWER). The paper scored it against the question
text (reference pitfall 11); a question without a long answer is an error here. The section
diversity of the context is the number of distinct (doc, top-level section) pairs in it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import statistics
import string
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gralc.documents.question import Question
from gralc.evaluation.metrics import seccov_pairs_at_k

logger = logging.getLogger(__name__)

Run = Sequence[tuple[Any, float]]  # one question's ranked (chunk, score) pairs, best first

SYSTEM_PROMPT = (
    "You are a biomedical research assistant. Answer the question using only the numbered "
    "context passages. Answer in one to three sentences."
)


@dataclass
class GenerationConfig:
    """``api_key``: the key itself (else read from the env var ``api_key_env``; none is sent
    when both are empty, as local servers need none). ``retries``: extra attempts after a
    connection error, HTTP 429 or 5xx, waiting ``backoff_s * 2**attempt`` seconds.

    >>> GenerationConfig(enabled=True, model="llama").top_k
    5
    """

    #: answer the questions from each row's top chunks with an LLM (gen_f1)
    enabled: bool = False
    #: an OpenAI-compatible endpoint
    base_url: str = "http://localhost:8000/v1"
    #: the endpoint's model name
    model: str = ""
    api_key: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    #: chunks given to the LLM per question
    top_k: int = 5
    #: tokens of an answer
    max_tokens: int = 256
    #: sampling temperature of the answers
    temperature: float = 0.0
    #: seconds a request may take
    timeout_s: float = 60.0
    retries: int = 3
    #: seconds before the first retry (doubled each time)
    backoff_s: float = 1.0


class GenerationError(RuntimeError):
    """The chat endpoint could not be reached or gave an unusable answer.

    Example: ``generate_answers(questions, runs, GenerationConfig(base_url="http://nowhere:1/v1"))``
    -> ``GenerationError`` naming the endpoint after ``retries`` attempts.
    """


class ChatClient:
    """Minimal OpenAI-compatible chat-completions client (standard library only).

    Example: ``ChatClient(GenerationConfig(base_url="http://localhost:8000/v1", model="llama")).chat(messages)``
    -> the assistant's answer text (``GenerationError`` when the endpoint stays unreachable).
    """

    def __init__(self, config: GenerationConfig) -> None:
        if not config.model:
            raise ValueError("generation.model is empty: set it to the served model's name")
        self.config = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.api_key = config.api_key or os.environ.get(config.api_key_env, "")

    def _request(self, body: bytes) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=self.config.timeout_s) as resp:
            raw = resp.read().decode("utf-8", "replace")
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            raise GenerationError(f"{self.url} did not return JSON: {raw[:300]!r}") from None

    def chat(self, messages: list[dict[str, str]]) -> str:
        """The assistant message content for ``messages``; retries transient failures."""
        cfg = self.config
        body = json.dumps({"model": cfg.model, "messages": messages, "temperature": cfg.temperature,
                           "max_tokens": cfg.max_tokens}).encode("utf-8")
        for attempt in range(cfg.retries + 1):
            try:
                data = self._request(body)
                break
            except urllib.error.HTTPError as exc:
                detail = exc.read().decode("utf-8", "replace")[:300]
                if exc.code not in (429, 500, 502, 503, 504) or attempt == cfg.retries:
                    hint = f" (set the key in ${cfg.api_key_env} or generation.api_key)" if exc.code in (401, 403) else ""
                    raise GenerationError(f"{self.url} answered HTTP {exc.code}{hint}: {detail}") from None
                reason = f"HTTP {exc.code}"
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt == cfg.retries:
                    why = getattr(exc, "reason", exc)
                    raise GenerationError(
                        f"cannot reach {self.url} after {cfg.retries + 1} attempts ({why}); is the "
                        "server running? set generation.base_url to an OpenAI-compatible endpoint"
                    ) from None
                reason = str(getattr(exc, "reason", exc))
            wait = cfg.backoff_s * 2**attempt
            logger.warning("chat request failed (%s), retry %d/%d in %.2fs", reason, attempt + 1, cfg.retries, wait)
            time.sleep(wait)
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise GenerationError(f"{self.url} returned no choices[0].message.content: {str(data)[:300]}") from None
        return (content or "").strip()


def _field(chunk: Any, name: str) -> Any:
    return chunk[name] if isinstance(chunk, dict) else getattr(chunk, name)


def build_messages(question: str, run: Run, top_k: int = 5) -> list[dict[str, str]]:
    """System + user messages: the top-k chunks as ``[i] (doc | Section > Sub) text``, then
    the question.

    >>> from gralc.chunking.chunk import Chunk
    >>> m = build_messages("How long?", [(Chunk("d1", "c0", "It took 8 weeks.", 0, 16, section_path=["Methods"]), 0.9)])
    >>> [x["role"] for x in m], "[1] (d1 | Methods) It took 8 weeks." in m[1]["content"]
    (['system', 'user'], True)
    """
    lines = []
    for i, (chunk, _score) in enumerate(run[:top_k], start=1):
        where = " > ".join(_field(chunk, "section_path")) or "no section"
        lines.append(f"[{i}] ({_field(chunk, 'doc_id')} | {where}) {' '.join(_field(chunk, 'text').split())}")
    user = "Context:\n" + "\n".join(lines) + f"\n\nQuestion: {question}\nAnswer:"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def generate_answers(questions: Sequence[Question], runs: Sequence[Run], config: GenerationConfig,
                     client: ChatClient | None = None) -> list[str]:
    """One generated answer per question from its top ``config.top_k`` chunks.

    Example: ``generate_answers(questions, runs, GenerationConfig(enabled=True, model="llama"))`` ->
    one answer string per question, from its top 5 chunks.
    """
    if len(questions) != len(runs):
        raise ValueError(f"{len(questions)} questions but {len(runs)} runs: one run per question")
    client = client or ChatClient(config)
    return [client.chat(build_messages(q.text, run, config.top_k)) for q, run in zip(questions, runs)]


# ----- scoring -----------------------------------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> list[str]:
    """SQuAD normalisation: lower-case, drop punctuation and articles, split on whitespace.

    >>> normalize_answer("The dose was 8 weeks!")
    ['dose', 'was', '8', 'weeks']
    """
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split()


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 over the multiset of normalised tokens. When either side normalises to
    no tokens, 1.0 if both do, else 0.0 (the SQuAD v2 rule).

    >>> round(token_f1("eight weeks of metformin", "8 weeks metformin"), 4)
    0.5714
    """
    pred, ref = normalize_answer(prediction), normalize_answer(reference)
    if not pred or not ref:
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def check_long_answers(questions: Sequence[Question]) -> None:
    """Raise ``ValueError`` naming the first questions that lack a gold long answer.

    >>> from gralc.documents.question import Question
    >>> check_long_answers([Question("q1", "How long?", "d1", long_answer="8 weeks.")]) is None
    True
    """
    missing = [q.id for q in questions if not q.long_answer.strip()]
    if missing:
        raise ValueError(
            f"{len(missing)} questions have no long_answer (e.g. {missing[:3]}): generation F1 "
            "is scored against the gold answer (PubMedQA LONG_ANSWER), never the question; "
            "use questions that carry one"
        )


def score_generation(questions: Sequence[Question], answers: Sequence[str], runs: Sequence[Run],
                     top_k: int = 5) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """``(metrics, per_query)``: mean ``gen_f1`` against ``long_answer`` and mean
    ``gen_section_diversity@{top_k}``; per query its id, answer, F1 and diversity.

    >>> from gralc.chunking.chunk import Chunk
    >>> from gralc.documents.question import Question
    >>> run = [(Chunk("d1", "c0", "x", 0, 1, section_ids=["s1"]), 0.9)]
    >>> score_generation([Question("q1", "How long?", "d1", long_answer="8 weeks")], ["8 weeks"], [run])[0]
    {'gen_f1': 1.0, 'gen_section_diversity@5': 1.0, 'n_generation_questions': 1.0}
    """
    check_long_answers(questions)
    if not (len(questions) == len(answers) == len(runs)):
        raise ValueError(f"{len(questions)} questions, {len(answers)} answers, {len(runs)} runs: must match")
    if not questions:
        raise ValueError("no questions to score")
    rows = [
        {"question_id": q.id, "answer": a, "gen_f1": token_f1(a, q.long_answer),
         f"gen_section_diversity@{top_k}": float(seccov_pairs_at_k(run, top_k))}
        for q, a, run in zip(questions, answers, runs)
    ]
    keys = ("gen_f1", f"gen_section_diversity@{top_k}")
    metrics = {k: statistics.fmean(r[k] for r in rows) for k in keys}
    metrics["n_generation_questions"] = float(len(rows))
    return metrics, rows


def evaluate_generation(questions: Sequence[Question], runs: Sequence[Run], config: GenerationConfig,
                        client: ChatClient | None = None) -> dict[str, float]:
    """Generate answers and score them: ``gen_f1``, ``gen_section_diversity@{top_k}``,
    ``n_generation_questions``. Checks the gold answers BEFORE calling the endpoint.

    Example: ``evaluate_generation(questions, runs, GenerationConfig(enabled=True, model="llama"))``
    -> ``{'gen_f1': ..., 'gen_section_diversity@5': ..., 'n_generation_questions': ...}``.
    """
    check_long_answers(questions)
    answers = generate_answers(questions, runs, config, client)
    return score_generation(questions, answers, runs, config.top_k)[0]
