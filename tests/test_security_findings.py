"""The remaining attack findings of issue 30, each on real components: a real server
(uvicorn on loopback), the real SQLite store, the real CLI. Every test failed on the
code the attack ran against (d8b9cd3)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from memoryd.api import create_app
from memoryd.cli import app as cli_app
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.models import Filters
from memoryd.settings import ApiKey
from memoryd.validate import check_id

JSON = {"content-type": "application/json"}


def _count(memory: Memory) -> int:
    return memory.store.count(Filters(states=[]))


@pytest.fixture
def client(
    memory: Memory, live_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[httpx.Client]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    memory.settings.workspace.agents = {"main": tmp_path / "ws-main"}
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=60) as c,
    ):
        yield c


# -- ids: the whole value, a trailing newline included ----------------------------------------


@pytest.mark.parametrize(
    "bad", ["nl\n", "x\n", "ok\r", "a b", "../../escape", "user with spaces/.."]
)
def test_an_id_with_a_trailing_newline_or_a_path_is_refused(memory: Memory, bad: str) -> None:
    with pytest.raises(InvalidInputError, match="characters memoryd does not accept"):
        check_id(bad, "user_id", memory.settings.limits)


def test_http_ids_with_a_trailing_newline_are_422_and_create_no_folder(
    client: httpx.Client, memory: Memory, tmp_path: Path
) -> None:
    r = client.get("/v1/context", params={"agent_id": "x\n"})
    assert r.status_code == 422, r.text
    turn = {"agent_id": "ag\n", "messages": [{"role": "user", "content": "the deploy is at 9"}]}
    r = client.post("/v1/diary", json=turn)
    assert r.status_code == 422, r.text
    home = memory.settings.home
    assert not [p for p in home.rglob("*") if "\n" in p.name]
    r = client.post("/memory/add", json={"text": "x", "user_id": "cli\n", "infer": False})
    assert r.status_code == 422, r.text
    assert _count(memory) == 0


def _export_line(**fields: Any) -> str:
    record = {
        "id": "m1",
        "text": "an imported fact",
        "user_id": "alice",
        "agent_id": None,
        "created_at": "2026-03-01T00:00:00+00:00",
        "updated_at": "2026-03-01T00:00:00+00:00",
        "history": [],
    }
    record.update(fields)
    return json.dumps(record)


@pytest.mark.parametrize(
    "fields",
    [{"id": "bad id\n"}, {"agent_id": "../../escape"}, {"user_id": "user with spaces/.."}],
)
def test_import_refuses_ids_other_faces_refuse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: dict[str, str]
) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    dump = tmp_path / "dump.jsonl"
    dump.write_text(_export_line(id="ok1") + "\n" + _export_line(**fields) + "\n")
    result = CliRunner().invoke(cli_app, ["import", str(dump)])
    assert result.exit_code != 0
    assert "line 2" in result.output and "does not accept" in result.output, result.output
    good = tmp_path / "good.jsonl"
    good.write_text(_export_line(id="ok1") + "\n")
    result = CliRunner().invoke(cli_app, ["import", str(good)])
    assert result.exit_code == 0, result.output


# -- metadata.category is text ----------------------------------------------------------------


@pytest.mark.parametrize("category", [{"a": 1}, ["a"], 7, True])
def test_a_category_that_is_not_text_is_422_on_add_and_update_before_any_write(
    client: httpx.Client, memory: Memory, category: Any
) -> None:
    add = {"text": "the deploy is at 9", "user_id": "u", "infer": False}
    r = client.post("/memory/add", json={**add, "metadata": {"category": category}})
    assert r.status_code == 422 and "category" in r.json()["detail"], r.text
    assert _count(memory) == 0
    r = client.post("/memory/add", json={**add, "metadata": {"category": "ops"}})
    assert r.status_code == 200, r.text
    [stored] = memory.store.list(Filters(user_id="u"))
    before = memory.store.history(stored.id)
    for method, path, body in [
        ("PUT", "/memory/update", {"memory_id": stored.id, "metadata": {"category": category}}),
        ("PUT", f"/memories/{stored.id}", {"metadata": {"category": category}}),
    ]:
        r = client.request(method, path, json=body)
        assert r.status_code == 422 and "category" in r.json()["detail"], (path, r.text)
    [after] = memory.store.list(Filters(user_id="u"))
    assert after.category == "ops" and after.metadata["category"] == "ops"
    assert memory.store.history(stored.id) == before


# -- one Content-Type, and text a file can hold -----------------------------------------------

LONE = "\\ud800"  # half a surrogate pair, as JSON carries it


def test_two_content_type_headers_are_400_before_any_route(
    client: httpx.Client, memory: Memory
) -> None:
    body = f'{{"user_id": "u", "infer": false, "messages": [{{"role": "{LONE}", "content": "hi there, the deploy is at nine"}}]}}'
    headers = [("content-type", "application/json"), ("content-type", "text/plain")]
    r = client.post("/memory/add", content=body, headers=headers)
    assert r.status_code == 400 and "more than one Content-Type" in r.json()["detail"], r.text
    headers.reverse()  # whichever comes first
    r = client.post("/memory/add", content=body, headers=headers)
    assert r.status_code == 400, r.text
    assert _count(memory) == 0


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/memory/add", f'{{"user_id": "u", "infer": false, "messages": [{{"role": "{LONE}", "content": "the deploy is at nine"}}]}}'),
        ("/v1/flush", f'{{"agent_id": "main", "notes": ["deploy {LONE}"]}}'),
        ("/v1/sessions/end", f'{{"agent_id": "main", "messages": [{{"role": "user", "content": "{LONE} deploy"}}]}}'),
        ("/v1/diary", f'{{"agent_id": "main", "messages": [{{"role": "user", "content": "the deploy {LONE} is at nine"}}, {{"role": "assistant", "content": "noted, nine it is"}}]}}'),
    ],
)  # fmt: skip
def test_a_lone_surrogate_is_422_on_every_content_type_and_leaves_no_file(
    client: httpx.Client, memory: Memory, tmp_path: Path, path: str, body: str
) -> None:
    for kind in ("application/json", "application/json; charset=utf-8", "Application/JSON"):
        r = client.post(path, content=body, headers={"content-type": kind})
        assert r.status_code == 422 and "surrogate" in r.json()["detail"], (kind, r.text)
    assert _count(memory) == 0
    written = [p for p in (tmp_path / "ws-main").rglob("*") if p.is_file()]
    assert written == [], written


def test_files_refuse_a_lone_surrogate_on_faces_without_the_http_guard(
    memory: Memory, tmp_path: Path
) -> None:
    """MCP over stdio and the CLI reach the same files without the HTTP guard."""
    from memoryd.access import LOCAL

    memory.settings.workspace.agents = {"main": tmp_path / "ws-main"}
    files = memory.scope(LOCAL, "default", "main").files()
    turn = [
        {"role": "user", "content": "the deploy \ud800 is at nine"},
        {"role": "assistant", "content": "noted, nine it is"},
    ]
    with pytest.raises(InvalidInputError, match="surrogate"):
        files.diary(turn)
    with pytest.raises(InvalidInputError, match="surrogate"):
        files.flush(["deploy \udfff"])
    with pytest.raises(InvalidInputError, match="surrogate"):
        files.session_end(turn)
    assert [p for p in (tmp_path / "ws-main").rglob("*") if p.is_file()] == []


# -- a cap on messages per request ------------------------------------------------------------


def test_more_messages_than_limits_max_messages_is_413_on_every_face(
    client: httpx.Client, memory: Memory, tmp_path: Path
) -> None:
    memory.settings.limits.max_messages = 3
    messages = [{"role": "user", "content": f"fact number {n} about the deploy"} for n in range(4)]
    for path, body in [
        ("/memory/add", {"user_id": "u", "infer": False, "messages": messages}),
        ("/memory/add", {"user_id": "u", "infer": True, "messages": messages}),
        ("/memories", {"user_id": "u", "infer": False, "messages": messages}),
        ("/v1/diary", {"agent_id": "main", "messages": messages}),
        ("/v1/sessions/end", {"agent_id": "main", "messages": messages}),
        ("/v1/flush", {"agent_id": "main", "messages": messages}),
    ]:
        r = client.post(path, json=body)
        assert r.status_code == 413, (path, r.text)
        assert "limits.max_messages" in r.json()["detail"] and "3" in r.json()["detail"]
        assert "MEMORYD_LIMITS__MAX_MESSAGES" in r.json()["hint"]
    assert _count(memory) == 0
    assert [p for p in (tmp_path / "ws-main").rglob("*") if p.is_file()] == []
    r = client.post("/memory/add", json={"user_id": "u", "infer": False, "messages": messages[:3]})
    assert r.status_code == 200, r.text


def test_the_default_message_cap_is_a_thousand(memory: Memory) -> None:
    assert memory.settings.limits.max_messages == 1000


# -- rate limits: by client address unless the key is a valid one ------------------------------


def test_guessing_keys_is_limited_by_client_address(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    memory.settings.auth.keys = [ApiKey(name="a", key=SecretStr("key-a"), users=["alice"])]
    assert memory.settings.limits.failed_auth_per_minute == 10
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as c,
    ):
        codes = [
            c.get("/memory/list", headers={"X-API-Key": f"guess-{n}"}).status_code
            for n in range(60)
        ]
        assert codes[:10] == [401] * 10 and set(codes[10:]) == {429}, codes
        r = c.get("/memory/list", headers={"Authorization": "Bearer another-guess"})
        assert r.status_code == 429 and "limits.failed_auth_per_minute" in r.json()["detail"]
        assert "MEMORYD_LIMITS__FAILED_AUTH_PER_MINUTE" in r.json()["hint"]
        assert int(r.headers["retry-after"]) >= 1
        # the valid key still works from the same address, and /health answers
        ok = c.get("/memory/list?user_id=alice", headers={"X-API-Key": "key-a"})
        assert ok.status_code == 200, ok.text
        assert c.get("/health").status_code == 200


def test_a_keyless_server_limits_by_address_whatever_key_is_sent(
    memory: Memory, live_server
) -> None:  # type: ignore[no-untyped-def]
    memory.settings.limits.rate_limit_per_minute = 3
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as c,
    ):
        codes = [
            c.get("/memory/list?user_id=u", headers={"X-API-Key": f"random-{n}"}).status_code
            for n in range(5)
        ]
    assert codes == [200, 200, 200, 429, 429], codes


# -- numbers parsed with int(), bounded; nesting too deep is bad input ------------------------


def test_dashboard_numbers_that_are_unicode_digits_are_400_not_500(client: httpx.Client) -> None:
    for path, params in [
        ("/ui/search", {"q": "deploy", "top_k": "²"}),
        ("/ui/memories", {"page": "²"}),
        ("/ui/memories", {"page": "١٢"}),  # Arabic-Indic digits: int() reads them, we do not
        ("/ui/memories", {"page": "99999999999999999999999"}),
    ]:
        r = client.get(path, params=params)
        assert 400 <= r.status_code < 500, (path, params, r.status_code, r.text[:300])
        assert "whole number" in r.text
    assert client.get("/ui/memories", params={"page": "2"}).status_code == 200


def test_mcp_memory_list_refuses_an_offset_sqlite_cannot_hold(client: httpx.Client) -> None:
    from tests.mcp_client import McpSession

    with McpSession.http(f"{client.base_url}/mcp", {"X-Memoryd-User": "u"}) as mcp:
        problem = mcp.error("memory_list", offset=2**63)
        assert "offset" in problem
        assert mcp.call("memory_list", offset=2**62)["results"] == []


DEEP = "[" * 100_000 + "]" * 100_000


def test_a_transcript_line_nested_too_deep_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    path = tmp_path / "t.jsonl"
    path.write_text('{"role": "user", "content": "hello"}\n' + DEEP + "\n")
    result = CliRunner().invoke(cli_app, ["import-transcript", str(path), "--user", "boss"])
    assert result.exit_code not in (0, None) and not isinstance(result.exception, RecursionError)
    assert "line 2 nests JSON deeper" in result.output, result.output


def test_a_deeply_nested_openclaw_json_does_not_crash_status_or_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    openclaw = tmp_path / "openclaw"
    openclaw.mkdir()
    (openclaw / "openclaw.json").write_text('{"agents": ' + DEEP + "}")
    monkeypatch.setenv("MEMORYD_WORKSPACE__OPENCLAW_DIR", str(openclaw))
    (tmp_path / "home" / "workspaces" / "main").mkdir(parents=True)  # a known agent
    for args in (["status"], ["context", "--agent", "main"]):
        result = CliRunner().invoke(cli_app, args)
        assert not isinstance(result.exception, RecursionError), (args, result.output)
        assert result.exit_code == 0, (args, result.output)


def test_a_json_body_nested_too_deep_is_422(client: httpx.Client, memory: Memory) -> None:
    body = '{"user_id": "u", "infer": false, "text": "x", "metadata": {"k": ' + "[" * 50_000
    body += "]" * 50_000 + "}}"
    r = client.post("/memory/add", content=body, headers=JSON)
    assert r.status_code == 422 and "nests deeper" in r.json()["detail"], r.text
    assert _count(memory) == 0


# -- /health and the access log ----------------------------------------------------------------


def test_health_without_a_valid_key_says_only_that_it_is_up(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    memory.add("a fact of alice's", user_id="alice", infer=False)
    memory.settings.auth.keys = [
        ApiKey(name="a", key=SecretStr("key-a"), users=["alice"]),
        ApiKey(name="root", key=SecretStr("key-root"), admin=True),
    ]
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as c,
    ):
        assert c.get("/health").json() == {"status": "ok"}
        assert c.get("/health", headers={"X-API-Key": "wrong"}).json() == {"status": "ok"}
        scoped = c.get("/health", headers={"X-API-Key": "key-a"}).json()
        assert scoped["status"] == "ok" and "model" in scoped and "counts" not in scoped
        admin = c.get("/health", headers={"X-API-Key": "key-root"}).json()
        assert admin["counts"]["active"] == 1


def test_the_access_log_keeps_the_path_not_the_query(memory: Memory) -> None:
    import logging
    import threading
    import time

    import uvicorn

    from tests.conftest import free_port

    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    app = create_app(memory=memory)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="info"))
    thread = threading.Thread(target=server.run, daemon=True)
    access = logging.getLogger("uvicorn.access")
    keep = Keep()
    thread.start()
    try:
        while not server.started:
            time.sleep(0.02)
        access.addHandler(keep)
        r = httpx.get(f"http://127.0.0.1:{port}/memory/list?user_id=secret-user-name")
        assert r.status_code == 200
        deadline = time.monotonic() + 10  # the line is written after the answer is sent
        while not any("/memory/list" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        access.removeHandler(keep)
        server.should_exit = True
        thread.join(10)
    assert any("/memory/list" in line for line in lines), lines
    assert not any("secret-user-name" in line for line in lines), lines


# -- reindex changes vectors only ---------------------------------------------------------------


class _Reversed:
    """The real model with its vector's components reversed: another model's vectors."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dim = inner, "reversed-model", inner.dim
        self.max_tokens = inner.max_tokens

    def embed(self, texts):  # type: ignore[no-untyped-def]
        return self.inner.embed(texts)[:, ::-1].copy()

    def count_tokens(self, text: str) -> int:
        return int(self.inner.count_tokens(text))


