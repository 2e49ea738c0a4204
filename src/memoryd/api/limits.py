"""Request limits at the HTTP edge: body size and a per-key rate limit.

Both are enforced before FastAPI parses anything, so a 10 MB body or a
flood of requests costs the server a header check, not a JSON parse, and
never reaches ``Memory``:

- ``limits.max_body_bytes``: a declared ``Content-Length`` above it is refused
  at once; a chunked body is counted as it streams and refused when it
  crosses the limit (413, ``LimitExceededError``).
- ``limits.rate_limit_per_minute`` (0: off): a token bucket per valid API key
  (per client address for every request without one: no key, an invalid key,
  or any key on a keyless server, so a made-up key per request buys no fresh
  bucket), refilled continuously, holding at most ``rate_limit_burst`` requests
  (default: one minute's worth). Over it: 429 ``RateLimitedError`` with
  ``Retry-After``.
- ``limits.failed_auth_per_minute`` (default 10; keyed servers): each 401 spends
  one token of the client address's failed-auth bucket; an address whose bucket
  is empty gets 429 for every request without a valid key until it refills, so
  keys cannot be guessed at request speed.

Answers use the same JSON shape as every other memoryd error
(``error``, ``detail``, ``hint``) and say what the limit is.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.errors import LimitExceededError, MemorydError, RateLimitedError
from memoryd.settings import Settings

#: Paths the limiter never counts: liveness probes and the dashboard's static files.
EXEMPT_PREFIXES = ("/health", "/ui/static/")


class RateLimiter:
    """Token buckets keyed by caller. ``clock`` is injectable so tests move time
    by hand; buckets idle for longer than a full refill are forgotten."""

    def __init__(
        self, per_minute: int, burst: int | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = per_minute / 60.0  # tokens per second
        self.capacity = float(burst if burst is not None else per_minute)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, updated)
        self._lock = threading.Lock()

    def wait(self, key: str) -> float:
        """Seconds until ``key`` has a token again (0.0: it has one); spends nothing."""
        now = self.clock()
        with self._lock:
            tokens, updated = self._buckets.get(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - updated) * self.rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def take(self, key: str) -> float:
        """Spend one token for ``key``; 0.0 if allowed, else seconds until one is free."""
        now = self.clock()
        with self._lock:
            tokens, updated = self._buckets.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - updated) * self.rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                self._forget_idle(now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate

    def _forget_idle(self, now: float) -> None:
        if len(self._buckets) < 10_000:
            return
        full_after = self.capacity / self.rate
        self._buckets = {k: v for k, v in self._buckets.items() if now - v[1] < full_after}


class LimitsMiddleware:
    """Pure ASGI, like the audit middleware: no response buffering."""

    def __init__(
        self,
        app: ASGIApp,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.settings = settings
        limits = settings.limits
        self.max_body = limits.max_body_bytes
        self.limiter = (
            RateLimiter(limits.rate_limit_per_minute, limits.rate_limit_burst, clock)
            if limits.rate_limit_per_minute > 0
            else None
        )
        self.failed = (
            RateLimiter(limits.failed_auth_per_minute, clock=clock)
            if limits.failed_auth_per_minute > 0 and settings.auth.keys
            else None
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        key, address = self._caller(scope)
        if self.failed is not None and key is None and not path.startswith(EXEMPT_PREFIXES):
            wait = self.failed.wait(address)
            if wait > 0:
                await _answer(send, _failed_auth_error(self.settings, wait), retry_after=wait)
                return
            send = self._counting_refusals(send, address)
        if self.limiter is not None and not path.startswith(EXEMPT_PREFIXES):
            wait = self.limiter.take(key or address)
            if wait > 0:
                await _answer(send, _rate_error(self.settings, wait), retry_after=wait)
                return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body:
            await _answer(send, _body_error(self.max_body, declared))
            return

        received = 0
        overflow = False  # the streamed body crossed the limit: the app's answer is replaced

        async def counting_receive() -> Message:
            nonlocal received, overflow
            if overflow:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    # end the body here: the app sees a short body and answers something
                    # (a parse error, usually), which watching_send turns into the 413
                    overflow = True
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        answered = False  # our 413 went out
        forwarded = False  # the app's own answer started before any overflow

        async def watching_send(message: Message) -> None:
            nonlocal answered, forwarded
            if overflow and not forwarded:
                if not answered:
                    answered = True
                    await _answer(send, _body_error(self.max_body, None))
                return
            forwarded = forwarded or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counting_receive, watching_send)
        if overflow and not answered and not forwarded:
            await _answer(send, _body_error(self.max_body, None))

    def _caller(self, scope: Scope) -> tuple[str | None, str]:
        """(a digest of the presented key when it is a valid one, never the key itself;
        the client address). Only a key the server knows earns a bucket of its own:
        an invalid key, or any key on a keyless server, counts against the address."""
        from starlette.requests import Request

        from memoryd.access import AuthenticationError, authenticate, token_from

        client = scope.get("client")
        address = f"addr:{client[0] if client else '?'}"
        token = token_from(Request(scope))
        if not token or not self.settings.auth.keys:
            return None, address
        try:
            authenticate(self.settings, token)
        except AuthenticationError:
            return None, address
        return "key:" + hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest(), address

    def _counting_refusals(self, send: Send, address: str) -> Send:
        """``send``, spending a failed-auth token of ``address`` when the answer is 401."""
        failed = self.failed
        assert failed is not None

        async def counting(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                failed.take(address)
            await send(message)

        return counting


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server rejects a malformed length itself
    return None


def _body_error(limit: int, size: int | None) -> LimitExceededError:
    got = f"{size} bytes" if size is not None else "larger than that"
    return LimitExceededError(
        f"the request body is {got}; the limit is {limit} bytes (limits.max_body_bytes)",
        "send less per request (split the messages, or index big text as a workspace "
        "file), or raise MEMORYD_LIMITS__MAX_BODY_BYTES",
    )


def _rate_error(settings: Settings, wait: float) -> RateLimitedError:
    limits = settings.limits
    burst = limits.rate_limit_burst or limits.rate_limit_per_minute
    return RateLimitedError(
        f"too many requests for this key: the limit is {limits.rate_limit_per_minute} "
        f"per minute (bursts of up to {burst}, limits.rate_limit_per_minute)",
        f"retry after {math.ceil(wait)} s, spread requests out, or raise "
        "MEMORYD_LIMITS__RATE_LIMIT_PER_MINUTE",
    )


def _failed_auth_error(settings: Settings, wait: float) -> RateLimitedError:
    per_minute = settings.limits.failed_auth_per_minute
    return RateLimitedError(
        f"too many requests with a missing or invalid API key from this address: the limit "
        f"is {per_minute} refused keys per minute (limits.failed_auth_per_minute)",
        f"check the key in your client configuration and retry after {math.ceil(wait)} s, "
        "or raise MEMORYD_LIMITS__FAILED_AUTH_PER_MINUTE",
    )


async def _answer(send: Send, exc: MemorydError, retry_after: float | None = None) -> None:
    body = json.dumps(
        {"error": type(exc).__name__, "detail": exc.message, "hint": exc.hint}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),  # the unread rest of a refused body is not ours to drain
    ]
    if retry_after is not None:
        headers.append((b"retry-after", str(max(1, math.ceil(retry_after))).encode()))
    await send({"type": "http.response.start", "status": exc.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
