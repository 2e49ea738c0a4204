"""A key is a tenant boundary on every face: a property test over HTTP, MCP and the dashboard.

The tenancy rule (``scope.py``): a key bound to users U (and agents A) reads and writes
only data owned by a user in U: those users' memories (with an agent in A, when A is
set, or their shared pool), and the workspace files, chunks, wiki, commitments,
backfill, context and runs of agents whose workspace owner is in U (and in A). Naming
an agent grants nothing.

Every piece of seeded data carries a canary word that names its owner:
``zqmem<user><agent>`` (a private memory), ``zqpool<user><agent>`` (a shared lesson,
which any agent of the same user sees) and ``zqfile<agent>`` (the agent's workspace
files, owned by ``workspace.user_id``). Hypothesis draws a key, a user, an agent and an
operation (every HTTP route that reads or writes a scope, every MCP tool over HTTP,
the dashboard's pages) and checks that no answer carries a canary the key does not
cover. Writes carry a marker naming the key; at the end no memory and no file holds a
marker of a key that does not cover its owner. REST and MCP answer the same question
the same way (both refuse, or both return the same file text).

``MEMORYD_FULL=1`` runs 10,000 generated cases (``MEMORYD_TENANCY_EXAMPLES=N``: N); the
default run is 120.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Filters, State
from memoryd.settings import ApiKey, Settings
from memoryd.workspace.bootstrap import init_workspace
from memoryd.workspace.indexer import index_workspace
from memoryd.workspace.layout import resolve_workspace
from tests.conftest import FULL, LiveServer
from tests.mcp_client import McpSession, text_of

OWNER = "alice"  # workspace.user_id: every agent's files are alice's
USERS = ["alice", "bob"]
AGENTS = ["a1", "a2"]
EXAMPLES = int(os.environ.get("MEMORYD_TENANCY_EXAMPLES", 10_000 if FULL else 120))
CANARY = re.compile(r"zq(mem|pool)(alice|bob)(a1|a2|none)|zqfile(a1|a2)")
MARKER = re.compile(r"zqw(\w+?)x(\d+)")
SEEDED = [
    f"zq{kind}{user}{agent}"
    for user in USERS
    for kind, agents in (("mem", ["none", "a1", "a2"]), ("pool", ["a1", "a2"]))
    for agent in agents
]


@dataclass(frozen=True)
class Key:
    name: str
    admin: bool = False
    users: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()

    def covers(self, user: str | None, agent: str | None) -> bool:
        if self.admin:
            return True
        if self.users and user not in self.users:
            return False
        return not (self.agents and agent not in self.agents)

    def may_see(self, canary: re.Match[str]) -> bool:
        kind, user, agent, file_agent = canary.groups()
        if file_agent:
            return self.covers(OWNER, file_agent)
        if kind == "pool":  # the user's shared pool: any agent of a covered user
            return self.admin or not self.users or user in self.users
        return self.covers(user, None if agent == "none" else agent)

    @property
    def token(self) -> str:
        return f"key-{self.name}"


KEYS = [
    Key("admin", admin=True),
    Key("alice", users=("alice",)),
    Key("bob", users=("bob",)),
    Key("atwo", users=("alice",), agents=("a2",)),
    Key("bobaone", users=("bob",), agents=("a1",)),
]


@dataclass
class World:
    server: LiveServer
    memory: Memory
    roots: dict[str, Path]
    ids: dict[str, str]  # canary -> memory id
    sessions: dict[tuple[str, str | None, str | None], McpSession] = field(default_factory=dict)
    counter: Iterator[int] = field(default_factory=itertools.count)
    target: str | None = None  # the canary of the memory a by-id operation names (drawn)

    def mcp(self, key: Key, user: str | None, agent: str | None) -> McpSession:
        at = (key.name, user, agent)
        if at not in self.sessions:
            headers = {"Authorization": f"Bearer {key.token}"}
            if user:
                headers["X-Memoryd-User"] = user
            if agent:
                headers["X-Memoryd-Agent"] = agent
            self.sessions[at] = McpSession.http(f"{self.server.url}/mcp", headers).__enter__()
        return self.sessions[at]

    def marker(self, key: Key) -> str:
        return f"zqw{key.name}x{next(self.counter)}"


def _diary(agent: str) -> str:
    return (
        "# 2026-03-26\n\n## 10:00 session s1\n\n"
        f"- user: the deploy notes zqfile{agent} live in the runbook\n"
        f"- assistant: noted, remind me to check zqfile{agent} tomorrow at 9\n"
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[World]:
    base = tmp_path_factory.mktemp("tenancy")
    s = Settings(home=base / "home")
    s.workspace.openclaw_dir = base / "no-openclaw"
    s.workspace.watch = False
    s.workspace.user_id = OWNER
    s.pipelines.scheduler = False
    s.auth.keys = [
        ApiKey(name=k.name, key=SecretStr(k.token), admin=k.admin, users=list(k.users),
               agents=list(k.agents))
        for k in KEYS
    ]  # fmt: skip
    memory = Memory(s, embedder=embedder)
    roots: dict[str, Path] = {}
    for agent in AGENTS:
        roots[agent] = base / f"ws-{agent}"
        s.workspace.agents[agent] = roots[agent]
        ws = resolve_workspace(s, agent, memory.store)
        init_workspace(ws.root)
        (ws.root / "MEMORY.md").write_text(
            f"# Memory\n\n- the deploy notes zqfile{agent} are in the wiki\n", encoding="utf-8"
        )
        (ws.root / "USER.md").write_text(f"# User\n\nLikes zqfile{agent} deploys.\n")
        (ws.memory_dir / "2026-03-26.md").write_text(_diary(agent), encoding="utf-8")
        index_workspace(memory, ws)
    ids: dict[str, str] = {}
    for user in USERS:
        for agent in [None, *AGENTS]:
            word = f"zqmem{user}{agent or 'none'}"
            (event,) = memory.add(f"the deploy notes {word}", user_id=user, agent_id=agent)
            ids[word] = event.id or ""
        for agent in AGENTS:
            word = f"zqpool{user}{agent}"
            (event,) = memory.add(
                f"lesson: the deploy notes {word} need a restart first",
                user_id=user, agent_id=agent, category="experience",
            )  # fmt: skip
            ids[word] = event.id or ""
    with LiveServer(create_app(memory=memory)) as server:
        w = World(server, memory, roots, ids)
        yield w
        for session in w.sessions.values():
            session.__exit__(None, None, None)
    memory.close()


# -- the operations: (name, call) where call(world, key, user, agent) -> (status, text) -------
Answer = tuple[int, str]
Op = Callable[[World, Key, str | None, str | None], Answer]


def _http(method: str, path: str, *, body: bool = False, cookie: bool = False) -> Op:
    def call(w: World, key: Key, user: str | None, agent: str | None) -> Answer:
        fields = {"user_id": user, "agent_id": agent}
        text = f"the deploy notes {w.marker(key)}"
        own = f"zqmem{user or 'bob'}{agent or 'none'}"
        url = path.format(id=w.ids[w.target or own], marker=text)
        payload: dict[str, Any] = {
            **{k: v for k, v in fields.items() if v is not None},
            "query": "deploy notes",
            "q": "deploy notes",
            "text": text,
            "memory_id": w.ids[w.target or own],
            "messages": [
                {"role": "user", "content": f"{text}; remind me tomorrow at 9"},
                {"role": "assistant", "content": "noted"},
            ],
            "notes": [text],
            "infer": False,
            "top_k": 50,
            "dry_run": True,
            "path": "MEMORY.md",
            "user": user or "",
            "agent": agent or "",
            "min": "0",
        }
        headers = {"Authorization": f"Bearer {key.token}"}
        cookies = {"memoryd_key": key.token} if cookie else None
        if body:
            r = httpx.request(method, w.server.url + url, json=payload, headers=headers, timeout=60)
        else:
            params = {k: v for k, v in payload.items() if isinstance(v, str) and v}
            r = httpx.request(
                method, w.server.url + url, params=params, headers=headers, cookies=cookies,
                timeout=60,
            )  # fmt: skip
        return r.status_code, r.text

    return call


def _platform(method: str, path: str) -> Op:
    """mem0's platform routes as its SDK calls them: entity ids in ``filters`` (and at
    the top of an add), the key as ``Authorization: Token``."""

    def call(w: World, key: Key, user: str | None, agent: str | None) -> Answer:
        named = {k: v for k, v in {"user_id": user, "agent_id": agent}.items() if v is not None}
        text = f"the deploy notes {w.marker(key)}"
        target = w.ids[w.target or f"zqmem{user or 'bob'}{agent or 'none'}"]
        payload: dict[str, Any] = {
            "filters": named or None,
            "query": "deploy notes",
            "top_k": 50,
            "text": text,
            "memories": [{"memory_id": target, "text": text}],
            "memory_id": target,
            "feedback": "POSITIVE",
            "feedback_reason": text,
        }
        if path.startswith("/v3/memories/add/"):
            payload = {**named, "messages": [{"role": "user", "content": text}], "infer": False}
        r = httpx.request(
            method, w.server.url + path.format(id=target), headers={"Authorization": f"Token {key.token}"},
            json=None if method == "GET" else payload, timeout=60,
        )  # fmt: skip
        return r.status_code, r.text

    return call


def _mcp(tool: str, **arguments: Any) -> Op:
    def call(w: World, key: Key, user: str | None, agent: str | None) -> Answer:
        text = f"the deploy notes {w.marker(key)}"
        args = {
            k: (text if v == "<marker>" else [text] if v == "<notes>" else v)
            for k, v in arguments.items()
        }
        if "messages" in args:
            args["messages"] = [{"role": "user", "content": f"{text}; remind me tomorrow"}]
        try:
            result = w.mcp(key, user, agent).raw(tool, **args)
        except Exception as exc:  # the session itself refused (a header outside the key)
            return 403, repr(exc)
        return (400 if result.is_error else 200), text_of(result)

    return call


OPERATIONS: dict[str, Op] = {
    "POST /memory/search": _http("POST", "/memory/search", body=True),
    "POST /memory/search_combined": _http("POST", "/memory/search_combined", body=True),
    "GET /memory/list": _http("GET", "/memory/list"),
    "POST /search": _http("POST", "/search", body=True),
    "GET /memories": _http("GET", "/memories"),
    "GET /memory/{id}": _http("GET", "/memory/{id}"),
    "GET /memory/history/{id}": _http("GET", "/memory/history/{id}"),
    "GET /memories/{id}": _http("GET", "/memories/{id}"),
    "POST /memory/add": _http("POST", "/memory/add", body=True),
    "POST /memories": _http("POST", "/memories", body=True),
    "PUT /memory/update": _http("PUT", "/memory/update", body=True),
    "GET /v1/memory_get": _http("GET", "/v1/memory_get"),
    "POST /v1/memory_search": _http("POST", "/v1/memory_search", body=True),
    "GET /v1/context": _http("GET", "/v1/context"),
    "POST /v1/diary": _http("POST", "/v1/diary", body=True),
    "POST /v1/flush": _http("POST", "/v1/flush", body=True),
    "POST /v1/sessions/end": _http("POST", "/v1/sessions/end", body=True),
    "POST /v1/rem-backfill": _http("POST", "/v1/rem-backfill", body=True),
    "GET /v1/commitments": _http("GET", "/v1/commitments"),
    "GET /v1/wiki/search": _http("GET", "/v1/wiki/search"),
    "GET /v1/wiki/lint": _http("GET", "/v1/wiki/lint"),
    "GET /v1/pipelines": _http("GET", "/v1/pipelines"),
    "GET /v1/workspaces": _http("GET", "/v1/workspaces"),
    "GET /ui/search": _http("GET", "/ui/search", cookie=True),
    "GET /ui/memories": _http("GET", "/ui/memories", cookie=True),
    "GET /ui/memory/{id}": _http("GET", "/ui/memory/{id}", cookie=True),
    "GET /ui/pipelines": _http("GET", "/ui/pipelines", cookie=True),
    "GET /ui": _http("GET", "/ui", cookie=True),
    "POST /v3/memories/add/": _platform("POST", "/v3/memories/add/"),
    "POST /v3/memories/": _platform("POST", "/v3/memories/"),
    "POST /v3/memories/search/": _platform("POST", "/v3/memories/search/"),
    "GET /v1/memories/{id}/": _platform("GET", "/v1/memories/{id}/"),
    "GET /v1/memories/{id}/history/": _platform("GET", "/v1/memories/{id}/history/"),
    "PUT /v1/memories/{id}/": _platform("PUT", "/v1/memories/{id}/"),
    "PUT /v1/batch/": _platform("PUT", "/v1/batch/"),
    "POST /v1/feedback/": _platform("POST", "/v1/feedback/"),
    "GET /v1/entities/": _platform("GET", "/v1/entities/"),
    "POST /v1/exports/get/": _platform("POST", "/v1/exports/get/"),
    "mcp memory_search": _mcp("memory_search", query="deploy notes", top_k=50),
    "mcp memory_list": _mcp("memory_list"),
    "mcp memory_get": _mcp("memory_get", path="MEMORY.md"),
    "mcp memory_get diary": _mcp("memory_get", path="memory/2026-03-26.md"),
    "mcp memory_context": _mcp("memory_context", query="deploy notes"),
    "mcp memory_add": _mcp("memory_add", text="<marker>"),
    "mcp memory_flush": _mcp("memory_flush", notes="<notes>"),
    "mcp memory_session_end": _mcp("memory_session_end", messages=[]),
    "mcp memory_rem_backfill": _mcp("memory_rem_backfill", dry_run=True),
    "mcp memory_commitments": _mcp("memory_commitments"),
    "mcp wiki_search": _mcp("wiki_search", query="deploy notes"),
    "mcp wiki_get": _mcp("wiki_get", page="index"),
}


#: mem0 platform POSTs that write no memory text (reads, and feedback: metadata only)
PLATFORM_NO_TEXT_WRITES = frozenset(
    {
        "POST /v3/memories/",
        "POST /v3/memories/search/",
        "POST /v1/exports/get/",
        "POST /v1/feedback/",
    }
)


def _leaks(key: Key, text: str) -> list[str]:
    return sorted({m.group(0) for m in CANARY.finditer(text) if not key.may_see(m)})


def _check_writes(w: World) -> list[str]:
    """Markers of keys found in a memory or file their key does not cover."""
    keys = {k.name: k for k in KEYS}
    bad: list[str] = []
    for record in w.memory.store.iter_all(Filters(states=list(State))):
        for m in MARKER.finditer(record.text):
            if not keys[m.group(1)].covers(record.user_id, record.agent_id):
                bad.append(f"memory {record.user_id}/{record.agent_id}: {m.group(0)}")
    for agent, root in w.roots.items():
        for path in root.rglob("*"):
            if not path.is_file() or path.is_symlink():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for m in MARKER.finditer(text):
                if not keys[m.group(1)].covers(OWNER, agent):
                    bad.append(f"file {agent}/{path.relative_to(root)}: {m.group(0)}")
    return bad


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=not FULL,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    key=st.sampled_from(KEYS),
    user=st.sampled_from([None, *USERS]),
    agent=st.sampled_from([None, *AGENTS]),
    op=st.sampled_from(sorted(OPERATIONS)),
    target=st.none() | st.sampled_from(SEEDED),
)
def test_no_face_answers_or_writes_outside_the_key(
    world: World, key: Key, user: str | None, agent: str | None, op: str, target: str | None
) -> None:
    world.target = target  # a by-id operation names any seeded memory, or the scope's own
    status, text = OPERATIONS[op](world, key, user, agent)
    assert status < 500, f"{op} as {key.name} ({user}, {agent}) -> {status}: {text[:300]}"
    leaked = _leaks(key, text)
    assert not leaked, f"{op} as {key.name} ({user}, {agent}) returned {leaked}"


def test_no_write_landed_outside_its_key(world: World) -> None:
    """After every face wrote as every key (the property test above, and a sweep here of
    every writing operation in every scope), no marker sits in data its key does not cover."""
    world.target = None
    writes = [
        op
        for op in OPERATIONS
        if op.split()[0] in ("POST", "PUT", "mcp") and op not in PLATFORM_NO_TEXT_WRITES
    ]
    for key, user, agent, op in itertools.product(KEYS, [None, *USERS], [None, *AGENTS], writes):
        OPERATIONS[op](world, key, user, agent)
    assert _check_writes(world) == []


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize("key", KEYS, ids=lambda k: k.name)
def test_rest_and_mcp_answer_a_file_read_alike(world: World, key: Key, agent: str) -> None:
    """The same key reading the same file over REST and over MCP (as each user the key
    may name): both answer, with the same text, or both refuse."""
    for user in [None, *(u for u in USERS if key.covers(u, agent))]:
        rest_status, rest = OPERATIONS["GET /v1/memory_get"](world, key, user, agent)
        mcp_status, mcp = OPERATIONS["mcp memory_get"](world, key, user, agent)
        assert (rest_status == 200) == (mcp_status == 200), (user, rest[:200], mcp[:200])
        allowed = key.covers(OWNER, agent)
        assert (rest_status == 200) == allowed, (user, rest_status, rest[:200])
        if allowed:
            assert f"zqfile{agent}" in rest and f"zqfile{agent}" in mcp


PLATFORM = [
    op
    for op in OPERATIONS
    if op.split()[1].startswith(
        ("/v3/", "/v1/memories/", "/v1/batch", "/v1/feedback", "/v1/entities", "/v1/exports")
    )
]


def test_mem0_platform_routes_answer_within_the_key(world: World) -> None:
    """Every mem0 platform route, as every key, in several scopes, and naming other
    users' memories by id: no answer leaks, no 5xx (beside the property test's random
    draws). ``MEMORYD_FULL=1``: every scope, and every seeded memory as every key."""
    scopes = (
        list(itertools.product([None, *USERS], [None, *AGENTS]))
        if FULL
        else [(None, None), ("alice", None), ("bob", "a1")]
    )
    keys = KEYS if FULL else [k for k in KEYS if not k.admin]
    targets = SEEDED if FULL else [t for t in SEEDED if "mem" in t][::2]
    cases = [
        (op, key, user, agent, None)
        for op, key, (user, agent) in itertools.product(PLATFORM, KEYS, scopes)
    ] + [
        (op, key, None, None, target)
        for op, key, target in itertools.product(PLATFORM, keys, targets)
        if "{id}" in op or op.startswith(("PUT /v1/batch", "POST /v1/feedback"))
    ]
    problems: list[str] = []
    for op, key, user, agent, target in cases:
        world.target = target
        status, text = OPERATIONS[op](world, key, user, agent)
        if status >= 500 or _leaks(key, text):
            problems.append(f"{op} as {key.name} ({user}, {agent}, {target}) -> {status}: "
                            f"{_leaks(key, text)} {text[:200]}")  # fmt: skip
    world.target = None
    assert len(cases) >= 200 and problems == []
    assert _check_writes(world) == []
