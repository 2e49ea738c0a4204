"""What the pipelines need from Memory.add: idempotency keys and dry runs."""

from __future__ import annotations

import pytest

from memoryd.core import IDEMPOTENCY_PREFIX, Memory
from memoryd.errors import InvalidInputError
from memoryd.models import Event, Filters
from tests.pipelines_kit import snapshot

TEXT = "The deploy pipeline now runs on Fridays.\nThe staging database moved to host db-7."


def test_an_add_with_a_known_key_replays_and_writes_nothing(memory: Memory) -> None:
    first = memory.add(TEXT, user_id="u", agent_id="a", infer=True, idempotency_key="batch-1")
    assert {e.event for e in first} == {Event.ADD}
    state = snapshot(memory)
    again = memory.add(TEXT, user_id="u", agent_id="a", infer=True, idempotency_key="batch-1")
    assert again == first and snapshot(memory) == state
    other = memory.add("The office is closed on Monday.", user_id="u", idempotency_key="batch-1")
    assert other == first  # the key decides, not the text
    recorded = memory.store.kv_get(IDEMPOTENCY_PREFIX + "batch-1")
    assert recorded["actor"] is None and len(recorded["events"]) == len(first)
    plain = memory.add("Verbatim text.", user_id="u", idempotency_key="p1", actor="me")
    assert memory.add("Verbatim text.", user_id="u", idempotency_key="p1") == plain
    assert memory.store.kv_get(IDEMPOTENCY_PREFIX + "p1")["actor"] == "me"


def test_bad_idempotency_keys_are_refused(memory: Memory) -> None:
    with pytest.raises(InvalidInputError) as err:
        memory.add(TEXT, user_id="u", idempotency_key="")
    assert err.value.hint
    with pytest.raises(InvalidInputError):
        memory.add(TEXT, user_id="u", idempotency_key="x" * 600)


def test_a_dry_run_decides_but_writes_nothing(memory: Memory) -> None:
    memory.add("The deploy pipeline now runs on Fridays.", user_id="u", infer=True)
    state = snapshot(memory)
    events = memory.add(TEXT, user_id="u", infer=True, dry_run=True, idempotency_key="dry")
    assert {e.event for e in events} == {Event.NONE, Event.ADD}
    assert snapshot(memory) == state
    assert memory.store.kv_get(IDEMPOTENCY_PREFIX + "dry") is None
    assert memory.add("Plain.", user_id="u", dry_run=True)[0].event == Event.ADD
    assert memory.count(Filters(user_id="u")) == 1
