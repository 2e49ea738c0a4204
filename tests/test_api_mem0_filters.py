"""mem0's filter language on the OSS routes (``POST /search``, ``GET /memories``) and
memoryd's own (``/memory/search``'s ``filters.where``), over a real server; how the
platform routes read a key (``Authorization: Token``) and answer what memoryd does
not have (501). Issue 33: ``"filters": {"user_id": "alice"}`` was a 422."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import ApiKey, Settings

SEED = [
    ("alice", "the orion launch moved to May", {"project": "orion", "priority": 3}),
    ("alice", "the apollo budget was approved", {"project": "apollo", "priority": 8}),
    ("bob", "the orion rocket needs new valves", {"project": "orion", "priority": 5}),
]


@pytest.fixture
def api(memory: Memory, live_server) -> Iterator[httpx.Client]:  # type: ignore[no-untyped-def]
    for user, text, meta in SEED:
        memory.add(text, user_id=user, metadata=meta)
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        yield client


def _texts(answer: httpx.Response) -> set[str]:
    assert answer.status_code == 200, answer.text
    return {m["memory"] for m in answer.json()["results"]}


def test_oss_search_reads_mem0_filters(api: httpx.Client) -> None:
    q = {"query": "orion launch rocket budget", "top_k": 10, "threshold": 0.0}
    alice = _texts(api.post("/search", json={**q, "filters": {"user_id": "alice"}}))
    assert alice == {SEED[0][1], SEED[1][1]}
    orion = _texts(api.post("/search", json={**q, "filters": {"project": "orion"}}))
    assert orion == {SEED[0][1], SEED[2][1]}
    both = {"AND": [{"project": "orion"}, {"priority": {"gte": 4}}]}
    assert _texts(api.post("/search", json={**q, "filters": both})) == {SEED[2][1]}
    either = {"OR": [{"user_id": "bob"}, {"metadata": {"project": "apollo"}}]}
    assert _texts(api.post("/search", json={**q, "filters": either})) == {SEED[1][1], SEED[2][1]}
    # the top-level user_id scopes, the filter narrows within it
    scoped = api.post("/search", json={**q, "user_id": "alice", "filters": {"project": "orion"}})
    assert _texts(scoped) == {SEED[0][1]}
    # memoryd's own filter names still work beside mem0's
    own = api.post("/search", json={**q, "filters": {"origin": "api", "user_id": "bob"}})
    assert _texts(own) == {SEED[2][1]}


def test_list_and_seed_search_read_the_filter_language(api: httpx.Client) -> None:
    listed = api.get("/memories", params={"filters": json.dumps({"project": {"ne": "orion"}})})
    assert _texts(listed) == {SEED[1][1]}
    where = {"query": "orion", "top_k": 10, "min_score": 0.0}
    seed = api.post("/memory/search", json={**where, "filters": {"where": {"priority": {"lt": 5}}}})
    assert _texts(seed) == {SEED[0][1]}


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"filters": {"user_id": {"like": "a%"}}}, "unknown filter operator 'like'"),
        ({"filters": {"created_at": {"contains": "x"}}}, "does not apply to created_at"),
        ({"filters": {"keywords": "x"}}, "filter field 'keywords' is not supported"),
        ({"filters": {"AND": "x"}}, "must be a non-empty list"),
    ],
)
def test_a_bad_filter_is_a_400_naming_it(api: httpx.Client, body: dict, named: str) -> None:  # type: ignore[type-arg]
    for path in ("/search", "/v3/memories/search/"):
        r = api.post(path, json={"query": "orion", **body})
        assert r.status_code == 400, r.text
        assert named in r.json()["detail"] and r.json()["hint"]
    r = api.get("/memories", params={"filters": json.dumps(body["filters"])})
    assert r.status_code == 400 and named in r.json()["detail"]
    r = api.get("/memories", params={"filters": "{not json"})
    assert r.status_code == 400 and "not JSON" in r.json()["detail"]


def test_keyless_loopback_accepts_any_token(api: httpx.Client) -> None:
    r = api.get("/v1/ping/", headers={"Authorization": "Token anything-at-all"})
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_what_memoryd_does_not_have_is_a_501_naming_it(api: httpx.Client) -> None:
    for method, path, feature in [
        ("GET", "/api/v1/orgs/organizations/memoryd/projects/default/", "organisations"),
        ("PATCH", "/api/v1/orgs/organizations/memoryd/projects/default/", "organisations"),
        ("POST", "/api/v1/webhooks/projects/default/", "webhooks"),
        ("POST", "/v1/summary/", "summaries"),
        ("POST", "/v2/profiles/jobs/", "profiles"),
    ]:
        r = api.request(method, path, json={})
        assert r.status_code == 501 and feature in r.json()["detail"], (path, r.text)
    r = api.post("/v3/memories/add/", json={"messages": "x", "user_id": "a", "immutable": True})
    assert r.status_code == 501 and "immutable" in r.json()["detail"]
    r = api.post("/v3/memories/add/", json={"messages": "x", "user_id": "a", "colour": "red"})
    assert r.status_code == 400 and "'colour'" in r.json()["detail"]


def test_token_presents_a_memoryd_key(settings: Settings, embedder: Embedder, live_server) -> None:  # type: ignore[no-untyped-def]
    settings.auth.keys = [ApiKey(name="alice", key=SecretStr("k-alice"), users=["alice"])]
    with Memory(settings, embedder=embedder) as mem, live_server(create_app(memory=mem)) as srv:
        ping = f"{srv.url}/v1/ping/"
        ok = httpx.get(ping, headers={"Authorization": "Token k-alice"})
        assert ok.status_code == 200 and ok.json()["key"] == "alice"
        assert httpx.get(ping, headers={"Authorization": "Bearer k-alice"}).status_code == 200
        assert httpx.get(ping, headers={"Authorization": "Token wrong"}).status_code == 401
        assert httpx.get(ping).status_code == 401
