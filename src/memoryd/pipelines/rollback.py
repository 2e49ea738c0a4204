"""Undoing a pipeline run from history.

Every memory write of a run carries ``actor = "<pipeline>:<run_id>"`` (see
:class:`~memoryd.pipelines.registry.PipelineContext`), and history keeps the
text before and after each change. Undoing a run walks its history entries
newest first: an ADD is deleted, an UPDATE gets its old text back, a DELETE
(or ARCHIVE) is restored. The undo writes history of its own (actor
``rollback:<run_id>``), so it can be audited, and the idempotency keys the run
recorded are released, so running the pipeline again redoes the work instead
of replaying it.

A run that was killed and resumed is two runs (two run ids): undo both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memoryd.core import IDEMPOTENCY_PREFIX, Memory
from memoryd.models import Event, Filters, HistoryEntry, State


@dataclass
class Undone:
    deleted: int = 0  # memories the run added
    reverted: int = 0  # memories the run updated
    restored: int = 0  # memories the run deleted or archived
    skipped: list[str] = field(default_factory=list)  # changed again since; left alone

    @property
    def total(self) -> int:
        return self.deleted + self.reverted + self.restored

    def counts(self) -> dict[str, int]:
        return {
            "undo_deleted": self.deleted,
            "undo_reverted": self.reverted,
            "undo_restored": self.restored,
            "undo_skipped": len(self.skipped),
        }


def run_changes(
    memory: Memory, actor: str, *, user_id: str | None = None, agent_id: str | None = None
) -> list[HistoryEntry]:
    """Every history entry written by ``actor``, oldest first.

    History is per memory, so this reads the history of each memory in scope:
    fine for an occasional rollback, not for a hot path.
    """
    store = memory.store
    out: list[HistoryEntry] = []
    for record in store.iter_all(Filters(user_id=user_id, agent_id=agent_id, states=[])):
        out.extend(h for h in store.history(record.id) if h.actor == actor)
    out.sort(key=lambda h: h.id)
    return out


def undo_changes(memory: Memory, entries: list[HistoryEntry], *, actor: str, reason: str) -> Undone:
    """Reverse ``entries`` newest first, all in one transaction."""
    store = memory.store
    done = Undone()
    with store.atomic():
        for h in sorted(entries, key=lambda e: e.id, reverse=True):
            record = store.get(h.memory_id)
            if record is None:
                done.skipped.append(f"{h.memory_id}: purged")
                continue
            if h.event == Event.ADD:
                if record.state != State.DELETED:
                    memory.delete(record.id, actor=actor, reason=reason)
                    done.deleted += 1
            elif h.event == Event.UPDATE and h.old_text is not None:
                if record.text != h.new_text or record.state != State.ACTIVE:
                    done.skipped.append(f"{h.memory_id}: changed again since the run")
                    continue
                memory.update(record.id, h.old_text, actor=actor, reason=reason)
                done.reverted += 1
            elif (
                h.event in (Event.DELETE, Event.ARCHIVE, Event.SUPERSEDE)
                and record.state != State.ACTIVE
            ):
                memory.restore(record.id, actor=actor)
                done.restored += 1
        release_keys(memory, {e.actor for e in entries if e.actor})
    return done


def release_keys(memory: Memory, actors: set[str]) -> int:
    """Forget the idempotency keys recorded by ``actors``, so their adds can run again."""
    if not actors:
        return 0
    released = 0
    with memory.store.atomic():
        for key, value in memory.store.kv_items().items():
            if (
                key.startswith(IDEMPOTENCY_PREFIX)
                and isinstance(value, dict)
                and value.get("actor") in actors
            ):
                memory.store.kv_set(key, None)
                released += 1
    return released
