"""MCP over streamable HTTP inside ``memoryd serve``: the MCP server
(:func:`memoryd.mcp.server.build_server`) mounted at ``/mcp`` next to the REST API,
every request authenticated with the API's keys before the SDK sees it
(:class:`McpGate`). ``app.py`` imports this module lazily: the MCP SDK takes a second
to import.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

from memoryd.access import authenticate, requested_ids, token_from
from memoryd.api.guard import answer_error
from memoryd.core import Memory
from memoryd.errors import MemorydError, PermissionDeniedError
from memoryd.mcp.server import build_server
from memoryd.scope import Scope

SCOPE_KEY = "memoryd.mcp.scope"  # where McpGate leaves the request's scope in the ASGI scope


def http_scope(ctx: Context) -> Scope:
    """The scope :class:`McpGate` resolved for the HTTP request carrying this call."""
    request = ctx.request_context.request
    scope = request.scope.get(SCOPE_KEY) if isinstance(request, Request) else None
    if not isinstance(scope, Scope):
        raise PermissionDeniedError(
            "this MCP request was not authenticated", "call /mcp through memoryd serve"
        )
    return scope


class McpGate:
    """ASGI app in front of the SDK's transport: authenticates every request with the
    API's keys and resolves its scope before any MCP message is read.

    A bad key gets 401, a scope outside the key 403, both as JSON with a hint, like
    the REST API's errors.
    """

    def __init__(self, memory: Memory, transport: Callable[..., Any]) -> None:
        self.memory = memory
        self.transport = transport

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        try:
            if scope["type"] == "http":  # lifespan and the rest pass straight through
                scope[SCOPE_KEY] = self._scope(Request(scope))
        except MemorydError as exc:
            await answer_error(send, exc)
        else:
            await self.transport(scope, receive, send)

    def _scope(self, request: Request) -> Scope:
        settings = self.memory.settings
        principal = authenticate(settings, token_from(request))
        user, agent = requested_ids(settings, principal, request.headers)
        return self.memory.scope(principal, user, agent, actor=f"mcp:{principal.name}")


def mount(app: FastAPI, memory: Memory, path: str = "/mcp") -> None:
    """Serve MCP over streamable HTTP at ``path`` of ``app``.

    Stateless (every POST stands alone, so each is authenticated on its own and
    nothing per-session piles up) with JSON responses. The SDK's session manager
    needs a running task group: it is entered in ``app``'s lifespan, wrapped
    around whatever lifespan the app already has.
    """
    server = build_server(memory, http_scope)
    host = memory.settings.server.host
    security = None
    if host in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        transport_security=security,
        host=host,
    )
    manager = server.session_manager  # the SDK's hook for mounting into another app
    app.router.routes.append(Route(path, endpoint=McpGate(memory, manager.handle_request)))
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with manager.run(), inner(a) as state:
            yield state

    app.router.lifespan_context = lifespan
