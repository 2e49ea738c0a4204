"""A scheduled slot runs once, however many servers fire it."""

from __future__ import annotations

from datetime import timedelta

from memoryd.core import Memory
from memoryd.pipelines import registry
from memoryd.pipelines.runs import run_pipeline
from memoryd.pipelines.scheduler import latest_slot


def test_a_slot_already_run_elsewhere_is_skipped(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    due = clock() - timedelta(minutes=5)
    first = run_pipeline(memory, "promote", trigger="schedule", due_at=due)
    second = run_pipeline(memory, "promote", trigger="schedule", due_at=due)
    assert first.status == "ok"
    assert second.status == "skipped" and "already ran" in (second.error or "")
    clock.advance(days=1)
    later = run_pipeline(memory, "promote", trigger="schedule", due_at=clock())
    assert later.status == "ok"  # the next slot is a new slot


def test_latest_slot_is_the_last_fire_time_not_after_now(memory: Memory, clock) -> None:  # type: ignore[no-untyped-def]
    spec = registry.get("digest")
    slot = latest_slot(memory, spec, clock())
    assert slot is not None and slot <= clock() < slot + timedelta(minutes=15) + timedelta(
        seconds=1
    )
