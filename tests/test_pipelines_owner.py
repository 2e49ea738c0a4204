"""Files the pipelines write into a workspace hold only its owner's memories.

A workspace belongs to ``workspace.user_id`` (here ``default``): its agents read its
files, and its Markdown is indexed as that user's chunks, so another user's memory
written into INDEX.md would reach the owner's agents, and one written into lessons.md or
MEMORY.md would come back in the owner's searches too."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Filters
from memoryd.pipelines.runs import run_pipeline
from memoryd.settings import Settings
from memoryd.workspace import resolve_workspace
from memoryd.workspace.indexer import index_workspace
from tests.pipelines_kit import FixedClock, pipeline_settings, workspace

OWNER = "default"
BOSS = {  # text -> category: another user's memories of the same agent
    "Boss keeps the acquisition codename Bluefin under wraps.": "project",
    "The Hartwell lease upload failed because the PDF was too large; fixed it by "
    "compressing the scans first.": "task",
    "Boss learned that the Zephyr vendor always ships late.": "experience",
}
MINE = {
    "The owner's CI runs on the Kestrel build farm.": "project",
    "The Kestrel deploy failed because the old key was cached; fixed it by restarting "
    "the agent after the rotation.": "task",
}


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock("2026-03-20T09:00:00+00:00")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path / "home")


@pytest.fixture
def mem(settings: Settings, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(settings, embedder=embedder, clock=clock)
    yield m
    m.close()


def seed(mem: Memory, agent: str = "dev") -> None:
    for user, memories in (("boss", BOSS), (OWNER, MINE)):
        for text, category in memories.items():
            mem.add(text, user_id=user, agent_id=agent, category=category)


def leaked(text: str) -> list[str]:
    """Boss's memories (or their telltale words) that appear in ``text``."""
    words = ("Bluefin", "Hartwell", "Zephyr", "Boss")
    return [w for w in words if w in text]


def test_index_md_lists_only_the_owners_memories(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    workspace(settings, "dev")
    seed(mem)
    record = run_pipeline(mem, "decay")
    assert record.status == "ok" and record.counts["index_updated"] == 1
    index = (workspace(settings, "dev") / "memory" / "INDEX.md").read_text()
    assert "Kestrel" in index  # the owner's own memories are listed
    assert leaked(index) == []
    assert f"{len(MINE)} active" in index  # and counted: boss's are not
    assert "0 in the shared pool" in index  # boss's experience is boss's pool, not the owner's

    # INDEX.md is not indexed for search: its "recent" lines are the owner's memories, which
    # would come back twice (and as an undated note, never decay)
    ws = resolve_workspace(settings, "dev", mem.store)
    assert ws.memory_dir / "INDEX.md" not in ws.files()
    assert not ws.is_indexed_path(ws.memory_dir / "INDEX.md")
    report = index_workspace(mem, ws)
    assert "memory/INDEX.md" not in {f.path for f in report.files}
    # (no relevance floor: every memory the owner can see comes back)
    hits = mem.search("Kestrel build farm", user_id=OWNER, agent_id="dev", min_score=0, top_k=50)
    assert [h.text for h in hits].count("The owner's CI runs on the Kestrel build farm.") == 1
    assert not any(
        (h.record.source.path if h.record.source else "") == "memory/INDEX.md" for h in hits
    )
    assert all(leaked(h.record.text) == [] for h in hits)


def test_lessons_md_gets_only_the_owners_lessons(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    workspace(settings, "dev")
    seed(mem)
    clock.now += timedelta(days=8)  # the tasks of both users expire: each is a lesson too
    record = run_pipeline(mem, "decay")
    assert record.status == "ok" and record.counts["lessons"] == 2
    lessons = {
        r.user_id: r.text
        for r in mem.store.iter_all(Filters(categories=["experience"]))
        if r.metadata.get("lesson_source") == "decay"
    }
    assert "Hartwell" in lessons["boss"] and "Kestrel" in lessons[OWNER]
    md = (workspace(settings, "dev") / "memory" / "lessons.md").read_text()
    assert "Kestrel" in md  # the owner's lesson is appended
    assert leaked(md) == []  # boss's is stored as boss's memory only
    index = (workspace(settings, "dev") / "memory" / "INDEX.md").read_text()
    assert leaked(index) == []


def test_promote_puts_only_the_owners_memories_into_memory_md(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    root = workspace(settings, "alpha")
    (root / "MEMORY.md").write_text("# MEMORY\n\n- Answer briefly\n")
    facts = {
        OWNER: "The billing service listens on port 8230 behind the nginx proxy",
        "boss": "The Bluefin billing service listens on port 9230 behind the haproxy",
    }
    for user, fact in facts.items():
        mem.add(fact, user_id=user, agent_id="alpha")
    queries = [
        "billing service port",
        "which port does the billing service listen on",
        "billing service proxy port",
        "where does billing listen",
    ]
    for _day in range(3):
        for q in queries:
            for user in facts:
                mem.search(q, user_id=user, agent_id="alpha")
        clock.now += timedelta(days=1)
    record = run_pipeline(mem, "promote")
    assert record.counts.get("promoted") == 1
    text = (root / "MEMORY.md").read_text()
    assert facts[OWNER] in text
    assert leaked(text) == []
