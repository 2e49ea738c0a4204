"""A simulated week and a half: two agents chat every day, the pipelines run on their
schedules (fake clock, hourly ticks, the scheduler's own catch-up rule deciding what
is due), and memory flows diary -> short-term -> long-term as seed 000's timeline says."""

from __future__ import annotations

import re
import shutil
from datetime import date, datetime, timedelta
from pathlib import Path

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Filters, Origin
from memoryd.pipelines import diary
from memoryd.pipelines.promote import BLOCK_TITLE
from memoryd.pipelines.runs import list_runs, run_pipeline
from memoryd.pipelines.scheduler import SINCE_KEY, missed
from tests.pipelines_kit import FixedClock, pipeline_settings

TRANSCRIPT = (
    Path(__file__).parent / "data" / "sessions" / "3f6c2a10-8b1e-4d2a-9c55-1e2f3a4b5c6d.jsonl"
)
BUILTIN = {"digest", "sync", "dream", "promote", "decay", "lessons"}
START = datetime.fromisoformat("2026-03-16T07:30:00+00:00")
DAYS = 10


def chat(mem: Memory, agent: str, user: str, assistant: str) -> None:
    assistant += (
        " I checked the runbook and the dashboards after the change, and I wrote the"
        " details into the team notes so the next session can pick them up."
    )
    result = diary.capture(
        mem,
        agent_id=agent,
        messages=[{"role": "user", "content": user}, {"role": "assistant", "content": assistant}],
    )
    assert result.written, result.reason


def day_events(mem: Memory, clock: FixedClock, day: int) -> None:
    """What the agents do at this hour of day ``day``."""
    hour = clock.now.hour
    port = 8000 + day // 3
    if hour == 9:
        chat(mem, "alpha", f"The billing service now runs on port {port} behind nginx.",
             f"Noted: billing listens on port {port}, and nginx proxies to it.")  # fmt: skip
    if hour == 10:
        for q in ("billing service port", "which port is billing on", "nginx billing proxy"):
            mem.search(q, user_id="default", agent_id="alpha")
    if hour == 13:
        chat(mem, "alpha", f"Today we worked on ticket PAY-{100 + day} about refund rounding.",
             f"PAY-{100 + day} is fixed; refunds now round half to even.")  # fmt: skip
    if hour == 17:
        chat(mem, "beta", f"The search cluster has {3 + day % 2} shards in production now.",
             "Understood, I will size the reindex job for that shard count.")  # fmt: skip
    if hour == 18:
        chat(mem, "beta", "Remember that deploys happen on Thursday afternoons only.",
             "Got it: deploys only on Thursday afternoons, never on Fridays.")  # fmt: skip
    if day == 4 and hour == 12:  # beta's session transcript: a failed tool call, then a fix
        sessions = mem.settings.workspace.openclaw_dir / "agents" / "beta" / "sessions"
        sessions.mkdir(parents=True)
        shutil.copy(TRANSCRIPT, sessions / TRANSCRIPT.name)
    root = mem.settings.home / "workspaces" / "alpha"
    if day == 2 and hour == 8:
        (root / "MEMORY.md").write_text(
            "# MEMORY\n\n## Team\n- The payments team owns billing\n- On-call rotates weekly\n"
        )
    if day == 5 and hour == 8:
        text = (root / "MEMORY.md").read_text().replace("rotates weekly", "rotates every two weeks")
        (root / "MEMORY.md").write_text(text)


