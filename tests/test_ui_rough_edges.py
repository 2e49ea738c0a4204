"""Dashboard rough edges a new user hit (issue 33), over real HTTP: the audit page is
paged, read-only chunks offer no edit or delete, Markdown is rendered safely (or shown
as clean plain text in lists), the Pipelines page shows every registered pipeline with
its schedule and next run, and only admin keys see the Audit link. The audit page's
fit at 1280 px is checked in Chromium (``test_ui_browser.py``)."""

from __future__ import annotations

import re
from typing import Any

import httpx

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.pipelines import registry
from tests.test_ui_pages import KEYS, Seeded, _get, seeded  # noqa: F401 (a fixture)


def test_audit_is_paged(memory: Memory, live_server: Any) -> None:
    with live_server(create_app(memory=memory)) as server:
        for n in range(62):
            assert (
                httpx.get(f"{server.url}/memory/list", params={"limit": n + 1}).status_code == 200
            )
        first = _get(server, "/ui/audit")
        second = _get(server, "/ui/audit?page=2")
        beyond = _get(server, "/ui/audit?page=99")
        junk = _get(server, "/ui/audit?page=abc")
    rows = first.text.split('data-testid="audit"', 1)[1].count("<tr>") - 1  # less the head
    assert rows == 50 and "Page 1 / 2 · 62 requests" in first.text
    assert second.text.split('data-testid="audit"', 1)[1].count("<tr>") - 1 == 12
    assert 'href="/ui/audit?page=1"' in second.text and "Page 2 / 2" in beyond.text
    assert junk.status_code == 200 and "Page 1 / 2" in junk.text


def test_a_read_only_chunk_offers_no_edit_or_delete(
    memory: Memory,
    seeded: Seeded,  # noqa: F811
    live_server: Any,
) -> None:
    chunk, own = seeded.ids["chunk"], seeded.ids["boss0"]
    with live_server(create_app(memory=memory)) as server:
        chunk_page = _get(server, f"/ui/memory/{chunk}")
        own_page = _get(server, f"/ui/memory/{own}")
    assert chunk_page.status_code == 200
    assert f'action="/ui/memory/{chunk}/edit"' not in chunk_page.text
    assert 'data-testid="delete"' not in chunk_page.text
    assert 'data-testid="read-only"' in chunk_page.text and "MEMORY.md#L3-L4" in chunk_page.text
    assert f'action="/ui/memory/{own}/edit"' in own_page.text
    assert 'data-testid="delete"' in own_page.text


def test_markdown_is_rendered_safely_and_lists_show_plain_text(
    memory: Memory,
    seeded: Seeded,  # noqa: F811
    live_server: Any,
) -> None:
    [event] = memory.add(
        "## Standup\n- **Ship** the [docs](javascript:alert(1)) <img src=x onerror=alert(1)>",
        user_id="boss",
        agent_id="dev",
        infer=False,
    )
    with live_server(create_app(memory=memory)) as server:
        page = _get(server, f"/ui/memory/{event.id}")
        overview = _get(server, "/ui")
        browse = _get(server, "/ui/memories")
    text = page.text.split('data-testid="memory-text"', 1)[1].split("</div>", 1)[0]
    assert "<h2>Standup</h2>" in text and "<strong>Ship</strong>" in text
    assert "<img" not in text and "&lt;img src=x" in text  # raw HTML is shown, never run
    assert "javascript:" not in text.split("href=", 1)[-1][:30]
    latest = overview.text.split('class="latest"', 1)[1].split("</ul>", 1)[0]
    assert "Standup · Ship the" in latest and "## " not in latest and "**" not in latest
    assert "Decisions · Use SQLite WAL mode" in browse.text and "## Decisions" not in browse.text


def test_pipelines_page_lists_every_pipeline_with_schedule_and_next_run(
    memory: Memory,
    seeded: Seeded,  # noqa: F811
    live_server: Any,
) -> None:
    names = [spec.name for spec in registry.all_specs()]
    with live_server(create_app(memory=memory)) as server:
        memory.settings.pipelines.scheduler = True  # after start-up: computed, not started
        page = _get(server, "/ui/pipelines")
    cards = re.findall(r'data-testid="pipeline" data-name="([^"]+)"', page.text)
    assert cards == names and len(names) > 5
    assert page.text.count('data-testid="schedule"') == len(names)
    schedules = re.findall(
        r'data-testid="schedule"><span class="k">schedule</span> (.*?)</div>', page.text
    )
    assert all("<code>" in s for s in schedules)
    nexts = re.findall(r'data-testid="next-run"><span class="k">next</span> (.*?)</div>', page.text)
    assert len(nexts) == len(names) and any(re.match(r"20\d\d-\d\d-\d\d", n) for n in nexts)


def test_only_admin_keys_see_the_audit_link(
    memory: Memory,
    seeded: Seeded,  # noqa: F811
    live_server: Any,
) -> None:
    memory.settings.auth.keys = list(KEYS)
    link = 'href="/ui/audit"'
    with live_server(create_app(memory=memory)) as server:
        alice = _get(server, "/ui", cookies={"memoryd_key": "alice-key-0123456789"})
        root = _get(server, "/ui", cookies={"memoryd_key": "root-key-0123456789"})
    assert alice.status_code == 200 and link not in alice.text
    assert root.status_code == 200 and link in root.text
