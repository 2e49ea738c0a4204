"""Inferred commitments (pipelines/commitments.py): dated intentions in the diary become
follow-ups, delivered when due through a heartbeat, closed or expired; opt-in, per
agent and channel, never in MEMORY.md. Real diary files, the real store; the LLM is
the fake OpenAI server (tests/fake_llm.py); CLI, HTTP and MCP each once."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from memoryd.api.app import create_app
from memoryd.cli import app as cli_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.pipelines import commitments
from memoryd.pipelines.diary import capture
from memoryd.pipelines.runs import run_pipeline
from memoryd.pipelines.scheduler import enabled_specs
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM
from tests.mcp_client import McpSession
from tests.pipelines_kit import FixedClock, face_env, pipeline_settings, workspace

DAY = date(2026, 3, 10)  # a Tuesday
AT = time(9, 0)


def test_dated_intentions_are_found_with_their_due_times() -> None:
    found = commitments.detect(
        "user: I have an interview tomorrow at the bank.\n"
        "user: Remind me on Friday to call the landlord.\n"
        "user: I'll send the report in 3 days.\n"
        "user: The demo is on 2026-03-20.\n"
        "user: I like tea. Some day I will learn the piano.\n"
        "user: Tomorrow is sunny.",
        DAY,
        AT,
        UTC,
    )
    due = {text: when for text, when in found}
    assert due == {
        "Follow up: I have an interview tomorrow at the bank.": datetime(
            2026, 3, 11, 18, 0, tzinfo=UTC
        ),
        "Follow up: Remind me on Friday to call the landlord.": datetime(
            2026, 3, 13, 18, 0, tzinfo=UTC
        ),
        "Follow up: I'll send the report in 3 days.": datetime(2026, 3, 13, 9, 0, tzinfo=UTC),
        "Follow up: The demo is on 2026-03-20.": datetime(2026, 3, 20, 18, 0, tzinfo=UTC),
    }  # undated wishes and dated small talk are not commitments


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock("2026-03-10T09:30:00+00:00")


def make_settings(tmp_path: Path, **commit: Any) -> Settings:
    settings = pipeline_settings(tmp_path, commitments={"enabled": True, **commit})
    for agent in ("dev", "ops"):
        workspace(settings, agent)
    return settings


@pytest.fixture
def mem(tmp_path: Path, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(make_settings(tmp_path), embedder=embedder, clock=clock)
    yield m
    m.close()


def say(mem: Memory, agent: str, text: str, channel: str | None = None) -> None:
    result = capture(
        mem,
        agent_id=agent,
        channel=channel,
        messages=[{"role": "user", "content": text}, {"role": "assistant", "content": "Ok!"}],
    )
    assert result.written, result


def test_off_by_default(tmp_path: Path, embedder: Embedder, clock: FixedClock) -> None:
    settings = pipeline_settings(tmp_path)
    workspace(settings, "dev")
    with Memory(settings, embedder=embedder, clock=clock) as m:
        say(m, "dev", "I have an interview tomorrow, wish me luck.")
        record = run_pipeline(m, "commitments")
        assert any("commitments are off" in n for n in record.notes)
        assert commitments.listing(m, "dev") == []
        # off, it is neither scheduled nor caught up; on, it is
        assert "commitments" not in {spec.name for spec in enabled_specs(m)}
        m.settings.commitments.enabled = True
        assert "commitments" in {spec.name for spec in enabled_specs(m)}


def test_inferred_once_delivered_when_due_then_closed_or_expired(
    mem: Memory, clock: FixedClock
) -> None:
    say(mem, "dev", "I have an interview tomorrow, wish me luck.", channel="telegram")
    say(mem, "dev", "Remind me on Friday to renew the domain.", channel="slack")
    say(mem, "ops", "The backup restore drill is next week, I have a meeting about it.")
    run_pipeline(mem, "commitments")
    run_pipeline(mem, "commitments")  # again: the same ones, nothing twice
    dev = commitments.listing(mem, "dev")
    assert [(c.channel, c.status) for c in dev] == [("telegram", "pending"), ("slack", "pending")]
    assert dev[0].source.startswith("memory/2026-03-10.md#L")
    assert [c.agent for c in commitments.listing(mem, "ops")] == ["ops"]  # agents apart

    assert commitments.due(mem, "dev") == []  # nothing due yet
    clock.now = datetime(2026, 3, 11, 19, 0, tzinfo=UTC)
    assert commitments.due(mem, "dev", "slack") == []  # the interview's channel is telegram
    (delivered,) = commitments.due(mem, "dev", "telegram")
    assert "interview" in delivered.text and delivered.status == "delivered"
    assert commitments.due(mem, "dev") == []  # delivered once
    assert commitments.close(mem, "dev", delivered.id).status == "done"
    with pytest.raises(NotFoundError):
        commitments.close(mem, "dev", "nope")
    with pytest.raises(InvalidInputError):
        commitments.due(mem, "dev", "bad channel\n")

    clock.now = datetime(2026, 3, 13, 18, 0, tzinfo=UTC) + timedelta(hours=49)
    assert commitments.due(mem, "dev") == []  # the Friday one was never collected ...
    assert [c.status for c in commitments.listing(mem, "dev")] == ["done", "expired"]

    # errands, not knowledge: nowhere in MEMORY.md, search or promotion
    run_pipeline(mem, "sync")
    run_pipeline(mem, "promote")
    memory_md = mem.settings.home / "workspaces" / "dev" / "MEMORY.md"
    assert not memory_md.exists() or "interview" not in memory_md.read_text()
    hits = mem.search("Follow up interview", user_id=mem.settings.workspace.user_id)
    assert not any(h.text.startswith("Follow up:") for h in hits)


def test_at_most_max_per_day(tmp_path: Path, embedder: Embedder, clock: FixedClock) -> None:
    with Memory(make_settings(tmp_path, max_per_day=2), embedder=embedder, clock=clock) as m:
        for n, event in enumerate(("exam", "dentist appointment", "flight", "presentation")):
            say(m, "dev", f"I have a {event} tomorrow, number {n}.")
        record = run_pipeline(m, "commitments")
        assert record.counts["added"] == 2 and record.counts["over_daily_cap"] == 2
        assert len(commitments.listing(m, "dev")) == 2


def test_the_llm_infers_and_a_bad_answer_falls_back_to_the_rules(
    tmp_path: Path, embedder: Embedder, clock: FixedClock
) -> None:
    settings = make_settings(tmp_path)
    with FakeLLM() as fake:
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = fake.url
        with Memory(settings, embedder=embedder, clock=clock) as m:
            say(m, "dev", "My sister lands on Thursday evening, I'm picking her up.")
            say(m, "dev", "I have a dentist appointment tomorrow.")
            fake.script(
                json.dumps(
                    {
                        "commitments": [
                            {"text": "Ask how the pickup went", "due": "2026-03-12T21:00"}
                        ]
                    }
                ),
                "this is not JSON",
            )
            record = run_pipeline(m, "commitments")
            assert record.counts["llm_fallbacks"] == 1
            texts = [c.text for c in commitments.listing(m, "dev")]
            assert (
                texts
                == [
                    "Follow up: I have a dentist appointment tomorrow.",  # the rules, after the bad answer
                    "Ask how the pickup went",
                ]
            )
            assert "Said on 2026-03-10" in json.dumps(fake.requests[0])


def test_cli_http_and_mcp(tmp_path: Path, embedder: Embedder, live_server: Any) -> None:
    # the faces run on the real clock: these March commitments must not have expired
    settings = make_settings(tmp_path, expire_after_hours=1e6)
    past = FixedClock("2026-03-10T09:30:00+00:00")
    with Memory(settings, embedder=embedder, clock=past) as m:
        say(m, "dev", "I have an interview tomorrow.", channel="telegram")
        say(m, "dev", "The launch is in 2 days, remind me.")
        run_pipeline(m, "commitments")  # both are long due by the real clock
    env = face_env(
        tmp_path,
        MEMORYD_COMMITMENTS__ENABLED="true",
        MEMORYD_COMMITMENTS__EXPIRE_AFTER_HOURS="1000000",
    )
    out = CliRunner().invoke(cli_app, ["commitments", "list", "-a", "dev", "--json"], env=env)
    assert out.exit_code == 0, out.output
    assert [c["status"] for c in json.loads(out.output)] == ["pending", "pending"]
    m = Memory(settings, embedder=embedder)
    try:
        with live_server(create_app(memory=m)) as server:
            due = httpx.post(
                f"{server.url}/v1/commitments/due",
                params={"agent_id": "dev", "channel": "telegram"},
            )
            assert due.status_code == 200, due.text
            (one,) = due.json()["results"]
            done = httpx.post(
                f"{server.url}/v1/commitments/{one['id']}/done", params={"agent_id": "dev"}
            )
            assert done.json()["status"] == "done"
            missing = httpx.post(
                f"{server.url}/v1/commitments/zzz/done", params={"agent_id": "dev"}
            )
            assert missing.status_code == 404 and "commitments list" in missing.text
    finally:
        m.close()
    memoryd = str(Path(sys.executable).with_name("memoryd"))
    with McpSession.stdio(memoryd, ["mcp"], env) as mcp:
        (left,) = mcp.call("memory_commitments", action="due")["results"]
        assert "launch" in left["text"]
        assert mcp.call("memory_commitments", action="due")["results"] == []
        closed = mcp.call("memory_commitments", action="done", commitment_id=left["id"])
        assert closed["result"]["status"] == "done"
    out = CliRunner().invoke(cli_app, ["commitments", "due", "-a", "dev"], env=env)
    assert out.exit_code == 0 and "nothing due" in out.output


def test_a_turn_posted_with_its_channel_is_followed_up_through_every_face(
    tmp_path: Path, embedder: Embedder, live_server: Any
) -> None:
    """On the real clock: turns posted to POST /v1/diary with a channel (yesterday's, by
    their timestamp), the pass run by `memoryd run commitments`, delivered by the CLI
    heartbeat, listed over HTTP, closed by the CLI and listed and delivered over MCP."""
    settings = make_settings(tmp_path)
    env = face_env(tmp_path, MEMORYD_COMMITMENTS__ENABLED="true")
    runner = CliRunner()
    said = datetime.now(UTC) - timedelta(hours=20)
    turns = [
        ("slack", said, "I have a meeting in 2 hours about the budget for the new office."),
        (None, said + timedelta(minutes=5), "The launch demo is in 3 hours, remind me after it."),
    ]
    m = Memory(settings, embedder=embedder)
    try:
        with live_server(create_app(memory=m)) as server:
            url, dev = server.url, {"agent_id": "dev"}
            for channel, at, text in turns:
                posted = httpx.post(
                    f"{url}/v1/diary",
                    json={
                        **dev, "channel": channel, "timestamp": at.isoformat(),
                        "messages": [{"role": "user", "content": text},
                                     {"role": "assistant", "content": "Noted, I will ask."}],
                    },
                )  # fmt: skip
                assert posted.status_code == 200 and posted.json()["written"], posted.text
            ran = runner.invoke(cli_app, ["run", "commitments", "--agent", "dev"], env=env)
            assert ran.exit_code == 0, ran.output
            out = runner.invoke(
                cli_app,
                ["commitments", "due", "-a", "dev", "--channel", "slack", "--json"],
                env=env,
            )
            assert out.exit_code == 0, out.output
            (meeting,) = json.loads(out.output)
            assert meeting["channel"] == "slack" and "budget" in meeting["text"]
            assert meeting["source"].startswith(f"memory/{said.date().isoformat()}.md#L")
            listed = httpx.get(f"{url}/v1/commitments", params={**dev, "status": "delivered"})
            assert [c["id"] for c in listed.json()["results"]] == [meeting["id"]]
            out = runner.invoke(
                cli_app, ["commitments", "done", "-a", "dev", meeting["id"]], env=env
            )
            assert out.exit_code == 0 and f"{meeting['id']}  done" in out.output
            with McpSession.http(f"{url}/mcp", {"X-Memoryd-Agent": "dev"}) as mcp:
                every = mcp.call("memory_commitments", action="list")["results"]
                assert [(c["channel"], c["status"]) for c in every] == [
                    ("slack", "done"),
                    ("default", "pending"),
                ]
                assert (
                    mcp.call("memory_commitments", action="due", channel="slack")["results"] == []
                )
                (launch,) = mcp.call("memory_commitments", action="due")["results"]
                assert "launch demo" in launch["text"] and launch["status"] == "delivered"
            done = httpx.get(f"{url}/v1/commitments", params={**dev, "status": "done"})
            assert [c["id"] for c in done.json()["results"]] == [meeting["id"]]
    finally:
        m.close()
    memory_md = settings.home / "workspaces" / "dev" / "MEMORY.md"
    assert not memory_md.exists() or "budget" not in memory_md.read_text()


def test_a_diary_symlinked_out_of_the_workspace_is_not_read(mem: Memory, tmp_path: Path) -> None:
    """A diary that is a symlink to a file outside the workspace (someone else's text)
    yields no follow-ups: the commitments pipeline reads through the safe file layer."""
    say(mem, "dev", "Remind me on Friday to wire 5,000 EUR to the new IBAN.")
    diary = workspace(mem.settings, "dev") / "memory" / "2026-03-10.md"
    planted = tmp_path / "planted.md"
    diary.rename(planted)
    diary.symlink_to(planted)
    record = run_pipeline(mem, "commitments")
    assert commitments.listing(mem, "dev") == [], record.notes


def exchange(mem: Memory, user: str, assistant: str, channel: str | None = None) -> None:
    result = capture(
        mem,
        agent_id="dev",
        channel=channel,
        messages=[{"role": "user", "content": user}, {"role": "assistant", "content": assistant}],
    )
    assert result.written, result


@pytest.fixture
def roomy(tmp_path: Path, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    """Room for four commitments a day (three is the default cap)."""
    m = Memory(make_settings(tmp_path, max_per_day=4), embedder=embedder, clock=clock)
    yield m
    m.close()


def test_the_users_remind_me_and_the_assistants_i_will_are_one_commitment(
    roomy: Memory, clock: FixedClock
) -> None:
    mem = roomy
    exchange(
        mem,
        "Remind me on Friday to renew the domain.",
        "Sure, I'll remind you on Friday to renew the domain.",
    )
    clock.now += timedelta(minutes=10)  # the next exchange: asked, then promised
    exchange(mem, "Can you remind me tomorrow to call the landlord?", "Will do.")
    clock.now += timedelta(minutes=2)
    exchange(
        mem,
        "And the landlord call, can you handle that?",
        "I will make sure to remind you tomorrow about calling the landlord.",
    )
    clock.now += timedelta(minutes=2)  # a bare promise: about what was just asked
    exchange(mem, "Also remind me on Thursday to water the plants.", "I'll remind you on Thursday.")
    clock.now += timedelta(minutes=2)  # a promise of something else, due the same Friday
    exchange(mem, "What else is open?", "I'll send you the quarterly report on Friday.")
    first = run_pipeline(mem, "commitments")
    again = run_pipeline(mem, "commitments")  # nothing added, nothing merged twice
    listed = commitments.listing(mem, "dev")
    assert [c.text for c in listed] == [
        "Follow up: Can you remind me tomorrow to call the landlord?",
        "Follow up: Also remind me on Thursday to water the plants.",
        "Follow up: Remind me on Friday to renew the domain.",
        "Follow up: I'll send you the quarterly report on Friday.",
    ]
    assert first.counts.get("merged") == 3 and "merged" not in again.counts
    by_text = {c.text: c for c in listed}
    domain = by_text["Follow up: Remind me on Friday to renew the domain."]
    assert [a["text"] for a in domain.also] == [
        "Follow up: Sure, I'll remind you on Friday to renew the domain."
    ]
    assert domain.also[0]["source"] == domain.source  # one exchange
    landlord = by_text["Follow up: Can you remind me tomorrow to call the landlord?"]
    assert landlord.also[0]["source"] != landlord.source  # the next exchange
    assert by_text["Follow up: I'll send you the quarterly report on Friday."].also == []


def test_the_same_words_in_another_channel_or_days_later_are_another_commitment(
    mem: Memory, clock: FixedClock
) -> None:
    exchange(mem, "Remind me on Friday to renew the domain.", "Ok!", channel="slack")
    exchange(
        mem,
        "The domain renewal again",
        "I'll remind you on Friday to renew the domain.",
        channel="telegram",
    )
    run_pipeline(mem, "commitments")
    assert [c.channel for c in commitments.listing(mem, "dev")] == ["slack", "telegram"]


def test_what_the_llm_infers_twice_for_one_intent_is_one_commitment(
    tmp_path: Path, embedder: Embedder, clock: FixedClock
) -> None:
    settings = make_settings(tmp_path)
    with FakeLLM() as fake:
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = fake.url
        with Memory(settings, embedder=embedder, clock=clock) as m:
            exchange(
                m,
                "Remind me on Friday to renew the domain.",
                "Sure, I'll remind you on Friday to renew the domain.",
            )
            fake.script(
                json.dumps(
                    {
                        "commitments": [
                            {
                                "text": "Remind the user to renew the domain",
                                "due": "2026-03-13T18:00",
                            },
                            {"text": "Renew the domain reminder", "due": "2026-03-13T09:00"},
                        ]
                    }
                )
            )
            record = run_pipeline(m, "commitments")
            (only,) = commitments.listing(m, "dev")
            assert only.text == "Remind the user to renew the domain"
            assert [a["text"] for a in only.also] == ["Renew the domain reminder"]
            assert record.counts.get("merged") == 1
