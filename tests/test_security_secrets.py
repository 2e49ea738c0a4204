"""Secrets (API keys, LLM keys) never appear in logs, the audit log, error
answers or /health; path-taking inputs refuse traversal and symlink escapes."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.audit import audit_path
from memoryd.core import Memory
from memoryd.settings import ApiKey

API_KEY = "sk-api-SECRET-0123456789abcdef"
LLM_KEY = "sk-llm-SECRET-fedcba9876543210"


def test_secrets_stay_out_of_logs_audit_errors_and_health(
    memory: Memory, live_server, caplog: pytest.LogCaptureFixture
) -> None:  # type: ignore[no-untyped-def]
    memory.settings.auth.keys = [
        ApiKey(name="scoped", key=SecretStr(API_KEY), users=["alice"], agents=["dev"])
    ]
    memory.settings.llm.openai.api_key = SecretStr(LLM_KEY)
    memory.settings.llm.anthropic.api_key = SecretStr(LLM_KEY)
    memory.settings.embed.openai.api_key = SecretStr(LLM_KEY)
    caplog.set_level(logging.DEBUG)
    answers: list[str] = []
    with (
        live_server(create_app(memory=memory)) as srv,
        httpx.Client(base_url=srv.url, timeout=30) as c,
    ):
        good = {"Authorization": f"Bearer {API_KEY}"}
        bad = {"Authorization": f"Bearer {API_KEY}x"}
        for r in (
            c.get("/health", headers=good),
            c.get("/memory/list?user_id=bob", headers=good),  # 403
            c.get("/memory/list?user_id=alice", headers=bad),  # 401
            c.post("/memory/add", json={"text": "", "user_id": "alice"}, headers=good),
            c.get("/memory/nope", headers=good),
            c.get("/ui", headers={"Cookie": f"memoryd_key={API_KEY}"}),
            c.get("/ui", headers={"Cookie": "memoryd_key=wrong"}),
        ):
            answers.append(r.text + str(r.headers))
    audit = audit_path(memory.settings).read_text(encoding="utf-8")
    assert audit.count("\n") >= 6
    # the server side's logs (memoryd, uvicorn, starlette, mcp); httpx/httpcore here are
    # the test's own client
    server_logs = "\n".join(
        r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))
    )
    haystacks = {"answers": "\n".join(answers), "audit": audit, "logs": server_logs}
    haystacks["settings repr"] = repr(memory.settings) + str(memory.settings.model_dump())
    for where, text in haystacks.items():
        for secret in (API_KEY, LLM_KEY, "SECRET"):
            assert secret not in text, f"{secret} found in {where}"


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "memory/../../outside.md",
        "/etc/passwd",
        "..%2Foutside.md",
        "memory/../../../../etc/passwd",
        "escape.md",  # a symlink inside the workspace pointing out of it
        "linkdir/secret.md",  # a symlinked directory pointing out of it
    ],
)
def test_memory_get_refuses_traversal_and_symlink_escapes(
    memory: Memory, live_server, tmp_path: Path, path: str
) -> None:  # type: ignore[no-untyped-def]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("TOP-SECRET outside the workspace\n")
    (tmp_path / "outside.md").write_text("TOP-SECRET next to the workspace\n")
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# inside\n")
    (ws / "escape.md").symlink_to(outside / "secret.md")
    (ws / "linkdir").symlink_to(outside, target_is_directory=True)
    memory.settings.workspace.agents = {"main": ws}
    with (
        live_server(create_app(memory=memory)) as srv,
        httpx.Client(base_url=srv.url, timeout=30) as c,
    ):
        r = c.get("/v1/memory_get", params={"agent_id": "main", "path": path})
        assert "TOP-SECRET" not in r.text, (path, r.text)
        assert r.status_code in (400, 403, 404, 422) or r.json().get("text") == "", r.text
        for agent in ("../main", "..", "main/../x", "/etc"):
            r = c.get("/v1/context", params={"agent_id": agent})
            assert r.status_code == 422, (agent, r.text)
            r = c.post("/v1/sessions/end", json={"agent_id": agent, "messages": []})
            assert 400 <= r.status_code < 500, (agent, r.text)
