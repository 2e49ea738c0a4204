"""MEMORY.md sync: entries -> long-term memories; skipped when unchanged; edits update,
removals supersede."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Event, Filters, State
from memoryd.pipelines.decay import is_expired
from memoryd.pipelines.runs import run_pipeline
from memoryd.pipelines.sync import parse_entries, state_key
from memoryd.search.decay import record_weight
from memoryd.settings import Settings
from memoryd.workspace.bootstrap import init_workspace
from tests.pipelines_kit import FixedClock, pipeline_settings, workspace

MEMORY_MD = """# MEMORY

## Projects
- memoryd listens on port 8230
- The billing service is owned by the payments team
  and deploys on Tuesdays

## Preferences
- Answer in English, briefly

<!-- a note to self that is not memory -->
```
make test
```
"""


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path / "home")


@pytest.fixture
def mem(settings: Settings, embedder: Embedder) -> Iterator[Memory]:
    m = Memory(settings, embedder=embedder, clock=FixedClock("2026-03-27T01:00:00+00:00"))
    yield m
    m.close()


def synced(mem: Memory, states: list[State] | None = None) -> dict[str, str]:
    """text -> state of the memories sync wrote."""
    return {
        r.text: r.state.value
        for r in mem.store.iter_all(Filters(agent_id="alpha", states=states or []))
        if r.metadata.get("source") == "MEMORY.md"
    }


def test_parse_entries() -> None:
    entries = parse_entries(MEMORY_MD)
    assert [e.text for e in entries] == [
        "memoryd listens on port 8230",
        "The billing service is owned by the payments team and deploys on Tuesdays",
        "Answer in English, briefly",
        "```\nmake test\n```",
    ]
    assert entries[1].section == "MEMORY › Projects"
    assert (entries[1].start_line, entries[1].end_line) == (5, 6)


def test_wrapped_lines_are_one_entry_and_table_rows_are_not_joined() -> None:
    text = "A paragraph that is\nwrapped over lines.\n| host | port |\n|---|---|\n| db | 5432 |\n"
    assert [e.text for e in parse_entries(text)] == [
        "A paragraph that is wrapped over lines.",
        "| host | port |",
        "| db | 5432 |",
    ]


def test_sync_adds_skips_updates_and_supersedes(mem: Memory, settings: Settings) -> None:
    root = workspace(settings, "alpha")
    path = root / "MEMORY.md"
    path.write_text(MEMORY_MD)
    first = run_pipeline(mem, "sync")
    assert first.counts["added"] == 4 and first.counts["synced_files"] == 1
    memories = mem.list(agent_id="alpha", filters=Filters(long_term_only=True))
    assert {r.run_id for r in memories} == {None}
    port = next(r for r in memories if "8230" in r.text)
    assert port.source is not None and port.source.citation == "MEMORY.md#L4-L4"
    assert port.context == "MEMORY.md › MEMORY › Projects"

    again = run_pipeline(mem, "sync")  # same bytes: nothing read beyond the hash
    assert again.counts == {"unchanged_files": 1}

    path.write_text(
        MEMORY_MD.replace("port 8230", "port 8231").replace("- Answer in English, briefly\n", "")
        + "- Deploys need two approvals\n"
    )
    third = run_pipeline(mem, "sync")
    assert (third.counts["added"], third.counts["updated"], third.counts["removed"]) == (1, 1, 1)
    state = synced(mem)
    assert state["memoryd listens on port 8231"] == "active"
    assert "memoryd listens on port 8230" not in state  # updated in place, not duplicated
    assert state["Answer in English, briefly"] == "deleted"  # superseded, kept in history
    assert state["Deploys need two approvals"] == "active"
    history = mem.history(port.id)
    assert [h.event for h in history] == [Event.ADD, Event.UPDATE]
    assert history[-1].old_text == "memoryd listens on port 8230"
    assert history[-1].actor == f"sync:{third.run_id}"
    gone = next(
        r for r in mem.store.iter_all(Filters(states=[State.DELETED]))
        if r.text == "Answer in English, briefly"
    )  # fmt: skip
    assert "removed from MEMORY.md" in (mem.history(gone.id)[-1].reason or "")


def test_dry_run_writes_nothing(mem: Memory, settings: Settings) -> None:
    root = workspace(settings, "alpha")
    (root / "MEMORY.md").write_text(MEMORY_MD)
    run = run_pipeline(mem, "sync", dry_run=True)
    assert run.counts["added"] == 4
    assert any("would add" in n for n in run.notes)
    assert mem.count(Filters()) == 0 and mem.store.kv_get(state_key("alpha")) is None


def test_agents_without_memory_md_are_left_alone(mem: Memory, settings: Settings) -> None:
    workspace(settings, "alpha")
    run = run_pipeline(mem, "sync")
    assert run.status == "ok" and run.counts == {}


def test_the_init_template_is_not_memory_and_a_wrapped_paragraph_is_one(
    mem: Memory, settings: Settings
) -> None:
    root = workspace(settings, "alpha")
    init_workspace(root)
    first = run_pipeline(mem, "sync")
    assert first.status == "ok" and synced(mem) == {}  # boilerplate only: nothing to remember

    path = root / "MEMORY.md"
    path.write_text(
        path.read_text() + "\nThe staging cluster is rebuilt every Sunday night, so anything\n"
        "deployed there must be redeployed on Monday morning.\n"
    )
    run_pipeline(mem, "sync")
    assert synced(mem) == {
        "The staging cluster is rebuilt every Sunday night, so anything deployed there "
        "must be redeployed on Monday morning.": "active"
    }


def test_synced_facts_are_evergreen(mem: Memory, settings: Settings) -> None:
    mem.settings.decay.default_class = "tasks"  # even where uncategorised memories expire
    (workspace(settings, "alpha") / "MEMORY.md").write_text(MEMORY_MD)
    run_pipeline(mem, "sync")
    api = mem.get(
        mem.add("A note written through the API", user_id="default", agent_id="alpha")[0].id
    )
    records = [r for r in mem.store.iter_all(Filters()) if r.metadata.get("source") == "MEMORY.md"]
    assert len(records) == 4 and all(r.metadata["evergreen"] is True for r in records)

    years_later = mem.clock() + timedelta(days=3650)
    assert all(record_weight(r, years_later, settings.search) == 1.0 for r in records)
    assert record_weight(api, years_later, settings.search) < 0.01  # not MEMORY.md: decays
    assert all(not is_expired(r, years_later, settings.decay) for r in records)
    assert is_expired(api, years_later, settings.decay)


def test_facts_synced_before_evergreen_are_marked_once(mem: Memory, settings: Settings) -> None:
    path = workspace(settings, "alpha") / "MEMORY.md"
    path.write_text(MEMORY_MD)
    run_pipeline(mem, "sync")
    old = next(r for r in mem.store.iter_all(Filters()) if "8230" in r.text)
    # the state an older memoryd left: no evergreen flag, the old file hash
    mem.update(old.id, metadata={"evergreen": False})
    state = mem.store.kv_get(state_key("alpha"))
    mem.store.kv_set(state_key("alpha"), {**state, "hash": "from-an-older-parser"})

    run = run_pipeline(mem, "sync")
    assert run.counts["marked_evergreen"] == 1 and run.counts["added"] == 0
    assert mem.get(old.id).metadata["evergreen"] is True
    assert run_pipeline(mem, "sync").counts == {"unchanged_files": 1}


def test_lines_promotion_wrote_are_not_read_back(mem: Memory, settings: Settings) -> None:
    """The promote -> sync loop (issue 31): a promoted line is derived from a memory that
    exists; synced back it became an evergreen copy that outlived its source. A line the
    agent writes inside the block is the agent's and is synced."""
    from memoryd.pipelines.promote import BLOCK_END, BLOCK_START, BLOCK_TITLE, promoted_key

    root = workspace(settings, "alpha")
    fact = "The staging database is on port 5432"
    block = f"{BLOCK_TITLE}\n{BLOCK_START}\n- {fact}\n- My own note in the block\n{BLOCK_END}\n"
    (root / "MEMORY.md").write_text(f"# MEMORY\n\n- Answer briefly\n\n{block}")
    mem.store.kv_set(promoted_key("alpha"), {fact.casefold(): {"id": "m1", "at": "x"}})
    run = run_pipeline(mem, "sync")
    assert run.counts["promoted_lines_skipped"] == 1
    assert synced(mem) == {"Answer briefly": "active", "My own note in the block": "active"}


