"""The memory service's HTTP API on a real uvicorn server, driven with httpx.

Every route of the issue, the mem0-shaped routes, auth scoping, clear errors,
and one test per seed defect the service must beat.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import ApiKey, Settings


@pytest.fixture
def api(memory: Memory, live_server) -> Iterator[httpx.Client]:  # type: ignore[no-untyped-def]
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        yield client


def add(api: httpx.Client, text: str, **fields: object) -> dict:
    body = {"text": text, "user_id": "boss", "infer": False, **fields}
    response = api.post("/memory/add", json=body)
    assert response.status_code == 200, response.text
    return response.json()["results"][0]


def test_health_and_openapi(api: httpx.Client) -> None:
    health = api.get("/health").json()
    assert health["status"] == "ok" and health["llm"].startswith("none")
    assert {"version", "store", "model", "counts"} <= set(health)
    assert api.get("/docs").status_code == 200
    paths = api.get("/openapi.json").json()["paths"]
    for path in (
        "/memory/add",
        "/memory/search",
        "/memory/search_combined",
        "/memory/list",
        "/memory/{memory_id}",
        "/memory/update",
        "/memory/history/{memory_id}",
        "/memory/reset",
        "/memory/restore/{memory_id}",
        "/memories",
        "/memories/{memory_id}",
        "/memories/{memory_id}/history",
        "/search",
        "/reset",
    ):
        assert path in paths, path


def test_add_with_and_without_inference(api: httpx.Client) -> None:
    inferred = api.post(
        "/memory/add",
        json={
            "text": "Hi there! The staging DB listens on port 5433. Thanks!",
            "user_id": "boss",
            "agent_id": "dev",
            "metadata": {"category": "environment"},
        },
    ).json()
    assert inferred["status"] == "ok"
    assert [(e["event"], e["memory"]) for e in inferred["results"]] == [
        ("ADD", "The staging DB listens on port 5433.")
    ]
    raw = api.post(
        "/memory/add",
        json={"text": "Hi there! Verbatim.", "user_id": "boss", "infer": False},
    ).json()["results"]
    assert [(e["event"], e["memory"]) for e in raw] == [("ADD", "Hi there! Verbatim.")]
    messages = api.post(
        "/memory/add",
        json={
            "messages": [
                {"role": "user", "content": "I moved to Porto last month."},
                {"role": "assistant", "content": "Got it."},
            ],
            "user_id": "boss",
        },
    ).json()["results"]
    assert [e["memory"] for e in messages] == ["I moved to Porto last month."]
    record = api.get(f"/memory/{messages[0]['id']}").json()["result"]
    assert record["origin"] == "fact" and record["memory_type"] == "long_term"


def test_texts_are_stored_together_each_as_its_own_memory(api: httpx.Client) -> None:
    facts = ["Ana likes sushi.", "Ana's dog is called Pixel.", "Ana likes sushi.", "Ana runs."]
    events = api.post(
        "/memory/add",
        json={"texts": facts, "user_id": "boss", "agent_id": "dev", "infer": False,
              "metadata": {"category": "preference"}, "timestamp": "2026-05-01T09:30:00Z"},
    ).json()["results"]  # fmt: skip
    assert [(e["event"], e["memory"]) for e in events] == [
        ("ADD", "Ana likes sushi."),
        ("ADD", "Ana's dog is called Pixel."),
        ("NONE", "Ana likes sushi."),  # the same text twice in one batch is stored once
        ("ADD", "Ana runs."),
    ]
    assert events[2]["id"] == events[0]["id"]  # the repeat names the memory holding it
    stored = api.get(f"/memory/{events[1]['id']}").json()["result"]
    assert stored["agent_id"] == "dev" and stored["metadata"]["category"] == "preference"
    hits = api.post(
        "/memory/search", json={"query": "what is the dog's name", "user_id": "boss", "top_k": 1}
    ).json()["results"]
    assert hits[0]["id"] == events[1]["id"]
    # one bad text refuses the whole batch, naming it, and nothing of it is written
    before = api.get("/memory/list", params={"user_id": "boss"}).json()["total"]
    bad = api.post(
        "/memory/add",
        json={"texts": ["Ben likes tea.", "   ", "Ben runs."], "user_id": "boss", "infer": False},
    )
    assert bad.status_code == 422 and "texts[1]" in bad.json()["detail"], bad.text
    for body in (
        {"texts": [], "user_id": "boss", "infer": False},
        {"texts": ["a"], "text": "b", "user_id": "boss", "infer": False},
    ):
        refused = api.post("/memory/add", json=body)
        assert refused.status_code == 422 and refused.json()["hint"], refused.text
    many = api.post(
        "/memory/add", json={"texts": [f"fact {n}" for n in range(1001)], "user_id": "boss"}
    )
    assert many.status_code == 413 and "limits.max_texts" in many.json()["detail"], many.text
    assert api.get("/memory/list", params={"user_id": "boss"}).json()["total"] == before
    # with infer, each text is a source of facts like a message is
    inferred = api.post(
        "/memory/add",
        json={"texts": ["Hi! The staging DB listens on port 5433.", "Deploys run at 6pm."],
              "user_id": "boss"},
    ).json()["results"]  # fmt: skip
    assert {e["memory"] for e in inferred if e["event"] == "ADD"} == {
        "The staging DB listens on port 5433.",
        "Deploys run at 6pm.",
    }


def test_search_results_carry_the_seed_fields_and_score_parts(api: httpx.Client) -> None:
    add(
        api,
        "Decided to use S3 Vectors as the primary vector store",
        agent_id="dev",
        metadata={"category": "decision"},
    )
    body = api.post(
        "/memory/search", json={"query": "which vector store", "user_id": "boss", "agent_id": "dev"}
    ).json()
    (hit,) = body["results"]
    assert {
        "id",
        "memory",
        "score",
        "original_score",
        "created_at",
        "metadata",
        "memory_type",
    } <= set(hit)
    assert hit["metadata"] == {"category": "decision"} and hit["memory_type"] == "long_term"
    assert set(hit["parts"]) == {"vector", "keyword", "fused", "decay"}
    assert hit["score"] == pytest.approx(
        0.7 * hit["original_score"] + 0.3 * hit["parts"]["decay"], abs=1e-5
    )
    plain = api.post(
        "/memory/search",
        json={"query": "which vector store", "user_id": "boss", "time_decay": False},
    ).json()["results"][0]
    assert "original_score" not in plain and plain["score"] == hit["original_score"]


def test_search_filters_and_memory_type(api: httpx.Client) -> None:
    add(api, "Redis runs on port 6380", agent_id="dev")
    add(api, "Redis was slow today", agent_id="dev", run_id="2026-03-27")
    add(api, "Redis needs allkeys-lru", agent_id="ops", metadata={"category": "experience"})

    def types(filters: dict) -> set[str]:
        body = {"query": "redis", "user_id": "boss", "agent_id": "dev", "filters": filters}
        return {h["memory_type"] for h in api.post("/memory/search", json=body).json()["results"]}

    assert types({}) == {"long_term", "short_term", "shared"}
    assert types({"memory_type": "short_term"}) == {"short_term"}
    assert types({"memory_type": "shared"}) == {"shared"}
    assert types({"category": "experience"}) == {"shared"}
    bad = api.post("/memory/search", json={"query": "x", "filters": {"colour": "red"}})
    assert bad.status_code == 422 and bad.json()["error"] == "InvalidInputError"
    assert "colour" in bad.json()["detail"] and bad.json()["hint"]


def test_combined_search_is_labelled(api: httpx.Client, memory: Memory) -> None:
    add(api, "Long-term: CI runs on GitHub Actions", agent_id="dev")
    add(api, "Today: CI was red because of flaky tests", agent_id="dev", run_id="2026-03-27")
    body = api.post(
        "/memory/search_combined",
        json={"query": "CI", "user_id": "boss", "agent_id": "dev", "recent_days": 7},
    ).json()
    assert sorted(h["memory_type"] for h in body["results"]) == ["long_term", "short_term"]
    assert body["counts"] == {"long_term": 1, "short_term": 1}
    scores = [h["score"] for h in body["results"]]
    assert scores == sorted(scores, reverse=True)  # one ranking, not long-term first


def test_combined_search_ranks_a_relevant_short_term_hit_first(
    api: httpx.Client, memory: Memory
) -> None:
    for text in ("Prefers dark roast coffee", "Lives in Lisbon", "Has two cats"):
        add(api, text, agent_id="dev")
    add(api, "The staging database moved to port 5434", agent_id="dev", run_id="2026-03-27")
    body = api.post(
        "/memory/search_combined",
        json={"query": "staging database port", "user_id": "boss", "agent_id": "dev"},
    ).json()
    first = body["results"][0]
    assert (
        first["memory"].startswith("The staging database") and first["memory_type"] == "short_term"
    )
    # hits that share nothing with the query are under the default relevance floor
    assert all(h["original_score"] >= 0.2 for h in body["results"])


def test_list_get_update_history_delete_restore(api: httpx.Client, clock) -> None:  # type: ignore[no-untyped-def]
    first = add(api, "Standup at 9:30", agent_id="dev")
    add(api, "Retro on Fridays", agent_id="dev")
    add(api, "Someone else's", user_id="carol")
    page = api.get("/memory/list", params={"user_id": "boss", "limit": 1}).json()
    assert page["total"] == 2 and len(page["results"]) == 1
    assert page["results"][0]["memory"] == "Retro on Fridays"  # newest first
    updated = api.put(
        "/memory/update", json={"memory_id": first["id"], "text": "Standup at 10:00"}
    ).json()["result"]
    assert updated["memory"] == "Standup at 10:00"
    clock.advance(minutes=1)  # the store stamps with the memory's clock
    assert api.delete(f"/memory/{first['id']}").json() == {"status": "ok", "deleted": first["id"]}
    assert api.get(f"/memory/{first['id']}").status_code == 404
    restored = api.post(f"/memory/restore/{first['id']}").json()["result"]
    assert restored["state"] == "active"
    # the answer is the restored memory as stored now, not its state before the restore
    stored = api.get(f"/memory/{first['id']}").json()["result"]
    assert restored["updated_at"] == stored["updated_at"] > updated["updated_at"]
    history = api.get(f"/memory/history/{first['id']}").json()["results"]
    assert [h["event"] for h in history] == ["ADD", "UPDATE", "DELETE", "RESTORE"]
    assert history[1]["old_memory"] == "Standup at 9:30"
    assert history[1]["new_memory"] == "Standup at 10:00" and history[1]["actor"] == "anonymous"


def test_errors_are_named_and_say_what_to_do(api: httpx.Client) -> None:
    cases = [
        api.post("/memory/add", json={"text": "x", "user_id": ""}),  # an empty user_id
        api.post("/memory/add", json={"user_id": "boss"}),  # no text
        api.post("/memory/add", json={"user_id": "../etc", "text": "x"}),
        api.post("/memory/search", json={"query": "x", "top_k": 500}),
        api.post("/memory/search", json={"query": "x", "min_score": 2}),
        api.post("/memory/search_combined", json={"query": "x", "user_id": "b", "recent_days": 0}),
        api.put("/memory/update", json={"memory_id": "nope", "text": "x"}),
    ]
    for response in cases:
        body = response.json()
        assert response.status_code in (404, 413, 422), response.text
        assert body["error"] in {"InvalidInputError", "NotFoundError"} and body["hint"], body


def test_reset_is_reachable_scoped_and_never_wipes_other_users(api: httpx.Client) -> None:
    """Seed defect: /memory/reset was shadowed by /memory/{id}, and wiped every user."""
    add(api, "boss dev one", agent_id="dev")
    add(api, "boss ops one", agent_id="ops")
    add(api, "carol one", user_id="carol")
    no_scope = api.delete("/memory/reset")
    assert no_scope.status_code == 422 and "never wipes every user" in no_scope.json()["detail"]
    done = api.delete("/memory/reset", params={"user_id": "boss", "agent_id": "dev"}).json()
    assert done["deleted"] == 1 and done["scope"]["agent_id"] == "dev"
    left = {r["memory"] for r in api.get("/memory/list").json()["results"]}
    assert left == {"boss ops one", "carol one"}
    # mem0's POST /reset is scoped the same way
    assert api.post("/reset").status_code == 422
    reset = api.post("/reset", json={"user_id": "carol"}).json()
    assert reset["deleted"] == 1 and reset["scope"] == {"user_id": "carol"}
    assert reset["message"] == "Memories reset for user_id=carol"  # not a Python dict repr
    assert {r["memory"] for r in api.get("/memory/list").json()["results"]} == {"boss ops one"}


def test_the_shared_pool_includes_procedural_and_never_repeats(api: httpx.Client) -> None:
    """Seed defect: only `experience` reached the shared pool, via a copy that came back twice."""
    add(
        api,
        "kiro-cli: never add & to the command",
        agent_id="ops",
        metadata={"category": "procedural"},
    )
    add(api, "kiro-cli hung on a trailing &", agent_id="ops", metadata={"category": "experience"})
    add(api, "kiro-cli hung on a trailing &", agent_id="dev", metadata={"category": "experience"})
    hits = api.post(
        "/memory/search",
        json={"query": "kiro-cli", "user_id": "boss", "agent_id": "dev", "top_k": 10},
    ).json()["results"]
    texts = [h["memory"] for h in hits]
    assert sorted(texts) == [
        "kiro-cli hung on a trailing &",
        "kiro-cli: never add & to the command",
    ]
    assert {h["memory_type"] for h in hits} == {"shared"}


def test_no_user_id_is_hard_coded(api: httpx.Client) -> None:
    """Seed defect: every search also read user "shared", whoever asked."""
    add(
        api,
        "belongs to the user named shared",
        user_id="shared",
        metadata={"category": "experience"},
    )
    body = {"query": "belongs to the user", "user_id": "alice", "agent_id": "dev"}
    assert api.post("/memory/search", json=body).json()["results"] == []


def test_search_is_hybrid_not_vector_only(api: httpx.Client) -> None:
    """Seed defect: vector-only search misses exact identifiers."""
    add(api, "Incident INC-20931 was caused by an expired TLS certificate")
    add(api, "We celebrated the launch with pizza")
    hit = api.post("/memory/search", json={"query": "INC-20931", "user_id": "boss"}).json()[
        "results"
    ][0]
    assert hit["memory"].startswith("Incident INC-20931") and hit["parts"]["keyword"] == 1.0


def test_mem0_rest_shape(api: httpx.Client) -> None:
    added = api.post(
        "/memories",
        json={
            "messages": [{"role": "user", "content": "I am allergic to peanuts."}],
            "user_id": "alice",
        },
    ).json()
    (event,) = added["results"]
    assert event["event"] == "ADD" and "status" not in added
    mid = event["id"]
    assert api.get("/memories", params={"user_id": "alice"}).json()["results"][0]["id"] == mid
    assert api.get(f"/memories/{mid}").json()["memory"] == "I am allergic to peanuts."
    found = api.post("/search", json={"query": "allergies", "user_id": "alice", "limit": 3}).json()
    assert found["results"][0]["id"] == mid
    updated = api.put(f"/memories/{mid}", json={"text": "Allergic to peanuts and cashews"}).json()
    assert updated["message"].startswith("Memory updated") and updated["memory"].endswith("cashews")
    history = api.get(f"/memories/{mid}/history").json()
    assert isinstance(history, list) and [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert api.delete(f"/memories/{mid}").json()["message"] == "Memory deleted successfully"
    assert api.get(f"/memories/{mid}").status_code == 404
    api.post("/memories", json={"messages": "Lives in Porto", "user_id": "alice", "infer": False})
    # the conversation turn kept as the fact's evidence, and "Lives in Porto"
    assert api.delete("/memories", params={"user_id": "alice"}).json()["deleted"] == 3
    assert api.post("/memories", json={"messages": "x"}).status_code == 422


@pytest.fixture
def keyed(settings: Settings, embedder: Embedder, live_server) -> Iterator[str]:  # type: ignore[no-untyped-def]
    settings.auth.keys = [
        ApiKey(name="admin", key="admin-secret", admin=True),  # type: ignore[arg-type]
        ApiKey(name="boss-dev", key="dev-secret", users=["boss"], agents=["dev"]),  # type: ignore[arg-type]
    ]
    with Memory(settings, embedder=embedder) as mem, live_server(create_app(memory=mem)) as server:
        yield server.url


def test_keys_keep_every_caller_in_its_scope(keyed: str) -> None:
    admin = httpx.Client(base_url=keyed, headers={"Authorization": "Bearer admin-secret"})
    dev = httpx.Client(base_url=keyed, headers={"X-API-Key": "dev-secret"})
    anonymous = httpx.Client(base_url=keyed)
    assert anonymous.post("/memory/search", json={"query": "x"}).status_code == 401
    assert httpx.get(f"{keyed}/health").status_code == 200  # health stays open
    carol = admin.post(
        "/memory/add", json={"text": "carol's plan", "user_id": "carol", "infer": False}
    ).json()["results"][0]
    mine = dev.post(
        "/memory/add", json={"text": "dev's note", "user_id": "boss", "agent_id": "dev"}
    )
    assert mine.status_code == 200
    # writing or searching outside the key's scope: 403; another user's memory by id: 404
    outside = dev.post("/memory/add", json={"text": "x", "user_id": "carol", "agent_id": "dev"})
    assert outside.status_code == 403 and outside.json()["error"] == "PermissionDeniedError"
    assert dev.post("/memory/search", json={"query": "plan", "user_id": "carol"}).status_code == 403
    assert dev.post("/memory/search", json={"query": "plan"}).status_code == 403
    for response in (
        dev.get(f"/memory/{carol['id']}"),
        dev.get(f"/memory/history/{carol['id']}"),
        dev.delete(f"/memory/{carol['id']}"),
        dev.put("/memory/update", json={"memory_id": carol["id"], "text": "hijacked"}),
        dev.get(f"/memories/{carol['id']}"),
    ):
        assert response.status_code == 404, response.text
    assert admin.get(f"/memory/{carol['id']}").json()["result"]["memory"] == "carol's plan"
    # reset is for admins only
    assert dev.delete("/memory/reset", params={"user_id": "boss"}).status_code == 403
    assert admin.delete("/memory/reset", params={"user_id": "boss"}).json()["deleted"] == 1
    found = admin.get("/memory/history/" + carol["id"]).json()["results"]
    assert found[0]["actor"] == "admin"


def test_a_failing_llm_is_a_502_that_says_nothing_was_stored(
    settings: Settings, embedder: Embedder, live_server
) -> None:  # type: ignore[no-untyped-def]
    from tests.fake_llm import FakeLLM, Reply

    with FakeLLM() as llm:
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = llm.url
        llm.script("no json here", "still none", Reply(status=500), Reply(status=500))
        with (
            Memory(settings, embedder=embedder) as mem,
            live_server(create_app(memory=mem)) as server,
        ):
            body = {"text": "The VPN gateway is vpn-2.corp.", "user_id": "boss"}
            garbage = httpx.post(f"{server.url}/memory/add", json=body, timeout=30)
            down = httpx.post(f"{server.url}/memory/add", json=body, timeout=30)
            assert mem.count() == 0
            kept = httpx.post(f"{server.url}/memory/add", json={**body, "infer": False}, timeout=30)
    for response in (garbage, down):
        assert response.status_code == 502
        error = response.json()
        assert error["error"] == "UpstreamError" and "nothing was stored" in error["hint"]
    assert "twice" in garbage.json()["detail"] and "HTTP 500" in down.json()["detail"]
    assert kept.json()["results"][0]["event"] == "ADD"  # the input is not lost
