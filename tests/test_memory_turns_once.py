"""A conversation added with inference shows once in lists (issue 33).

``POST /memories`` with one user message stores the extracted fact and, beside it,
the turn as its evidence. Lists (the API's, the CLI's, the dashboard's, MCP's
through the same scope) show the fact only; the turn stays searchable, is marked
(metadata ``evidence_turn``) and is listed on request (``include_turns`` /
``--turns`` / an origin filter on ``turn``). The filtering is in the store query,
so the totals agree with the pages. Runs on SQLite and, in CI, PostgreSQL.
"""

from __future__ import annotations

import json
import re

import httpx
from typer.testing import CliRunner

from memoryd.access import LOCAL
from memoryd.api import create_app
from memoryd.cli import app as cli
from memoryd.core import Memory
from memoryd.filters import EVIDENCE_TURN
from memoryd.shapes import FilterSpec

SAID = "I moved to Lisbon last year and I work at Acme as a data engineer."


def _said_count(texts: list[str]) -> int:
    return sum(t == SAID for t in texts)


def test_inferred_conversation_lists_once_and_keeps_its_turn(memory: Memory) -> None:
    memory.add(messages=[{"role": "user", "content": SAID}], user_id="alice", infer=True)
    scope = memory.scope(LOCAL, "alice")
    page = scope.list()
    assert _said_count([m.memory for m in page.results]) == 1
    assert page.total == len(page.results) == 1 and page.results[0].origin == "fact"
    everything = scope.list(include_turns=True)
    assert everything.total == 2
    (turn,) = [m for m in everything.results if m.origin == "turn"]
    assert turn.metadata[EVIDENCE_TURN] is True
    fact = page.results[0]
    assert fact.metadata["evidence"] == [turn.id]  # the fact names its evidence
    # an origin filter on turns lists them without the flag
    assert [m.id for m in scope.list(filters=FilterSpec(origin="turn")).results] == [turn.id]
    # still searchable, as evidence
    hits = scope.search("Lisbon Acme data engineer", top_k=5, filters=FilterSpec(origin="turn"))
    assert [h.id for h in hits] == [turn.id]


def test_turns_stored_as_given_are_listed(memory: Memory) -> None:
    """Without inference the turns are the memories themselves: listed as ever."""
    memory.add(messages=[{"role": "user", "content": SAID}], user_id="alice", infer=False)
    page = memory.scope(LOCAL, "alice").list()
    assert [m.origin for m in page.results] == ["turn"] and page.total == 1
    assert EVIDENCE_TURN not in page.results[0].metadata


def test_every_list_face_shows_the_conversation_once(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        added = httpx.post(
            f"{server.url}/memories",
            json={"messages": [{"role": "user", "content": SAID}], "user_id": "alice"},
        )
        assert added.status_code == 200, added.text
        mem0 = httpx.get(f"{server.url}/memories", params={"user_id": "alice"}).json()
        assert _said_count([m["memory"] for m in mem0["results"]]) == 1
        turns = httpx.get(
            f"{server.url}/memories", params={"user_id": "alice", "include_turns": "true"}
        ).json()
        assert _said_count([m["memory"] for m in turns["results"]]) == 2
        seed = httpx.get(f"{server.url}/memory/list", params={"user_id": "alice"}).json()
        assert seed["total"] == 1 and _said_count([m["memory"] for m in seed["results"]]) == 1
        platform = httpx.post(
            f"{server.url}/v3/memories/", json={"filters": {"user_id": "alice"}}
        ).json()
        assert platform["count"] == 1
        html = httpx.get(f"{server.url}/ui/memories", params={"user": "alice"}).text
        assert html.count("Lisbon last year") == 1
        html_turns = httpx.get(
            f"{server.url}/ui/memories", params={"user": "alice", "origin": "turn"}
        ).text
        assert html_turns.count("Lisbon last year") == 1  # the turn, listed on request

        runner = CliRunner()
        base = ["list", "--user", "alice", "--url", server.url, "--json"]
        shown = json.loads(runner.invoke(cli, base).output)
        assert [m["origin"] for m in shown["results"]] == ["fact"]
        with_turns = json.loads(runner.invoke(cli, [*base, "--turns"]).output)
        assert sorted(m["origin"] for m in with_turns["results"]) == ["fact", "turn"]
        table = runner.invoke(cli, ["list", "--user", "alice", "--url", server.url]).output
        assert len(re.findall(r"Lisbon", table)) == 1
