"""The /ui dashboard in a real browser: Playwright driving Debian's Chromium.

Each test serves a freshly seeded memory with uvicorn, clicks through the
dashboard like a person, and checks the result through the HTTP API and the
store. Screenshots of every page go to ``test-artifacts/``; set
``MEMORYD_UPDATE_SCREENSHOTS=1`` to also refresh the ones in ``docs/``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.models import State
from tests.test_ui_pages import KEYS, Seeded, seed

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"
DOCS = ROOT / "docs"
DOC_SHOTS = {"ui-overview", "ui-search", "ui-memory", "ui-browse"}  # shown in the README
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not CHROMIUM.exists() and not os.environ.get("CI"):
    pytest.skip(
        f"{CHROMIUM} is not installed (apt-get install -y chromium); .ci/run installs it in CI",
        allow_module_level=True,
    )

sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[dev]'")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        yield b
        b.close()


class Tab:
    """One browser page that records console errors (CSP violations show up there)."""

    def __init__(self, browser: Any, base: str) -> None:
        self.context = browser.new_context(viewport={"width": 1360, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(30_000)  # the 2-core CI box may be busy
        self.base = base
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def goto(self, path: str) -> Any:
        return self.page.goto(self.base + path)

    def shot(self, name: str, *, full: bool = True) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(target), full_page=full)
        if os.environ.get("MEMORYD_UPDATE_SCREENSHOTS") == "1" and name in DOC_SHOTS:
            DOCS.mkdir(exist_ok=True)
            shutil.copy(target, DOCS / f"{name}.png")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def seeded(memory: Memory, clock: Any) -> Seeded:
    return seed(memory, clock)


@pytest.fixture
def tab(browser: Any, memory: Memory, seeded: Seeded, live_server: Any) -> Iterator[Tab]:
    with live_server(create_app(memory=memory)) as server:
        t = Tab(browser, server.url)
        yield t
        t.close()
    assert not t.errors, f"browser console errors: {t.errors}"


def test_search_shows_a_hit_with_its_score_parts(tab: Tab) -> None:
    page = tab.page
    tab.goto("/ui/search")
    page.fill("#q", "how do we deploy to production?")  # htmx searches as you type
    first = page.locator('[data-testid="hit"]').first
    first.wait_for()
    assert "ArgoCD" in first.locator(".hit-text").inner_text()
    parts = {
        p.get_attribute("data-part"): float(p.locator(".part-value").inner_text())
        for p in first.locator(".part").all()
    }
    assert {"vector", "keyword"} <= set(parts) and parts["vector"] > 0.3
    score = float(first.locator('[data-testid="score"]').inner_text())
    assert 0 < score <= 1
    shared = parse_qs(urlsplit(page.url).query)  # the search is a link that can be shared
    assert shared["q"] == ["how do we deploy to production?"] and "user" not in shared
    page.select_option("select[name=user]", "alice")
    # locator assertions poll without evaluating strings (the page's CSP has no unsafe-eval)
    sync_api.expect(page.locator("body")).not_to_contain_text("ArgoCD")
    page.select_option("select[name=user]", "")
    page.fill("#q", "SQLite WAL by default")
    page.select_option("select[name=origin]", "chunk")
    page.wait_for_selector('[data-testid="citation"]')
    assert page.locator('[data-testid="citation"]').first.inner_text().endswith("MEMORY.md#L3-L4")
    page.select_option("select[name=origin]", "")
    page.fill("#q", "how do we deploy?")
    page.locator(".count", has_text="how do we deploy?").wait_for()
    tab.shot("ui-search")


def test_memory_history_edit_delete_restore(tab: Tab, memory: Memory, seeded: Seeded) -> None:
    page = tab.page
    mid = seeded.ids["deploys0"]
    tab.goto("/ui/memories?user=boss&agent=dev")
    page.get_by_role("link", name=re.compile("Deploys go through ArgoCD")).click()
    page.wait_for_url(f"**/ui/memory/{mid}")
    events = page.locator('[data-testid="event"]')
    assert [e.get_attribute("data-event") for e in events.all()] == ["UPDATE", "ADD"]
    diff = page.locator('[data-testid="diff"]')
    assert diff.locator("del").inner_text() == "prod-eu-1;"
    assert diff.locator("ins").inner_text() == "prod-eu-2;"
    assert "cluster moved" in events.first.inner_text() and "ops" in events.first.inner_text()
    tab.shot("ui-memory")

    page.fill("textarea[name=text]", "Deploys go through ArgoCD on cluster prod-us-1")
    page.fill("input[name=category]", "deploy")
    page.get_by_test_id("save").click()
    page.get_by_test_id("notice").wait_for()
    assert page.get_by_test_id("memory-text").inner_text().endswith("prod-us-1")
    assert events.first.get_attribute("data-event") == "UPDATE"
    assert "category" in events.first.inner_text()

    page.get_by_test_id("delete").click()
    dialog = page.locator("dialog#confirm-delete")
    assert dialog.is_visible() and page.evaluate(
        "document.querySelector('dialog').matches(':modal')"
    )
    tab.shot("ui-delete-confirm", full=False)
    page.get_by_test_id("confirm-delete").click()
    page.get_by_test_id("restore").wait_for()
    assert "Deleted" in page.get_by_test_id("notice").inner_text()

    with httpx.Client(base_url=tab.base) as api:
        health = api.get("/health").json()
        assert health["counts"]["deleted"] == 2  # the seeded delete and this one
        record = memory.store.get(mid)
        assert record is not None and record.state == State.DELETED
        assert record.text.endswith("prod-us-1") and record.category == "deploy"
        assert api.get(f"/memory/{mid}").status_code == 404  # deleted: gone from the API
        found = api.post("/memory/search", json={"query": "ArgoCD deploys", "user_id": "boss"})
        assert mid not in {h["id"] for h in found.json()["results"]}

        page.get_by_test_id("restore").click()
        page.wait_for_selector('[data-testid="save"]')
        assert api.get("/health").json()["counts"]["deleted"] == 1
        back = api.get(f"/memory/{mid}").json()["result"]
        assert back["memory"].endswith("prod-us-1") and back["category"] == "deploy"
        events = api.get(f"/memory/history/{mid}").json()["results"]
        assert [e["event"] for e in events] == ["ADD", "UPDATE", "UPDATE", "DELETE", "RESTORE"]
    history = [e.event.value for e in memory.history(mid)]
    assert history == ["ADD", "UPDATE", "UPDATE", "DELETE", "RESTORE"]
    assert memory.history(mid)[2].actor == "anonymous"


def test_overview_draws_charts(tab: Tab, memory: Memory) -> None:
    page = tab.page
    tab.goto("/ui")
    page.wait_for_selector('canvas[data-chart="chart-growth"][data-drawn="1"]')
    drawn = page.locator("canvas[data-drawn='1']").count()
    assert drawn == 5
    assert page.get_by_test_id("stat-active").inner_text() == str(memory.store.count(_active()))
    assert "alice" in page.get_by_test_id("by-user").inner_text()
    tab.shot("ui-overview")


def test_pipelines_and_audit_pages(tab: Tab, memory: Memory, tmp_path: Path) -> None:
    page = tab.page
    workspace = tmp_path / "ws-dev"
    workspace.mkdir()
    (workspace / "DREAMS.md").write_text(
        "# Dreams\n\n## Dream · 2026-03-28 02:00 UTC · dream-20260328T020000-3fa2c1\n\n"
        "- Step 1 · diary 2026-03-27 (12.4 KB) -> long-term: ADD 10 · UPDATE 2 · NONE 2\n"
        "- Step 2 · 38 short-term memories older than 7 days -> long-term: ADD 5 · UPDATE 3\n"
        "- Removed from short-term: 38 (kept in history)\n"
        "- Long-term memory: 120 -> 136\n"
    )
    memory.settings.workspace.agents = {"dev": workspace}
    tab.goto("/ui/pipelines")
    assert "Long-term memory: 120 -> 136" in page.get_by_test_id("dream").inner_text()
    dream = page.locator('[data-testid="pipeline"][data-name="dream"]')
    assert "error" in dream.inner_text()
    decay = page.locator('[data-testid="pipeline"][data-name="decay"]')
    assert "never run" in decay.inner_text()
    assert "LLM endpoint timed out" in page.get_by_test_id("runs").inner_text()
    tab.shot("ui-pipelines")
    tab.goto("/ui/audit")
    page.locator("h1", has_text="Audit").wait_for()
    tab.shot("ui-audit")
    tab.goto("/ui/memories")
    assert page.locator('[data-testid="row"]').count() == 25
    page.get_by_role("link", name="Older →").click()
    sync_api.expect(page.locator('[data-testid="row"]')).to_have_count(1)
    tab.goto("/ui/memories")
    tab.shot("ui-browse")


def test_the_audit_page_fits_1280_px_and_is_paged(tab: Tab) -> None:
    """Long request paths and every column at 1280 px: the page scrolls down, never
    sideways; more requests than a page holds are paged."""
    page = tab.page
    long_id = "x" * 180  # one unbreakable word
    with httpx.Client(base_url=tab.base) as api:
        for n in range(55):
            api.get(f"/memory/history/{long_id}{n}", params={"user_id": "boss"})
    page.set_viewport_size({"width": 1280, "height": 900})
    tab.goto("/ui/audit")
    page.locator("h1", has_text="Audit").wait_for()
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= 1280, f"the audit page is {wide} px wide at 1280 px"
    assert page.locator('[data-testid="audit"] tbody tr').count() == 50
    page.get_by_role("link", name="Older →").click()
    page.wait_for_url("**/ui/audit?page=2")
    assert page.locator('[data-testid="audit"] tbody tr').count() == 5
    tab.shot("ui-audit-1280", full=False)
    tab.errors = [e for e in tab.errors if "404" not in e]  # the histories are not found


def test_a_scoped_key_cannot_see_another_users_memory(
    browser: Any, memory: Memory, seeded: Seeded, live_server: Any
) -> None:
    memory.settings.auth.keys = list(KEYS)
    boss_id = seeded.ids["deploys0"]
    with live_server(create_app(memory=memory)) as server:
        tab = Tab(browser, server.url)
        page = tab.page
        tab.goto("/ui/memories")
        page.wait_for_url("**/ui/login?next=*")
        tab.shot("ui-login", full=False)
        page.fill("input[name=key]", "wrong-key")
        page.click("button[type=submit]")
        assert "not valid" in page.get_by_test_id("error").inner_text()
        assert tab.errors == [_status_error(401)]  # the refused key, nothing else
        tab.errors.clear()
        page.fill("input[name=key]", "alice-key-0123456789")
        page.click("button[type=submit]")
        page.wait_for_url("**/ui/memories")
        assert page.get_by_test_id("principal").inner_text() == "alice-app"
        rows = page.locator('[data-testid="row"]')
        assert rows.count() == 4
        assert all("alice" in r.inner_text().lower() for r in rows.all())

        response = tab.goto(f"/ui/memory/{boss_id}")
        assert response.status == 404
        assert "ArgoCD" not in page.content()
        assert tab.errors == [_status_error(404)]
        tab.errors.clear()

        tab.goto("/ui/search?q=ArgoCD+deploys+kubectl")
        assert boss_id not in page.content()
        assert "kubectl apply" not in page.inner_text("#results")

        cookie = {"memoryd_key": "alice-key-0123456789"}
        with httpx.Client(base_url=server.url, cookies=cookie) as api:
            assert api.get("/health").status_code == 200
            assert api.get(f"/ui/memory/{boss_id}").status_code == 404
            assert api.get(f"/ui/memory/{seeded.alice[0]}").status_code == 200
        page.click("text=Sign out")
        page.wait_for_url("**/ui/login")
        tab.goto("/ui")
        page.wait_for_url("**/ui/login?next=*")
        tab.close()
        assert not tab.errors, tab.errors


def _status_error(status: int) -> str:
    reason = {401: "Unauthorized", 404: "Not Found"}[status]
    return f"Failed to load resource: the server responded with a status of {status} ({reason})"


def _active() -> Any:
    from memoryd.models import Filters

    return Filters()
