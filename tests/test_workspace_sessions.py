"""Session notes and the pre-compaction flush write real files and index them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError
from memoryd.pipelines import diary
from memoryd.settings import Settings
from memoryd.workspace import Workspace
from memoryd.workspace.search import memory_search
from memoryd.workspace.sessions import clean_slug, flush, keyword_slug, write_session_note
from tests.conftest import FakeClock
from tests.fake_llm import FakeLLM, Reply
from tests.test_workspace_support import make_workspace

SESSION = [
    {"role": "system", "content": "You are a helpful agent."},
    {"role": "user", "content": "We need to migrate the cache from memcached to Redis."},
    {"role": "assistant", "content": "Agreed. Redis gives us persistence for the cache."},
    {"role": "tool", "content": "ran: redis-cli ping -> PONG"},
    {"role": "user", "content": [{"type": "text", "text": "Plan the Redis migration for Friday."}]},
    {"role": "assistant", "content": "Redis migration planned for Friday, cache warmup first."},
]


@pytest.fixture
def ws(memory: Memory, tmp_path: Path) -> Workspace:
    return make_workspace(memory, tmp_path / "ws")


def test_session_end_writes_a_dated_slugged_note_and_indexes_it(
    memory: Memory, ws: Workspace, clock: FakeClock
) -> None:
    clock.advance(hours=8)  # 17:00 UTC
    note = write_session_note(memory, ws, SESSION, session_id="s-42")
    assert note.path == "memory/2026-03-27-redis-cache.md" and note.slug_source == "keywords"
    assert note.messages == 4 and note.chunks >= 1
    text = (ws.root / note.path).read_text()
    assert text.startswith("# Session: 2026-03-27 17:00 UTC")
    assert "- **Session ID**: s-42" in text and "redis-cli" not in text  # tool chatter dropped
    assert "- **user**: Plan the Redis migration for Friday." in text
    hit = memory_search(memory, ws, "when is the redis migration", max_results=1)[0]
    assert hit.hit.record.source.path == note.path
    again = write_session_note(memory, ws, SESSION)
    assert again.path == "memory/2026-03-27-redis-cache-2.md"  # never overwrites


def test_only_the_last_n_messages_are_kept(memory: Memory, ws: Workspace) -> None:
    many = [{"role": "user", "content": f"message number {i} about kayaks"} for i in range(40)]
    note = write_session_note(memory, ws, many, limit=15)
    text = (ws.root / note.path).read_text()
    assert "message number 39" in text and "message number 25" in text
    assert "message number 24 " not in text and "last 15 of 40" in text


def test_slugs() -> None:
    assert (
        keyword_slug([("user", "Déjà vu: the café menu, the café prices, a new menu")])
        == "café-menu"
    )
    assert clean_slug("  Vendor Pitch!! ") == "vendor-pitch"
    assert clean_slug("../../etc/passwd") == "etc-passwd"
    assert keyword_slug([("user", "ok thanks")]) == ""


def test_session_end_without_conversation_is_refused(memory: Memory, ws: Workspace) -> None:
    with pytest.raises(InvalidInputError, match="no user or assistant"):
        write_session_note(memory, ws, [{"role": "tool", "content": "x"}])
    with pytest.raises(InvalidInputError):
        write_session_note(memory, ws, "not a list")  # type: ignore[arg-type]


def test_a_session_with_no_keywords_is_named_by_the_time(
    memory: Memory, ws: Workspace, clock: FakeClock
) -> None:
    note = write_session_note(memory, ws, [{"role": "user", "content": "ok thanks"}])
    assert note.path == "memory/2026-03-27-0900.md" and note.slug_source == "time"


def test_flush_appends_to_todays_diary_and_indexes_it(
    memory: Memory, ws: Workspace, clock: FakeClock
) -> None:
    clock.advance(hours=5, minutes=7)
    result = flush(memory, ws, ["Switched caching to Redis", "  the launch moved to Friday  "])
    assert result.path == "memory/2026-03-27.md" and result.appended == 2
    text = (ws.memory_dir / "2026-03-27.md").read_text()
    assert text.endswith(
        "## 14:07 · flush\n- Switched caching to Redis\n- the launch moved to Friday\n"
    )
    hit = memory_search(memory, ws, "what caching did we switch to", max_results=1)[0]
    assert "Redis" in hit.hit.text and hit.hit.record.source.path == "memory/2026-03-27.md"

    clock.advance(days=1)  # a new day starts a new diary with a title
    flush(memory, ws, "first note of the day")
    assert (ws.memory_dir / "2026-03-28.md").read_text().startswith("# 2026-03-28\n\n## 14:07")


def test_flush_needs_notes(memory: Memory, ws: Workspace) -> None:
    with pytest.raises(InvalidInputError, match="no notes"):
        flush(memory, ws, ["  ", ""])
    with pytest.raises(InvalidInputError):
        flush(memory, ws, [1, 2])  # type: ignore[list-item]


def test_flush_of_messages_keeps_only_what_the_diary_lacks(
    memory: Memory, ws: Workspace, clock: FakeClock
) -> None:
    """The host's pre-compaction hook sends the conversation: what the diary capture
    already wrote is not written twice, what it missed is kept."""
    diary.capture(memory, agent_id=ws.agent_id, messages=SESSION[1:3], workspace=ws.root)
    clock.advance(minutes=30)
    compacted = [*SESSION, {"role": "user", "content": "The staging cluster is named kestrel-2."}]
    result = flush(memory, ws, messages=compacted)
    text = (ws.memory_dir / "2026-03-27.md").read_text()
    section = text.split("· flush\n", 1)[1]
    assert "kestrel-2" in section and "Friday" in section  # never captured before
    assert "memcached" not in section  # the diary holds it already
    assert "PONG" not in section and "helpful agent" not in section  # tool and system text
    assert result.appended == section.count("\n- ") + 1
    hit = memory_search(memory, ws, "what is the staging cluster called", max_results=1)[0]
    assert "kestrel-2" in hit.hit.text

    again = flush(memory, ws, messages=compacted)  # nothing new: nothing is written
    assert again.appended == 0 and (ws.memory_dir / "2026-03-27.md").read_text() == text
    with pytest.raises(InvalidInputError, match="either notes or messages"):
        flush(memory, ws, "a note", messages=compacted)


def test_diary_dates_follow_the_workspace_time_zone(
    memory: Memory, ws: Workspace, clock: FakeClock
) -> None:
    memory.settings.workspace.timezone = "Asia/Tokyo"
    clock.advance(hours=16)  # 2026-03-28 01:00 UTC is 10:00 in Tokyo
    assert flush(memory, ws, "tokyo morning").path == "memory/2026-03-28.md"
    memory.settings.workspace.timezone = "America/Los_Angeles"  # still the 27th there
    assert flush(memory, ws, "LA evening").path == "memory/2026-03-27.md"


def test_the_llm_names_the_session_when_one_is_configured(
    settings: Settings, embedder: Embedder, clock: FakeClock, tmp_path: Path
) -> None:
    settings.llm.provider = "openai"
    with FakeLLM() as fake:
        settings.llm.openai.base_url = fake.url
        settings.llm.openai.timeout_s = 2.0
        with Memory(settings, embedder=embedder, clock=clock) as mem:
            ws = make_workspace(mem, tmp_path / "ws")
            fake.script("Vendor Pitch\n")
            note = write_session_note(mem, ws, SESSION)
            assert note.path == "memory/2026-03-27-vendor-pitch.md" and note.slug_source == "llm"
            shown = json.dumps(fake.requests[-1])
            assert "Plan the Redis migration for Friday" in shown  # it saw the conversation
            # the LLM failing (500 on the try and the retry) never loses the note
            fake.script(Reply(status=500), Reply(status=500))
            note = write_session_note(mem, ws, SESSION)
            assert note.slug_source == "keywords" and note.path.endswith("-redis-cache.md")
            assert (ws.root / note.path).is_file()


def test_seed_003_folders_are_categories_and_summaries_take_session_notes(
    memory: Memory, ws: Workspace
) -> None:
    """A workspace laid out the organizer's way (seed 003): files under memory/entities/,
    patterns/, summaries/, events/ are searched as those categories, and session notes
    go to memory/summaries/ once that folder exists."""
    from memoryd.models import Filters
    from memoryd.workspace.indexer import index_workspace

    (ws.memory_dir / "entities").mkdir()
    (ws.memory_dir / "entities" / "acme.md").write_text(
        "# Acme Corp\n\nClient since 2024; their servers run in eu-west-1.\n"
    )
    (ws.memory_dir / "patterns").mkdir()
    (ws.memory_dir / "patterns" / "deploy.md").write_text(
        "# Deploy pattern\n\nBlue-green deploys to eu-west-1 with a canary first.\n"
    )
    (ws.memory_dir / "summaries").mkdir()
    index_workspace(memory, ws)
    owner = ws.settings.user_id
    hits = memory.search(
        "eu-west-1", user_id=owner, agent_id=ws.agent_id, filters=Filters(categories=["entities"])
    )
    assert [h.record.source.path for h in hits] == ["memory/entities/acme.md"]
    both = memory.search("eu-west-1", user_id=owner, agent_id=ws.agent_id)
    found = {h.record.source.path: h.record.category for h in both}
    assert found["memory/entities/acme.md"] == "entities"
    assert found["memory/patterns/deploy.md"] == "patterns"
    assert found.get("MEMORY.md", "none") in (None, "none")  # other files keep no category
    note = write_session_note(memory, ws, SESSION)
    assert note.path.startswith("memory/summaries/") and (ws.root / note.path).is_file()
    assert (
        memory.search(
            "redis migration",
            user_id=owner,
            agent_id=ws.agent_id,
            filters=Filters(categories=["summaries"]),
        )[0].record.source.path
        == note.path
    )
