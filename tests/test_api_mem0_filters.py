"""mem0's filter language on the OSS routes (``POST /search``, ``GET /memories``) and
memoryd's own (``/memory/search``'s ``filters.where``), over a real server; how the
platform routes read a key (``Authorization: Token``) and answer what memoryd does
not have (501). Issue 33: ``"filters": {"user_id": "alice"}`` was a 422."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import ApiKey, Settings

README = Path(__file__).resolve().parents[1] / "README.md"
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


def _readme_curls() -> list[tuple[str, str, Any, dict[str, str]]]:
    """The curl examples of the README's "Coming from mem0" section, as requests."""
    text = README.read_text()
    start = text.index("## Coming from mem0")
    end = text.index("\n## ", start + 1)
    requests = []
    for block in re.findall(r"```bash\n(.*?)```", text[start:end], re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            if not line.strip().startswith("curl "):
                continue
            args = iter(shlex.split(line)[1:])
            method, url, body, params, get = "GET", "", None, {}, False
            for arg in args:
                if arg == "-X":
                    method = next(args)
                elif arg == "-H":
                    next(args)
                elif arg == "-d":
                    body = json.loads(next(args))
                elif arg == "-G":
                    get = True
                elif arg == "--data-urlencode":
                    name, _, value = next(args).partition("=")
                    params[name] = value
                else:
                    url = arg
            assert get or not params
            requests.append((method, url, body, params))
    return requests


def test_the_readme_filter_examples_work(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    examples = _readme_curls()
    assert len(examples) >= 5
    with live_server(create_app(memory=memory)) as server, httpx.Client(timeout=30) as http:
        answers = []
        for method, url, body, params in examples:
            url = url.replace("http://127.0.0.1:8230", server.url)
            r = http.request(method, url, json=body, params=params or None)
            assert r.status_code == 200, (method, url, r.text)
            answers.append(r.json())
    found = [a for a in answers if isinstance(a, dict) and "results" in a][1:]
    assert all(
        [m["memory"] for m in a["results"]] == ["The orion launch moved to May"] for a in found
    ), found
    assert memory.list(user_id="alice") == []  # the examples end by deleting alice's