def test_reindex_keeps_updated_at_and_history(settings: Any, embedder: Any, clock: Any) -> None:
    import numpy as np

    with Memory(settings, embedder=embedder, clock=clock) as mem:
        [task] = mem.add("Renew the TLS certificate", user_id="u", infer=False)
        mem.update(task.id, "Renew the TLS certificate of the staging proxy")
        before = mem.store.get(task.id)
        history = mem.store.history(task.id)
    assert before is not None
    clock.advance(days=60)
    other = _Reversed(embedder)
    with Memory(settings, embedder=other, clock=clock, allow_model_change=True) as mem:  # type: ignore[arg-type]
        assert mem.reindex() == 1
        after = mem.store.get(task.id)
        assert after is not None and after.updated_at == before.updated_at
        assert mem.store.history(task.id) == history
        vector = mem.store.get_embedding(task.id)
        expected = other.embed([after.index_text])[0]
        assert vector is not None and np.allclose(vector, expected, atol=1e-5)


# -- no state change on GET ----------------------------------------------------------------------


def _recalled(memory: Memory) -> int:
    from memoryd.recall import summaries

    memory.recalls.flush()
    return sum(r.count for r in summaries(memory.store, "main"))


def test_searches_made_by_a_get_record_no_recalls_and_posts_do(
    client: httpx.Client, memory: Memory
) -> None:
    memory.add("Deploys go through ArgoCD on prod-eu-1", user_id="default", agent_id="main",
               infer=False)  # fmt: skip
    r = client.get("/ui/search", params={"q": "how do we deploy", "min": "0"})
    assert r.status_code == 200 and "ArgoCD" in r.text
    r = client.get("/v1/context", params={"agent_id": "main", "query": "how do we deploy"})
    assert r.status_code == 200 and "ArgoCD" in r.text, r.text
    assert _recalled(memory) == 0
    body = {"query": "how do we deploy", "user_id": "default", "agent_id": "main"}
    r = client.post("/memory/search", json=body)
    assert r.status_code == 200 and "ArgoCD" in r.text
    assert _recalled(memory) == 1


