"""A small synchronous driver around the MCP SDK's client, for tests.

Each ``with`` block runs one real client session (stdio subprocess or
streamable HTTP) on its own event loop in a thread, so plain pytest tests can
call tools one by one.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

T = TypeVar("T")


class McpSession:
    """``with McpSession.http(url, headers) as s: s.call("memory_search", query="x")``."""

    def __init__(self, make_client: Callable[[], Client]) -> None:
        self._make_client = make_client
        self._portal_cm: Any = None
        self._portal: Any = None
        self._done: Any = None
        self._requests: Any = None

    @classmethod
    def http(cls, url: str, headers: dict[str, str] | None = None) -> McpSession:
        def make() -> Client:
            http = httpx2.AsyncClient(headers=headers or {}, timeout=60)
            return Client(streamable_http_client(url, http_client=http))

        return cls(make)

    @classmethod
    def stdio(cls, command: str, args: list[str], env: dict[str, str]) -> McpSession:
        params = StdioServerParameters(command=command, args=args, env=env)
        return cls(lambda: Client(params, read_timeout_seconds=120))

    def __enter__(self) -> McpSession:
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._done, self._requests = self._portal.start_task(self._serve)
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise
        return self

    async def _serve(self, *, task_status: Any) -> None:
        """Own the client for the whole session: its task groups must be entered and
        left by one task, so calls are handed to this task through a stream."""
        async with self._make_client() as client:
            send, receive = anyio.create_memory_object_stream[tuple[Any, Future[Any]]](16)
            task_status.started(send)
            async with receive:
                async for fn, future in receive:
                    try:
                        future.set_result(await fn(client))
                    except Exception as exc:
                        future.set_exception(exc)

    def __exit__(self, *exc: object) -> None:
        try:
            self._portal.call(self._requests.aclose)
            self._done.result(timeout=60)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def _run(self, fn: Callable[[Client], Awaitable[T]]) -> T:
        future: Future[T] = Future()
        self._portal.call(self._requests.send, (fn, future))
        return future.result(timeout=180)

    def tools(self) -> dict[str, Any]:
        listed = self._run(lambda client: client.list_tools())
        return {t.name: t for t in listed.tools}

    def raw(self, name: str, **arguments: Any) -> CallToolResult:
        return self._run(lambda client: client.call_tool(name, arguments))

    def call(self, name: str, **arguments: Any) -> Any:
        """The tool's JSON result; fails the test when the tool reported an error."""
        result = self.raw(name, **arguments)
        assert not result.is_error, text_of(result)
        return json.loads(text_of(result))

    def error(self, name: str, **arguments: Any) -> str:
        """The text of the tool error ``name`` must report."""
        result = self.raw(name, **arguments)
        assert result.is_error, f"{name} succeeded: {text_of(result)}"
        return text_of(result)


def text_of(result: CallToolResult) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)
