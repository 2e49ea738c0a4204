"""A workspace of the wrong shape is refused with a named error, never a 500 (issue 30).

Re-running issue 30's file findings against a real server (0 reads or writes outside,
0 leaks in 3,000 swapped memory_get reads) left one kind of 5xx: ``memory/`` being a
file, or today's diary a folder. ``/v1/flush`` and ``/v1/diary`` answered 500 and
``/v1/sessions/end`` dropped the connection (an unhandled NotADirectoryError /
IsADirectoryError from the writer). :class:`~memoryd.workspace.safefs.WorkspaceFS`
now says which path is not the file or folder it must be, and what to do (422).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.pipelines.index_md import write_index
from memoryd.workspace import Workspace
from tests.mcp_client import McpSession
from tests.test_workspace_support import make_workspace

TODAY = "2026-03-27"  # the FakeClock's day
MESSAGES = [{"role": "user", "content": "we moved the standup to 10:30 for good"}]


@pytest.fixture
def ws(memory: Memory, tmp_path: Path) -> Workspace:
    return make_workspace(memory, tmp_path / "ws")


def _memory_is_a_file(ws: Workspace) -> None:
    shutil.rmtree(ws.memory_dir)
    ws.memory_dir.write_text("not a folder\n")


def _diary_is_a_folder(ws: Workspace) -> None:
    diary = ws.memory_dir / f"{TODAY}.md"
    diary.unlink()
    diary.mkdir()


SHAPES: dict[str, Callable[[Workspace], None]] = {
    "memory/ is a file": _memory_is_a_file,
    "today's diary is a folder": _diary_is_a_folder,
}


@pytest.mark.parametrize("shape", SHAPES)
def test_writes_into_a_misshapen_workspace_are_422_with_a_hint(
    memory: Memory, ws: Workspace, shape: str, live_server
) -> None:  # type: ignore[no-untyped-def]
    SHAPES[shape](ws)
    routes = [
        ("/v1/flush", {"agent_id": "dev", "notes": ["the standup is at 10:30"]}),
        ("/v1/diary", {"agent_id": "dev", "messages": MESSAGES}),
    ]
    if shape == "memory/ is a file":  # a session note goes to memory/ too
        routes.append(("/v1/sessions/end", {"agent_id": "dev", "messages": MESSAGES}))
    with live_server(create_app(memory=memory)) as server:
        for route, body in routes:
            r = httpx.post(f"{server.url}{route}", json=body, timeout=60)
            assert r.status_code == 422, (route, r.status_code, r.text)
            answer = r.json()
            assert answer["error"] == "InvalidInputError", answer
            assert "memory" in answer["detail"] and answer["hint"], answer
        with McpSession.http(f"{server.url}/mcp", {"X-Memoryd-Agent": "dev"}) as s:
            said = s.error("memory_flush", notes=["the standup is at 10:30"])
            assert "not a" in said and "Errno" not in said, said


def test_index_md_in_a_memory_file_is_refused_by_name(memory: Memory, ws: Workspace) -> None:
    _memory_is_a_file(ws)
    with pytest.raises(InvalidInputError, match="memory is not a folder"):
        write_index(memory, ws)
    assert ws.memory_dir.read_text() == "not a folder\n"