def test_a_week_of_two_agents(tmp_path: Path, embedder: Embedder) -> None:
    settings = pipeline_settings(tmp_path / "home")
    for agent in ("alpha", "beta"):
        (settings.home / "workspaces" / agent / "memory").mkdir(parents=True)
    clock = FixedClock(START.isoformat())
    with Memory(settings, embedder=embedder, clock=clock) as mem:
        mem.store.kv_set(SINCE_KEY, START.isoformat())
        first_step2: date | None = None
        while clock.now < START + timedelta(days=DAYS):
            clock.now += timedelta(hours=1)
            day = (clock.now.date() - START.date()).days
            day_events(mem, clock, day)
            for name in missed(mem, clock.now):
                if name not in BUILTIN:
                    continue  # a pipeline some other test module registered
                record = run_pipeline(mem, name, trigger="schedule")
                assert record.status == "ok", (name, record.error)
                if name == "dream" and record.counts["short_term_consolidated"] and not first_step2:
                    first_step2 = clock.now.date()
                if name == "digest" and clock.now.hour in (14, 19):
                    # once a few turns have piled up (digest.min_bytes), the next digest
                    # makes them searchable short-term memory for every session
                    agent = "alpha" if clock.now.hour == 14 else "beta"
                    today = clock.now.date().isoformat()
                    assert mem.count(Filters(agent_id=agent, run_id=today)) > 0

        runs = list_runs(mem, limit=1000)
        by_name: dict[str, int] = {}
        for r in runs:
            by_name[r.name] = by_name.get(r.name, 0) + 1
            assert r.status == "ok" and r.trigger == "schedule"
        assert by_name["dream"] == DAYS and by_name["sync"] == DAYS
        assert by_name["promote"] == DAYS and by_name["digest"] >= 24 * (DAYS - 1)

        # short-term -> long-term after seven days, not before
        assert first_step2 == (START + timedelta(days=8)).date()
        cutoff = clock.now - timedelta(days=7, hours=1)
        assert mem.count(Filters(short_term_only=True, created_before=cutoff)) == 0
        assert mem.count(Filters(short_term_only=True)) > 0  # the last week is still there
        long_term = list(mem.store.iter_all(Filters(long_term_only=True)))
        from_diary = [r for r in long_term if r.metadata.get("pipeline") == "dream"]
        assert {r.agent_id for r in from_diary} == {"alpha", "beta"}
        assert all(r.origin == Origin.FACT and r.run_id is None for r in from_diary)
        # the thing said every day is one long-term memory, not ten
        thursdays = [r for r in long_term if "Thursday afternoons" in r.text]
        assert 1 <= len(thursdays) <= 2

        # MEMORY.md sync: the edit updated its memory in place
        synced = {r.text for r in long_term if r.metadata.get("source") == "MEMORY.md"}
        assert (
            "On-call rotates every two weeks" in synced and "On-call rotates weekly" not in synced
        )

        for agent in ("alpha", "beta"):
            root = settings.home / "workspaces" / agent
            report = (root / "DREAMS.md").read_text()
            assert report.count("## Dream · ") == DAYS  # one report a night
            assert "Compression: " in report and "Removed from short-term" in report
            assert (root / "memory" / "INDEX.md").is_file()  # TTL decay regenerated it
        lessons = (settings.home / "workspaces" / "beta" / "memory" / "lessons.md").read_text()
        assert "**Wrong approach**" in lessons and "pip install requests" in lessons
        shared = mem.list(filters=Filters(categories=["experience"]), limit=100)
        assert any("externally-managed" in r.text for r in shared)

        memory_md = (settings.home / "workspaces" / "alpha" / "MEMORY.md").read_text()
        promoted = memory_md.split(BLOCK_TITLE)[1] if BLOCK_TITLE in memory_md else ""
        assert "**user**" not in promoted  # diary Markdown does not leak into facts
        # billing moves to a new port every three days: every fact of an old port, long-
        # or short-term, is superseded by the change, so none of them is promoted or stays
        assert set(re.findall(r"port (\d+)", promoted)) <= {"8003"}
        facts = mem.store.iter_all(Filters(agent_id="alpha", origins=[Origin.FACT]))
        ports = {p for r in facts for p in re.findall(r"port (\d+)", r.text)}
        assert ports == {"8003"}, ports

        # and a dry run on the last night changes nothing
        before = mem.count(Filters(states=[]))
        dry = run_pipeline(mem, "dream", dry_run=True)
        assert dry.status == "ok" and mem.count(Filters(states=[])) == before
