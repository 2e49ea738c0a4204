"""One session driven only through HTTP, as an agent would use the service:
add with inference on and off, search, combined search, update, history,
delete, restore, reset of one scope. The LLM is a real local endpoint speaking
the OpenAI protocol (tests/fake_llm.py), the store and model are real."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM


@pytest.fixture
def session(
    settings: Settings, embedder: Embedder, clock, live_server
) -> Iterator[tuple[httpx.Client, FakeLLM, object]]:  # type: ignore[no-untyped-def]
    with FakeLLM() as llm:
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = llm.url
        with (
            Memory(settings, embedder=embedder, clock=clock) as mem,
            live_server(create_app(memory=mem)) as server,
            httpx.Client(base_url=server.url, timeout=30) as http,
        ):
            yield http, llm, clock


def test_a_whole_session_over_http(session) -> None:  # type: ignore[no-untyped-def]
    http, llm, clock = session
    scope = {"user_id": "boss", "agent_id": "dev"}

    # 1. an explicit long-term write, stored as given (seed: `cli.py add --text ...`)
    decision = http.post(
        "/memory/add",
        json={
            **scope,
            "text": "Decided to use S3 Vectors as the primary vector store",
            "metadata": {"category": "decision"},
            "infer": False,
        },
    ).json()["results"][0]
    assert decision["event"] == "ADD"

    # 2. a conversation with inference on: the LLM extracts, nothing similar is stored yet
    llm.script(json.dumps({"facts": ["The API listens on port 8230", "Deploys happen on Fridays"]}))
    added = http.post(
        "/memory/add",
        json={
            **scope,
            "messages": [
                {"role": "user", "content": "the api is on 8230 and we deploy fridays"},
                {"role": "assistant", "content": "Noted."},
            ],
        },
    ).json()["results"]
    assert [(e["event"], e["memory"]) for e in added] == [
        ("ADD", "The API listens on port 8230"),
        ("ADD", "Deploys happen on Fridays"),
    ]
    port_id = added[0]["id"]

    # 3. a short-term digest of today (run_id = date), inference with the default rules
    http.post(
        "/memory/add",
        json={
            **scope,
            "run_id": "2026-03-27",
            "text": "Investigated a slow deploy on port 8230 today.",
        },
    )

    # 4. another agent's lesson lands in the shared pool
    http.post(
        "/memory/add",
        json={
            "user_id": "boss",
            "agent_id": "ops",
            "text": "Restart the API after changing its port",
            "metadata": {"category": "procedural"},
            "infer": False,
        },
    )

    # 5. search: the fact, ranked with its parts, plus ops's procedural (shared)
    hits = http.post(
        "/memory/search", json={**scope, "query": "which port does the API use"}
    ).json()["results"]
    by_id = {h["id"]: h for h in hits}
    assert by_id[port_id]["memory_type"] == "long_term"
    assert "original_score" in by_id[port_id] and by_id[port_id]["parts"]["decay"] == 1.0
    assert "shared" in {h["memory_type"] for h in hits}

    # 6. a week later, combined search: long-term + the recent short-term digest
    clock.advance(days=2)
    combined = http.post(
        "/memory/search_combined", json={**scope, "query": "port 8230 deploy", "recent_days": 7}
    ).json()
    types = [h["memory_type"] for h in combined["results"]]
    assert {"short_term", "long_term"} <= set(types)
    scores = [h["score"] for h in combined["results"]]
    assert scores == sorted(scores, reverse=True)  # one ranking, labelled by tier

    # 7. inference reconciles: the LLM is shown integer ids and says UPDATE
    llm.script(
        json.dumps({"facts": ["The API now listens on port 9000"]}),
        json.dumps(
            {
                "decisions": [
                    {
                        "fact": 0,
                        "event": "UPDATE",
                        "id": 0,
                        "text": "The API listens on port 9000",
                        "reason": "port changed",
                    }
                ]
            }
        ),
    )
    changed = http.post("/memory/add", json={**scope, "text": "we moved the api to 9000"}).json()[
        "results"
    ]
    (change,) = changed
    assert {k: change[k] for k in ("memory", "event", "previous_memory")} == {
        "memory": "The API listens on port 9000",
        "event": "UPDATE",
        "previous_memory": "The API listens on port 8230",
    }
    assert '"id": 0' in llm.requests[-1]["messages"][1]["content"]
    # the old value is kept, superseded: out of search, found on request
    old_id, port_id = port_id, change["id"]
    history = http.get(f"/memory/history/{old_id}").json()["results"]
    assert [h["event"] for h in history] == ["ADD", "SUPERSEDE"]
    assert "port changed" in history[1]["reason"]
    found = http.post(
        "/memory/search", json={**scope, "query": "API port", "include_superseded": True}
    ).json()["results"]
    assert old_id in {h["id"] for h in found}

    # 8. a manual update, then history shows every version with who and why
    http.put("/memory/update", json={"memory_id": port_id, "text": "The API listens on port 9001"})
    history = http.get(f"/memory/history/{port_id}").json()["results"]
    assert [(h["event"], h["old_memory"], h["new_memory"]) for h in history] == [
        ("ADD", None, "The API listens on port 9000"),
        ("UPDATE", "The API listens on port 9000", "The API listens on port 9001"),
    ]

    # 9. delete, gone from search, restore, back
    http.delete(f"/memory/{port_id}")
    ids = {
        h["id"]
        for h in http.post("/memory/search", json={**scope, "query": "API port"}).json()["results"]
    }
    assert port_id not in ids
    http.post(f"/memory/restore/{port_id}")
    hits = http.post("/memory/search", json={**scope, "query": "API port"}).json()["results"]
    assert hits[0]["id"] == port_id and hits[0]["memory"] == "The API listens on port 9001"

    # 10. reset dev's memories only: ops's procedural and other scopes stay
    http.post("/memory/add", json={"user_id": "carol", "text": "carol's note", "infer": False})
    reset = http.delete("/memory/reset", params=scope).json()
    # the decision, 2 facts with the 2 turns they came from, the digest and the superseded
    # port; nothing else
    assert reset["deleted"] == 7
    left = http.get("/memory/list").json()["results"]
    assert sorted(r["memory"] for r in left) == [
        "Restart the API after changing its port",
        "carol's note",
    ]
    assert http.get(f"/memory/{port_id}").status_code == 404
