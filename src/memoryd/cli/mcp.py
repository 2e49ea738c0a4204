"""``memoryd mcp``: the MCP server over stdio, registered on the main CLI."""

from __future__ import annotations

from typing import Annotated

import typer

from memoryd.cli.common import fail
from memoryd.errors import MemorydError
from memoryd.settings import Settings


def register(app: typer.Typer) -> None:
    """Add the ``mcp`` command to ``app`` (the SDK is imported only when it runs)."""

    @app.command("mcp")
    def mcp_command(
        user: Annotated[
            str | None, typer.Option("--user", "-u", help="user id (default: mcp.user_id)")
        ] = None,
        agent: Annotated[
            str | None, typer.Option("--agent", "-a", help="agent id (default: mcp.agent_id)")
        ] = None,
    ) -> None:
        """Serve the memory tools over MCP on stdin/stdout (Claude Code, Codex, ...).

        Every tool call acts as --user/--agent (or settings.mcp): the scope is fixed
        by whoever starts the server, never by the model.
        """
        import anyio

        from memoryd.access import configured_ids
        from memoryd.core import Memory
        from memoryd.mcp.server import stdio_server

        settings = Settings()
        if user:
            settings.mcp.user_id = user
        if agent:
            settings.mcp.agent_id = agent
        try:
            configured_ids(settings)  # a bad scope fails before the model loads
            memory = Memory(settings)
        except MemorydError as exc:
            fail(exc)
        try:
            server = stdio_server(memory)
            anyio.run(server.run_stdio_async)
        except MemorydError as exc:
            fail(exc)
        finally:
            memory.close()
