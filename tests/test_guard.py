"""The HTTP edge (memoryd.api.guard) on a real server: hostile text and paths get a
4xx naming the problem, and browsers on other sites (or behind a rebinding DNS
name) cannot use a keyless loopback server, while its own pages and
non-browser clients keep working. The browser cases run in real Chromium."""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.models import Filters
from memoryd.settings import ApiKey
from tests.conftest import free_port

JSON = {"content-type": "application/json"}
LONE = "\\ud800"  # as it travels in JSON: the escape of half a surrogate pair
BIDI = "\\u202e\\u200b\\u200d\\ufeff"  # right-to-left override, zero-width space/joiner, BOM

HOSTILE_BODIES = [
    ("POST", "/memory/search", f'{{"query": "x", "user_id": "u", "filters": {{"source_path": "{LONE}"}}}}', "body.filters.source_path"),
    ("PUT", "/memory/update", f'{{"memory_id": "{LONE}", "text": "x"}}', "body.memory_id"),
    ("POST", "/v1/flush", '{"agent_id": "main", "notes": ["a\\udfffb"]}', "body.notes[0]"),
    ("POST", "/v1/sessions/end", f'{{"agent_id": "main", "session_id": "{LONE}", "messages": []}}', "body.session_id"),
    ("POST", "/v1/sessions/end", f'{{"agent_id": "main", "messages": [{{"role": "user", "content": [{{"type": "text", "text": "{LONE}"}}]}}]}}', "body.messages[0].content[0].text"),
    ("PUT", "/memory/update", f'{{"memory_id": "{BIDI}", "text": "x"}}', "body.memory_id"),
    ("POST", "/memory/add", f'{{"user_id": "u", "infer": false, "messages": [{{"role": "{BIDI}", "content": "hello there"}}]}}', "body.messages[0].role"),
    ("POST", "/mcp", f'{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "memory_search", "arguments": {{"query": "{LONE}"}}}}}}', "body.params.arguments.query"),
]  # fmt: skip


