"""``POST /v1/diary`` on a real server: the file it writes and the scope it enforces."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.settings import ApiKey

TURN = [
    {"role": "user", "content": "Which region do we deploy the API to?"},
    {"role": "assistant", "content": [{"type": "text", "text": "eu-west-1, behind the ALB."}]},
]


@pytest.fixture(autouse=True)
def _no_real_openclaw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))


def test_post_diary_appends_the_turn(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        r = httpx.post(
            f"{server.url}/v1/diary",
            json={"agent_id": "main", "session_id": "abc", "turn_id": "r1", "messages": TURN},
        )
        again = httpx.post(
            f"{server.url}/v1/diary",
            json={"agent_id": "main", "session_id": "abc", "turn_id": "r1", "messages": TURN},
        )
        noise = httpx.post(
            f"{server.url}/v1/diary",
            json={"agent_id": "main", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert r.status_code == 200, r.text
    assert r.json() | {"bytes": 0} == {
        "agent_id": "main",
        "path": "memory/2026-03-27.md",
        "date": "2026-03-27",
        "time": "09:00",
        "written": True,
        "reason": None,
        "kept": 2,
        "dropped": 0,
        "bytes": 0,
    }
    assert again.json()["reason"] == "duplicate" and noise.json()["reason"] == "noise"
    text = (memory.settings.home / "workspaces" / "main" / "memory" / "2026-03-27.md").read_text()
    assert text == (
        "# 2026-03-27\n\n## 09:00 · session abc\n"
        "- **user**: Which region do we deploy the API to?\n"
        "- **assistant**: eu-west-1, behind the ALB.\n"
    )


def test_bad_input_gets_a_named_error_with_a_hint(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        traversal = httpx.post(
            f"{server.url}/v1/diary", json={"agent_id": "../../etc", "messages": TURN}
        )
        shape = httpx.post(f"{server.url}/v1/diary", json={"agent_id": "main", "messages": "hi"})
    assert traversal.status_code == 422
    assert traversal.json()["error"] == "InvalidInputError" and traversal.json()["hint"]
    assert shape.status_code == 422
    assert not list((memory.settings.home).rglob("*.md"))


def test_keys_are_held_to_their_agents(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    memory.settings.auth.keys = [
        ApiKey(name="main-plugin", key=SecretStr("k-main"), users=["default"], agents=["main"]),
    ]
    with live_server(create_app(memory=memory)) as server:
        url = f"{server.url}/v1/diary"
        anonymous = httpx.post(url, json={"agent_id": "main", "messages": TURN})
        other = httpx.post(
            url,
            json={"agent_id": "ops", "messages": TURN},
            headers={"Authorization": "Bearer k-main"},
        )
        own = httpx.post(
            url, json={"agent_id": "main", "messages": TURN}, headers={"X-API-Key": "k-main"}
        )
    assert anonymous.status_code == 401
    assert other.status_code == 403 and "ops" in other.json()["detail"]
    assert own.status_code == 200 and own.json()["written"]
    workspaces = memory.settings.home / "workspaces"
    assert [p.parent.parent.name for p in workspaces.rglob("*.md")] == ["main"]
