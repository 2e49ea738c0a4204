"""``memory.scope(caller, user_id, agent_id)``: the access rules, once, and every face
going through them.

The rules are driven on :class:`~memoryd.scope.Scope` directly first (read own and the
shared pool, write own only, never a file chunk, the workspace, the owner-chunk
search, a key's spans). Then one thin test per rule shows HTTP, MCP, the CLI (local
and ``--url``) and the dashboard answer the same, because each goes through Scope.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from memoryd.access import LOCAL, Principal
from memoryd.api import create_app
from memoryd.cli import app
from memoryd.client import MemoryClient
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import NotFoundError, PermissionDeniedError, ReadOnlyError
from memoryd.models import Filters, Origin, State
from memoryd.scope import Scope
from memoryd.settings import ApiKey, Settings
from memoryd.shapes import FilterSpec
from memoryd.workspace.indexer import index_workspace
from tests.mcp_client import McpSession
from tests.test_ui_pages import cookie_token
from tests.test_workspace_support import make_workspace

DEV_ONLY = Principal(name="dev-key", users=["alice"], agents=["dev"])
BOB = Principal(name="bob-key", users=["bob"])
FILE_QUERY = "which cluster do deploys go through"  # answered by dev's diary file only


def _chunk(memory: Memory, root: Path) -> str:
    """Index dev's workspace (owned by ``workspace.user_id``); the id of its ArgoCD chunk."""
    index_workspace(memory, make_workspace(memory, root))
    chunks = memory.store.iter_all(Filters(agent_id="dev", origins=[Origin.CHUNK]))
    return next(c.id for c in chunks if "ArgoCD" in c.text)


@pytest.fixture
def tenants(memory: Memory, tmp_path: Path) -> dict[str, str]:
    ids = {
        "own": memory.add("alice dev keeps the runbook in notion", user_id="alice", agent_id="dev"),
        "pool": memory.add(
            "alice ops learned: restart the queue before the deploy",
            user_id="alice",
            agent_id="ops",
            category="experience",
        ),
        "ops": memory.add("alice ops private pager rota", user_id="alice", agent_id="ops"),
        "bob": memory.add("bob keeps his passport in the drawer", user_id="bob"),
    }
    out = {name: events[0].id or "" for name, events in ids.items()}
    out["chunk"] = _chunk(memory, tmp_path / "ws")
    return out


# -- the rules, on Scope itself ----------------------------------------------------------------
def test_reads_see_own_and_the_shared_pool_and_nothing_else(
    memory: Memory, tenants: dict[str, str]
) -> None:
    dev = memory.scope(DEV_ONLY, "alice", "dev")
    assert dev.get(tenants["own"]).memory.startswith("alice dev")
    assert dev.get(tenants["pool"]).memory_type == "shared"  # another agent's lesson
    assert [h.event for h in dev.history(tenants["pool"])] == ["ADD"]
    for hidden in ("ops", "bob", "missing-id"):
        with pytest.raises(NotFoundError) as err:  # the same answer as a missing id
            dev.get(tenants.get(hidden, hidden))
        assert "private" not in str(err.value) and "passport" not in str(err.value)
    # a by-id scope of a key (user and agent left to the key) sees what the key covers
    assert memory.scope(DEV_ONLY).get(tenants["own"]).user_id == "alice"
    with pytest.raises(NotFoundError):
        memory.scope(BOB).get(tenants["own"])