@pytest.fixture
def server(
    memory: Memory, live_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    with live_server(create_app(memory=memory)) as srv:
        yield srv


@pytest.mark.parametrize(("method", "path", "body", "field"), HOSTILE_BODIES)
def test_unencodable_or_invisible_text_is_refused_naming_the_field(
    server: Any, memory: Memory, method: str, path: str, body: str, field: str
) -> None:
    r = httpx.request(method, server.url + path, content=body, headers=JSON)
    assert r.status_code == 422, r.text
    assert r.json()["error"] == "InvalidInputError" and field in r.json()["detail"]
    assert memory.store.count(Filters()) == 0


def test_free_text_keeps_every_valid_character(server: Any, memory: Memory) -> None:
    body = f'{{"user_id": "u", "infer": false, "text": "ship it \\ud83d\\ude80 {BIDI} done"}}'
    r = httpx.post(server.url + "/memory/add", content=body, headers=JSON)
    assert r.status_code == 200, r.text
    [stored] = memory.store.list(Filters(user_id="u"))
    assert stored.text == "ship it \U0001f680 \u202e\u200b\u200d\ufeff done"


def test_every_operation_refuses_a_lone_surrogate_before_its_route_runs(server: Any) -> None:
    """Whatever the route, a JSON body with half a surrogate pair is a 422, never a 5xx
    or a dropped connection (the fuzz test covers what each route does with the rest)."""
    spec = httpx.get(server.url + "/openapi.json").json()
    checked = 0
    for path, operations in spec["paths"].items():
        for method in operations:
            if method not in ("post", "put", "patch", "delete"):
                continue
            url = server.url + path.replace("{", "x").replace("}", "")
            body = f'{{"agent_id": "main", "user_id": "u", "text": "{LONE}"}}'
            r = httpx.request(method.upper(), url, content=body, headers=JSON)
            assert r.status_code == 422 and "surrogate" in r.json()["detail"], (path, r.text)
            checked += 1
    assert checked >= 15


@pytest.mark.parametrize(
    "path", ["/ui/static/%00", "/ui/static/" + "a" * 300, "/memory/%E2%80%AEx"]
)
def test_paths_with_nul_control_characters_or_overlong_names_are_404(
    server: Any, path: str
) -> None:
    r = httpx.get(server.url + path)
    assert r.status_code == 404 and r.json()["error"] == "NotFoundError"


def test_other_sites_and_foreign_hosts_are_refused_without_a_key(
    server: Any, memory: Memory
) -> None:
    add = {"user_id": "u", "text": "The VPN gateway is vpn-3", "infer": False}
    port = server.url.rsplit(":", 1)[1]
    cases = {
        "rebinding": httpx.get(server.url + "/memory/list?user_id=u", headers={"host": f"evil.test:{port}"}),
        "cross-site form": httpx.post(server.url + "/memory/add", json=add, headers={"origin": "http://evil.test"}),
        "localhost other port": httpx.post(server.url + "/memory/add", json=add, headers={"origin": "http://localhost:9999"}),
        "no-cors fetch": httpx.get(server.url + "/memory/list?user_id=u", headers={"sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors"}),
        "sandboxed page": httpx.post(server.url + "/memory/add", json=add, headers={"origin": "null"}),
    }  # fmt: skip
    for name, r in cases.items():
        assert r.status_code == 403, (name, r.text)
        assert r.json()["error"] == "PermissionDeniedError" and r.json()["hint"], name
    assert memory.store.count(Filters()) == 0
    own = httpx.post(server.url + "/memory/add", json=add, headers={"origin": server.url})
    plain = httpx.get(server.url + "/memory/list?user_id=u")  # the CLI, MCP clients, curl
    link = httpx.get(
        server.url + "/ui/", headers={"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    )
    assert own.status_code == 200 and plain.status_code == 200 and link.status_code == 200
    assert [m["memory"] for m in plain.json()["results"]] == ["The VPN gateway is vpn-3"]


def test_a_valid_key_or_configured_hosts_and_origins_are_let_through(
    memory: Memory, live_server
) -> None:  # type: ignore[no-untyped-def]
    memory.settings.auth.keys = [ApiKey(name="app", key=SecretStr("k-app"), admin=True)]
    memory.settings.server.allowed_hosts = ["memoryd.internal"]
    memory.settings.server.cors_origins = ["https://notes.example"]
    with live_server(create_app(memory=memory)) as server:
        keyed = httpx.get(
            server.url + "/memory/list?user_id=u",
            headers={"host": "evil.test", "origin": "http://evil.test", "x-api-key": "k-app"},
        )
        named = httpx.get(server.url + "/health", headers={"host": "memoryd.internal:8230"})
        preflight = httpx.options(
            server.url + "/memory/search",
            headers={
                "origin": "https://notes.example",
                "access-control-request-method": "POST",
            },
        )
        remote_dashboard = httpx.get(  # keys on: its own name, the key cookie, no list needed
            server.url + "/ui/",
            headers={"host": "memoryd.example:8230", "cookie": "memoryd_key=k-app"},
        )
        cookie_only = httpx.post(
            server.url + "/memory/add",
            json={"user_id": "u", "text": "x y z", "infer": False},
            headers={"origin": "http://evil.test", "cookie": "memoryd_key=k-app"},
        )
    assert keyed.status_code == 200, keyed.text
    assert named.status_code == 200
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://notes.example"
    assert remote_dashboard.status_code == 200, remote_dashboard.text[:300]
    assert cookie_only.status_code == 403  # the dashboard's cookie is what a forged form carries


# -- in a real browser ------------------------------------------------------------------------
CHROMIUM = Path("/usr/bin/chromium")


class _AttackerPage(http.server.BaseHTTPRequestHandler):
    html = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.end_headers()
        self.wfile.write(self.html)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"), reason="apt-get install -y chromium"
)
def test_chromium_cannot_post_from_another_site_or_read_through_a_rebound_name(
    server: Any, memory: Memory
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    memory.add("The payroll export runs on Fridays", user_id="u", infer=False)
    port = server.url.rsplit(":", 1)[1]
    _AttackerPage.html = f"""<!doctype html><form id=f method=post enctype=text/plain
        action="{server.url}/memory/add"><input name='{{"user_id":"u","infer":false,"text":"pwned","x":"' value='"}}'></form>
        <script>document.getElementById('f').submit()</script>""".encode()
    attacker = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _AttackerPage)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    args = [
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--host-resolver-rules=MAP evil.test 127.0.0.1",
    ]
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=args)
            page = browser.new_page()
            page.set_default_timeout(30_000)
            with page.expect_response(lambda r: r.url.endswith("/memory/add")) as posted:
                page.goto(f"http://evil.test:{attacker.server_address[1]}/")
            assert posted.value.status == 403
            # a rebinding page: evil.test now resolves to memoryd; the same-origin read
            # carries Host: evil.test
            page.goto(f"http://evil.test:{port}/health")  # exempt: a liveness probe
            answer = page.goto(f"http://evil.test:{port}/memory/list?user_id=u")
            assert answer is not None and answer.status == 403
            assert "payroll" not in page.content()
            own = page.goto(f"{server.url}/memory/list?user_id=u")
            assert own is not None and own.status == 200 and "payroll" in page.content()
            browser.close()
    finally:
        attacker.shutdown()
    assert [m.text for m in memory.store.list(Filters(user_id="u"))] == [
        "The payroll export runs on Fridays"
    ]
