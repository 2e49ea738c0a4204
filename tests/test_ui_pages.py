"""The /ui dashboard over real HTTP (uvicorn + httpx): pages, scope, auth, safety.

The browser tests (``test_ui_browser.py``) drive the same pages in Chromium;
these cover what a browser does not need to show: status codes, redirects,
refusals, and the small pure helpers behind the overview.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from itertools import pairwise
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from memoryd.access import LOCAL
from memoryd.api import create_app
from memoryd.api.auth import Principal
from memoryd.api.ui import Query, _bucket_edges, spans, word_diff
from memoryd.core import Memory
from memoryd.errors import InvalidInputError, PermissionDeniedError
from memoryd.models import Filters, Origin, Source, State
from memoryd.settings import ApiKey

# (day offset from the first day, user, agent, category, short-term?, text)
SEED: list[tuple[int, str, str, str, bool, str]] = [
    (
        0,
        "boss",
        "dev",
        "environment",
        False,
        "Deploys go through ArgoCD on cluster prod-eu-1; nobody runs kubectl apply by hand",
    ),
    (
        0,
        "boss",
        "dev",
        "preference",
        False,
        "Boss prefers answers as short bullet points, without emojis",
    ),
    (
        1,
        "boss",
        "ops",
        "environment",
        False,
        "The staging database is Postgres 16 on db-staging.internal with about 2s replica lag",
    ),
    (
        2,
        "boss",
        "dev",
        "experience",
        False,
        "PR #94 fixed search missing shared memories: the scope join dropped the category filter",
    ),
    (
        2,
        "boss",
        "ops",
        "procedural",
        False,
        "To rotate an API key: create the new key, update the CI secret, then revoke the old key",
    ),
    (
        3,
        "boss",
        "ops",
        "environment",
        False,
        "PagerDuty pages the on-call engineer when the 5xx rate stays above 2% for 5 minutes",
    ),
    (
        4,
        "boss",
        "research",
        "experience",
        False,
        "Hybrid retrieval (0.7 vector + 0.3 BM25) beat pure vector search by 6 points on LoCoMo",
    ),
    (
        5,
        "boss",
        "research",
        "decision",
        False,
        "We evaluate rerankers only after the hybrid baseline is reproducible",
    ),
    (
        6,
        "boss",
        "dev",
        "decision",
        False,
        "SQLite in WAL mode is the default store; PostgreSQL is for several hosts",
    ),
    (
        7,
        "boss",
        "dev",
        "preference",
        False,
        "Code review comments should quote the exact line they refer to",
    ),
    (
        8,
        "boss",
        "ops",
        "procedural",
        False,
        "Restart the worker fleet with the rolling-restart job, never all at once",
    ),
    (
        9,
        "boss",
        "research",
        "experience",
        False,
        "Chunking diaries at section boundaries improved recall on date questions",
    ),
    (
        10,
        "boss",
        "dev",
        "environment",
        False,
        "The CI runners have 2 cores; keep the default test run under ten minutes",
    ),
    (
        11,
        "boss",
        "ops",
        "decision",
        False,
        "Backups of the memory store run nightly at 03:00 UTC to the cold bucket",
    ),
    (
        12,
        "boss",
        "dev",
        "task",
        True,
        "Migrating the billing service to the new queue; half of the consumers have moved",
    ),
    (
        13,
        "boss",
        "ops",
        "task",
        True,
        "Standup: Lena is out on Friday, the ops review moves to Monday",
    ),
    (
        14,
        "boss",
        "research",
        "task",
        True,
        "Reading the Zep temporal decay paper for the lessons pipeline",
    ),
    (
        15,
        "boss",
        "dev",
        "experience",
        False,
        "A flaky test was a real race: the index was read before the change log replay",
    ),
    (
        16,
        "boss",
        "dev",
        "task",
        True,
        "Today: reviewing the dashboard pull request and its screenshots",
    ),
    (
        17,
        "boss",
        "ops",
        "environment",
        False,
        "Grafana dashboards live in the observability repo under dashboards/memory",
    ),
    (
        18,
        "boss",
        "dev",
        "task",
        True,
        "Pairing with Sam on the Postgres store contract tests this afternoon",
    ),
    (19, "boss", "research", "task", True, "Benchmark run for 100k memories is queued for tonight"),
    (3, "alice", "assistant", "preference", False, "Alice is vegetarian and allergic to peanuts"),
    (9, "alice", "assistant", "personal", False, "Alice's daughter Mia starts school in September"),
    (
        17,
        "alice",
        "assistant",
        "travel",
        True,
        "Alice flies to Lisbon on April 14 with TAP, flight TP1351",
    ),
    (
        19,
        "alice",
        "assistant",
        "preference",
        False,
        "Alice wants meeting reminders 30 minutes ahead, by text message",
    ),
]
FIRST_DAY = datetime(2026, 3, 8, 9, 0, tzinfo=UTC)
NOW = FIRST_DAY + timedelta(days=20, hours=5)


@dataclass
class Seeded:
    ids: dict[str, str]  # a short name -> memory id
    alice: list[str]
    boss: list[str]


def seed(memory: Memory, clock: Any) -> Seeded:
    """A small, realistic memory: two users, four agents, three weeks, edits and a delete."""
    ids: dict[str, str] = {}
    alice: list[str] = []
    boss: list[str] = []
    for day, user, agent, category, short, text in SEED:
        clock.now = FIRST_DAY + timedelta(days=day, minutes=len(ids))
        run = (FIRST_DAY + timedelta(days=day)).date().isoformat() if short else None
        [event] = memory.add(
            text, user_id=user, agent_id=agent, run_id=run, category=category, actor=agent
        )
        assert event.id
        (alice if user == "alice" else boss).append(event.id)
        ids[text.split()[0].lower() + str(day)] = event.id
    clock.now = FIRST_DAY + timedelta(days=12, hours=2)
    [chunk] = memory.add(
        "## Decisions\n- Use SQLite WAL mode by default; PostgreSQL when several hosts share memory",
        user_id="boss",
        agent_id="dev",
        origin=Origin.CHUNK,
        source=Source(path="MEMORY.md", start_line=3, end_line=4),
        actor="indexer",
    )
    assert chunk.id
    ids["chunk"] = chunk.id
    boss.append(chunk.id)
    clock.now = FIRST_DAY + timedelta(days=14, hours=3)
    memory.update(
        ids["deploys0"],
        "Deploys go through ArgoCD on cluster prod-eu-2; nobody runs kubectl apply by hand",
        actor="ops",
        reason="cluster moved",
    )
    clock.now = FIRST_DAY + timedelta(days=16)
    memory.delete(ids["the1"], actor="ops", reason="staging was decommissioned")
    memory.store.kv_set(
        "pipelines:runs",
        [
            {
                "name": "digest",
                "run_id": "digest-20260328T134500-a1b2c3",
                "agent": None,
                "started_at": "2026-03-28T13:45:00+00:00",
                "finished_at": "2026-03-28T13:45:04+00:00",
                "status": "ok",
                "counts": {"files": 4, "added": 7, "updated": 1},
                "errors": [],
                "notes": ["memory/2026-03-27.md unchanged since the last run"],
            },
            {
                "name": "dream",
                "run_id": "dream-20260328T020000-d4e5f6",
                "agent": "dev",
                "trigger": "schedule",
                "started_at": "2026-03-28T02:00:00+00:00",
                "finished_at": "2026-03-28T02:00:41+00:00",
                "status": "error",
                "counts": {"promoted": 3},
                "error": "LLM endpoint timed out after 60s (will retry next run)",
            },
            {
                "name": "sync",
                "run_id": "sync-20260328T010000-0a1b2c",
                "agent": None,
                "started_at": "2026-03-28T01:00:00+00:00",
                "finished_at": "2026-03-28T01:00:02+00:00",
                "status": "ok",
                "counts": {"files": 2, "unchanged": 2},
                "error": None,
            },
        ],
    )
    clock.now = NOW
    return Seeded(ids=ids, alice=alice, boss=boss)


KEYS = [
    ApiKey(name="root", key=SecretStr("root-key-0123456789"), admin=True),
    ApiKey(name="alice-app", key=SecretStr("alice-key-0123456789"), users=["alice"]),
]


@pytest.fixture
def seeded(memory: Memory, clock: Any) -> Seeded:
    return seed(memory, clock)


def _get(server: Any, path: str, **kw: Any) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", follow_redirects=False, timeout=30, **kw)


def form_token(client: httpx.Client, path: str) -> str:
    """Open a dashboard page as a browser would (``client`` keeps its cookies) and
    return the token its forms carry."""
    page = client.get(path)
    match = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert match, (path, page.status_code, page.text[:300])
    return match.group(1)


def cookie_token(client: httpx.Client, path: str) -> str:
    """Open a dashboard page that offers no form (a read-only chunk's) and return the
    token a form would carry: its ``memoryd_csrf`` cookie (what a crafted post sends)."""
    page = client.get(path)
    assert page.status_code == 200 and 'name="csrf"' not in page.text, (path, page.text[:300])
    token = client.cookies.get("memoryd_csrf")
    assert token, path
    return str(token)


# -- pages for an open (no keys) server ------------------------------------------------------------
def test_every_page_renders_with_seeded_data(memory: Memory, seeded: Seeded, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        overview = _get(server, "/ui")
        browse = _get(server, "/ui/memories?user=boss&agent=ops")
        page = _get(server, f"/ui/memory/{seeded.ids['deploys0']}")
        pipelines = _get(server, "/ui/pipelines")
        audit = _get(server, "/ui/audit")
    assert overview.status_code == 200
    assert 'data-testid="stat-active">26<' in overview.text  # 27 written, 1 deleted
    assert "Content-Security-Policy" in overview.headers
    assert browse.status_code == 200 and "PagerDuty" in browse.text and "ArgoCD" not in browse.text
    assert page.status_code == 200
    assert "prod-eu-2" in page.text and "cluster moved" in page.text
    assert "<del>prod-eu-1;</del>" in page.text and "<ins>prod-eu-2;</ins>" in page.text
    assert pipelines.status_code == 200 and "LLM endpoint timed out" in pipelines.text
    assert "1 note" in pipelines.text and "unchanged since the last run" in pipelines.text
    assert audit.status_code == 200


def test_search_page_shows_hits_with_score_parts(
    memory: Memory, seeded: Seeded, live_server
) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        r = _get(server, "/ui/search", params={"q": "how do we deploy to production?"})
        scoped = _get(server, "/ui/search", params={"q": "peanuts", "user": "boss"})
        chunk = _get(server, "/ui/search", params={"q": "SQLite WAL default", "origin": "chunk"})
        everything = _get(server, "/ui/search", params={"q": "deploy", "min": "0", "top_k": "50"})
        relevant = _get(server, "/ui/search", params={"q": "deploy", "min": "0.3", "top_k": "50"})
    assert r.status_code == 200
    first = r.text.index('data-testid="hit"')
    assert "ArgoCD" in r.text[first : first + 3000]
    assert 'data-part="vector"' in r.text and 'data-part="keyword"' in r.text
    assert "allergic to peanuts" not in scoped.text
    assert "MEMORY.md#L3-L4" in chunk.text and chunk.text.count('data-testid="hit"') == 1
    # with no minimum, recency alone ranks weak matches too; a minimum keeps the relevant ones
    kept = _relevances(relevant.text)
    assert 1 <= len(kept) < len(_relevances(everything.text)) and "ArgoCD" in relevant.text
    assert min(kept) >= 0.3 and min(_relevances(everything.text)) < 0.3


def _relevances(html: str) -> list[float]:
    """The relevance part of every hit on a search page."""
    marker = 'data-part="relevance"'
    values = []
    for chunk in html.split(marker)[1:]:
        value = chunk.split('class="part-value">', 1)[1].split("<", 1)[0]
        values.append(float(value))
    return values


def test_browse_pages_and_filters(memory: Memory, seeded: Seeded, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        page1 = _get(server, "/ui/memories")
        page2 = _get(server, "/ui/memories?page=2")
        short = _get(server, "/ui/memories?tier=short_term")
        deleted = _get(server, "/ui/memories?state=deleted")
        window = _get(server, "/ui/memories?since=2026-03-08&until=2026-03-09")
    assert page1.text.count('data-testid="row"') == 25 and "page 1 of 2" in page1.text
    assert page2.text.count('data-testid="row"') == 1
    assert short.text.count('data-testid="row"') == 7
    assert deleted.text.count('data-testid="row"') == 1 and "staging database" in deleted.text
    assert window.text.count('data-testid="row"') == 2  # day 0: two memories (day 1 deleted)


def test_bad_filters_get_a_named_error_with_a_hint(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        bad_date = _get(server, "/ui/memories?since=yesterday")
        bad_tier = _get(server, "/ui/memories?tier=forever")
        empty_range = _get(server, "/ui/memories?since=2026-03-10&until=2026-03-01")
        missing = _get(server, "/ui/memory/no-such-id")
    assert bad_date.status_code == 422 and "use the date picker or YYYY-MM-DD" in bad_date.text
    assert bad_tier.status_code == 422 and "long_term" in bad_tier.text
    assert empty_range.status_code == 422 and "earlier date" in empty_range.text
    assert missing.status_code == 404 and "no memory with id no-such-id" in missing.text


def test_edit_delete_restore_over_http(memory: Memory, seeded: Seeded, live_server) -> None:  # type: ignore[no-untyped-def]
    mid = seeded.ids["boss0"]
    with (
        live_server(create_app(memory=memory)) as server,
        httpx.Client(base_url=server.url) as c,
    ):
        url = f"/ui/memory/{mid}"
        csrf = form_token(c, url)
        empty = c.post(f"{url}/edit", data={"text": "   ", "category": "preference", "csrf": csrf})
        assert memory.get(mid).text.startswith("Boss prefers answers")
        stale = c.post(f"{url}/edit", data={"text": "Boss prefers prose", "csrf": "stale"})
        missing = c.post(f"{url}/delete")
        assert stale.status_code == 403 and missing.status_code == 403
        assert "reload the page" in stale.text and memory.get(mid).state == State.ACTIVE
        edited = c.post(
            f"{url}/edit", data={"text": "Boss prefers prose", "category": "style", "csrf": csrf}
        )
        assert memory.get(mid).text == "Boss prefers prose"
        assert memory.get(mid).category == "style"
        deleted = c.post(f"{url}/delete", data={"csrf": csrf})
        assert memory.store.get(mid).state == State.DELETED  # type: ignore[union-attr]
        restored = c.post(f"{url}/restore", data={"csrf": csrf})
    assert empty.status_code == 422 and "text is empty" in empty.text
    assert "   </textarea>" in empty.text  # the draft is kept next to the error
    assert edited.status_code == 303 and edited.headers["location"].endswith("?notice=updated")
    assert deleted.status_code == 303 and restored.status_code == 303
    assert memory.get(mid).state == State.ACTIVE
    assert [e.event.value for e in memory.history(mid)] == ["ADD", "UPDATE", "DELETE", "RESTORE"]
    assert {e.actor for e in memory.history(mid)[1:]} == {"anonymous"}


def test_a_chunk_shows_its_source_lines_from_the_workspace(
    memory: Memory, seeded: Seeded, live_server, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    chunk = seeded.ids["chunk"]
    with live_server(create_app(memory=memory)) as server:
        missing = _get(server, f"/ui/memory/{chunk}")
        workspace = tmp_path / "ws-dev"
        workspace.mkdir()
        (workspace / "MEMORY.md").write_text(
            "# Memory\n\n## Decisions\n- Use SQLite WAL mode by default\n- Later line\n"
        )
        memory.settings.workspace.agents = {"dev": workspace}
        shown = _get(server, f"/ui/memory/{chunk}")
    assert "MEMORY.md no longer exists in the workspace of dev" in missing.text
    lines = shown.text.split('data-testid="source-lines"', 1)[1].split("</pre>", 1)[0]
    assert '<span class="ln">3</span>## Decisions' in lines
    assert '<span class="ln">4</span>- Use SQLite WAL mode by default' in lines
    assert "Later line" not in lines and "# Memory" not in lines


def test_pipelines_page_shows_the_latest_dream_reports(
    memory: Memory, seeded: Seeded, live_server, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    workspace = tmp_path / "ws-dev"
    workspace.mkdir()
    (workspace / "DREAMS.md").write_text(
        "# Dreams\n\n"
        "## Dream · 2026-03-27 02:00 UTC · dream-1\n\n- Step 1 · old report\n\n"
        "## Dream · 2026-03-28 02:00 UTC · dream-2\n\n"
        "- Step 1 · diary 2026-03-27 (12.4 KB) -> long-term: ADD 10 · UPDATE 2\n"
        "- Removed from short-term: 38 (kept in history)\n"
    )
    memory.settings.workspace.agents = {"dev": workspace}
    with live_server(create_app(memory=memory)) as server:
        page = _get(server, "/ui/pipelines").text
        memory.settings.auth.keys = list(KEYS)
        scoped = _get(server, "/ui/pipelines", cookies={"memoryd_key": "alice-key-0123456789"})
    newest, older = page.index("dream-2"), page.index("dream-1")
    assert newest < older and "ADD 10 · UPDATE 2" in page and "kept in history" in page
    assert 'data-testid="dreams-empty"' in scoped.text  # dev's workspace is not alice's


def test_delete_confirmation_works_without_javascript(
    memory: Memory, seeded: Seeded, live_server
) -> None:  # type: ignore[no-untyped-def]
    mid = seeded.ids["boss0"]
    with live_server(create_app(memory=memory)) as server:
        plain = _get(server, f"/ui/memory/{mid}")
        confirm = _get(server, f"/ui/memory/{mid}?confirm=delete")
        login = _get(server, "/ui/login")  # no keys configured: nothing to sign in to
    assert '<dialog id="confirm-delete" class="dialog" >' in plain.text  # closed
    assert '<dialog id="confirm-delete" class="dialog" open>' in confirm.text
    assert f'action="/ui/memory/{mid}/delete"' in confirm.text
    assert login.status_code == 303 and login.headers["location"] == "/ui"


def test_cross_site_form_posts_are_refused(memory: Memory, seeded: Seeded, live_server) -> None:  # type: ignore[no-untyped-def]
    mid = seeded.ids["boss0"]
    with live_server(create_app(memory=memory)) as server:
        r = httpx.post(
            f"{server.url}/ui/memory/{mid}/delete", headers={"Origin": "http://evil.example"}
        )
    assert r.status_code == 403 and "another site" in r.text
    assert memory.get(mid).state == State.ACTIVE


def test_static_files_are_served_and_confined(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        htmx = _get(server, "/ui/static/vendor/htmx.min.js")
        chart = _get(server, "/ui/static/vendor/chart.umd.min.js")
        css = _get(server, "/ui/static/ui.css")
        escape = _get(server, "/ui/static/..%2Fui.py")
        missing = _get(server, "/ui/static/nope.js")
    assert htmx.status_code == 200 and "htmx 2.0.11" in htmx.text[:200]
    assert chart.status_code == 200 and "Chart.js v4.6.1" in chart.text[:200]
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert escape.status_code == 404 and missing.status_code == 404


def test_empty_store_shows_empty_states(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        overview = _get(server, "/ui")
        pipelines = _get(server, "/ui/pipelines")
        search = _get(server, "/ui/search?q=anything")
    assert "No memories yet." in overview.text
    assert 'data-testid="pipelines-empty"' in pipelines.text and "never run" in pipelines.text
    assert "No memory matches" in search.text


def test_audit_lists_api_requests_with_latency(memory: Memory, seeded: Seeded, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        empty = _get(server, "/ui/audit")
        found = httpx.post(
            f"{server.url}/memory/search", json={"query": "deploys", "user_id": "boss"}
        )
        assert found.status_code == 200
        _get(server, "/ui/memories")
        audit = _get(server, "/ui/audit")
        with_ui = _get(server, "/ui/audit?ui=1")
    assert 'data-testid="audit-empty"' in empty.text
    rows = audit.text.split('data-testid="audit"', 1)[1]
    assert "POST /memory/search" in rows and " ms</td>" in rows and "/ui/memories" not in rows
    assert "GET /ui/memories" in with_ui.text


# -- auth and scope ---------------------------------------------------------------------------------
@pytest.fixture
def keyed(memory: Memory) -> Memory:
    memory.settings.auth.keys = list(KEYS)
    return memory


def test_pages_ask_for_a_key_when_auth_is_on(keyed: Memory, seeded: Seeded, live_server) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=keyed)) as server:
        anonymous = _get(server, "/ui/memories?user=alice")
        form = _get(server, "/ui/login")
        with httpx.Client(base_url=server.url) as browser:
            csrf = form_token(browser, "/ui/login")
            wrong = browser.post("/ui/login", data={"key": "guess", "next": "/ui", "csrf": csrf})
            ok = browser.post(
                "/ui/login",
                data={"key": "root-key-0123456789", "next": "https://evil.example/", "csrf": csrf},
            )
        with httpx.Client(base_url=server.url, cookies={"memoryd_key": "root-key-0123456789"}) as c:
            admin_page = c.get("/ui/memories?user=alice")
        bad_cookie = _get(server, "/ui", cookies={"memoryd_key": "stale"})
    assert anonymous.status_code == 303
    assert anonymous.headers["location"] == "/ui/login?next=%2Fui%2Fmemories%3Fuser%3Dalice"
    assert form.status_code == 200 and 'name="key"' in form.text
    assert wrong.status_code == 401 and "the API key is not valid" in wrong.text
    assert ok.status_code == 303 and ok.headers["location"] == "/ui"  # never off-site
    cookie = ok.headers["set-cookie"]
    assert "memoryd_key=root-key-0123456789" in cookie
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert admin_page.status_code == 200 and admin_page.text.count('data-testid="row"') == 4
    assert bad_cookie.status_code == 303 and "memoryd_key=" in bad_cookie.headers["set-cookie"]


def test_a_scoped_key_sees_only_its_users(keyed: Memory, seeded: Seeded, live_server) -> None:  # type: ignore[no-untyped-def]
    boss_id = seeded.ids["deploys0"]
    alice_key = {"memoryd_key": "alice-key-0123456789"}
    with (
        live_server(create_app(memory=keyed)) as server,
        httpx.Client(base_url=server.url, cookies=alice_key) as c,
    ):
        overview = c.get("/ui")
        browse = c.get("/ui/memories")
        other = c.get(f"/ui/memory/{boss_id}")
        own = c.get(f"/ui/memory/{seeded.alice[0]}")
        search = c.get("/ui/search", params={"q": "deploys ArgoCD cluster", "min": "0"})
        ask_boss = c.get("/ui/memories?user=boss")
        csrf = form_token(c, f"/ui/memory/{seeded.alice[0]}")
        edit_boss = c.post(f"/ui/memory/{boss_id}/edit", data={"text": "hijacked", "csrf": csrf})
        delete_boss = c.post(f"/ui/memory/{boss_id}/delete", data={"csrf": csrf})
        audit = c.get("/ui/audit")
        runs = c.get("/ui/pipelines")
    assert 'data-testid="stat-active">4<' in overview.text and "boss" not in overview.text
    assert browse.text.count('data-testid="row"') == 4 and "ArgoCD" not in browse.text
    assert other.status_code == 404 and "ArgoCD" not in other.text
    assert own.status_code == 200 and "peanuts" in own.text
    assert "kubectl" not in search.text and boss_id not in search.text
    assert 'data-testid="hit"' in search.text  # alice's own memories still answer
    assert ask_boss.status_code == 403 and "may not read user &#39;boss&#39;" in ask_boss.text
    assert edit_boss.status_code == 404 and delete_boss.status_code == 404
    assert keyed.get(boss_id).text.startswith("Deploys go through ArgoCD")
    assert audit.status_code == 403 and "admin" in audit.text
    # runs of boss's workspace agent are not alice's; notes and errors are for admins only
    assert runs.status_code == 200 and "LLM endpoint timed out" not in runs.text
    assert (
        "unchanged since the last run" not in runs.text and "shown to admin keys only" in runs.text
    )
    assert runs.text.count("<td><strong>") == 2  # digest and sync (no agent), not dev's dream


# -- helpers ------------------------------------------------------------------------------------------
def test_spans_narrow_a_key_to_its_users_and_agents(memory: Memory) -> None:
    def scope_pairs(principal: Principal, *page: str | None) -> list[tuple[str | None, str | None]]:
        return [(s.user_id, s.agent_id) for s in spans(memory, principal, *page)]

    admin = Principal(name="root", admin=True)
    two = Principal(name="k", users=["a", "b"], agents=["x"])
    assert scope_pairs(admin, None, None) == [(None, None)]
    assert scope_pairs(admin, "z", None) == [("z", None)]
    assert scope_pairs(two, None, None) == [("a", "x"), ("b", "x")]
    assert scope_pairs(two, "b", None) == [("b", "x")]
    with pytest.raises(PermissionDeniedError):
        scope_pairs(two, "c", None)
    with pytest.raises(PermissionDeniedError):
        scope_pairs(two, "a", "y")


def test_query_parsing_rejects_bad_numbers() -> None:
    q = Query.parse([("q", " deploy "), ("top_k", "20"), ("page", "3"), ("state", "")])
    assert (q.q, q.top_k, q.page, q.state) == ("deploy", 20, 3, "active")
    assert q.link(page=4) == "?q=deploy&top_k=20&page=4"
    bad_values = [("top_k", "0"), ("page", "x"), ("mode", "fuzzy"), ("origin", "web"), ("min", "2")]
    for bad in ([pair] for pair in bad_values):
        with pytest.raises(InvalidInputError):
            Query.parse(bad)


def test_growth_buckets_by_day_week_and_month() -> None:
    day = _bucket_edges(date(2026, 3, 1), date(2026, 3, 3), "day")
    assert [d.day for d in day] == [1, 2, 3, 4]
    week = _bucket_edges(date(2026, 3, 4), date(2026, 3, 20), "week")
    assert week[0].date() == date(2026, 3, 2) and week[-1].date() > date(2026, 3, 20)
    assert all((b - a).days == 7 for a, b in pairwise(week))
    month = _bucket_edges(date(2025, 11, 15), date(2026, 2, 1), "month")
    assert [(d.year, d.month) for d in month] == [
        (2025, 11),
        (2025, 12),
        (2026, 1),
        (2026, 2),
        (2026, 3),
    ]


def test_growth_counts_match_the_store(memory: Memory, seeded: Seeded) -> None:
    from memoryd.api.ui import growth

    g = growth(memory, memory.scope(LOCAL).spans())
    assert g["unit"] == "day" and len(g["labels"]) == 21
    assert sum(g["active"]) == memory.store.count(Filters())
    assert sum(g["removed"]) == 1 and g["total"][-1] == memory.store.count(Filters())


def test_word_diff_marks_what_changed() -> None:
    assert word_diff("on prod-eu-1 today", "on prod-eu-2 today") == [
        ("same", "on"),
        ("del", "prod-eu-1"),
        ("ins", "prod-eu-2"),
        ("same", "today"),
    ]
