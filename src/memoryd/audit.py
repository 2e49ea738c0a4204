"""The audit log: one JSON line per HTTP request, rotated by size.

Written to ``$MEMORYD_HOME/audit/audit.jsonl`` (``audit.jsonl.1`` … ``.N``
after rotation, ``settings.audit.max_bytes`` / ``backups``). Each line has:
``ts, method, path, op, status, principal, user_id, agent_id, run_id, count,
latency_ms, top_score``.

What is never written: API keys, Authorization headers, cookies, query
strings, request bodies, memory text. Handlers add what only they know
(operation, scope, result count, top score) with :func:`note`; the middleware
adds the rest after the response is sent.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from datetime import UTC, datetime
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.settings import Settings

FIELDS = (
    "ts",
    "method",
    "path",
    "op",
    "status",
    "principal",
    "user_id",
    "agent_id",
    "run_id",
    "count",
    "latency_ms",
    "top_score",
)
_NOTE_KEY = "memoryd_audit"
_SCOPE_KEYS = ("user_id", "agent_id", "run_id")


def audit_path(settings: Settings) -> Path:
    return settings.home / "audit" / "audit.jsonl"


class AuditLog:
    """Appends entries to the rotating file; safe to share between threads."""

    def __init__(self, settings: Settings) -> None:
        self.path = audit_path(settings)
        self.enabled = settings.audit.enabled
        self._max_bytes = settings.audit.max_bytes
        self._backups = settings.audit.backups
        self._handler: RotatingFileHandler | None = None
        self._lock = threading.Lock()

    def _open(self) -> RotatingFileHandler:
        if self._handler is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handler = RotatingFileHandler(
                self.path,
                maxBytes=self._max_bytes,
                backupCount=self._backups,
                encoding="utf-8",
                delay=True,
            )
            handler.setFormatter(logging.Formatter("%(message)s"))
            self._handler = handler
        return self._handler

    def write(self, entry: dict[str, Any]) -> None:
        if not self.enabled:
            return
        line = json.dumps({k: entry.get(k) for k in FIELDS}, ensure_ascii=False)
        with self._lock:
            handler = self._open()
            handler.handle(logging.makeLogRecord({"msg": line, "levelno": logging.INFO}))

    def close(self) -> None:
        with self._lock:
            if self._handler is not None:
                self._handler.close()
                self._handler = None


def note(request: Request, **fields: Any) -> None:
    """Add what the handler knows (op, scope, count, top_score) to this request's entry."""
    current = request.scope.setdefault("state", {}).setdefault(_NOTE_KEY, {})
    current.update({k: v for k, v in fields.items() if k in FIELDS})


class AuditMiddleware:
    """Pure ASGI (no response buffering, so streaming routes are untouched)."""

    def __init__(self, app: ASGIApp, log: AuditLog, settings: Settings) -> None:
        self.app = app
        self.log = log
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.log.enabled:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # if the app dies before answering

        async def send_and_watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_watch)
        finally:
            self._record(scope, status, started)

    def _record(self, scope: Scope, status: int, started: float) -> None:
        request = Request(scope)
        noted: dict[str, Any] = scope.get("state", {}).get(_NOTE_KEY, {})
        entry: dict[str, Any] = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "method": scope.get("method"),
            "path": scope.get("path"),
            "status": status,
            "principal": _principal_name(self.settings, request),
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
        }
        for key in _SCOPE_KEYS:
            entry[key] = request.query_params.get(key)
        entry.update(noted)
        self.log.write(entry)


def _principal_name(settings: Settings, request: Request) -> str | None:
    from memoryd.access import AuthenticationError, authenticate, token_from

    try:
        return authenticate(settings, token_from(request)).name
    except AuthenticationError:
        return None  # the request was refused; its key is never written down


def read_recent(settings: Settings, limit: int = 100) -> list[dict[str, Any]]:
    """The newest ``limit`` entries, newest first, across rotated files."""
    path = audit_path(settings)
    files = [path, *(Path(f"{path}.{n}") for n in range(1, settings.audit.backups + 1))]
    out: list[dict[str, Any]] = []
    for file in files:
        if len(out) >= limit:
            break
        for line in _tail_lines(file, limit - len(out)):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a crash is skipped, not fatal
    return out


def _tail_lines(path: Path, count: int, block: int = 65_536) -> list[str]:
    """The last ``count`` non-empty lines of ``path``, last first, reading from the end."""
    if count <= 0 or not path.is_file():
        return []
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        data = b""
        while end > 0 and data.count(b"\n") <= count:
            start = max(0, end - block)
            f.seek(start)
            data = f.read(end - start) + data
            end = start
    lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    if end > 0:
        lines = lines[1:]  # the first line may be partial
    return list(reversed(lines))[:count]