def test_commitments_are_delivered_by_post_only(client: httpx.Client) -> None:
    params = {"agent_id": "main"}
    assert client.get("/v1/commitments/due", params=params).status_code == 405
    r = client.post("/v1/commitments/due", params=params)
    assert r.status_code == 200 and r.json() == {"results": []}, r.text
    assert client.get("/v1/commitments", params=params).status_code == 200  # reading stays


def test_wiki_gets_never_compile_the_vault(client: httpx.Client, tmp_path: Path) -> None:
    (tmp_path / "ws-main").mkdir()
    (tmp_path / "ws-main" / "MEMORY.md").write_text("# Memory\n\n- Orion's staging port is 5433\n")
    params = {"agent_id": "main"}
    r = client.get("/v1/wiki/search", params={**params, "q": "staging port"})
    assert r.status_code == 200 and r.json() == {"results": []}, r.text
    r = client.get("/v1/wiki/pages/Orion", params=params)
    assert r.status_code == 404 and "POST /v1/wiki/compile" in r.json()["hint"], r.text
    r = client.get("/v1/wiki/lint", params=params)
    assert r.status_code == 200 and r.json()["problems"][0]["kind"] == "uncompiled", r.text
    assert not (tmp_path / "ws-main" / "wiki").exists()
    r = client.post("/v1/wiki/compile", json=params)
    assert r.status_code == 200, r.text
    r = client.get("/v1/wiki/search", params={**params, "q": "staging port"})
    assert r.status_code == 200 and r.json()["results"], r.text
