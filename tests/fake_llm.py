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

OpenAI requests with ``"stream": true`` (as agent runtimes such as OpenClaw send)
get server-sent events: the answer's text as ``delta.content`` chunks, a
:class:`Reply`'s ``tool_calls`` as ``delta.tool_calls``, then a chunk with the
finish reason and, when ``stream_options.include_usage`` asks for it, the usage
(``Reply.usage``, else counts estimated from the request), then ``[DONE]``.
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
    # OpenAI chat completions only: calls the model makes ({"name", "arguments"} with the
    # arguments as a dict; ids are given), and the token usage it reports
    tool_calls: list[dict[str, Any]] | None = None
    usage: dict[str, int] | None = None


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
                if body.get("stream") and reply.status < 400 and reply.raw is None:
                    self._stream(body, reply)
                    return
                if reply.raw is not None:
                    payload = reply.raw.encode()
                elif reply.status >= 400:
                    payload = json.dumps({"error": {"message": "scripted failure"}}).encode()
                else:
                    payload = json.dumps(_envelope(self.path, reply.content or "", reply)).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _stream(self, body: dict[str, Any], reply: Reply) -> None:
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.send_header("connection", "close")
                    self.end_headers()
                    for chunk in _stream_chunks(body, reply, include_usage=include_usage):
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def do_GET(self) -> None:  # GET /v1/models: what an OpenAI-compatible server lists
                payload = json.dumps(
                    {"object": "list", "data": [{"id": "fake-model", "object": "model"}]}
                ).encode()
                self.send_response(200 if self.path.endswith("/models") else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

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


def _tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": call.get("id") or f"call_{i}",
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))},
        }
        for i, call in enumerate(reply.tool_calls or [])
    ]


def _usage(body: dict[str, Any], reply: Reply) -> dict[str, int]:
    if reply.usage is not None:
        return reply.usage
    prompt = len(json.dumps(body.get("messages", []))) // 4
    completion = len(reply.content or "") // 4 + 1
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _stream_chunks(
    body: dict[str, Any], reply: Reply, *, include_usage: bool
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one streamed answer."""
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": body.get("model")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    text = reply.content or ""
    for start in range(0, len(text), 40):
        chunks.append(chunk({"content": text[start : start + 40]}))
    calls = _tool_calls(reply)
    for i, call in enumerate(calls):
        chunks.append(chunk({"tool_calls": [{"index": i, **call}]}))
    chunks.append(chunk({}, "tool_calls" if calls else "stop"))
    if include_usage:
        chunks.append({**base, "choices": [], "usage": _usage(body, reply)})
    return chunks


def _envelope(path: str, content: str, reply: Reply | None = None) -> dict[str, Any]:
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
    message: dict[str, Any] = {"role": "assistant", "content": content}
    calls = _tool_calls(reply) if reply is not None else []
    if calls:
        message["tool_calls"] = calls
    answer: dict[str, Any] = {  # OpenAI chat completions
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
    }
    if reply is not None and reply.usage is not None:
        answer["usage"] = reply.usage
    return answer
