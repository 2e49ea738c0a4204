"""Tasks end: the statement that finishes a task closes it, and no pipeline brings a
closed or archived task back as active (issue 31, item 4). Real store, real model."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.extract.tasks import completion, match_tasks, stem
from memoryd.models import Filters, State
from memoryd.pipelines.runs import run_pipeline
from memoryd.settings import Settings
from tests.pipelines_kit import FixedClock, pipeline_settings, workspace, write_section

OPEN = [
    ("keys", "Rotate the AWS access keys by Friday"),
    ("pr482", "Review PR #482 tomorrow"),
    ("pr483", "Review PR #483 tomorrow"),
    ("runbook", "I need to update the staging runbook"),
    ("dentist", "Remind me to call the dentist next week"),
]


@pytest.mark.parametrize(
    ("said", "closes"),
    [
        ("Rotated the AWS keys this morning.", ["keys"]),
        ("assistant: Great, the AWS keys are rotated now.", ["keys"]),
        ("PR #482 merged.", ["pr482"]),
        ("I'm done with the review of #483", ["pr483"]),
        ("We updated the staging runbook", ["runbook"]),
        ("Called the dentist, the appointment is on the 3rd", ["dentist"]),
        # not finished: future, negated, a question, trouble, chit-chat, another PR
        ("I will rotate the keys tomorrow", []),
        ("I didn't rotate the keys", []),
        ("Did you rotate the AWS keys?", []),
        ("The build failed again", []),
        ("I'm heading out for the day, see you tomorrow.", []),
        ("PR #490 merged.", []),
        # which review? two are open: the statement does not say, so nothing closes
        ("Done with the review.", []),
    ],
)
def test_a_completion_closes_the_task_it_finishes(said: str, closes: list[str]) -> None:
    assert [m.task_id for m in match_tasks(said, OPEN)] == closes


def test_one_task_stored_twice_closes_twice_and_the_match_says_why() -> None:
    both = [("short", "Review PR #482 tomorrow"), ("long", "Review PR #482 tomorrow")]
    found = match_tasks("PR #482 merged", both)
    assert sorted(m.task_id for m in found) == ["long", "short"]
    assert "same 482" in found[0].why
    assert stem("rotated") == stem("rotate") == stem("rotating")
    assert completion("Rotate the AWS keys by Friday") is None  # a task, not its end


def test_both_wordings_of_a_task_close_and_a_statement_may_say_more() -> None:
    """The user's request and the assistant's promise are one task, in two memories."""
    cert = [
        ("asked", "Renew the TLS certificate for api.orion.dev before the 20th."),
        ("promised", "Noted, I'll renew the api.orion.dev TLS certificate before the 20th."),
        ("other", "Renew the TLS certificate for docs.orion.dev before the 20th."),
    ]
    for said in (
        "Renewed the TLS certificate for api.orion.dev, it is valid until next year.",
        "Done, the new certificate for api.orion.dev is live.",
    ):
        assert [m.task_id for m in match_tasks(said, cert)] == ["asked", "promised"], said
    scan = [
        ("asked", "Scan the staging tables for PII before the audit."),
        ("promised", "I'll scan the staging tables for PII before the audit."),
    ]
    found = match_tasks("Finished the PII scan: two columns masked.", scan)
    assert sorted(m.task_id for m in found) == ["asked", "promised"]
    assert match_tasks("Benchmarked the new search ranking: recall is up 4 points.", [
        ("bench", "Benchmark the new search ranking before the demo on Friday."),
    ])  # fmt: skip
    assert not match_tasks("I'll renew the certificate later today.", cert)
    # the promise is one to remind, and names less than the request ("I'll" names nothing)
    plumber = [
        ("asked", "Call the plumber about the leaking tap tomorrow."),
        ("promised", "OK, I'll remind you to call the plumber tomorrow."),
    ]
    found = match_tasks("Called the plumber, he comes on Thursday to fix the tap.", plumber)
    assert sorted(m.task_id for m in found) == ["asked", "promised"]


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


def dream_after(mem: Memory, settings: Settings, clock: FixedClock, agent: str, said: list[str]) -> int:  # fmt: skip
    """Write ``said`` to ``agent``'s diary of 2026-03-21, run that night's dream: how many
    tasks it closed."""
    write_section(workspace(settings, agent), "2026-03-21", "16:00", said)
    clock.now = datetime.fromisoformat("2026-03-22T02:00:00+00:00")
    return int(run_pipeline(mem, "dream").counts["tasks_closed"])


def active_tasks(mem: Memory) -> list[str]:
    return sorted(
        r.text for r in mem.store.iter_all(Filters(agent_id="alpha", categories=["task"]))
    )


def test_the_dream_closes_a_task_finished_in_the_diary(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    root = workspace(settings, "alpha")
    write_section(root, "2026-03-20", "09:00", ["**user**: Rotate the AWS access keys by Friday."])
    write_section(root, "2026-03-20", "10:00", ["**user**: Review PR #482 tomorrow."])
    clock.now = datetime.fromisoformat("2026-03-21T02:00:00+00:00")
    run_pipeline(mem, "dream")
    assert active_tasks(mem) == [
        "Review PR #482 tomorrow.",
        "Rotate the AWS access keys by Friday.",
    ]
    (keys,) = [r.id for r in mem.store.iter_all(Filters(agent_id="alpha")) if "AWS" in r.text]

    write_section(root, "2026-03-21", "16:00", ["**user**: Rotated the AWS keys this afternoon."])
    clock.now = datetime.fromisoformat("2026-03-22T02:00:00+00:00")
    run = run_pipeline(mem, "dream")
    assert run.counts["tasks_closed"] == 1
    assert active_tasks(mem) == ["Review PR #482 tomorrow."]
    closed = mem.get(keys)  # the same memory (the offline reconciler may have reworded it)
    assert closed.state == State.ARCHIVED
    assert closed.metadata["closed_at"].startswith("2026-03-22")
    assert "Rotated the AWS keys" in closed.metadata["closed_by"]
    history = mem.history(closed.id)
    assert "task closed" in (history[-1].reason or "")
    assert "Tasks closed by a statement that finished them: 1" in (root / "DREAMS.md").read_text()


def test_a_week_old_short_term_task_is_not_carried_back_after_decay_archived_it(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """The issue's resurrection: decay archived "review PR #482 (tomorrow)"; the dream
    then re-added it from its week-old short-term copy as a fresh, active task."""
    workspace(settings, "alpha")
    task = {"user_id": "default", "agent_id": "alpha", "category": "task"}
    short = mem.add("Review PR #482 tomorrow", run_id="2026-03-20", **task)[0].id
    long = mem.add("I need to review PR #482 tomorrow", **task)[0].id
    clock.now += timedelta(days=7, hours=14)
    decay = run_pipeline(mem, "decay")
    assert decay.counts["archived"] == 1 and mem.get(long).state == State.ARCHIVED
    dream = run_pipeline(mem, "dream")
    assert dream.counts["short_term_left_out"] == 1
    assert dream.counts["short_term_consolidated"] == 0
    assert active_tasks(mem) == []  # not back as active
    assert mem.get(short, include_deleted=True).state == State.DELETED
    assert "task older than" in (mem.history(short)[-1].reason or "")


def test_chit_chat_is_not_consolidated(mem: Memory, settings: Settings, clock: FixedClock) -> None:
    workspace(settings, "alpha")
    mem.add("Noted, I'll keep that in mind.", user_id="default", agent_id="alpha",
            run_id="2026-03-20")  # fmt: skip
    mem.add("The billing service listens on port 8230", user_id="default", agent_id="alpha",
            run_id="2026-03-20")  # fmt: skip
    clock.now += timedelta(days=8)
    run = run_pipeline(mem, "dream")
    assert run.counts["short_term_left_out"] == 1 and run.counts["short_term_consolidated"] == 1
    long_term = [r.text for r in mem.store.iter_all(Filters(agent_id="alpha", long_term_only=True))]
    assert long_term == ["The billing service listens on port 8230"]


def test_the_digests_short_term_copies_close_too_and_never_come_back(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """The digest stores a task as short-term memory (category short_term: the tier, not
    the topic); closing missed those copies, and a week later the dream carried them to
    long-term as fresh open tasks (bench/weeks: "Send Ravi the capacity plan by Tuesday"
    back after "Sent Ravi the capacity plan")."""
    from memoryd.pipelines import diary

    workspace(settings, "ops")

    def say(user: str, assistant: str) -> None:
        turn = [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
        assert diary.capture(mem, agent_id="ops", messages=turn).written

    clock.now = datetime.fromisoformat("2026-03-16T10:00:00+00:00")
    say("Send Ravi the capacity plan by Tuesday.", "Noted, I'll send Ravi the plan by Tuesday.")
    closed = 0
    for day in range(9):
        clock.now = datetime.fromisoformat("2026-03-16T19:00:00+00:00") + timedelta(days=day)
        run_pipeline(mem, "digest")
        clock.now += timedelta(hours=7)
        closed += run_pipeline(mem, "dream").counts.get("tasks_closed", 0)
        if day == 1:
            clock.now = datetime.fromisoformat("2026-03-18T11:00:00+00:00")
            say("Sent Ravi the capacity plan for the next quarter.", "Ravi has it now.")
    open_tasks = [
        r.text
        for r in mem.store.iter_all(Filters(agent_id="ops"))
        if "capacity plan by" in r.text or "I'll send" in r.text
    ]
    assert open_tasks == []
    done = Filters(agent_id="ops", states=[State.ARCHIVED])
    copies = [r for r in mem.store.iter_all(done) if "capacity plan by" in r.text]
    # the long-term task and the digest's short-term copy, each closed ("Noted, I'll send
    # Ravi the plan by Tuesday." is the same task in other words: one memory)
    assert {r.run_id is None for r in copies} == {True, False}, copies
    assert closed == len(copies)


def test_work_stored_under_its_topic_closes_too_and_facts_do_not(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """A task that names AWS is classed `system`, a promise or an imperative with a
    deadline may have no to-do marker at all: they close all the same; a plain fact
    and the agent's own MEMORY.md lines never do."""
    from memoryd.extract.tasks import wants_doing

    assert wants_doing("system", "Will do, I'll rotate the AWS access keys before Friday.")
    assert wants_doing(None, "Renew the TLS certificate for api.orion.dev before the 20th.")
    assert not wants_doing(None, "The staging cluster runs Kubernetes 1.31.")
    ids = {
        text: mem.add(text, user_id="default", agent_id="ops", category=cat, metadata=meta)[0].id
        for text, cat, meta in [
            ("Will do, I'll rotate the AWS access keys before Friday.", "system", None),
            ("Upgrade the staging cluster to Kubernetes 1.31 this week.", None, None),
            ("The AWS access keys are rotated every quarter.", "system", None),
            ("Rotate the AWS access keys before every audit.", None, {"evergreen": True}),
        ]
    }
    closed = dream_after(mem, settings, clock, "ops", [
        "**user**: Rotated the AWS access keys; the old ones are revoked.",
        "**user**: The staging cluster is upgraded to Kubernetes 1.31.",
    ])  # fmt: skip
    assert closed == 2
    states = {text: mem.get(mid).state for text, mid in ids.items()}
    assert list(states.values()) == [State.ARCHIVED, State.ARCHIVED, State.ACTIVE, State.ACTIVE]


