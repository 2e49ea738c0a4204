"""One clock (issue 31, item 2): every time memoryd writes (the store's updated_at,
archive, delete and restore times, history times, a supersession's valid_from and
valid_until) is the ``Memory``'s clock, so weeks of pipelines can run in minutes.
Real model, real store (SQLite, and PostgreSQL with MEMORYD_TEST_PG=1)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memoryd.core import Memory
from memoryd.models import Event, State
from tests.conftest import FakeClock


def test_every_write_carries_the_clocks_time_60_days_ahead(
    memory: Memory, clock: FakeClock
) -> None:
    clock.now = datetime.now(UTC).replace(microsecond=0) + timedelta(days=60)
    added = clock()
    (event,) = memory.add("The staging database is on port 5432.", user_id="u")
    mid = event.id
    assert mid is not None
    record = memory.get(mid)
    assert record.created_at == record.updated_at == added

    clock.advance(hours=1)
    updated = memory.update(mid, "The staging database is on port 5433.", reason="typo")
    assert updated.updated_at == clock() == memory.get(mid).updated_at

    clock.advance(days=3)
    assert memory.archive(mid, reason="expired").updated_at == clock()
    archived_at = clock()
    clock.advance(days=1)
    assert memory.restore(mid).updated_at == clock()
    restored_at = clock()
    clock.advance(days=2)
    memory.delete(mid)
    assert memory.get(mid, include_deleted=True).updated_at == clock()

    history = memory.history(mid)
    assert [h.event for h in history] == [
        Event.ADD,
        Event.UPDATE,
        Event.ARCHIVE,
        Event.RESTORE,
        Event.DELETE,
    ]
    assert [h.created_at for h in history] == [
        added,
        added + timedelta(hours=1),
        archived_at,
        restored_at,
        clock(),
    ]
    assert all(h.created_at > datetime.now(UTC) + timedelta(days=59) for h in history)


def test_a_supersession_is_stamped_by_the_clock(memory: Memory, clock: FakeClock) -> None:
    clock.now = datetime.now(UTC).replace(microsecond=0) + timedelta(days=60)
    first = memory.add("The cache TTL is 60 seconds.", user_id="u", infer=True)[0]
    clock.advance(days=5)
    second = memory.add("The cache TTL is now 120 seconds.", user_id="u", infer=True)[0]
    assert second.event == Event.UPDATE
    old, new = memory.get(first.id), memory.get(second.id)  # type: ignore[arg-type]
    assert old.state == State.SUPERSEDED
    assert old.updated_at == old.valid_until == new.valid_from == new.created_at == clock()
    assert memory.history(old.id)[-1].created_at == clock()