def test_writes_only_own_never_a_shared_lesson_nor_a_file_chunk(
    memory: Memory, tenants: dict[str, str]
) -> None:
    dev = memory.scope(DEV_ONLY, "alice", "dev", actor="test")
    assert dev.update(tenants["own"], "alice dev keeps the runbook in the wiki").memory.endswith(
        "wiki"
    )
    assert memory.history(tenants["own"])[-1].actor == "test"
    with pytest.raises(PermissionDeniedError, match="only it can change it"):
        dev.update(tenants["pool"], "hijacked")
    with pytest.raises(PermissionDeniedError):
        dev.delete(tenants["pool"])
    with pytest.raises(NotFoundError):
        dev.delete(tenants["ops"])
    admin = memory.scope(LOCAL)  # every memory is the admin's to see: a chunk still is not
    with pytest.raises(ReadOnlyError, match=r"\.md"):
        admin.update(tenants["chunk"], "rewritten")
    with pytest.raises(ReadOnlyError):
        admin.delete(tenants["chunk"])
    assert memory.get(tenants["pool"]).text.endswith("before the deploy")
    assert memory.get(tenants["chunk"]).state == State.ACTIVE
    assert dev.delete(tenants["own"]).deleted and dev.restore(tenants["own"]).state == "active"


def test_searches_and_lists_stay_in_the_scope_and_the_key(
    memory: Memory, tenants: dict[str, str]
) -> None:
    dev = memory.scope(DEV_ONLY, "alice", "dev")
    found = {h.id for h in dev.search("runbook queue deploy pager passport", top_k=20)}
    assert tenants["own"] in found and tenants["pool"] in found
    assert not found & {tenants["ops"], tenants["bob"]}
    listed = dev.list(filters=FilterSpec(origins=["api"]))
    assert [r.id for r in listed.results] == [tenants["own"]] and listed.total == 1
    for outside in (memory.scope(DEV_ONLY, "bob"), memory.scope(DEV_ONLY, "alice", "ops")):
        with pytest.raises(PermissionDeniedError):
            outside.search("deploy")
        with pytest.raises(PermissionDeniedError):
            outside.add("sneaky", infer=False)
    with pytest.raises(PermissionDeniedError):
        memory.scope(DEV_ONLY, "alice", "dev").reset()  # an admin key's, and a user's
    assert memory.scope(LOCAL, "bob").reset() == 1


def test_the_owner_chunk_rule_joins_the_agents_files_to_another_users_search(
    memory: Memory, tenants: dict[str, str]
) -> None:
    owner = memory.settings.workspace.user_id
    assert owner != "alice"
    # a key limited to alice does not reach the owner's files by naming the agent
    assert tenants["chunk"] not in {
        h.id for h in memory.scope(DEV_ONLY, "alice", "dev").search(FILE_QUERY, top_k=5)
    }
    both = Principal(name="alice-and-owner", users=["alice", owner], agents=["dev"])
    as_dev = memory.scope(both, "alice", "dev")
    hits = {h.id: h for h in as_dev.search(FILE_QUERY, top_k=5)}
    assert hits[tenants["chunk"]].citation.startswith("memory/2026-03-27.md#L")
    combined = as_dev.search_combined(FILE_QUERY, long_term_top_k=5)
    assert tenants["chunk"] in {h.id for h in combined.results}
    # not without the agent, not in a category or short-term search, not for other agents
    assert tenants["chunk"] not in {h.id for h in memory.scope(LOCAL, "alice").search(FILE_QUERY)}
    narrowed = [
        FilterSpec(category="decision"),
        FilterSpec(memory_type="short_term"),
        FilterSpec(origins=["api"]),
    ]
    for spec in narrowed:
        assert tenants["chunk"] not in {h.id for h in as_dev.search(FILE_QUERY, filters=spec)}
    ops = memory.scope(LOCAL, "alice", "ops").search(FILE_QUERY)
    assert tenants["chunk"] not in {h.id for h in ops}


def test_the_workspace_is_the_owners_and_the_agents(
    memory: Memory, tenants: dict[str, str]
) -> None:
    # acting as dev grants nothing: the files are the owner's, and the key covers alice only
    for scope in (memory.scope(DEV_ONLY, "alice", "dev"), memory.scope(DEV_ONLY, agent_id="dev")):
        with pytest.raises(PermissionDeniedError):
            scope.files()
    assert not memory.scope(DEV_ONLY, "alice", "dev").workspaces().may_use("dev")
    with pytest.raises(PermissionDeniedError):  # a key for any agent, naming dev, neither
        memory.scope(BOB, "bob", "dev").files()
    owner = memory.settings.workspace.user_id
    owners_key = Principal(name="k", users=[owner], agents=["dev"])
    assert memory.scope(owners_key, agent_id="dev").files().agent_id == "dev"
    assert "Lisbon" in memory.scope(owners_key, agent_id="dev").files().read("MEMORY.md").text
    assert memory.scope(owners_key).workspaces().may_use("dev")
    assert not memory.scope(owners_key).workspaces().may_use("ops")
    assert memory.scope(owners_key).workspaces().agents() == ["dev"]
    assert memory.scope(BOB).workspaces().agents() == []