def test_work_due_before_an_event_closes_and_a_rule_for_every_event_does_not(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """ "Fix the flaky test before the release" has no date, yet it is work to do: once
    fixed it is closed, not kept as a fact that the test is still to fix (weeks, eng seed
    21: it stayed open for the run's last four days). A rule for every merge is no task,
    and a report that the work was done once does not close it."""
    from memoryd.extract.tasks import wants_doing

    due = [
        "Fix the flaky test test_refund_rounding before the release.",
        "Scan the staging tables for PII before the audit.",
        "Benchmark the new search ranking before the demo on Friday.",
    ]
    rule = "Always rebase onto main before the merge."
    assert all(wants_doing(None, t) for t in due) and not wants_doing(None, rule)
    ids = {t: mem.add(t, user_id="default", agent_id="dev")[0].id for t in [*due, rule]}
    closed = dream_after(mem, settings, clock, "dev", [
        "**user**: Fixed the flaky test_refund_rounding, it was a timezone assumption.",
        "**assistant**: Scanned the staging tables for PII; none found.",
        "**user**: Rebased onto main, the merge is clean.",
    ])  # fmt: skip
    assert closed == 2
    states = [mem.get(ids[t]).state for t in [*due, rule]]
    assert states == [State.ARCHIVED, State.ARCHIVED, State.ACTIVE, State.ACTIVE]


@pytest.mark.parametrize(
    "fact",
    [
        # a rule or a state before an event, not work due before it
        "Rotate the AWS access keys before every audit.",
        "Deploys are frozen before the release.",
        "Run the integration tests before merging.",
        # when a fact starts to hold is not a deadline
        "Alerts post in #data-alerts from today, not #pipeline-alerts.",
        "Nightly ETL is at 3:50 UTC from today.",
        "Standups move to 9:30 from next week.",
        "Starting tomorrow the freshness SLA is 2 hours.",
        # "by" names who, not when
        "With 14 parallel jobs the CI pipeline is bound by the integration suite.",
        "Renew the cert by marketing request",
    ],
)
def test_a_fact_with_a_time_in_it_is_not_work_to_do(fact: str) -> None:
    from memoryd.extract.tasks import wants_doing

    assert not wants_doing(None, fact)


def test_a_statement_does_not_close_a_fact_that_says_since_when(
    mem: Memory, settings: Settings, clock: FixedClock
) -> None:
    """A fact ("Alerts post in #data-alerts from today") is not closed by the report that later
    names #data-alerts does not close it as if it were done work (it was archived, and the
    change to the next channel then had nothing current to supersede)."""
    ids = [
        mem.add(text, user_id="default", agent_id="ops")[0].id
        for text in (
            "Alerts post in #data-alerts from today, not #pipeline-alerts.",
            "Nightly ETL is at 3:50 UTC from today.",
            "Deploy the ETL fix by Friday.",
        )
    ]
    closed = dream_after(mem, settings, clock, "ops", [
        "**assistant**: It was posted to #data-alerts, the pipeline alerts channel, at 04:12.",
        "**user**: The nightly ETL started at 3:50 UTC and finished late.",
        "**user**: Deployed the ETL fix.",
    ])  # fmt: skip
    assert closed == 1
    assert [mem.get(i).state for i in ids] == [State.ACTIVE, State.ACTIVE, State.ARCHIVED]
