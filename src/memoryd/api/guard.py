"""The HTTP edge against hostile input and the browser: one check before any route.

* **Paths.** A path with a control character (NUL included) or a segment longer
  than 255 characters names no route and no file: 404, before a static file
  handler or a router can trip over it.
* **Text.** A JSON body is parsed once here (it is at most ``limits.max_body_bytes``)
  and refused with 422 naming the field when a string holds an unpaired
  surrogate (``"\\ud800"`` decodes to a Python string that no file, database or
  response can encode), or when an identifier, a role or a path (keys such as
  ``memory_id``, ``user_id``, ``role``, ``path``) holds control or invisible
  format characters (bidi overrides, zero-width joiners). Free text keeps every
  valid character.
* **The browser.** Without API keys memoryd trusts whoever reaches it, and a web
  page the user opens reaches loopback too. On such a server every request must
  name an allowed host (loopback names, ``server.host``, ``server.allowed_hosts``;
  a DNS-rebinding page sends its own name), and on any server a request that
  carries no valid key in a header must not come from another site: an ``Origin`` other than the server's own (or one of
  ``server.cors_origins``), or ``Sec-Fetch-Site: cross-site|same-site``, gets 403,
  except a top-level navigation to a page (a link to the dashboard), whose
  answer the other site cannot read. Clients that are not browsers (the CLI,
  MCP clients, the OpenClaw plugin, curl) send neither header and pass.
  Since such a navigation passes, no GET changes anything: commitments are
  delivered by ``POST /v1/commitments/due``, the wiki is compiled by POSTs only,
  and searches made while a GET is answered record no recalls (``recall.RECORDING``).
"""

from __future__ import annotations

import email.message
import json
import unicodedata
from collections.abc import Iterable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memoryd.access import AuthenticationError, authenticate
from memoryd.errors import MemorydError
from memoryd.recall import RECORDING
from memoryd.settings import Settings

MAX_SEGMENT = 255
#: keys whose values are identifiers, roles or paths: no control or format characters
PLAIN_KEYS = frozenset(
    {
        "id",
        "memory_id",
        "user_id",
        "agent_id",
        "run_id",
        "session_id",
        "turn_id",
        "role",
        "path",
        "source_path",
        "category",
        "categories",
    }
)
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}
_EXEMPT = ("/health", "/ui/static/")


class GuardMiddleware:
    """Pure ASGI, so refusals cost no route and the audit log still sees them."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope.get("path", "")
        if not _plain_path(path):
            await _answer(send, 404, "NotFoundError", "no such path", "check the URL")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if sum(1 for k, _ in scope["headers"] if k.lower() == b"content-type") > 1:
            # the guard and the routes must read one body type: Starlette's headers take
            # the first of several, a dict the last, so a second one is refused outright
            await _answer(
                send, 400, "InvalidInputError", "the request has more than one Content-Type",
                "send one Content-Type header (application/json for JSON bodies)",
            )  # fmt: skip
            return
        if not path.startswith(_EXEMPT) and not self._keyed(headers):
            refusal = self._browser_refusal(scope, headers)
            if refusal is not None:
                await _answer(send, 403, "PermissionDeniedError", *refusal)
                return
        if scope.get("method") in ("POST", "PUT", "PATCH", "DELETE") and _is_json(headers):
            body, receive = await _buffer(receive)
            problem = _text_problem(body)
            if problem is not None:
                await _answer(send, 422, "InvalidInputError", *problem)
                return
        if scope.get("method") in ("GET", "HEAD"):
            reading = RECORDING.set(False)  # a GET changes nothing: its searches are no recalls
            try:
                await self.app(scope, receive, send)
            finally:
                RECORDING.reset(reading)
            return
        await self.app(scope, receive, send)

    # -- the browser --------------------------------------------------------------------------
    def _keyed(self, headers: dict[str, str]) -> bool:
        """A request with a valid API key is a client the operator configured."""
        if not self.settings.auth.keys:
            return False
        token = headers.get("x-api-key")
        scheme, _, value = headers.get("authorization", "").partition(" ")
        if scheme.lower() in ("bearer", "token"):  # Token: mem0's SDKs
            token = value.strip()
        if not token:
            return False  # the dashboard's key cookie is what a cross-site request carries
        try:
            authenticate(self.settings, token)
        except AuthenticationError:
            return False
        return True

    def _open(self) -> bool:
        """Keyless and loopback-only: anyone who reaches it is trusted, so its name is
        what tells a rebinding page from the user. With keys, a rebound name gets no
        key and no cookie (cookies follow the name); on a network the operator
        declared trusted (``allow_remote_without_auth``) the names are not known."""
        server = self.settings.server
        return not self.settings.auth.keys and not server.allow_remote_without_auth

    def _allowed_hosts(self) -> set[str]:
        server = self.settings.server
        hosts = set(_LOOPBACK) | {h.lower().strip("[]") for h in server.allowed_hosts}
        if server.host not in ("0.0.0.0", "::", ""):
            hosts.add(server.host.lower().strip("[]"))
        return hosts

    def _browser_refusal(self, scope: Scope, headers: dict[str, str]) -> tuple[str, str] | None:
        host = _hostname(headers.get("host", ""))
        allowed = self._allowed_hosts()
        if self._open() and "*" not in allowed and host not in allowed:
            return (
                f"the Host {host!r} is not one this server answers to",
                "open memoryd as http://127.0.0.1:PORT, or add the name to "
                "server.allowed_hosts (MEMORYD_SERVER__ALLOWED_HOSTS)",
            )
        origin = headers.get("origin")
        own = f"{_scheme(scope)}://{headers.get('host', '')}".lower()
        if origin is not None and origin != "null":
            if origin.lower().rstrip("/") == own or origin in self.settings.server.cors_origins:
                return None
            return _cross_site(origin)
        site = headers.get("sec-fetch-site")
        if site in ("cross-site", "same-site") or origin == "null":
            navigation = headers.get("sec-fetch-mode") == "navigate"
            if navigation and scope.get("method") in ("GET", "HEAD"):
                return None  # a link to a page: the other site cannot read the answer
            return _cross_site(origin or site or "")
        return None


def _cross_site(origin: str) -> tuple[str, str]:
    return (
        f"a request from another site ({origin}) was refused: without an API key, "
        "only memoryd's own pages and non-browser clients may call it",
        "send an API key, or add the site to server.cors_origins (MEMORYD_SERVER__CORS_ORIGINS)",
    )


def _scheme(scope: Scope) -> str:
    return str(scope.get("scheme") or "http")


def _hostname(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


# -- text ---------------------------------------------------------------------------------------
def _plain_path(path: str) -> bool:
    if any(len(segment) > MAX_SEGMENT for segment in path.split("/")):
        return False
    return not any(_control(ch) for ch in path)


def _control(ch: str) -> bool:
    """Control (Cc), format (Cf: bidi, zero-width) or surrogate (Cs) characters."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs")


