"""Limits at the HTTP edge, on a real uvicorn server: body size (declared and
streamed), per-key rate limit, and the field limits (text, metadata, top_k).
Every refusal is a 4xx that names the limit and stores nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.api.limits import RateLimiter
from memoryd.core import Memory
from memoryd.models import Filters
from memoryd.settings import ApiKey


def _count(memory: Memory) -> int:
    return memory.store.count(Filters(states=[]))


@pytest.fixture
def small_body(memory: Memory, live_server) -> Iterator[httpx.Client]:  # type: ignore[no-untyped-def]
    memory.settings.limits.max_body_bytes = 4096
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        yield client


def test_declared_body_over_the_limit_is_413_naming_the_limit(
    small_body: httpx.Client, memory: Memory
) -> None:
    body = {"text": "x" * 5000, "user_id": "boss", "infer": False}
    r = small_body.post("/memory/add", json=body)
    assert r.status_code == 413, r.text
    answer = r.json()
    assert answer["error"] == "LimitExceededError"
    assert "4096 bytes" in answer["detail"] and "max_body_bytes" in answer["detail"]
    assert "MEMORYD_LIMITS__MAX_BODY_BYTES" in answer["hint"]
    assert _count(memory) == 0


def test_streamed_body_over_the_limit_is_413(small_body: httpx.Client, memory: Memory) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding: chunked
        yield b'{"user_id": "boss", "infer": false, "text": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    r = small_body.post(
        "/memory/add", content=chunks(), headers={"content-type": "application/json"}
    )
    assert r.status_code == 413, r.text
    assert "4096 bytes" in r.json()["detail"]
    assert _count(memory) == 0


def test_body_under_the_limit_is_served(small_body: httpx.Client, memory: Memory) -> None:
    r = small_body.post("/memory/add", json={"text": "z" * 3000, "user_id": "boss", "infer": False})
    assert r.status_code == 200, r.text
    assert _count(memory) == 1


def test_default_body_limit_is_one_mebibyte(memory: Memory) -> None:
    assert memory.settings.limits.max_body_bytes == 1_048_576
    assert memory.settings.limits.rate_limit_per_minute == 0  # off unless configured


def test_rate_limit_per_key(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    memory.settings.limits.rate_limit_per_minute = 3
    memory.settings.auth.keys = [
        ApiKey(name="a", key=SecretStr("key-a"), users=["alice"]),
        ApiKey(name="b", key=SecretStr("key-b"), users=["bob"]),
    ]
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        a = {"Authorization": "Bearer key-a"}
        b = {"X-API-Key": "key-b"}
        for _ in range(3):
            assert client.get("/memory/list?user_id=alice", headers=a).status_code == 200
        r = client.get("/memory/list?user_id=alice", headers=a)
        assert r.status_code == 429, r.text
        answer = r.json()
        assert answer["error"] == "RateLimitedError"
        assert "3 per minute" in answer["detail"]
        assert "retry after" in answer["hint"]
        assert 1 <= int(r.headers["retry-after"]) <= 20
        assert "key-a" not in r.text  # the key is never echoed
        # another key has its own bucket; /health is never limited
        assert client.get("/memory/list?user_id=bob", headers=b).status_code == 200
        for _ in range(5):
            assert client.get("/health").status_code == 200
        # a refused add stores nothing
        body = {"text": "should not be stored", "user_id": "alice", "infer": False}
        assert client.post("/memory/add", json=body, headers=a).status_code == 429
        assert _count(memory) == 0


def test_rate_limiter_refills_over_time() -> None:
    now = [0.0]
    limiter = RateLimiter(per_minute=60, burst=2, clock=lambda: now[0])
    assert limiter.take("k") == 0.0 and limiter.take("k") == 0.0
    wait = limiter.take("k")
    assert 0.9 <= wait <= 1.0  # one token a second
    assert limiter.take("other") == 0.0
    now[0] += 1.0
    assert limiter.take("k") == 0.0
    assert limiter.take("k") > 0
    now[0] += 60.0  # never more than the burst
    assert [limiter.take("k") for _ in range(3)][2] > 0


def test_field_limits_name_the_limit(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        too_long = {"text": "w" * 20_001, "user_id": "boss", "infer": False}
        r = client.post("/memory/add", json=too_long)
        assert r.status_code == 413 and "20000" in r.json()["detail"], r.text
        deep: dict = {}
        node = deep
        for _ in range(20):
            node["k"] = {}
            node = node["k"]
        r = client.post(
            "/memory/add",
            json={"text": "deep", "user_id": "boss", "infer": False, "metadata": deep},
        )
        assert r.status_code == 413 and "8 levels" in r.json()["detail"], r.text
        big = {"blob": "m" * 20_000}
        r = client.post(
            "/memory/add", json={"text": "big", "user_id": "boss", "infer": False, "metadata": big}
        )
        assert r.status_code == 413 and "16384 bytes" in r.json()["detail"], r.text
        r = client.post("/memory/search", json={"query": "q", "user_id": "boss", "top_k": 101})
        assert r.status_code == 422 and "100" in r.json()["detail"], r.text
        assert _count(memory) == 0
