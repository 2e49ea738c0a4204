"""Session-start context: identity, MEMORY.md, today's and yesterday's diary, search."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.workspace import Workspace
from memoryd.workspace.context import build_context
from memoryd.workspace.indexer import index_workspace
from tests.conftest import FakeClock
from tests.test_workspace_support import make_workspace


@pytest.fixture
def ws(memory: Memory, tmp_path: Path) -> Workspace:
    w = make_workspace(memory, tmp_path / "ws")
    (w.memory_dir / "2026-03-26.md").write_text(
        "# 2026-03-26\n\n## 23:50\n- Late call: moved the launch to Friday\n"
    )
    (w.memory_dir / "2026-03-20.md").write_text(
        "# 2026-03-20\n\n## 10:00\n- Chose Redis for the session cache\n"
    )
    return w


def test_context_has_identity_memory_and_two_diary_days(
    memory: Memory, ws: Workspace, clock: FakeClock
) -> None:
    ctx = build_context(memory, ws)
    titles = [s.title for s in ctx.sections]
    assert titles[:5] == ["SOUL.md", "IDENTITY.md", "USER.md", "AGENTS.md", "BOOTSTRAP.md"]
    assert titles[5:] == [
        "TOOLS.md",
        "MEMORY.md",
        "memory/2026-03-27.md (today's diary)",
        "memory/2026-03-26.md (yesterday's diary)",
    ]
    assert "PostgreSQL" in ctx.text and "moved the launch to Friday" in ctx.text
    assert "Redis" not in ctx.text  # an older diary is for search, not for every session
    assert not ctx.truncated and len(ctx.text) <= 20_000

    clock.advance(days=1)  # the next morning: yesterday is the 27th, today has no diary yet
    titles = [s.title for s in build_context(memory, ws).sections]
    assert "memory/2026-03-27.md (yesterday's diary)" in titles
    assert not any("2026-03-26" in t for t in titles)


def test_query_adds_relevant_memories_not_already_shown(memory: Memory, ws: Workspace) -> None:
    index_workspace(memory, ws)
    memory.add("Sam's laptop is a ThinkPad X1 running Fedora", user_id="default", agent_id="dev")
    ctx = build_context(memory, ws, query="session cache technology and laptop")
    relevant = ctx.sections[-1]
    assert relevant.title.startswith("Relevant memories for:")
    assert "memory/2026-03-20.md#L1-L4" in relevant.body  # an older diary, cited
    assert "ThinkPad" in relevant.body
    assert "2026-03-27.md#" not in relevant.body  # today's diary is already in full above


def test_the_budget_is_kept_with_a_visible_marker(memory: Memory, ws: Workspace) -> None:
    big = "\n".join(f"- fact {i}: " + "detail " * 12 for i in range(600))
    (ws.root / "MEMORY.md").write_text("# MEMORY.md\n" + big + "\n- the newest fact is last\n")
    ctx = build_context(memory, ws, budget=6000)
    assert len(ctx.text) <= 6000 and ctx.truncated
    mem_section = next(s for s in ctx.sections if s.title == "MEMORY.md")
    assert mem_section.truncated and "[… truncated:" in mem_section.shown
    assert 'memory_get("MEMORY.md")' in mem_section.shown
    assert mem_section.shown.startswith("# MEMORY.md")
    assert mem_section.shown.rstrip().endswith("the newest fact is last")  # the tail survives
    soul = next(s for s in ctx.sections if s.title == "SOUL.md")
    assert not soul.truncated  # small sections are shown whole
    default = build_context(memory, ws)
    assert len(default.text) <= 20_000 and default.truncated


def test_budget_must_be_sane(memory: Memory, ws: Workspace) -> None:
    with pytest.raises(InvalidInputError, match="budget"):
        build_context(memory, ws, budget=10)
