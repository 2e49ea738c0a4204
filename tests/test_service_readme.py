"""The README's curl examples for the memory service, run against a live server,
so the documentation stays true: every route documented, every example works."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import httpx

from memoryd.api import create_app
from memoryd.core import Memory

README = Path(__file__).resolve().parents[1] / "README.md"
DOCUMENTED_ROUTES = {
    ("GET", "/health"),
    ("POST", "/memory/add"),
    ("POST", "/memory/search"),
    ("POST", "/memory/search_combined"),
    ("GET", "/memory/list"),
    ("GET", "/memory/{memory_id}"),
    ("PUT", "/memory/update"),
    ("GET", "/memory/history/{memory_id}"),
    ("DELETE", "/memory/{memory_id}"),
    ("POST", "/memory/restore/{memory_id}"),
    ("DELETE", "/memory/reset"),
    ("POST", "/memories"),
    ("GET", "/memories"),
    ("GET", "/memories/{memory_id}"),
    ("PUT", "/memories/{memory_id}"),
    ("GET", "/memories/{memory_id}/history"),
    ("DELETE", "/memories/{memory_id}"),
    ("DELETE", "/memories"),
    ("POST", "/search"),
    ("POST", "/reset"),
}


def curl_commands() -> list[list[str]]:
    text = README.read_text()
    start = text.index("## The memory service (HTTP API)")
    end = text.index("\n## ", start + 1)
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text[start:end], re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip().startswith("curl "):
                commands.append(shlex.split(line, comments=True))
    return commands


def as_request(argv: list[str]) -> tuple[str, str, dict | None]:
    method, url, body = "GET", "", None
    args = iter(argv[1:])
    for arg in args:
        if arg == "-X":
            method = next(args)
        elif arg == "-H":
            next(args)
        elif arg == "-d":
            body = next(args)
        else:
            url = arg
    return method, url, (json.loads(body) if body else None)


def test_every_route_has_a_curl_example_and_every_example_works(
    memory: Memory, live_server
) -> None:  # type: ignore[no-untyped-def]
    commands = [as_request(c) for c in curl_commands()]
    documented = {
        (m, httpx.URL(u.replace("$ID", "MEMORY_ID")).path.replace("MEMORY_ID", "{memory_id}"))
        for m, u, _ in commands
    }
    assert documented >= DOCUMENTED_ROUTES, DOCUMENTED_ROUTES - documented
    memory_id = None
    with live_server(create_app(memory=memory)) as server, httpx.Client(timeout=30) as http:
        for method, url, body in commands:
            url = url.replace("http://127.0.0.1:8230", server.url)
            if "$ID" in url or (body and "$ID" in json.dumps(body)):
                assert memory_id, f"{method} {url} needs an id from an earlier example"
                url = url.replace("$ID", memory_id)
                body = json.loads(json.dumps(body).replace("$ID", memory_id)) if body else None
            response = http.request(method, url, json=body)
            assert response.status_code == 200, (method, url, response.text)
            data = response.json()
            results = data.get("results") if isinstance(data, dict) else None
            if (
                method == "POST"
                and results
                and isinstance(results[0], dict)
                and "event" in results[0]
            ):
                memory_id = results[0]["id"]
    assert memory.list(user_id="alice") == []  # the examples end by resetting alice


def _anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives the headings (outside code blocks)."""
    found, in_code = set(), False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_every_section_link_resolves_and_every_seed_row_links_one() -> None:
    text = README.read_text()
    anchors = _anchors(text)
    links = re.findall(r"\]\(#([^)]+)\)", text)
    assert links and not [a for a in links if a not in anchors]
    table = text.split("## Seeds 002 and 003: where each feature is", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in table.splitlines() if re.match(r"\| 00[23] \|", r)]
    assert {r[2:5] for r in rows} == {"002", "003"} and len(rows) >= 20
    for row in rows:
        assert re.search(r"\]\(#[^)]+\)", row), f"no section for: {row}"