def test_spans_split_a_key_into_the_scopes_it_covers(memory: Memory) -> None:
    two = Principal(name="k", users=["a", "b"], agents=["x"])
    spans = memory.scope(two).spans()
    assert [(s.user_id, s.agent_id) for s in spans] == [("a", "x"), ("b", "x")]
    assert [(s.user_id, s.agent_id) for s in memory.scope(LOCAL, "z").spans()] == [("z", None)]
    with pytest.raises(PermissionDeniedError):
        memory.scope(two, "c").spans()


def test_counts_and_pages_stay_in_the_scope(memory: Memory, tenants: dict[str, str]) -> None:
    given = Filters(origins=[Origin.API])
    dev = memory.scope(DEV_ONLY, "alice", "dev")
    assert dev.count(given) == 1 and dev.count(given, by="agent_id") == {"dev": 1}
    assert [r.id for r in dev.page(given)] == [tenants["own"]]
    alice = memory.scope(LOCAL, "alice")
    assert alice.count(given, by="agent_id") == {"dev": 1, "ops": 2}
    assert [r.id for r in alice.page(given, limit=1, oldest_first=True)] == [tenants["own"]]
    with pytest.raises(PermissionDeniedError):
        memory.scope(DEV_ONLY, "bob").count(given)


def test_pipeline_runs_show_notes_to_admin_keys_only(memory: Memory) -> None:
    run = {"name": "dream", "status": "ok", "notes": ["alice said her pager rota"]}
    memory.store.kv_set(
        "pipelines:runs",
        [
            {**run, "run_id": "d1", "agent": "ops", "started_at": "2026-03-28T01:00:00+00:00"},
            {**run, "run_id": "d2", "agent": "dev", "started_at": "2026-03-28T02:00:00+00:00"},
        ],
    )
    runs = memory.scope(LOCAL).workspaces().pipelines()["runs"]
    assert [(r["run_id"], r["notes"]) for r in runs] == [("d2", run["notes"]), ("d1", run["notes"])]
    owners_key = Principal(name="k", users=[memory.settings.workspace.user_id], agents=["dev"])
    status = memory.scope(owners_key).workspaces().pipelines()
    assert [(r["run_id"], r["notes"]) for r in status["runs"]] == [("d2", [])]
    (dream,) = [p for p in status["pipelines"] if p["name"] == "dream"]
    assert dream["last_run"]["run_id"] == "d2" and dream["last_run"]["notes"] == []


# -- every face, the same ------------------------------------------------------------------------
@pytest.fixture
def served(
    tmp_path: Path, embedder: Embedder, monkeypatch: pytest.MonkeyPatch, live_server: Any
) -> Iterator[tuple[Any, Memory, str]]:
    """A server over a home the CLI uses too; dev's files indexed under the owner."""
    home = tmp_path / "home"
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    monkeypatch.setenv("MEMORYD_WORKSPACE__AGENTS", '{"dev": "%s"}' % (tmp_path / "ws"))
    settings = Settings(home=home)
    settings.workspace.openclaw_dir = tmp_path / "no-openclaw"
    settings.workspace.watch = False
    settings.pipelines.scheduler = False
    memory = Memory(settings, embedder=embedder)
    chunk = _chunk(memory, tmp_path / "ws")
    memory.add("alice's own note about lunch", user_id="alice", agent_id="dev")
    with live_server(create_app(memory=memory)) as server:
        yield server, memory, chunk
    memory.close()


