"""The audit log: a JSON line per request, no secrets, rotation, read_recent."""

from __future__ import annotations

import json

import httpx

from memoryd.api import create_app
from memoryd.audit import FIELDS, AuditLog, audit_path, read_recent
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import ApiKey, Settings

SECRET_TEXT = "the vault passphrase is hunter2-correct-horse"


def test_every_request_is_one_line_with_scope_counts_and_latency(
    memory: Memory, live_server
) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        base = server.url
        httpx.post(
            f"{base}/memory/add",
            json={
                "text": SECRET_TEXT,
                "user_id": "boss",
                "agent_id": "dev",
                "run_id": "2026-03-27",
                "infer": False,
            },
        )
        httpx.post(
            f"{base}/memory/search", json={"query": "vault", "user_id": "boss", "agent_id": "dev"}
        )
        httpx.get(f"{base}/memory/list", params={"user_id": "boss"})
        httpx.get(f"{base}/memory/does-not-exist")
        httpx.get(f"{base}/health")
    entries = read_recent(memory.settings, 10)
    assert [e["op"] for e in entries] == [None, "get", "list", "search", "add"]  # newest first
    health, missing, listing, search, add = entries
    for e in entries:
        assert set(e) == set(FIELDS) and e["latency_ms"] >= 0 and e["ts"].endswith("+00:00")
        assert e["principal"] == "anonymous"
    assert (add["method"], add["path"], add["status"], add["count"]) == (
        "POST",
        "/memory/add",
        200,
        1,
    )
    assert (add["user_id"], add["agent_id"], add["run_id"]) == ("boss", "dev", "2026-03-27")
    assert search["count"] == 1 and 0 < search["top_score"] <= 1
    assert listing["user_id"] == "boss" and listing["count"] == 1
    assert missing["status"] == 404 and health["path"] == "/health"
    raw = audit_path(memory.settings).read_text()
    assert SECRET_TEXT not in raw and "vault" not in raw  # no memory text, no queries


def test_keys_never_reach_the_log_and_refusals_are_logged(
    settings: Settings, embedder: Embedder, live_server
) -> None:  # type: ignore[no-untyped-def]
    settings.auth.keys = [ApiKey(name="ci-bot", key="sk-very-secret", users=["boss"])]  # type: ignore[arg-type]
    with Memory(settings, embedder=embedder) as mem, live_server(create_app(memory=mem)) as server:
        httpx.post(
            f"{server.url}/memory/search",
            json={"query": "x", "user_id": "boss"},
            headers={"Authorization": "Bearer sk-very-secret"},
        )
        httpx.post(
            f"{server.url}/memory/search",
            json={"query": "x", "user_id": "boss"},
            headers={"X-API-Key": "sk-wrong-guess"},
        )
        httpx.post(
            f"{server.url}/memory/search",
            json={"query": "x", "user_id": "carol"},
            headers={"Authorization": "Bearer sk-very-secret"},
            cookies={"memoryd_key": "sk-very-secret"},
        )
    denied, refused, allowed = read_recent(settings, 3)
    assert (allowed["principal"], allowed["status"]) == ("ci-bot", 200)
    assert (refused["principal"], refused["status"]) == (None, 401)
    assert (denied["principal"], denied["status"], denied["user_id"]) == ("ci-bot", 403, "carol")
    raw = audit_path(settings).read_text()
    assert "sk-very-secret" not in raw and "sk-wrong-guess" not in raw and "Bearer" not in raw


def test_the_log_rotates_by_size_and_read_recent_spans_the_files(settings: Settings) -> None:
    settings.audit.max_bytes = 2_000
    settings.audit.backups = 2
    log = AuditLog(settings)
    for n in range(60):
        log.write(
            {"ts": f"t{n}", "method": "GET", "path": f"/memory/{n}", "status": 200, "count": n}
        )
    log.close()
    path = audit_path(settings)
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    assert all(p.stat().st_size <= 2_000 for p in path.parent.iterdir())
    in_current = len(path.read_text().splitlines())
    recent = read_recent(settings, in_current + 5)
    # newest first, continuing into the rotated file
    assert [e["count"] for e in recent] == list(range(59, 59 - in_current - 5, -1))
    kept = read_recent(settings, 1000)
    assert 20 < len(kept) < 60  # the oldest rotated out
    assert [e["count"] for e in kept] == list(range(59, 59 - len(kept), -1))
    every_line = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(set(e) == set(FIELDS) for e in every_line)


def test_read_recent_on_a_fresh_home_and_a_torn_line(settings: Settings) -> None:
    assert read_recent(settings, 10) == []
    path = audit_path(settings)
    path.parent.mkdir(parents=True)
    path.write_text('{"op": "add", "count": 1}\n{"op": "sea')  # the process died mid-write
    assert read_recent(settings, 10) == [{"op": "add", "count": 1}]


def test_audit_can_be_switched_off(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    memory.settings.audit.enabled = False
    with live_server(create_app(memory=memory)) as server:
        assert httpx.get(f"{server.url}/health").status_code == 200
    assert not audit_path(memory.settings).exists()