def test_promoted_lines_synced_by_an_older_version_are_removed(
    mem: Memory, settings: Settings
) -> None:
    from memoryd.pipelines.promote import BLOCK_END, BLOCK_START, BLOCK_TITLE, promoted_key
    from memoryd.pipelines.sync import FORMAT

    root = workspace(settings, "alpha")
    fact = "The staging database is on port 5432"
    (root / "MEMORY.md").write_text(
        f"# MEMORY\n\n{BLOCK_TITLE}\n{BLOCK_START}\n- {fact}\n{BLOCK_END}\n"
    )
    run_pipeline(mem, "sync")  # no promotion recorded: read as the agent's line
    assert synced(mem) == {fact: "active"}
    mem.store.kv_set(promoted_key("alpha"), {fact.casefold(): {"id": "m1", "at": "x"}})
    state = dict(mem.store.kv_get(state_key("alpha")) or {})
    state["hash"] = "synced by memoryd-sync-2"  # as an older parser left it
    mem.store.kv_set(state_key("alpha"), state)
    assert FORMAT == b"memoryd-sync-3\n"
    run_pipeline(mem, "sync")
    assert synced(mem) == {fact: "deleted"}


def test_a_bullet_with_a_line_separator_or_form_feed_is_one_entry() -> None:
    content = "- Staging lives in eu-west-1\u2028(one bullet)\r\n- Page 1\x0cpage 2\r\n- Third\r\n"
    entries = parse_entries(content)
    assert [e.text for e in entries] == [
        "Staging lives in eu-west-1\u2028(one bullet)",
        "Page 1\x0cpage 2",
        "Third",
    ]
    assert [e.start_line for e in entries] == [1, 2, 3]
