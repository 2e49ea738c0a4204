"""Extraction and reconciliation without an LLM: the offline path `infer=true` takes
when no provider is configured. Real model, real store."""

from __future__ import annotations

import pytest

from memoryd.core import Memory
from memoryd.errors import InvalidInputError, LimitExceededError
from memoryd.extract import PROMPTS, OfflineExtractor, get_prompt
from memoryd.extract.jsonfix import loads_lenient
from memoryd.extract.offline import split_sentences
from memoryd.models import Event, Filters, Origin, State
from memoryd.settings import LimitSettings


@pytest.fixture
def offline() -> OfflineExtractor:
    return OfflineExtractor(LimitSettings())


def test_sentences_are_facts_and_noise_is_dropped(offline: OfflineExtractor) -> None:
    text = (
        "Hi! Thanks.\n"
        "## 14:30\n"
        "- Fixed session_snapshot dedup bug: changed block-level comparison to line-level matching.\n"
        "- PR #7 submitted and merged.\n"
        "user: ok\n"
        "assistant: The staging DB runs on port 5433. Config lives in /etc/memoryd/app.toml.\n"
        "Should we also move prod?\n"
        "👍\n"
    )
    assert offline.extract(text) == [
        "Fixed session_snapshot dedup bug: changed block-level comparison to line-level matching.",
        "PR #7 submitted and merged.",
        "The staging DB runs on port 5433. Config lives in /etc/memoryd/app.toml.",
    ]


def test_a_short_line_stays_one_fact_and_a_long_one_is_split(offline: OfflineExtractor) -> None:
    text = "kiro-cli: always use exec(pty=true). Never add & in command. Thanks!"
    assert offline.extract(text) == ["kiro-cli: always use exec(pty=true). Never add & in command."]
    long = " ".join(
        f"Service svc-{n} moved to host db-{n}.example.com on port {5400 + n}." for n in range(8)
    )
    facts = offline.extract(long)
    assert (
        len(facts) == 8 and facts[3] == "Service svc-3 moved to host db-3.example.com on port 5403."
    )


def test_identifiers_and_abbreviations_do_not_split_sentences() -> None:
    text = "Upgrade to v1.2.3 on api.example.com, e.g. Tuesday. Use 10.0.0.1:8230 as the host."
    assert split_sentences(text) == [
        "Upgrade to v1.2.3 on api.example.com, e.g. Tuesday.",
        "Use 10.0.0.1:8230 as the host.",
    ]


def test_code_blocks_stay_whole_and_cjk_sentences_split(offline: OfflineExtractor) -> None:
    text = "Run this:\n```bash\nmemoryd serve --port 8230\n```\n服务端口是8230。数据库在本机。好的"
    assert offline.extract(text) == [
        "Run this:",
        "```bash\nmemoryd serve --port 8230\n```",
        "服务端口是8230。数据库在本机。",
    ]
    assert split_sentences("服务端口是8230。数据库在本机。") == [
        "服务端口是8230。",
        "数据库在本机。",
    ]


def test_named_prompts_are_exposed(offline: OfflineExtractor) -> None:
    assert set(PROMPTS) == {"default", "digest", "task"}
    assert "port" in get_prompt("digest") and "[type] description" in get_prompt("task")
    with pytest.raises(InvalidInputError, match="no extraction prompt named"):
        get_prompt("poetry")


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ('{"facts": ["a"]}', {"facts": ["a"]}),
        ('```json\n{"facts": ["a",]}\n```', {"facts": ["a"]}),
        ('Sure! Here you go: {"facts": ["a"]} Hope that helps.', {"facts": ["a"]}),
        ('<think>the user wants facts</think>{"facts": []}', {"facts": []}),
        ('["a", "b",]', ["a", "b"]),
    ],
)
def test_almost_json_is_repaired(raw: str, value: object) -> None:
    assert loads_lenient(raw) == value


@pytest.mark.parametrize("raw", ["facts: a, b", "{'facts': ['a']}", ""])
def test_what_is_not_json_is_not_guessed_at(raw: str) -> None:
    with pytest.raises(ValueError):
        loads_lenient(raw)


def test_infer_stores_facts_not_the_chatter(memory: Memory) -> None:
    events = memory.add(
        "Hello! The staging database runs on port 5433. Thanks a lot!",
        user_id="boss",
        agent_id="dev",
        infer=True,
        metadata={"category": "environment"},
    )
    assert [(e.event, e.memory) for e in events] == [
        (Event.ADD, "The staging database runs on port 5433.")
    ]
    record = memory.get(events[0].id)  # type: ignore[arg-type]
    assert record.origin == Origin.FACT and record.category == "environment"
    assert memory.add("thanks, bye!", user_id="boss", infer=True) == []  # nothing to remember
    assert memory.count() == 1


