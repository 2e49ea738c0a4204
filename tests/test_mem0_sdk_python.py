"""mem0's own Python SDK (``mem0ai``, pinned in the dev extra) against ``memoryd serve``.

The documented platform quick-start, unchanged but for ``host=``: add, get_all with
filters and pages, search (filters, top_k, threshold, fields), get, update,
history, feedback, batch update and delete, delete, delete_all, entities, exports;
the async client too; and a key bound to one user reaches only that user through
the SDK, presented as mem0 sends it (``Authorization: Token <key>``). Telemetry is
off (``MEM0_TELEMETRY=False``) and mem0's config directory is a temporary one.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serve_kit import memoryd_serve

KEYS = [
    {"name": "admin", "key": "k-admin", "admin": True},
    {"name": "alice", "key": "k-alice", "users": ["alice"]},
]

QUICKSTART = [
    {"role": "user", "content": "Hi, I'm Alex. I'm a vegetarian and I'm allergic to nuts."},
    {"role": "assistant", "content": "Hello Alex! I'll remember your dietary needs."},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    base = tmp_path_factory.mktemp("mem0py")
    os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is first imported
    os.environ["MEM0_DIR"] = str(base / "mem0dir")
    with memoryd_serve(base, MEMORYD_AUTH__KEYS=json.dumps(KEYS)) as url:
        yield url


def _client(url: str, key: str = "k-admin") -> Any:
    from mem0 import MemoryClient

    return MemoryClient(api_key=key, host=url)


def test_the_quickstart_runs_unchanged(server: str) -> None:
    client = _client(server)
    added = client.add(QUICKSTART, user_id="alex", metadata={"food": "vegetarian"})
    assert added["results"] and all(e["event"] in ("ADD", "NONE") for e in added["results"])
    client.add("I live in Lisbon and work as a chef", user_id="alex", agent_id="cook")
    client.add("Bea prefers trains over planes", user_id="bea", infer=False)

    page = client.get_all(filters={"AND": [{"user_id": "alex"}]}, page=1, page_size=50)
    assert page["count"] == len(page["results"]) >= 2
    assert {m["user_id"] for m in page["results"]} == {"alex"}
    assert page["next"] is None and page["previous"] is None
    texts = " ".join(m["memory"] for m in page["results"])
    assert "nuts" in texts and "Lisbon" in texts
    assert all(m["origin"] == "fact" for m in page["results"])  # the turns show once: not here

    # pages: one at a time, linked
    first = client.get_all(filters={"user_id": "alex"}, page=1, page_size=1)
    assert first["count"] == page["count"] and len(first["results"]) == 1
    assert first["next"] and "page=2" in first["next"] and first["previous"] is None

    # the filter language: an agent, OR across users, a metadata key
    cook = client.get_all(filters={"AND": [{"user_id": "alex"}, {"agent_id": "cook"}]})
    assert [m["agent_id"] for m in cook["results"]] == ["cook"] * len(cook["results"]) != []
    both = client.get_all(filters={"OR": [{"user_id": "alex"}, {"user_id": "bea"}]})
    assert {m["user_id"] for m in both["results"]} == {"alex", "bea"}
    vegetarian = client.get_all(filters={"user_id": "alex", "metadata": {"food": "vegetarian"}})
    assert vegetarian["results"] and all(
        m["metadata"]["food"] == "vegetarian" for m in vegetarian["results"]
    )
    recent = client.get_all(filters={"user_id": "alex", "created_at": {"gte": "2000-01-01"}})
    assert recent["count"] == page["count"]

    found = client.search("Is Alex a vegetarian?", filters={"user_id": "alex"})
    assert found["results"] and {h["user_id"] for h in found["results"]} == {"alex"}
    assert all(0 <= h["score"] <= 1 for h in found["results"])
    top = client.search("allergic to nuts", filters={"user_id": "alex"}, top_k=1)
    assert len(top["results"]) == 1 and "nuts" in top["results"][0]["memory"]
    narrow = client.search(
        "allergic to nuts", filters={"user_id": "alex"}, fields=["memory"], threshold=0.01
    )
    assert narrow["results"] and set(narrow["results"][0]) == {"id", "memory"}
    assert client.search("allergic to nuts", filters={"user_id": "alex"}, threshold=1.0) == {
        "results": []
    }

    memory_id = top["results"][0]["id"]
    got = client.get(memory_id)
    assert got["id"] == memory_id and got["user_id"] == "alex"
    updated = client.update(memory_id, text="Alex is allergic to peanuts and cashews")
    assert updated["memory"] == "Alex is allergic to peanuts and cashews"
    history = client.history(memory_id)
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert history[-1]["old_memory"] and history[-1]["new_memory"] == updated["memory"]
    fb = client.feedback(memory_id, feedback="positive", feedback_reason="accurate")
    assert fb["feedback"] == "POSITIVE"
    assert client.get(memory_id)["metadata"]["feedback"]["feedback"] == "POSITIVE"

    ids = [m["id"] for m in client.get_all(filters={"user_id": "alex"})["results"]]
    batch = client.batch_update([{"memory_id": ids[0], "text": "Alex cooks every Sunday"}])
    assert "1" in batch["message"] and client.get(ids[0])["memory"] == "Alex cooks every Sunday"
    assert "1" in client.batch_delete([{"memory_id": ids[0]}])["message"]
    client.delete(ids[1])
    left = client.get_all(filters={"user_id": "alex"})["count"]
    assert left == len(ids) - 2

    users = {(e["type"], e["name"]) for e in client.users()["results"]}
    assert {("user", "alex"), ("user", "bea"), ("agent", "cook")} <= users

    created = client.create_memory_export(
        schema=json.dumps({"type": "object"}), filters={"user_id": "alex"}
    )
    export = client.get_memory_export(memory_export_id=created["id"])
    assert export["count"] == left and {m["user_id"] for m in export["memories"]} == {"alex"}

    client.delete_all(user_id="alex")
    assert client.get_all(filters={"user_id": "alex"})["count"] == 0
    assert client.get_all(filters={"user_id": "bea"})["count"] == 1
    client.delete_users(user_id="bea")
    assert client.get_all(filters={"user_id": "bea"})["count"] == 0


def test_the_async_client_runs_too(server: str) -> None:
    from mem0 import AsyncMemoryClient

    async def run() -> None:
        client = AsyncMemoryClient(api_key="k-admin", host=server)
        await client.add("Dana runs every morning", user_id="dana", infer=False)
        page = await client.get_all(filters={"user_id": "dana"})
        assert [m["memory"] for m in page["results"]] == ["Dana runs every morning"]
        found = await client.search("when does Dana run", filters={"user_id": "dana"})
        assert found["results"][0]["memory"] == "Dana runs every morning"
        await client.delete(found["results"][0]["id"])
        assert (await client.get_all(filters={"user_id": "dana"}))["count"] == 0

    asyncio.run(run())


def test_a_users_key_reaches_only_that_user_through_the_sdk(server: str) -> None:
    from mem0.exceptions import AuthenticationError, MemoryNotFoundError

    admin = _client(server)
    (bob,) = admin.add("Bob keeps the spare key under the mat", user_id="bob", infer=False)[
        "results"
    ]
    alice = _client(server, "k-alice")
    alice.add("Alice's locker code is 4412", infer=False)  # the key's only user
    mine = alice.get_all()
    assert {m["user_id"] for m in mine["results"]} == {"alice"}
    # a filter cannot widen the key: bob's memories are not there
    either = alice.get_all(filters={"OR": [{"user_id": "alice"}, {"user_id": "bob"}]})
    assert {m["user_id"] for m in either["results"]} == {"alice"}
    with pytest.raises(AuthenticationError):
        alice.search("spare key", filters={"user_id": "bob"})
    with pytest.raises(AuthenticationError):
        alice.add("planted", user_id="bob", infer=False)
    for call in (alice.get, alice.history, alice.delete):
        with pytest.raises(MemoryNotFoundError):
            call(bob["id"])
    with pytest.raises(MemoryNotFoundError):
        alice.update(bob["id"], text="changed")
    with pytest.raises(MemoryNotFoundError):
        alice.batch_delete([{"memory_id": bob["id"]}])
    with pytest.raises(AuthenticationError):
        alice.delete_all(user_id="bob")  # deleting a whole user needs an admin key
    assert admin.get(bob["id"])["memory"] == "Bob keeps the spare key under the mat"
    with pytest.raises(ValueError, match="not valid"):
        _client(server, "k-wrong")


def test_what_memoryd_does_not_have_answers_501(server: str) -> None:
    from mem0.exceptions import MemoryError as Mem0Error

    client = _client(server)
    for call, feature in (
        (lambda: client.get_webhooks(project_id="p1"), "webhooks"),
        (lambda: client.get_summary(filters={"user_id": "a"}), "summaries"),
        (lambda: client.get_profile("alex"), "profiles"),
        (lambda: client.add("x", user_id="a", expiration_date="2030-01-01"), "expiry"),
    ):
        with pytest.raises(Mem0Error) as err:
            call()
        assert err.value.error_code == "HTTP_501" and feature in str(err.value), feature


def test_mem0_sdk_is_pinned() -> None:
    """The quick-start is tested against the SDK version users have (issue 33)."""
    from importlib.metadata import version

    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '"mem0ai==2.2.1"' in text and version("mem0ai") == "2.2.1"


def test_the_readme_example_runs(server: str) -> None:
    """The README's Python example ("Coming from mem0"), with this server and key."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text[text.index("## Coming from mem0") :]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    code = code.replace("http://127.0.0.1:8230", server).replace("your-memoryd-key", "k-admin")
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)
    client = scope["client"]
    assert "nuts" in " ".join(
        m["memory"] for m in client.get_all(filters={"user_id": "alex"})["results"]
    )
