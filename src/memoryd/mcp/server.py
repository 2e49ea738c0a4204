"""The MCP server: the tools on the official SDK, over stdio or streamable HTTP.

``memoryd mcp`` runs it over stdio for one agent (Claude Code, Codex start it
as a subprocess). ``memoryd serve`` mounts it at ``/mcp`` next to the REST API,
where every request is authenticated with the API's keys before the SDK sees
it (:class:`McpGate`).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Send
from starlette.types import Scope as AsgiScope

import memoryd
from memoryd.access import LOCAL, authenticate, configured_ids, requested_ids, token_from
from memoryd.api.guard import answer_error
from memoryd.core import Memory
from memoryd.errors import MemorydError, PermissionDeniedError
from memoryd.mcp.tools import MemoryTools
from memoryd.scope import Scope

SCOPE_KEY = "memoryd.mcp.scope"  # where McpGate leaves the request's scope in the ASGI scope

INSTRUCTIONS = """\
memoryd is your long-term memory across sessions, shared with the other agents of
the same user. Session start: call memory_context for today's and yesterday's
diary and your curated MEMORY.md, then memory_search for the task at hand.
During work: memory_search before answering about prior work, decisions,
preferences, environments or open tasks; memory_add when something durable is
decided, learned or finished (one fact per call, with its category);
memory_update when a remembered fact changed. Before your context is compacted,
memory_flush what must survive; when a session ends (/new, /reset, task done),
memory_session_end. Cite file hits by their citation and read more lines with
memory_get. For what is known about a person, project or topic (claims with
their evidence and status), wiki_search and wiki_get."""

_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


def build_server(memory: Memory, scope_of: Callable[[Context], Scope]) -> MCPServer:
    """An MCP server whose tools act on ``memory`` in the scope ``scope_of`` gives."""
    server: MCPServer = MCPServer(
        "memoryd",
        title="memoryd: long-term memory",
        instructions=INSTRUCTIONS,
        version=memoryd.__version__,
        log_level="WARNING",
    )
    tools = MemoryTools(memory, scope_of)
    for fn, hints in (
        (tools.memory_context, _READ_ONLY),
        (tools.memory_search, _READ_ONLY),
        (tools.memory_get, _READ_ONLY),
        (tools.memory_list, _READ_ONLY),
        (tools.memory_history, _READ_ONLY),
        (tools.memory_add, _WRITE),
        (tools.memory_flush, _WRITE),
        (tools.memory_session_end, _WRITE),
        (tools.memory_rem_backfill, _WRITE),
        (tools.memory_commitments, _WRITE),
        (tools.wiki_search, _READ_ONLY),
        (tools.wiki_get, _READ_ONLY),
        (tools.wiki_apply, _WRITE),
        (tools.wiki_lint, _READ_ONLY),
        (tools.memory_update, _WRITE),
        (tools.memory_delete, _DESTRUCTIVE),
    ):
        server.add_tool(fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints)
    return server


# -- stdio -------------------------------------------------------------------------------
def stdio_server(memory: Memory) -> MCPServer:
    """The server ``memoryd mcp`` runs: every call acts in ``settings.mcp``'s scope."""
    scope = memory.scope(LOCAL, *configured_ids(memory.settings), actor="mcp:local")
    return build_server(memory, lambda _ctx: scope)


# -- streamable HTTP inside `memoryd serve` ------------------------------------------------
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
