"""The MCP server: the tools on the official SDK.

``memoryd mcp`` runs it over stdio for one agent (Claude Code, Codex start it
as a subprocess). ``memoryd serve`` mounts the same server at ``/mcp`` next to
the REST API (:mod:`memoryd.api.mcp_http`, the HTTP face's transport): this
package knows nothing of HTTP.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

import memoryd
from memoryd.access import LOCAL, configured_ids
from memoryd.core import Memory
from memoryd.mcp.tools import MemoryTools
from memoryd.scope import Scope

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


def stdio_server(memory: Memory) -> MCPServer:
    """The server ``memoryd mcp`` runs: every call acts in ``settings.mcp``'s scope."""
    scope = memory.scope(LOCAL, *configured_ids(memory.settings), actor="mcp:local")
    return build_server(memory, lambda _ctx: scope)