def test_offline_reconciliation_none_update_add(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    first = memory.add("The staging database runs on port 5433.", user_id="u", infer=True)[0]
    # the same fact again, verbatim and reworded: already known
    again = memory.add("The staging database runs on port 5433.", user_id="u", infer=True)[0]
    reworded = memory.add("the staging database runs on port 5433", user_id="u", infer=True)[0]
    assert (again.event, again.id) == (Event.NONE, first.id)
    assert (reworded.event, reworded.id) == (Event.NONE, first.id)
    # same subject, another value: the newer fact supersedes; the old one is kept, closed
    clock.advance(days=1)
    moved = memory.add("The staging database now runs on port 5434.", user_id="u", infer=True)[0]
    assert moved.event == Event.UPDATE and moved.id != first.id
    assert moved.previous_memory == "The staging database runs on port 5433."
    assert memory.get(moved.id).text == "The staging database now runs on port 5434."  # type: ignore[arg-type]
    old = memory.get(first.id)  # type: ignore[arg-type]
    assert old.state == State.SUPERSEDED and old.superseded_by == moved.id
    history = memory.history(first.id)  # type: ignore[arg-type]
    assert [h.event for h in history] == [Event.ADD, Event.SUPERSEDE]
    assert history[1].new_text == "The staging database runs on port 5433."
    assert history[1].actor == "memoryd" and "reconcile supersede" in (history[1].reason or "")
    # an unrelated fact is new
    other = memory.add("Alice prefers tea over coffee.", user_id="u", infer=True)[0]
    assert other.event == Event.ADD and memory.count() == 2


def test_a_near_identical_sentence_with_another_id_is_not_already_known(memory: Memory) -> None:
    a = memory.add("Deploys go through ArgoCD on cluster prod-eu-1.", user_id="u", infer=True)[0]
    b = memory.add(
        "Deploys go through ArgoCD on cluster prod-eu-2.", user_id="u", agent_id=None, infer=True
    )[0]
    # similarity is ~0.99, but the cluster id differs: not NONE; same subject: UPDATE
    assert b.event == Event.UPDATE and memory.get(a.id).superseded_by == b.id  # type: ignore[arg-type]


def test_dedup_scope_short_term_is_its_own_run_and_long_term_ignores_runs(
    memory: Memory,
) -> None:
    fact = "The nightly build uses runner ci-7."
    day1 = memory.add(fact, user_id="u", agent_id="dev", run_id="2026-03-26", infer=True)[0]
    day2 = memory.add(fact, user_id="u", agent_id="dev", run_id="2026-03-27", infer=True)[0]
    long = memory.add(fact, user_id="u", agent_id="dev", infer=True)[0]
    # another day is another namespace; long-term never reconciles against short-term
    assert [day1.event, day2.event, long.event] == [Event.ADD, Event.ADD, Event.ADD]
    again_long = memory.add(fact, user_id="u", agent_id="dev", infer=True)[0]
    again_day2 = memory.add(fact, user_id="u", agent_id="dev", run_id="2026-03-27", infer=True)[0]
    assert (again_long.event, again_long.id) == (Event.NONE, long.id)
    assert (again_day2.event, again_day2.id) == (Event.NONE, day2.id)


def test_workspace_chunks_are_never_rewritten_by_reconciliation(memory: Memory) -> None:
    from memoryd.models import MemoryRecord, Source

    chunk = MemoryRecord(
        id="chunk-1",
        text="The staging database runs on port 5433.",
        user_id="u",
        origin=Origin.CHUNK,
        source=Source(path="MEMORY.md", start_line=1, end_line=1),
    )
    memory.write_records([chunk])
    event = memory.add("The staging database now runs on port 5434.", user_id="u", infer=True)[0]
    assert event.event == Event.ADD  # a file's chunk mirrors the file: never updated from here
    assert memory.get("chunk-1").text == "The staging database runs on port 5433."


def test_infer_accepts_long_input_but_stores_short_facts(memory: Memory) -> None:
    memory.settings.limits.max_text_chars = 1_000  # a memory may be this long; the input may not
    diary = "\n".join(
        f"- Task {i}: migrated service svc-{i} from the old cluster to port {9000 + i}."
        for i in range(40)
    )
    assert len(diary) > memory.settings.limits.max_text_chars
    with pytest.raises(LimitExceededError):
        memory.add(diary, user_id="u")  # as given: too long for one memory
    events = memory.add(diary, user_id="u", infer=True)
    assert len(events) == 40 and all(e.event == Event.ADD for e in events)
    assert (
        memory.get(events[23].id).text  # type: ignore[arg-type]
        == "Task 23: migrated service svc-23 from the old cluster to port 9023."
    )


def test_infer_false_still_stores_as_given(memory: Memory) -> None:
    event = memory.add("hi", user_id="u")[0]  # infer defaults to False in the library
    assert event.event == Event.ADD and memory.get(event.id).origin == Origin.API  # type: ignore[arg-type]
    assert memory.store.count(Filters(states=[State.ACTIVE])) == 1
