"""A real local LLM endpoint with scripted answers, for tests.

It is an HTTP server on a free loopback port that speaks three protocols:
OpenAI chat completions (``POST /v1/chat/completions``), Anthropic messages
(``POST /v1/messages``) and Bedrock's Converse (``POST /model/{id}/converse``).
memoryd talks to it exactly as it would to OpenAI, Ollama, Anthropic or
Bedrock; nothing in memoryd is patched.

Answers come from a script (``fake.script(...)``), one per request, then from
``fake.default`` (by default a small rule-based responder that understands
memoryd's extraction and reconciliation prompts). A script entry is the
answer text, or a :class:`Reply` for HTTP errors, raw non-JSON bodies and
delays. ``fake.delay`` slows every request down (the "slow LLM" mode).
Every request body is kept in ``fake.requests`` so tests can read what the
model was shown.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = None  # the answer text (wrapped in the protocol's envelope)
    status: int = 200
    raw: str | None = None  # a body sent as is, instead of the protocol's JSON
    delay: float = 0.0  # seconds to wait before answering


Answer = str | Reply


def _input_of(body: dict[str, Any]) -> tuple[str, str]:
    """(system prompt, last user message) of a request in any of the three protocols."""
    messages = body.get("messages", [])
    system = body.get("system", "")
    if isinstance(system, list):  # Bedrock: [{"text": ...}]
        system = "\n".join(b.get("text", "") for b in system)
    user = ""
    for m in messages:
        content = m.get("content", "")
        if isinstance(content, list):
            content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
        if m.get("role") == "system":
            system = f"{system}\n{content}"
        elif m.get("role") == "user":
            user = content
    return system, user


def rule_based(body: dict[str, Any]) -> str:
    """Good-enough answers to memoryd's prompts: one fact per sentence; ADD unless
    the same text is already stored (NONE)."""
    system, user = _input_of(body)
    if "memory consistent" in system:
        data = json.loads(user)
        existing = {e["text"].casefold(): e["id"] for e in data["existing"]}
        decisions = []
        for fact in data["new_facts"]:
            key = fact["text"].casefold()
            if key in existing:
                decisions.append({"fact": fact["fact"], "event": "NONE", "id": existing[key]})
            else:
                decisions.append({"fact": fact["fact"], "event": "ADD", "text": fact["text"]})
        return json.dumps({"decisions": decisions})
    text = user.removeprefix("Input:\n")
    facts = []
    for line in text.splitlines():
        line = re.sub(r"^(user|assistant):\s*", "", line.strip(), flags=re.I)
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            if len(sentence.split()) >= 3 and not sentence.endswith("?"):
                facts.append(sentence.strip())
    return json.dumps({"facts": facts})


class FakeLLM:
    def __init__(self) -> None:
        self._script: deque[Answer] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.default: Callable[[dict[str, Any]], Answer] = rule_based
        self.delay = 0.0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                answer = fake._next(self.path, body, dict(self.headers))
                reply = answer if isinstance(answer, Reply) else Reply(content=answer)
                time.sleep(fake.delay + reply.delay)
                if reply.raw is not None:
                    payload = reply.raw.encode()
                elif reply.status >= 400:
                    payload = json.dumps({"error": {"message": "scripted failure"}}).encode()
                else:
                    payload = json.dumps(_envelope(self.path, reply.content or "")).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/v1"  # what an OpenAI-compatible base_url looks like
        self.headers: list[dict[str, str]] = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _next(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            self.headers.append(headers)
            if self._script:
                return self._script.popleft()
        return self.default(body)

    def script(self, *answers: Answer) -> FakeLLM:
        with self._lock:
            self._script.extend(answers)
        return self

    @property
    def pending(self) -> int:
        return len(self._script)

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def _envelope(path: str, content: str) -> dict[str, Any]:
    if path.endswith("/messages"):  # Anthropic
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": content}],
            "stop_reason": "end_turn",
        }
    if path.endswith("/converse"):  # Bedrock
        return {
            "output": {"message": {"role": "assistant", "content": [{"text": content}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            "metrics": {"latencyMs": 1},
        }
    return {  # OpenAI chat completions
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
