"""Dream: yesterday's diary and week-old short-term -> long-term; DREAMS.md; the loss
guard; dry runs; rollback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.audit import audit_path
from memoryd.cli import app as cli_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.models import Filters, Origin, State
from memoryd.pipelines.dream import long_term_count, rollback
from memoryd.pipelines.runs import run_pipeline
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM
from tests.pipelines_kit import (
    FixedClock,
    fill_diary,
    pipeline_settings,
    snapshot,
    workspace,
    write_section,
)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock("2026-03-20T12:00:00+00:00")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path / "home")


@pytest.fixture
def mem(settings: Settings, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(settings, embedder=embedder, clock=clock)
    yield m
    m.close()


def seed_week(mem: Memory, settings: Settings, clock: FixedClock) -> None:
    """Short-term memories from 2026-03-20 (digested), then a diary for 2026-03-27."""
    root = workspace(settings, "alpha")
    fill_diary(root, "2026-03-20", 6)
    assert run_pipeline(mem, "digest").status == "ok"
    fill_diary(root, "2026-03-27", 3, start_hour=10)
    clock.now = datetime.fromisoformat("2026-03-28T02:00:00+00:00")


def dream_each_day(
    mem: Memory, root: Path, clock: FixedClock, exchanges: list[tuple[str, str, str]]
) -> None:
    """Each (day, what the user said, the reply) as that day's diary, dreamt at 02:00 the
    next night."""
    for day, user_said, reply in exchanges:
        write_section(root, day, "10:00", [f"**user**: {user_said}", f"**assistant**: {reply}"])
        clock.now = datetime.fromisoformat(f"{day}T23:00:00+00:00") + timedelta(hours=3)
        assert run_pipeline(mem, "dream").status == "ok"


def test_dream_moves_diary_and_old_short_term_to_long_term(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    seed_week(mem, settings, clock)
    short_before = mem.count(Filters(agent_id="alpha", short_term_only=True))
    assert short_before > 0
    run = run_pipeline(mem, "dream")
    assert run.status == "ok"
    assert mem.count(Filters(agent_id="alpha", short_term_only=True)) == 0
    assert run.counts["short_term_consolidated"] == short_before
    assert run.counts["diary_days"] == 1 and run.counts["step1_add"] > 0
    long_term = mem.list(agent_id="alpha", filters=Filters(long_term_only=True), limit=1000)
    assert long_term and all(r.origin == Origin.FACT and r.run_id is None for r in long_term)
    assert any(r.metadata.get("diary") == "2026-03-27" for r in long_term)  # step 1
    assert all(r.category != "short_term" for r in long_term)
    # the short-term memories are deleted with the decision, not lost
    gone = list(mem.store.iter_all(Filters(agent_id="alpha", states=[State.DELETED])))
    assert len(gone) == short_before
    reason = mem.history(gone[0].id)[-1].reason or ""
    assert reason.startswith(f"consolidated into long-term by {run.run_id}")

    report = (settings.home / "workspaces" / "alpha" / "DREAMS.md").read_text()
    assert report.startswith("# Dreams")
    assert f"## Dream · 2026-03-28 02:00 UTC · {run.run_id}" in report
    assert "Step 1 · diary 2026-03-27" in report
    assert f"Step 2 · {short_before} short-term memories older than 7 days" in report
    assert f"Compression: {short_before} short-term -> " in report
    assert f"memoryd dream rollback {run.run_id}" in report
    audit = [json.loads(line) for line in audit_path(settings).read_text().splitlines()]
    assert any(e["op"] == "dream" and e["run_id"] == run.run_id for e in audit)

    again = run_pipeline(mem, "dream")  # the same night again: nothing left to do
    assert again.counts["diary_days"] == 0 and again.counts["short_term_consolidated"] == 0
    assert report == (settings.home / "workspaces" / "alpha" / "DREAMS.md").read_text()


def test_only_memories_older_than_a_week_are_consolidated(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    seed_week(mem, settings, clock)
    clock.now = datetime.fromisoformat("2026-03-27T00:00:00+00:00")  # 6.5 days after the digest
    run = run_pipeline(mem, "dream")
    assert run.counts["short_term_consolidated"] == 0
    assert mem.count(Filters(agent_id="alpha", short_term_only=True)) > 0


def test_dry_run_reports_and_writes_nothing(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    seed_week(mem, settings, clock)
    before = snapshot(mem)
    run = run_pipeline(mem, "dream", dry_run=True)
    assert run.status == "ok" and run.dry_run
    assert run.counts["short_term_consolidated"] > 0 and run.counts["step1_add"] > 0
    assert any(n.startswith("## Dream (dry run)") for n in run.notes)
    assert snapshot(mem) == before
    assert not (settings.home / "workspaces" / "alpha" / "DREAMS.md").exists()
    real = run_pipeline(mem, "dream")  # and the real run still does everything
    assert real.counts["short_term_consolidated"] == run.counts["short_term_consolidated"]


def test_rollback_restores_the_state_before_the_run(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    seed_week(mem, settings, clock)
    mem.add("The staging cluster runs on three nodes", user_id="default", agent_id="alpha")
    before = {t for t in snapshot(mem) if t[5] == "active"}
    run = run_pipeline(mem, "dream")
    assert {t for t in snapshot(mem) if t[5] == "active"} != before
    undone = rollback(mem, run.run_id)
    assert undone.deleted > 0 and undone.restored > 0
    assert {t for t in snapshot(mem) if t[5] == "active"} == before
    assert "## Rollback" in (settings.home / "workspaces" / "alpha" / "DREAMS.md").read_text()
    redo = run_pipeline(mem, "dream")  # keys released and step 1 reset: the work is redone
    assert redo.counts["diary_days"] == 1
    assert redo.counts["short_term_consolidated"] == run.counts["short_term_consolidated"]
    with pytest.raises(NotFoundError):
        rollback(mem, "dream-20990101T000000-abcdef")
    with pytest.raises(InvalidInputError):
        rollback(mem, "digest-20260101T000000-abcdef")


def test_cli_dream_rollback(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, embedder: Embedder, clock: FixedClock
) -> None:
    with Memory(settings, embedder=embedder, clock=clock) as mem:
        seed_week(mem, settings, clock)
        run = run_pipeline(mem, "dream")
    monkeypatch.setenv("MEMORYD_HOME", str(settings.home))
    monkeypatch.setenv("MEMORYD_WORKSPACE__OPENCLAW_DIR", str(settings.workspace.openclaw_dir))
    result = CliRunner().invoke(cli_app, ["dream", "rollback", run.run_id, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["run_id"] == run.run_id and data["undo_deleted"] > 0
    missing = CliRunner().invoke(cli_app, ["dream", "rollback", "dream-nope"])
    assert missing.exit_code == 2 and "memoryd pipelines" in missing.stderr


def test_loss_guard_aborts_and_leaves_long_term_as_it_was(
    tmp_path: Path, embedder: Embedder
) -> None:
    """A reconciler that says DELETE to everything would wipe long-term memory: the guard
    stops the run and undoes what it did."""
    with FakeLLM() as fake:
        settings = pipeline_settings(tmp_path / "home", dream={"loss_guard_min": 4})
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = fake.url

        def delete_everything(body: dict) -> str:  # type: ignore[type-arg]
            system = body["messages"][0]["content"]
            user = body["messages"][-1]["content"]
            if "memory consistent" in system:
                data = json.loads(user)
                ids = [e["id"] for e in data["existing"]]
                decisions = [
                    {"fact": f["fact"], "event": "DELETE", "id": ids[n % len(ids)]}
                    for n, f in enumerate(data["new_facts"])
                    if ids
                ]
                return json.dumps({"decisions": decisions})
            facts = [f"The billing service runs on port 900{n} now" for n in range(3)]
            return json.dumps({"facts": facts})

        clock = FixedClock("2026-03-20T12:00:00+00:00")
        with Memory(settings, embedder=embedder, clock=clock) as mem:
            for n in range(6):
                mem.add(f"The billing service ran on port {8000 + n} in release {n}",
                        user_id="default", agent_id="alpha")  # fmt: skip
            workspace(settings, "alpha")
            fill_diary(settings.home / "workspaces" / "alpha", "2026-03-27", 4)
            clock.now = datetime.fromisoformat("2026-03-28T02:00:00+00:00")
            before = snapshot(mem)
            fake.default = delete_everything
            run = run_pipeline(mem, "dream")
            assert run.status == "error" and "loss guard" in (run.error or "")
            assert long_term_count(mem, "default", "alpha") == 6
            assert {t for t in snapshot(mem) if t[5] == "active"} == {
                t for t in before if t[5] == "active"
            }
            report = (settings.home / "workspaces" / "alpha" / "DREAMS.md").read_text()
            assert "**Aborted** · loss guard" in report


def test_the_readme_report_is_what_render_report_writes() -> None:
    from memoryd.pipelines.dreams_md import AgentDream, render_report

    d = AgentDream(
        agent="dev",
        run_id="dream-20260328T020000-3fa2c1",
        started=datetime.fromisoformat("2026-03-28T02:00:00+00:00"),
        days=["2026-03-27"],
        diary_bytes=12_700,
        step1={"ADD": 10, "UPDATE": 2, "DELETE": 0, "NONE": 2},
        step2={"ADD": 78, "UPDATE": 41, "DELETE": 3, "NONE": 1_678},
        consolidated=1_800,
        removed=1_800,
        long_term_before=1_204,
        long_term_after=1_289,
    )
    readme = (Path(__file__).parent.parent / "README.md").read_text()
    assert render_report(d) in readme


def test_digest_dream_and_rollback_on_every_store(
    store_url: str, tmp_path: Path, embedder: Embedder, clock: FixedClock
) -> None:
    """The pipelines use only Memory and the Store protocol (kv, atomic, run_lock):
    the same flow on every registered store (PostgreSQL with MEMORYD_TEST_PG=1)."""
    settings = pipeline_settings(tmp_path / "home")
    settings.store.url = store_url
    with Memory(settings, embedder=embedder, clock=clock) as mem:
        seed_week(mem, settings, clock)
        before = {t for t in snapshot(mem) if t[5] == "active"}
        run = run_pipeline(mem, "dream")
        assert run.status == "ok" and run.counts["short_term_consolidated"] > 0
        assert mem.count(Filters(short_term_only=True)) == 0
        rollback(mem, run.run_id)
        assert {t for t in snapshot(mem) if t[5] == "active"} == before


def test_dream_paces_its_diary_batches_like_digest(embedder: Embedder, tmp_path: Path) -> None:
    """Step 1 sends the diary to extraction batch by batch: ``digest.batch_pause_s``
    between two batches, none before the first, across agents too."""
    from memoryd.pipelines.dream import dream
    from memoryd.pipelines.registry import PipelineContext

    for pause in (0.25, 0.0):
        settings = pipeline_settings(
            tmp_path / str(pause), digest={"max_batch_bytes": 1_000, "batch_pause_s": pause}
        )
        fill_diary(workspace(settings, "alpha"), "2026-03-19", 8)
        fill_diary(workspace(settings, "beta"), "2026-03-19", 8)
        slept: list[float] = []
        with Memory(
            settings, embedder=embedder, clock=FixedClock("2026-03-20T02:00:00+00:00")
        ) as mem:
            ctx = PipelineContext(
                memory=mem, name="dream", run_id="r", clock=mem.clock, sleep=slept.append
            )
            result = dream(ctx)
            added = mem.store.count(Filters(user_id=ctx.user_id))
        assert result.status == "ok" and added > 0
        if pause:
            assert len(slept) >= 3 and set(slept) == {pause}  # >= 2 batches per agent
        else:
            assert slept == []


def test_a_week_old_value_does_not_supersede_a_newer_change(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """The dream carries a week-old short-term memory over as said when it was said: an
    old value it re-reads after the change stays history, and the change stays current."""
    workspace(settings, "alpha")
    user = settings.workspace.user_id
    clock.now = datetime.fromisoformat("2026-03-06T13:58:00+00:00")
    mem.add("The public API gateway timeout is 20 seconds.", user_id=user, agent_id="alpha", run_id="2026-03-06", infer=True)  # fmt: skip
    clock.now = datetime.fromisoformat("2026-03-10T09:30:00+00:00")
    mem.add("We changed the public API gateway timeout to 15 seconds.", user_id=user, agent_id="alpha", infer=True)  # fmt: skip
    clock.now = datetime.fromisoformat("2026-03-14T02:00:00+00:00")
    assert run_pipeline(mem, "dream").status == "ok"

    current = [r.text for r in mem.list(agent_id="alpha", filters=Filters(long_term_only=True), limit=100)]  # fmt: skip
    assert any("15 seconds" in t for t in current), current
    assert not any("20 seconds" in t for t in current), current
    hits = mem.search("what is the API gateway timeout", user_id=user, agent_id="alpha", top_k=3)
    assert "15 seconds" in hits[0].text, [h.text for h in hits]


def test_what_the_dream_reads_in_a_diary_is_said_on_the_diary_day(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """A fact the dream takes from yesterday's diary happened yesterday, like the diary's
    own lines: written at 02:00, it must not rank as newer than the next day's change."""
    root = workspace(settings, "alpha")
    user = settings.workspace.user_id
    write_section(root, "2026-03-10", "16:33", ["**user**: We cut a new release branch: release/2026.06."])  # fmt: skip
    clock.now = datetime.fromisoformat("2026-03-11T02:00:00+00:00")
    assert run_pipeline(mem, "dream").status == "ok"
    dreamt = mem.list(agent_id="alpha", filters=Filters(long_term_only=True), limit=100)
    assert dreamt and all(r.event_at == datetime.fromisoformat("2026-03-10T00:00:00+00:00") for r in dreamt)  # fmt: skip
    # the next day's change, as the diary index stores a line of 2026-03-11
    clock.now = datetime.fromisoformat("2026-03-11T17:51:00+00:00")
    mem.add("Got it, the active release branch is release/2026.04.", user_id=user, agent_id="alpha", infer=False, event_at=datetime.fromisoformat("2026-03-11T00:00:00+00:00"))  # fmt: skip
    clock.now = datetime.fromisoformat("2026-03-16T06:00:00+00:00")
    hits = mem.search("which is the current release branch", user_id=user, agent_id="alpha", top_k=3)  # fmt: skip
    assert "release/2026.04" in hits[0].text, [h.text for h in hits]