def test_every_face_finds_the_agents_file_for_another_user(
    served: tuple[Any, Memory, str],
) -> None:
    server, _, chunk = served
    body = {"query": FILE_QUERY, "user_id": "alice", "agent_id": "dev", "top_k": 3}
    http = httpx.post(f"{server.url}/memory/search", json=body, timeout=60).json()["results"]
    headers = {"X-Memoryd-User": "alice", "X-Memoryd-Agent": "dev"}
    with McpSession.http(f"{server.url}/mcp", headers) as s:
        mcp = s.call("memory_search", query=FILE_QUERY, top_k=3, tier="long_term")["results"]
    cli = _cli_json("search", FILE_QUERY, "--user", "alice", "--agent", "dev", "-k", "3")
    remote = _cli_json(
        "search", FILE_QUERY, "--user", "alice", "--agent", "dev", "-k", "3", "--url", server.url
    )
    params = {"q": FILE_QUERY, "user": "alice", "agent": "dev", "top_k": "3", "min": "0"}
    page = httpx.get(f"{server.url}/ui/search", params=params, timeout=60)
    for face, hits in (("http", http), ("mcp", mcp), ("cli", cli), ("cli --url", remote)):
        assert hits and hits[0]["id"] == chunk, face
        assert hits[0]["citation"].startswith("memory/2026-03-27.md#L"), face
    assert page.status_code == 200 and f"/ui/memory/{chunk}" in page.text
    # and none of them without the agent
    alone = httpx.post(
        f"{server.url}/memory/search", json={**body, "agent_id": None}, timeout=60
    ).json()["results"]
    assert chunk not in {h["id"] for h in alone}
    assert chunk not in {h["id"] for h in _cli_json("search", FILE_QUERY, "--user", "alice")}


def test_no_face_edits_a_file_chunk(served: tuple[Any, Memory, str]) -> None:
    server, memory, chunk = served
    before = memory.get(chunk).text
    put = httpx.put(f"{server.url}/memory/update", json={"memory_id": chunk, "text": "x"})
    delete = httpx.delete(f"{server.url}/memory/{chunk}")
    owner = memory.settings.workspace.user_id
    with McpSession.http(
        f"{server.url}/mcp", {"X-Memoryd-User": owner, "X-Memoryd-Agent": "dev"}
    ) as s:
        mcp_update = s.error("memory_update", memory_id=chunk, text="rewritten")
        mcp_delete = s.error("memory_delete", memory_id=chunk)
    cli = CliRunner().invoke(app, ["update", chunk, "--text", "rewritten"])
    remote = CliRunner().invoke(app, ["delete", chunk, "--url", server.url])
    with httpx.Client(base_url=server.url) as browser:
        csrf = cookie_token(browser, f"/ui/memory/{chunk}")  # no form offered
        ui = browser.post(f"/ui/memory/{chunk}/edit", data={"text": "rewritten", "csrf": csrf})
    for r in (put, delete):
        assert r.status_code == 409 and r.json()["error"] == "ReadOnlyError", r.text
    for out in (mcp_update, mcp_delete):
        assert "ReadOnlyError" in out and ".md" in out
    for result in (cli, remote):
        assert result.exit_code == 2 and "excerpt of" in result.output, result.output
    assert ui.status_code == 409 and "excerpt of" in ui.text
    assert memory.get(chunk).text == before and memory.get(chunk).state == State.ACTIVE


def _cli_json(*args: str) -> list[dict[str, Any]]:
    import json

    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    hits: list[dict[str, Any]] = json.loads(result.output)["results"]
    return hits


