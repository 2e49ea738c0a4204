"""Extraction and reconciliation with an LLM: a real local endpoint speaking the
OpenAI protocol with scripted answers (tests/fake_llm.py), the real model and store."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import UpstreamError
from memoryd.extract import DIGEST_EXTRACTION_PROMPT
from memoryd.models import Event, Filters, Origin, State
from memoryd.settings import Settings
from tests.fake_llm import FakeLLM, Reply


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as server:
        yield server


@pytest.fixture
def mem(settings: Settings, embedder: Embedder, clock, fake: FakeLLM) -> Iterator[Memory]:  # type: ignore[no-untyped-def]
    settings.llm.provider = "openai"
    settings.llm.openai.base_url = fake.url
    settings.llm.openai.timeout_s = 1.0
    with Memory(settings, embedder=embedder, clock=clock) as m:
        yield m


def facts(*items: str) -> str:
    return json.dumps({"facts": list(items)})


def decisions(*items: dict) -> str:
    return json.dumps({"decisions": list(items)})


def everything(mem: Memory) -> int:
    return mem.store.count(Filters(states=[]))


def test_the_llm_extracts_and_the_facts_are_stored(mem: Memory, fake: FakeLLM) -> None:
    fake.script(facts("Prefers dark mode", "Lives in Lisbon"))
    events = mem.add(
        messages=[
            {"role": "user", "content": "hey, I live in Lisbon and I like dark mode"},
            {"role": "assistant", "content": "Noted!"},
        ],
        user_id="alice",
        infer=True,
    )
    assert [(e.event, e.memory) for e in events] == [
        (Event.ADD, "Prefers dark mode"),
        (Event.ADD, "Lives in Lisbon"),
    ]
    assert {mem.get(e.id).origin for e in events} == {Origin.FACT}  # type: ignore[arg-type]
    (request,) = fake.requests  # nothing stored yet: no reconciliation call was needed
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    assert '{"facts": [' in system and "Today is 2026-03-27" in system
    assert "user: hey, I live in Lisbon" in user and "assistant: Noted!" in user


def test_custom_and_named_prompts_reach_the_model(mem: Memory, fake: FakeLLM) -> None:
    fake.script(facts("[dev] shipped PR #129"), facts())
    mem.add("Today I shipped PR #129.", user_id="u", infer=True, prompt="List finished tasks only.")
    mem.add("log", user_id="u", infer=True, prompt=DIGEST_EXTRACTION_PROMPT)
    first, second = (r["messages"][0]["content"] for r in fake.requests)
    assert first.startswith("List finished tasks only.") and '{"facts": [' in first
    assert second.startswith(DIGEST_EXTRACTION_PROMPT)


def test_fenced_json_with_a_trailing_comma_is_repaired_without_asking_again(
    mem: Memory, fake: FakeLLM
) -> None:
    fake.script('Here are the facts:\n```json\n{"facts": ["Uses uv for packaging",]}\n```')
    events = mem.add("I use uv.", user_id="u", infer=True)
    assert [e.memory for e in events] == ["Uses uv for packaging"] and len(fake.requests) == 1


def test_garbage_is_retried_once_with_the_problem_named(mem: Memory, fake: FakeLLM) -> None:
    fake.script("I think the user likes uv?", facts("Uses uv for packaging"))
    events = mem.add("I use uv.", user_id="u", infer=True)
    assert [e.memory for e in events] == ["Uses uv for packaging"]
    retry = fake.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "I think the user likes uv?"}
    assert "cannot be used" in retry[-1]["content"]


@pytest.mark.parametrize(
    "bad",
    [
        "not json at all",
        '{"facts": "one string"}',
        '{"facts": [1, 2]}',
        '{"memories": []}',
    ],
)
def test_garbage_twice_fails_clearly_and_stores_nothing(
    mem: Memory, fake: FakeLLM, bad: str
) -> None:
    fake.script(bad, bad)
    with pytest.raises(UpstreamError) as info:
        mem.add("The VPN gateway is vpn-2.corp.", user_id="u", infer=True)
    assert "twice" in info.value.message and "infer=false" in (info.value.hint or "")
    assert everything(mem) == 0
    # the input is not lost: it can still be stored as given
    assert mem.add("The VPN gateway is vpn-2.corp.", user_id="u")[0].event == Event.ADD


def test_a_flaky_endpoint_is_retried_and_a_dead_one_fails_clearly(
    mem: Memory, fake: FakeLLM
) -> None:
    fake.script(Reply(status=500), facts("Standup is at 9:30"))
    assert mem.add("standup 9:30", user_id="u", infer=True)[0].event == Event.ADD
    fake.script(Reply(status=500), Reply(status=502))
    with pytest.raises(UpstreamError, match="HTTP 502"):
        mem.add("standup moved to 10", user_id="u", infer=True)
    fake.script(Reply(content=facts("x y z"), delay=3), Reply(content=facts("x y z"), delay=3))
    with pytest.raises(UpstreamError, match="timed out"):
        mem.add("slow", user_id="u", infer=True)
    assert everything(mem) == 1


def test_reconciliation_uses_small_integer_ids_and_updates_with_history(
    mem: Memory, fake: FakeLLM, clock
) -> None:  # type: ignore[no-untyped-def]
    old = mem.add("Team standup is at 9:30 in room B", user_id="u", agent_id="dev")[0]
    clock.advance(days=2)
    fake.script(
        facts("Team standup moved to 10:00"),
        decisions(
            {
                "fact": 0,
                "event": "UPDATE",
                "id": 0,
                "text": "Team standup is at 10:00 in room B",
                "reason": "time changed",
            }
        ),
    )
    events = mem.add("standup is at 10 now", user_id="u", agent_id="dev", infer=True)
    assert [(e.event, e.memory, e.previous_memory) for e in events] == [
        (Event.UPDATE, "Team standup is at 10:00 in room B", "Team standup is at 9:30 in room B")
    ]
    # the merged text supersedes the old memory, which is kept and points to it
    assert mem.get(old.id).superseded_by == events[0].id  # type: ignore[arg-type]
    shown = json.loads(fake.requests[1]["messages"][1]["content"])
    assert shown["existing"] == [{"id": 0, "text": "Team standup is at 9:30 in room B"}]
    assert old.id not in fake.requests[1]["messages"][1]["content"]  # no UUIDs in prompts
    assert shown["new_facts"] == [{"fact": 0, "text": "Team standup moved to 10:00"}]
    history = mem.history(old.id)  # type: ignore[arg-type]
    assert [h.event for h in history] == [Event.ADD, Event.SUPERSEDE]
    assert history[1].old_text == "Team standup is at 9:30 in room B"
    assert history[1].actor == "memoryd" and "time changed" in (history[1].reason or "")


def test_delete_supersedes_and_the_memory_can_be_restored(mem: Memory, fake: FakeLLM) -> None:
    plan = mem.add("Plan: migrate billing to Postgres in Q3", user_id="u")[0]
    fake.script(
        facts("The billing migration to Postgres was cancelled"),
        decisions({"fact": 0, "event": "DELETE", "id": 0, "reason": "plan cancelled"}),
    )
    events = mem.add("we cancelled the billing migration", user_id="u", infer=True, actor="ops")
    assert [(e.event, e.id) for e in events] == [(Event.DELETE, plan.id)]
    assert mem.search("billing migration", user_id="u") == []
    history = mem.history(plan.id)  # type: ignore[arg-type]
    assert history[-1].event == Event.DELETE and history[-1].actor == "ops"
    assert "plan cancelled" in (history[-1].reason or "")
    mem.restore(plan.id)  # type: ignore[arg-type]
    assert mem.get(plan.id).state == State.ACTIVE  # type: ignore[arg-type]


def test_none_and_add_in_one_answer(mem: Memory, fake: FakeLLM) -> None:
    known = mem.add("Uses uv for Python packaging", user_id="u")[0]
    fake.script(
        facts("Python packaging is done with uv", "CI runs on GitHub Actions"),
        decisions(
            {"fact": 0, "event": "NONE", "id": 0},
            {"fact": 1, "event": "ADD", "text": "CI runs on GitHub Actions"},
        ),
    )
    events = mem.add("we use uv and GitHub Actions", user_id="u", infer=True)
    assert [(e.event, e.id == known.id) for e in events] == [(Event.NONE, True), (Event.ADD, False)]
    assert mem.count() == 2


def test_an_invented_id_is_sent_back_and_a_second_one_fails(mem: Memory, fake: FakeLLM) -> None:
    mem.add("The cache TTL is 60 seconds", user_id="u")
    fake.script(
        facts("The cache TTL is 120 seconds"),
        decisions({"fact": 0, "event": "UPDATE", "id": 7, "text": "TTL 120"}),
        decisions({"fact": 0, "event": "UPDATE", "id": 0, "text": "The cache TTL is 120 seconds"}),
    )
    events = mem.add("ttl is 120s now", user_id="u", infer=True)
    assert events[0].event == Event.UPDATE
    assert "not one of the existing ids [0]" in fake.requests[2]["messages"][-1]["content"]
    fake.script(
        facts("The cache TTL is 300 seconds"),
        decisions({"fact": 0, "event": "DELETE", "id": "x"}),
        decisions({"fact": 5, "event": "ADD"}),
    )
    with pytest.raises(UpstreamError, match="reconciliation"):
        mem.add("ttl 300", user_id="u", infer=True)
    assert mem.get(events[0].id).text == "The cache TTL is 120 seconds"  # type: ignore[arg-type]
    assert everything(mem) == 2  # the 60 seconds kept, superseded


def test_a_fact_the_model_forgets_to_decide_on_is_added_not_lost(
    mem: Memory, fake: FakeLLM
) -> None:
    mem.add("The office is in Porto", user_id="u")
    fake.script(
        facts("Our office is in Porto", "The office opens at 8:00"),
        decisions({"fact": 0, "event": "NONE", "id": 0}),
    )
    events = mem.add("office in Porto, opens at 8", user_id="u", infer=True)
    assert [(e.event, e.memory) for e in events] == [
        (Event.NONE, "Our office is in Porto"),
        (Event.ADD, "The office opens at 8:00"),
    ]


def test_verbatim_duplicates_skip_the_model_and_unrelated_memories_are_not_shown(
    mem: Memory, fake: FakeLLM
) -> None:
    same = mem.add("Prefers tea", user_id="u")[0]
    mem.add("The deploy pipeline runs on Jenkins", user_id="u")
    fake.script(facts("Prefers tea", "Has a cat named Miso"))
    events = mem.add("I like tea and have a cat named Miso", user_id="u", infer=True)
    assert (events[0].event, events[0].id) == (Event.NONE, same.id)
    assert events[1].event == Event.ADD
    # only the extraction call: the cat shares nothing with Jenkins (below llm_min_similarity)
    assert len(fake.requests) == 1


def test_the_llm_never_sees_another_scope(mem: Memory, fake: FakeLLM) -> None:
    mem.add("Bob's salary is 100k", user_id="bob")
    mem.add("Short-term note about salary reviews", user_id="alice", run_id="2026-03-27")
    fake.script(facts("Salary reviews happen in March"))
    mem.add("salary reviews are in March", user_id="alice", infer=True)
    assert len(fake.requests) == 1  # nothing in alice's long-term scope to compare with


def test_concurrent_adds_to_one_scope_reconcile_in_turn(mem: Memory, fake: FakeLLM) -> None:
    """Reconciliation reads, asks the (slow) model, then writes: two adds to one scope
    must take turns, or each decides ADD without seeing the other's write."""
    import threading

    mem.add("The on-call rota lives in Opsgenie.", user_id="u")

    def answer(body: dict) -> str:
        if "memory consistent" in json.dumps(body):
            return decisions({"fact": 0, "event": "ADD"})
        return facts("The on-call rota is in PagerDuty.")

    fake.default = answer
    fake.delay = 0.3
    barrier = threading.Barrier(4)
    events: list[Event] = []

    def add() -> None:
        barrier.wait()
        events.extend(e.event for e in mem.add("rota moved", user_id="u", infer=True))

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # the first ADDs after asking the model; the others then find the same text: NONE
    assert sorted(events) == [Event.ADD, Event.NONE, Event.NONE, Event.NONE]
    assert mem.count() == 2
