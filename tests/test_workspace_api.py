"""The workspace over HTTP on a real server, with the file watcher running."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.settings import ApiKey
from memoryd.workspace import Workspace
from tests.test_workspace_support import lines_of, make_workspace


@pytest.fixture
def ws(memory: Memory, tmp_path: Path) -> Workspace:
    return make_workspace(memory, tmp_path / "ws")


def _search(url: str, query: str, **extra: object) -> list[dict]:  # type: ignore[type-arg]
    r = httpx.post(f"{url}/v1/memory_search", json={"agent_id": "dev", "query": query, **extra})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def _wait_for(url: str, query: str, needle: str, timeout: float) -> tuple[dict, float]:  # type: ignore[type-arg]
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        for hit in _search(url, query):
            if needle in hit["snippet"]:
                return hit, time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"{needle!r} not searchable within {timeout}s")


def test_an_edited_diary_line_is_searchable_within_two_seconds(
    memory: Memory, ws: Workspace, live_server
) -> None:  # type: ignore[no-untyped-def]
    memory.settings.workspace.watch = True
    diary = ws.memory_dir / "2026-03-27.md"
    with live_server(create_app(memory=memory)) as server:
        _wait_for(server.url, "editor theme preference", "dark mode", timeout=30)  # catch-up pass
        diary.write_text(
            diary.read_text().replace("dark mode", "the solarized light theme"), encoding="utf-8"
        )
        hit, seconds = _wait_for(server.url, "solarized light theme", "solarized", timeout=2.0)
        assert seconds < 2.0
        # the hit cites the right lines, and memory_get on them returns exactly those lines
        assert hit["citation"] == "memory/2026-03-27.md#L7-L9"
        assert (hit["start_line"], hit["end_line"]) == (7, 9)
        got = httpx.get(
            f"{server.url}/v1/memory_get",
            params={"agent_id": "dev", "path": hit["path"], "from": 7, "lines": 3},
        ).json()
        assert got["text"] == lines_of(diary, 7, 9) == hit["snippet"]
        assert "solarized" in got["text"]

        # a new file and a deleted file are picked up too
        (ws.memory_dir / "kayaks.md").write_text("# Kayaks\n- the red kayak needs a new rudder\n")
        _wait_for(server.url, "kayak rudder repair", "rudder", timeout=2.0)
        diary.unlink()
        deadline = time.monotonic() + 2.0
        while any("solarized" in h["snippet"] for h in _search(server.url, "solarized theme")):
            assert time.monotonic() < deadline, "deleted file still searchable"
            time.sleep(0.05)


def test_traversal_is_refused_over_http(
    memory: Memory, ws: Workspace, tmp_path: Path, live_server
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "secret.md").write_text("hunter2\n")
    (ws.memory_dir / "leak.md").symlink_to(tmp_path / "secret.md")
    with live_server(create_app(memory=memory)) as server:
        get = f"{server.url}/v1/memory_get"
        for path in ("../secret.md", "/etc/passwd", "memory/../../secret.md"):
            r = httpx.get(get, params={"agent_id": "dev", "path": path})
            assert r.status_code == 422 and r.json()["error"] == "InvalidInputError"
        r = httpx.get(get, params={"agent_id": "dev", "path": "memory/leak.md"})
        assert r.status_code == 403 and "hunter2" not in r.text
        r = httpx.get(get, params={"agent_id": "../dev", "path": "MEMORY.md"})
        assert r.status_code == 422
        missing = httpx.get(get, params={"agent_id": "dev", "path": "memory/2030-01-01.md"})
        assert missing.status_code == 200 and missing.json()["text"] == ""


def test_sessions_flush_context_index_and_status(
    memory: Memory, ws: Workspace, live_server
) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        url = server.url
        r = httpx.post(f"{url}/v1/index", json={"agent_id": "dev"})
        assert r.status_code == 200 and r.json()["indexed"] == 2
        r = httpx.post(
            f"{url}/v1/sessions/end",
            json={
                "agent_id": "dev",
                "session_id": "abc",
                "messages": [
                    {"role": "user", "content": "Let's pick a vendor for the GPU cluster"},
                    {"role": "assistant", "content": "Vendor shortlist: Lambda and CoreWeave GPU"},
                ],
            },
        )
        assert r.status_code == 200, r.text
        note = r.json()
        # a session note is a conversation: its header is one chunk, each turn another
        assert note["path"] == "memory/2026-03-27-vendor-gpu.md" and note["chunks"] == 3
        assert (ws.root / note["path"]).is_file()
        r = httpx.post(f"{url}/v1/flush", json={"agent_id": "dev", "notes": ["Chose CoreWeave"]})
        assert r.status_code == 200 and r.json()["path"] == "memory/2026-03-27.md"
        r = httpx.post(f"{url}/v1/flush", json={"agent_id": "dev", "notes": []})
        assert r.status_code == 422 and r.json()["hint"]
        hits = _search(url, "we chose CoreWeave")
        assert {h["path"] for h in hits} >= {"memory/2026-03-27.md"}
        # the service's search shows chunk hits with their citation and a snippet too
        found = httpx.post(
            f"{url}/memory/search",
            json={
                "query": "rotate to CoreWeave GPU vendor",
                "user_id": "default",
                "agent_id": "dev",
            },
        ).json()["results"]
        chunk = next(h for h in found if h["origin"] == "chunk")
        assert chunk["citation"].startswith("memory/2026-03-27") and "#L" in chunk["citation"]
        assert chunk["snippet"] and chunk["snippet"] in chunk["memory"]
        ctx = httpx.get(f"{url}/v1/context", params={"agent_id": "dev", "query": "GPU vendor"})
        body = ctx.json()
        assert ctx.status_code == 200 and body["chars"] <= 20_000
        assert "Chose CoreWeave" in body["text"] and "# Session context: agent dev" in body["text"]
        assert "memory/2026-03-27-vendor-gpu.md#L" in body["text"]  # found by the search
        (status,) = httpx.get(f"{url}/v1/workspaces").json()["results"]
        assert status["agent_id"] == "dev" and status["pending"] == [] and status["chunks"] >= 4
        assert status["chunk_tokens"] == 224 and status["last_index"]


def test_keys_only_reach_their_own_agents_workspace(
    memory: Memory, ws: Workspace, tmp_path: Path, live_server
) -> None:  # type: ignore[no-untyped-def]
    make_workspace(memory, tmp_path / "ws-ops", agent="ops")
    memory.settings.auth.keys = [
        ApiKey(name="dev", key="k-dev", users=["default"], agents=["dev"]),
        ApiKey(name="alice", key="k-alice", users=["alice"]),
    ]
    with live_server(create_app(memory=memory)) as server:
        url = server.url

        def get(key: str, agent: str) -> httpx.Response:
            return httpx.get(
                f"{url}/v1/memory_get",
                params={"agent_id": agent, "path": "MEMORY.md"},
                headers={"Authorization": f"Bearer {key}"},
            )

        assert get("k-dev", "dev").status_code == 200
        assert get("k-dev", "ops").status_code == 403
        assert get("k-alice", "dev").status_code == 403  # workspace files belong to "default"
        assert (
            httpx.get(
                f"{url}/v1/memory_get", params={"agent_id": "dev", "path": "MEMORY.md"}
            ).status_code
            == 401
        )
        r = httpx.post(
            f"{url}/v1/flush",
            json={"agent_id": "ops", "notes": ["sneaky"]},
            headers={"X-API-Key": "k-dev"},
        )
        assert r.status_code == 403
        assert "sneaky" not in (tmp_path / "ws-ops" / "memory" / "2026-03-27.md").read_text()
        listed = httpx.get(f"{url}/v1/workspaces", headers={"X-API-Key": "k-dev"}).json()
        assert [s["agent_id"] for s in listed["results"]] == ["dev"]