def test_scoped_keys_reach_the_same_rule_from_http_and_mcp(
    memory: Memory, tmp_path: Path, live_server: Any
) -> None:
    """A key for alice/dev: HTTP and MCP both see the shared lesson and refuse to change it."""
    memory.settings.auth.keys = [
        ApiKey(name="dev", key=SecretStr("dev-key-0123456789"), users=["alice"], agents=["dev"])
    ]
    lesson = memory.add(
        "alice ops learned: drain the node first", user_id="alice", agent_id="ops",
        category="experience",
    )[0].id  # fmt: skip
    assert lesson is not None
    auth = {"Authorization": "Bearer dev-key-0123456789"}
    with live_server(create_app(memory=memory)) as server:
        put = httpx.put(
            f"{server.url}/memory/update", json={"memory_id": lesson, "text": "x"}, headers=auth
        )
        with McpSession.http(f"{server.url}/mcp", auth) as s:
            seen = s.call("memory_history", memory_id=lesson)["history"]
            refused = s.error("memory_update", memory_id=lesson, text="x")
    # over HTTP the key names no agent in the request: the lesson is ops', outside the key
    assert put.status_code == 404
    # over MCP the connection acts as alice/dev: the pool is readable, not writable
    assert [h["event"] for h in seen] == ["ADD"]
    assert "PermissionDeniedError" in refused and "only it can change it" in refused
    assert memory.get(lesson).text.endswith("drain the node first")


def test_the_cli_answers_the_same_locally_and_over_http(served: tuple[Any, Memory, str]) -> None:
    import json

    server, memory, _ = served
    mid = memory.add("a note the cli reads twice", user_id="alice", agent_id="dev")[0].id
    assert mid is not None

    def both(*args: str) -> tuple[Any, Any]:
        runs = [
            CliRunner().invoke(app, [*args, "--json", *url]) for url in ([], ["--url", server.url])
        ]
        for r in runs:
            assert r.exit_code == 0, r.output
        return json.loads(runs[0].output), json.loads(runs[1].output)

    local, remote = both("get", mid)
    assert local == remote and local["memory"] == "a note the cli reads twice"
    local, remote = both("list", "--user", "alice", "--agent", "dev")
    assert local == remote and local["total"] == 2
    assert json.loads(CliRunner().invoke(app, ["delete", mid, "--json"]).output) == {
        "id": mid,
        "deleted": True,
    }
    local, remote = both("history", mid)
    assert local == remote and [h["event"] for h in local["results"]] == ["ADD", "DELETE"]


def test_the_client_writes_like_the_scope(served: tuple[Any, Memory, str]) -> None:
    """update and reset over HTTP answer as the local scope does, with the same shapes."""
    server, memory, _ = served
    with MemoryClient(server.url, user_id="bob", agent_id="dev") as remote:
        mid = remote.add("bob's note", category="decision")[0].id
        assert mid is not None
        changed = remote.update(mid, "bob's changed note", reason="typo")
        assert changed == memory.scope(LOCAL, "bob", "dev").get(mid)
        assert changed.memory == "bob's changed note"
        assert changed.metadata == {"category": "decision"}
        assert remote.reset() == 1
    assert memory.list(user_id="bob") == []


def test_the_memory_routes_declare_the_shapes_they_answer(served: tuple[Any, Memory, str]) -> None:
    server, _, _ = served
    spec = httpx.get(f"{server.url}/openapi.json", timeout=60).json()

    def answer(path: str, method: str) -> str:
        ok = spec["paths"][path][method]["responses"]["200"]["content"]["application/json"]
        return str(ok["schema"])

    assert "SearchAnswer" in answer("/memory/search", "post")
    assert "MemoryAnswer" in answer("/memory/{memory_id}", "get")
    assert "HistoryOut" in answer("/memories/{memory_id}/history", "get")
    hit = spec["components"]["schemas"]["HitOut"]
    assert {"id", "memory", "score", "parts", "memory_type"} <= set(hit["required"])
    assert "snippet" in hit["properties"] and "snippet" not in hit["required"]


def test_the_clients_operations_take_the_scopes_signature() -> None:
    """An option added to Scope reaches ``memoryd ... --url`` with no client signature edit."""
    for name in ("add", "update", "delete", "reset", "list", "search", "search_combined"):
        remote, local = getattr(MemoryClient, name), getattr(Scope, name)
        assert inspect.signature(remote) == inspect.signature(local)