def _text_problem(body: bytes) -> tuple[str, str] | None:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None  # not JSON: the route's own parser answers
    except RecursionError:
        return (
            "the JSON body nests deeper than memoryd reads",
            "send flatter JSON (metadata may nest at most limits.max_metadata_depth levels)",
        )
    for where, key, text in _strings(data, "body", None):
        if any("\ud800" <= ch <= "\udfff" for ch in text):
            return (
                f"{where} contains an unpaired surrogate (e.g. \\ud800), which is not text",
                "send valid Unicode: a surrogate only as half of a pair",
            )
        if key in PLAIN_KEYS and any(_control(ch) for ch in text):
            return (
                f"{where} contains control or invisible formatting characters",
                "identifiers, roles and paths are plain text: no control, bidi or "
                "zero-width characters",
            )
    return None


def _strings(value: Any, where: str, key: str | None) -> Iterable[tuple[str, str | None, str]]:
    """Every string in a parsed JSON value, with its place and the nearest key above it
    (a loop, not recursion: a deeply nested body must not exhaust the stack)."""
    stack = [(value, where, key)]
    while stack:
        item, at, under = stack.pop()
        if isinstance(item, str):
            yield at, under, item
        elif isinstance(item, dict):
            for k, v in item.items():
                stack.append((k, f"{at} (a key)", None))
                stack.append((v, f"{at}.{k}", k))
        elif isinstance(item, list):
            stack.extend((v, f"{at}[{n}]", under) for n, v in enumerate(item))


def _is_json(headers: dict[str, str]) -> bool:
    """Whether the routes will parse the body as JSON: FastAPI's own rule (its
    ``get_request_handler``: ``application/json`` or ``application/*+json`` as the
    email parser reads the header; no Content-Type is not JSON, strict mode), so the
    check here and the parse there never disagree."""
    value = headers.get("content-type")
    if not value:
        return False
    message = email.message.Message()
    message["content-type"] = value
    if message.get_content_maintype() != "application":
        return False
    subtype = message.get_content_subtype()
    return subtype == "json" or subtype.endswith("+json")


async def _buffer(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body, and a ``receive`` that hands it to the app again."""
    chunks: list[bytes] = []
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            chunks = []
            break
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def answer_error(send: Send, exc: MemorydError) -> None:
    """``exc`` as the API's JSON error answer, from pure ASGI code (also /mcp's gate)."""
    await _answer(send, exc.status_code, type(exc).__name__, exc.message, exc.hint)


async def _answer(send: Send, status: int, error: str, detail: str, hint: str | None) -> None:
    payload = json.dumps({"error": error, "detail": detail, "hint": hint}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