def test_a_turn_whose_fact_was_superseded_yields_to_newer_evidence(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """The dream supersedes "alerts go to the #pipeline-alerts Slack channel" with "We moved
    pipeline alerts to #data-alerts"; the diary lines that said the old value (the one the
    fact cites, and the same words on another day) stay as evidence, and rank below a
    newer line that names the current channel, although that one says neither "Slack" nor
    "channel" as the query does (both faces)."""
    from memoryd.workspace import resolve_workspace
    from memoryd.workspace.indexer import index_workspace
    from memoryd.workspace.search import memory_search

    root = workspace(settings, "alpha")
    user = settings.workspace.user_id
    said = [
        ("2026-03-04", "Pipeline alerts go to the #pipeline-alerts Slack channel.", "Noted."),
        # said again: the dream finds it known, so no fact cites this day's line
        ("2026-03-06", "Pipeline alerts go to the #pipeline-alerts Slack channel.", "Yes."),
        ("2026-03-10", "We moved pipeline alerts to #data-alerts.", "Understood."),
        (
            "2026-03-12",
            "Did anyone see the failed load alert?",
            "It was posted to #data-alerts, the pipeline alerts channel, at 04:12.",
        ),
    ]
    dream_each_day(mem, root, clock, said)
    old = [r for r in mem.store.iter_all(Filters(states=[State.SUPERSEDED])) if "Slack" in r.text]
    assert old and old[0].source is not None  # the dream retired the fact it took from the line
    ws = resolve_workspace(settings, "alpha", mem.store)
    index_workspace(mem, ws)
    clock.now = datetime.fromisoformat("2026-03-16T06:00:00+00:00")

    query = "Slack channel for alerts"
    hits = [h.text for h in mem.search(query, user_id=user, agent_id="alpha", top_k=10)]
    assert "#data-alerts" in hits[0], hits
    assert any("#pipeline-alerts Slack" in t for t in hits), hits  # still found, below
    files = [h.hit.text for h in memory_search(mem, ws, query)]
    assert "#data-alerts" in files[0], files


def test_the_reply_that_restated_a_superseded_fact_is_retired_too(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """The fact is taken from the user's line and keeps the reply's other words
    (said_also); once it is superseded, the reply's line says an old value as much as the
    user's does, and a search for the value puts the change first, not the reply."""
    from memoryd.workspace import resolve_workspace
    from memoryd.workspace.indexer import index_workspace
    from memoryd.workspace.search import memory_search

    root = workspace(settings, "alpha")
    said = [
        (
            "2026-03-03",
            "The events topic in Kafka keeps 96 hours of data.",
            "Noted, Kafka retention on the events topic is 96 hours.",
        ),
        ("2026-03-09", "Kafka events retention is 48 hours from today.", "Got it."),
    ]
    dream_each_day(mem, root, clock, said)
    ws = resolve_workspace(settings, "alpha", mem.store)
    index_workspace(mem, ws)
    clock.now = datetime.fromisoformat("2026-03-12T06:00:00+00:00")
    lines = [
        r
        for r in mem.store.iter_all(Filters(agent_id="alpha", origins=[Origin.CHUNK]))
        if "96 hours" in r.text
    ]
    assert len(lines) == 2, [r.text for r in lines]  # the user's line and the reply's
    assert mem.says_superseded(lines) == {r.id for r in lines}
    files = [h.hit.text for h in memory_search(mem, ws, "Kafka retention on the events topic")]
    assert "48 hours" in files[0], files


def test_a_change_puts_the_current_value_above_turns_that_said_the_old_one(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """Omar's on-call week is said three ways: outright, in a reply whose task ("I'll page
    Omar if an alert fires") was closed and archived when it was done, and in passing ("I
    paged Omar, the platform on-call, ..."). Ravi's handover shares no word with "who
    should I page for an alert?", yet it is what a search for that shows first, on both
    faces, with the old turns still found below it."""
    from memoryd.workspace import resolve_workspace
    from memoryd.workspace.indexer import index_workspace
    from memoryd.workspace.search import memory_search

    root = workspace(settings, "ops")
    said = [
        (
            "2026-03-06",
            "Omar is on call this week for the platform team.",
            "Noted, Omar is the platform on-call; I'll page Omar if an alert fires.",
        ),
        (
            "2026-03-10",
            "The disk alert on db-3 fired again.",
            "I paged Omar, the platform on-call, and attached the disk graph.",
        ),
    ]
    dream_each_day(mem, root, clock, said)
    archived = Filters(agent_id="ops", origins=[Origin.FACT], states=[State.ARCHIVED])
    assert any("page Omar" in r.text for r in mem.store.iter_all(archived))  # done, closed
    handover = (
        "2026-03-20",
        "On-call handover: Ravi takes over the platform pager from today.",
        "Understood, Ravi is now the platform on-call engineer.",
    )
    alerting = (
        "2026-03-22",
        "How did the PAY-652 review go?",
        "The PAY-652 review added an alert on queue depth and a runbook step for draining workers.",
    )
    dream_each_day(mem, root, clock, [handover, alerting])
    gone = Filters(agent_id="ops", origins=[Origin.FACT], states=[State.SUPERSEDED])
    superseded = [r.text for r in mem.store.iter_all(gone)]
    assert any("page Omar" in t for t in superseded), superseded  # the archived task too
    assert any("I paged Omar" in t for t in superseded), superseded  # said in passing
    # one change superseded the three: each of them leads to it (their chains join; the
    # first version followed one of them, which one depending on the ids drawn)
    omar = [r.id for r in mem.store.iter_all(gone) if "Omar" in r.text]
    now = mem._current_of(set(omar))
    assert len(omar) == 3 and {i: now[i].text for i in omar} == dict.fromkeys(omar, handover[1])
    ws = resolve_workspace(settings, "ops", mem.store)
    index_workspace(mem, ws)
    clock.now = datetime.fromisoformat("2026-03-23T06:00:00+00:00")
    query = "who should I page for an alert"
    user = settings.workspace.user_id
    found = mem.search(query, user_id=user, agent_id="ops", top_k=10)
    hits = [h.text for h in found]
    print([(round(h.score, 3), h.text[:50]) for h in found])
    assert "Ravi" in hits[0], hits
    assert any("page Omar" in t for t in hits[1:]), hits
    # scored as the turn it replaces at its own age: above that turn by the recency gained
    (omar,) = [h for h in found if "I'll page Omar" in h.text]
    assert omar.parts.decay is not None and found[0].parts.current == found[0].score
    assert found[0].score > omar.score + 0.05, (found[0].score, omar.score)
    files = [h.hit.text for h in memory_search(mem, ws, query)]
    assert "Ravi" in files[0], files
    assert any("page Omar" in t for t in files[1:]), files


def test_a_fact_and_its_reply_in_other_words_are_superseded_together(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """ "Backfills may reprocess at most 31 days of data." and the reply "Noted, the backfill
    window is 31 days." are one fact in two wordings. The change ("the backfill window is
    11 days") matches the reply's words only; both leave what is current. A value of
    another environment said in the same exchange stays."""
    root = workspace(settings, "alpha")
    exchanges = [
        (
            "2026-03-03",
            "Backfills may reprocess at most 31 days of data.",
            "Noted, the backfill window is 31 days.",
        ),
        (
            "2026-03-04",
            "The staging database is on port 5432.",
            "Noted, and the production database uses port 5432 too.",
        ),
        (
            "2026-03-06",
            "We set the backfill limit to 11 days.",
            "Got it, the backfill window is 11 days.",
        ),
        (
            "2026-03-07",
            "The staging database moved to port 6432.",
            "Got it, staging is on 6432 now.",
        ),
        (
            "2026-03-08",
            "We switched the ingestion service from httpx to pycurl this morning.",
            "Understood, the ingestion service now uses pycurl for HTTP.",
        ),
        (
            "2026-03-20",
            "Ingestion is on aiohttp now, the migration landed.",
            "Great, ingestion's HTTP client library is aiohttp from now on.",
        ),
    ]
    dream_each_day(mem, root, clock, exchanges)

    def current(word: str) -> list[str]:
        facts = mem.list(agent_id="alpha", filters=Filters(long_term_only=True), limit=100)
        return [r.text for r in facts if word in r.text]

    assert current("31 days") == [], current("days")
    assert current("11 days"), current("days")
    assert current("production") == ["Noted, and the production database uses port 5432 too."]
    assert not any("staging" in t for t in current("5432")), current("5432")
    # a value that is a name, not a number: the statement goes with its reply
    assert current("pycurl") == [], current("pycurl")
    assert current("aiohttp"), current("HTTP")


def test_every_fact_a_change_supersedes_takes_its_reply_along(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """The change replaces the old value in two facts (the statement and a later mention);
    the reply said beside either, in words of its own ("must be 100 minutes fresh"), goes
    too."""
    root = workspace(settings, "alpha")
    exchanges = [
        (
            "2026-03-03",
            "The freshness SLA of the sales mart is 100 minutes.",
            "Noted, the sales mart must be 100 minutes fresh.",
        ),
        (
            "2026-03-04",
            "The sales mart is late again.",
            "The sales mart is 20 minutes past its 100 minutes freshness SLA; I opened an incident.",
        ),
        (
            "2026-03-13",
            "We relaxed the sales mart SLA to 80 minutes.",
            "Got it, sales mart freshness is 80 minutes.",
        ),
    ]
    dream_each_day(mem, root, clock, exchanges)
    facts = mem.list(agent_id="alpha", filters=Filters(long_term_only=True), limit=100)
    assert [r.text for r in facts if "100 minutes" in r.text] == [], [r.text for r in facts]


def test_a_change_matching_only_the_reply_s_words_supersedes_the_fact(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """The user states a fact, the assistant restates it in words of its own; the dream
    keeps one memory with both wordings. Weeks later the change is said in the reply's
    words only ("events retention is 48 hours"): compared in each wording, the fact is
    superseded (compared only as the user said it, it stayed current beside the change)."""
    root = workspace(settings, "alpha")
    exchanges = [
        (
            "2026-03-03",
            "The events topic in Kafka keeps 96 hours of data.",
            "Noted, Kafka retention on the events topic is 96 hours.",
        ),
        (
            "2026-03-17",
            "Kafka events retention is 48 hours from today.",
            "Got it, events retention is 48 hours.",
        ),
    ]
    dream_each_day(mem, root, clock, exchanges)
    facts = mem.list(agent_id="alpha", filters=Filters(long_term_only=True), limit=100)
    assert [r.text for r in facts if "96 hours" in r.text] == [], [r.text for r in facts]
    assert any("48 hours" in r.text for r in facts)
    old = [r for r in mem.store.iter_all(Filters(states=[State.SUPERSEDED])) if "96" in r.text]
    assert old and old[0].metadata["said_also"] == [exchanges[0][2]]
