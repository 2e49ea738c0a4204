"""The MCP server at /mcp of a real ``memoryd serve``, driven by the SDK's client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.settings import ApiKey
from tests.mcp_client import McpSession

WRITE_TOOLS = {
    "memory_add",
    "memory_update",
    "memory_delete",
    "memory_flush",
    "memory_session_end",
    "memory_rem_backfill",
    "memory_commitments",
    "wiki_apply",
}


@pytest.fixture
def server(
    memory: Memory, live_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    with live_server(create_app(memory=memory)) as srv:
        yield srv


def session(server: Any, **headers: str) -> McpSession:
    return McpSession.http(f"{server.url}/mcp", headers)


def test_tools_are_listed_with_guidance_and_no_scope_arguments(server) -> None:  # type: ignore[no-untyped-def]
    with session(server) as s:
        tools = s.tools()
    assert {"memory_search", "memory_add", "memory_update", "memory_delete", "memory_list",
            "memory_history"} <= set(tools)  # fmt: skip
    for name, tool in tools.items():
        props = tool.input_schema.get("properties", {})
        assert not {"user_id", "agent_id", "user", "agent", "run_id"} & set(props), name
        assert len(tool.description) > 120, name
        assert tool.annotations.read_only_hint is (name not in WRITE_TOOLS), name
    assert "BEFORE answering" in tools["memory_search"].description
    add_schema = str(tools["memory_add"].input_schema)
    for category in ("decision", "preference", "environment", "project", "experience",
                     "procedural", "task", "short_term"):  # fmt: skip
        assert category in tools["memory_add"].description and category in add_schema


def test_flush_and_session_end_write_the_agents_workspace(server, memory: Memory) -> None:  # type: ignore[no-untyped-def]
    talk = [
        {"role": "user", "content": "The staging cluster is named kestrel-2."},
        {"role": "assistant", "content": "Noted: staging runs on kestrel-2."},
    ]
    memory_dir = memory.settings.home / "workspaces" / "main" / "memory"
    with session(server, **{"X-Memoryd-Agent": "main"}) as s:
        flushed = s.call("memory_flush", notes=["Release freeze starts on 2026-04-02"])
        assert flushed["appended"] == 1 and flushed["path"] == "memory/2026-03-27.md"
        distilled = s.call("memory_flush", messages=talk)
        assert distilled["appended"] == 2
        again = s.call("memory_flush", messages=talk)
        assert again["appended"] == 0  # today's diary holds it now
        note = s.call("memory_session_end", messages=talk, session_id="s-1")
        assert note["path"].startswith("memory/2026-03-27-") and note["messages"] == 2
        found = s.call("memory_search", query="when does the release freeze start")
        assert any("Release freeze" in h["memory"] for h in found["results"])
        assert "either notes or messages" in s.error("memory_flush")
    diary_text = (memory_dir / "2026-03-27.md").read_text()
    assert diary_text.count("kestrel-2") == 2 and "Release freeze" in diary_text
    assert (memory.settings.home / "workspaces" / "main" / note["path"]).is_file()
    with session(server) as no_agent:
        assert "memoryd mcp --agent" in no_agent.error("memory_flush", notes=["x y z"])


def test_every_write_and_read_tool_round_trips(server, memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    with session(server) as s:
        added = s.call(
            "memory_add",
            text="The staging database runs on port 5433",
            category="environment",
        )
        [event] = added["results"]
        assert event["event"] == "ADD" and added["tier"] == "long_term"
        mid = event["id"]
        short = s.call(
            "memory_add", text="Today we paired on the flaky login test", category="short_term"
        )
        assert short["tier"] == "short_term"
        several = s.call(
            "memory_add",
            texts=["Deploys go through ArgoCD", "Deploys go through ArgoCD", "CI runs on R7"],
            category="environment",
        )["results"]
        assert [e["event"] for e in several] == ["ADD", "NONE", "ADD"]
        assert {memory.store.get(e["id"]).category for e in several} == {"environment"}  # type: ignore[union-attr]
        assert "text, texts or messages" in s.error("memory_add", text="x", texts=["y"])

        found = s.call("memory_search", query="which port does staging postgres use?")
        top = found["results"][0]
        assert top["id"] == mid and top["memory_type"] == "long_term"
        assert 0 < top["parts"]["vector"] <= 1 and "keyword" in top["parts"]
        assert top["category"] == "environment"
        assert found["scope"] == {"user_id": "default", "agent_id": None}

        shorts = s.call("memory_search", query="flaky login test", tier="short_term")
        assert [h["memory_type"] for h in shorts["results"]] == ["short_term"]

        listed = s.call("memory_list", category="environment")
        assert mid in [r["id"] for r in listed["results"]] and len(listed["results"]) == 3

        clock.advance(hours=2)
        updated = s.call(
            "memory_update",
            memory_id=mid,
            text="The staging database moved to port 6432",
            reason="pgbouncer in front",
        )
        assert updated["result"]["memory"] == "The staging database moved to port 6432"

        history = s.call("memory_history", memory_id=mid)["history"]
        assert [h["event"] for h in history] == ["ADD", "UPDATE"]
        assert history[1]["old_memory"] == "The staging database runs on port 5433"
        assert (
            history[1]["actor"] == "mcp:anonymous" and history[1]["reason"] == "pgbouncer in front"
        )

        assert s.call("memory_delete", memory_id=mid) == {"id": mid, "deleted": True}
        after = s.call("memory_search", query="staging database port")["results"]
        assert mid not in {h["id"] for h in after}
    record = memory.get(mid, include_deleted=True)
    assert record.state == "deleted" and record.user_id == "default"
    assert memory.store.get(short["results"][0]["id"]).run_id == "2026-03-27"  # type: ignore[union-attr]


def test_errors_come_back_as_tool_errors_that_say_what_to_do(server) -> None:  # type: ignore[no-untyped-def]
    with session(server) as s:
        missing = s.error("memory_update", memory_id="nope", text="x")
        assert missing.startswith("Error executing tool memory_update: NotFoundError: no memory")
        assert "Hint: take the id from memory_search or memory_list" in missing
        empty = s.error("memory_add", text="   ", category="decision")
        assert "InvalidInputError: text is empty" in empty and "Hint:" in empty
        wrong = s.error("memory_add", text="We use trunk-based development", category="gossip")
        assert "category" in wrong and "decision" in wrong
        too_many = s.error("memory_search", query="anything", top_k=500)
        assert "top_k" in too_many
        nothing = s.error("memory_update", memory_id="x")
        assert "NotFoundError" in nothing or "nothing to update" in nothing


@pytest.fixture
def keyed(memory: Memory) -> Memory:
    memory.settings.workspace.user_id = "boss"  # the agents' files are boss's: the keys cover boss
    memory.settings.auth.keys = [
        ApiKey(name="dev-key", key=SecretStr("k-dev"), users=["boss"], agents=["dev"]),
        ApiKey(name="ops-key", key=SecretStr("k-ops"), users=["boss"], agents=["ops"]),
        ApiKey(name="team-key", key=SecretStr("k-team"), users=["boss"], agents=["dev", "ops"]),
    ]
    return memory


def test_a_key_only_reaches_its_own_scope(keyed: Memory, server) -> None:  # type: ignore[no-untyped-def]
    ops_secret = keyed.add(
        "The ops on-call rota lives in PagerDuty schedule P-ROTA",
        user_id="boss",
        agent_id="ops",
        category="environment",
    )[0].id
    other_user = keyed.add("Alice's salary review is in March", user_id="alice")[0].id
    with session(server, Authorization="Bearer k-dev") as dev:
        mine = dev.call(
            "memory_add", text="Dev builds run on runner pool R7", category="environment"
        )
        dev_id = mine["results"][0]["id"]
        assert keyed.get(dev_id).agent_id == "dev" and keyed.get(dev_id).user_id == "boss"
        found = dev.call("memory_search", query="on-call rota PagerDuty schedule", top_k=20)
        assert ops_secret not in {h["id"] for h in found["results"]}
        # Scope-looking arguments are not parameters: they cannot widen the search.
        sneaky = dev.raw("memory_search", query="on-call rota", agent_id="ops", user_id="boss")
        assert sneaky.is_error or ops_secret not in sneaky.content[0].text  # type: ignore[union-attr]
        for tool, extra in (("memory_history", {}), ("memory_update", {"text": "hijacked"}),
                            ("memory_delete", {})):  # fmt: skip
            text = dev.error(tool, memory_id=ops_secret, **extra)
            assert "NotFoundError" in text, tool
            assert "NotFoundError" in dev.error(tool, memory_id=other_user, **extra)
        listed = dev.call("memory_list", limit=200)
        assert {r["agent_id"] for r in listed["results"]} == {"dev"}
    assert keyed.get(ops_secret).text.startswith("The ops on-call rota")
    with session(server, **{"X-API-Key": "k-team", "X-Memoryd-Agent": "ops"}) as team:
        hits = team.call("memory_search", query="on-call rota PagerDuty schedule")
        assert hits["results"][0]["id"] == ops_secret and hits["scope"]["agent_id"] == "ops"


def test_requests_outside_the_key_are_refused_before_any_tool_runs(keyed: Memory, server) -> None:  # type: ignore[no-untyped-def]
    init = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    url = f"{server.url}/mcp"
    nokey = httpx.post(url, json=init, headers=headers)
    badkey = httpx.post(url, json=init, headers={**headers, "Authorization": "Bearer wrong"})
    escape = httpx.post(
        url, json=init, headers={**headers, "X-API-Key": "k-dev", "X-Memoryd-Agent": "ops"}
    )
    other_user = httpx.post(
        url, json=init, headers={**headers, "X-API-Key": "k-dev", "X-Memoryd-User": "alice"}
    )
    unnamed = httpx.post(url, json=init, headers={**headers, "X-API-Key": "k-team"})
    assert nokey.status_code == 401 and nokey.json()["hint"]
    assert badkey.status_code == 401
    assert escape.status_code == 403 and "ops" in escape.json()["detail"]
    assert other_user.status_code == 403
    assert unnamed.status_code == 403 and "X-Memoryd-Agent" in unnamed.json()["hint"]
    with pytest.raises(Exception), session(server, Authorization="Bearer wrong"):  # noqa: B017
        pass


def test_lessons_are_shared_across_agents_read_only(keyed: Memory, server) -> None:  # type: ignore[no-untyped-def]
    with session(server, Authorization="Bearer k-dev") as dev:
        lesson = dev.call(
            "memory_add",
            text="kiro-cli hangs when a trailing & is added; run it with background=true instead",
            category="experience",
        )["results"][0]["id"]
        dev.call("memory_add", text="Dev's private scratch: try the new linter", category="task")
    with session(server, Authorization="Bearer k-ops") as ops:
        found = ops.call("memory_search", query="why does kiro-cli hang?")["results"]
        assert found[0]["id"] == lesson and found[0]["memory_type"] == "shared"
        assert found[0]["agent_id"] == "dev"
        assert 0 < found[0]["parts"]["decay"] <= 1 and "original_score" in found[0]
        scratch = ops.call("memory_search", query="private scratch linter", top_k=20)["results"]
        assert all(h["memory_type"] == "shared" for h in scratch)
        assert [h["event"] for h in ops.call("memory_history", memory_id=lesson)["history"]] == [
            "ADD"
        ]
        denied = ops.error("memory_update", memory_id=lesson, text="rewritten by ops")
        assert "PermissionDeniedError" in denied and "agent 'dev'" in denied and "Hint:" in denied
        assert "PermissionDeniedError" in ops.error("memory_delete", memory_id=lesson)
    assert keyed.get(lesson).text.startswith("kiro-cli hangs")


def test_session_context_and_workspace_files_through_mcp(keyed: Memory, server, clock) -> None:  # type: ignore[no-untyped-def]
    from memoryd.workspace.indexer import index_workspace
    from memoryd.workspace.layout import resolve_workspace

    ws = resolve_workspace(keyed.settings, "dev", keyed.store)
    (ws.root / "memory").mkdir(parents=True)
    (ws.root / "MEMORY.md").write_text("# Memory\n\n- Releases are cut on Thursdays\n")
    (ws.root / "memory" / "2026-03-26.md").write_text(
        "# 2026-03-26\n\n## 23:50\n- Late fix: the cache TTL is 300 s, not 30 s\n"
    )
    turn = {
        "agent_id": "dev",
        "user_id": "boss",
        "messages": [
            {"role": "user", "content": "Which queue does the billing worker read?"},
            {"role": "assistant", "content": "billing-events on the prod RabbitMQ cluster."},
        ],
    }
    posted = httpx.post(
        f"{server.url}/v1/diary", json=turn, headers={"Authorization": "Bearer k-dev"}
    )
    assert posted.status_code == 200 and posted.json()["written"], posted.text
    (ws.root / "memory" / "ops-notes.md").write_text(
        "# Ops notes\n\n## Queues\n\nThe billing worker reads billing-events.\n"
        "Dead letters go to billing-dlq and are replayed nightly.\n"
    )
    index_workspace(keyed, ws)
    with session(server, Authorization="Bearer k-dev") as dev:
        context = dev.call("memory_context", query="billing queue")
        text = context["text"]
        assert context["agent_id"] == "dev" and context["today"] == "2026-03-27"
        for expected in ("Releases are cut on Thursdays", "cache TTL is 300 s",
                         "billing-events on the prod RabbitMQ cluster"):  # fmt: skip
            assert expected in text
        assert text.index("today's diary") < text.index("yesterday's diary")

        hits = dev.call("memory_search", query="where do dead letters go?", top_k=3)["results"]
        cited = next(h for h in hits if h.get("citation", "").startswith("memory/ops-notes.md"))
        path, span = cited["citation"].split("#L")
        first, last = (int(x) for x in span.split("-L"))
        got = dev.call("memory_get", path=path, **{"from": first, "lines": last - first + 1})
        assert "Dead letters go to billing-dlq" in got["text"]
        assert got["lines"] == last - first + 1 and got["from"] == first

        whole = dev.call("memory_get", path="MEMORY.md")
        assert whole["text"] == "# Memory\n\n- Releases are cut on Thursdays"
        missing = dev.call("memory_get", path="memory/2020-01-01.md")
        assert missing["text"] == "" and missing["missing"] is True
        for bad, error in (("../ops/MEMORY.md", "'..'"), ("/etc/passwd", "absolute"),
                           ("memory/../../x.md", "'..'"), ("secrets.txt", "not a Markdown")):  # fmt: skip
            text = dev.error("memory_get", path=bad)
            assert "InvalidInputError" in text and error in text and "Hint:" in text, bad
    outside = ws.root.parent / "outside.md"
    outside.write_text("secret\n")
    (ws.root / "memory" / "link.md").symlink_to(outside)
    with session(server, Authorization="Bearer k-dev") as dev:
        refused = dev.error("memory_get", path="memory/link.md")
        # OutsideWorkspaceError is a PermissionDeniedError (403); no server path in it
        assert "OutsideWorkspaceError" in refused and str(ws.root) not in refused
        (ws.root / "USER.md").unlink(missing_ok=True)
        (ws.root / "USER.md").symlink_to(outside)  # identity file pointing out: not shown
        context = dev.call("memory_context")["text"]
        assert "secret" not in context and "leads outside the workspace" in context


def test_workspace_tools_need_an_agent_scope(server) -> None:  # type: ignore[no-untyped-def]
    with session(server) as anyone:
        text = anyone.error("memory_get", path="MEMORY.md")
        assert "no agent" in text and "X-Memoryd-Agent" in text
        assert "no agent" in anyone.error("memory_context")
    with session(server, **{"X-Memoryd-Agent": "dev"}) as dev:
        assert dev.call("memory_get", path="MEMORY.md")["missing"] is True


def test_tool_calls_are_in_the_audit_log_without_secrets(keyed: Memory, server) -> None:  # type: ignore[no-untyped-def]
    from memoryd.audit import audit_path, read_recent

    keyed.add("Nightly backups run at 03:00 UTC", user_id="boss", agent_id="dev")
    with session(server, Authorization="Bearer k-dev") as dev:
        dev.call("memory_search", query="when do backups run?")
        dev.error("memory_delete", memory_id="nope")

    def mcp_entries() -> list[dict[str, Any]]:
        return [
            e for e in read_recent(keyed.settings, 200) if (e.get("op") or "").startswith("mcp.")
        ]

    # the middleware writes a request's line once its response is sent, so the client may
    # read the log before the last line is there (seen on a loaded machine)
    deadline = time.monotonic() + 10
    entries = mcp_entries()
    while len(entries) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
        entries = mcp_entries()
    search = next(e for e in entries if e["op"] == "mcp.memory_search")
    assert (search["principal"], search["user_id"], search["agent_id"]) == (
        "dev-key",
        "boss",
        "dev",
    )
    assert search["count"] >= 1 and 0 < search["top_score"] <= 1 and search["path"] == "/mcp"
    assert any(e["op"] == "mcp.memory_delete" for e in entries)
    text = audit_path(keyed.settings).read_text()
    assert "k-dev" not in text and "Nightly backups" not in text


def test_memory_add_keeps_a_conversation_turn_by_turn(server, memory: Memory) -> None:  # type: ignore[no-untyped-def]
    with session(server) as s:
        added = s.call(
            "memory_add",
            messages=[
                {"role": "user", "name": "Boss", "content": "Which region hosts the API?"},
                {"role": "assistant", "content": "eu-west-1, behind the ALB."},
            ],
        )
        no_category = s.error("memory_add", text="We deploy on Fridays")
        neither = s.error("memory_add")
    assert [e["event"] for e in added["results"]] == ["ADD", "ADD"]
    answer = memory.get(added["results"][1]["id"])
    assert answer.origin == "turn" and "Boss: Which region hosts the API?" in (answer.context or "")
    # a clear error, not a raw pydantic dump
    assert "needs a category" in no_category and "decision" in no_category
    assert "text, texts or messages" in neither
