"""Dream (daily, 02:00): the day's diary and last week's short-term memory -> long-term.

Seed 000/001's AutoDream, per agent:

1. **Yesterday's complete diary -> long-term.** Each day since the last dream
   (yesterday on a normal night; up to ``dream.max_catch_up_days`` after a
   pause) goes through ``Memory.add(infer=True)`` without ``run_id``, in
   section-aligned batches, so facts are reconciled against all long-term memory;
   the batches are paced like digest's (``digest.batch_pause_s`` between two).
2. **Short-term older than ``dream.short_term_days`` (7) -> long-term.** Each
   such memory is re-added without ``run_id`` (``infer=True``: ADD, UPDATE,
   DELETE or NONE against all long-term memory, the one global dedup of seed
   001) and then deleted from short-term with the decision as the reason (kept
   in history, restorable). What should not live on is left out (deleted from
   short-term, not re-added): a task that was closed or whose TTL has run out (a
   week-old "review PR #482 tomorrow" is not news, and decay may already have
   archived its long-term copy), and chit-chat.
3. **Tasks end.** Every statement of finished work the dream reads ("Rotated the
   AWS keys", "PR #482 merged") closes the open tasks of the agent it finishes
   (:mod:`memoryd.extract.tasks`): ``metadata.closed_at`` / ``closed_by``, then
   archived with the match as the reason, so no pipeline brings it back as active.

The run ends with a report appended to the agent's ``DREAMS.md`` and to the
audit log: counts per decision and the compression ratio (short-term memories
consumed -> new long-term memories; the seed saw 1,800 -> 78).

Safety:

* **Loss guard.** Long-term memory (the agent's active long-term facts) may not
  shrink by more than ``dream.loss_guard`` (25%) in one run. The guard is checked
  after every write; when it trips, everything this run wrote for the agent is
  undone (:mod:`memoryd.pipelines.rollback`) and the run reports the abort, so
  the net effect is that nothing was written. Long-term memories smaller than
  ``dream.loss_guard_min`` are not guarded (one delete out of four is 25%).
* **Dry run.** ``--dry-run`` extracts and reconciles (``Memory.add(dry_run=True)``)
  and reports the decisions, writing nothing. Each decision is made against
  today's long-term memory, so decisions that depend on one another (two
  similar short-term memories) can differ from a real run.
* **Kill safety.** Every add carries an idempotency key that depends on the
  input only (the diary batch, the short-term memory id), so a killed run,
  re-run, neither repeats nor loses a write; a short-term memory is deleted
  only after its add committed.
* **Rollback.** ``memoryd dream rollback RUN_ID`` undoes a run from history.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from memoryd.core import Memory
from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.extract.noise import is_chitchat
from memoryd.extract.tasks import (
    TASK_CATEGORY,
    completions,
    is_closed,
    is_task,
    match_tasks,
    wants_doing,
)
from memoryd.models import Filters, MemoryRecord, Origin, Source
from memoryd.pipelines.decay import ttl_of
from memoryd.pipelines.decay_summary import touched_at
from memoryd.pipelines.dreams_md import (
    AgentDream,
    audit_dream,
    render_report,
    write_report,
    write_rollback_note,
)
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.pipelines.rollback import Undone, run_changes, undo_changes
from memoryd.pipelines.sections import (
    batches,
    line_range,
    plain_text,
    read_from,
    split_sections,
)
from memoryd.workspace import Workspace, local_today


class LossGuardTripped(Exception):
    """Raised inside a dream when long-term memory would shrink too much."""


def long_term_count(memory: Memory, user_id: str, agent_id: str) -> int:
    """The agent's active long-term facts (what the loss guard protects)."""
    return memory.count(
        Filters(
            user_id=user_id,
            agent_id=agent_id,
            long_term_only=True,
            origins=[Origin.API, Origin.FACT],
        )
    )


def step1_key(agent: str) -> str:
    return f"dream:step1:{agent}"


def journal_key(run_id: str) -> str:
    return f"dream:run:{run_id}"


@pipeline("dream", schedule="0 2 * * *", description="diary and week-old short-term -> long-term")
def dream(ctx: PipelineContext) -> RunResult:
    """Yesterday's diary and short-term memory older than a week -> long-term."""
    result = RunResult()
    ctx.each(result, ctx.agents(), lambda agent: dream_and_report(ctx, agent))
    return result


def dream_and_report(ctx: PipelineContext, agent: str) -> RunResult:
    """One agent's dream, its ``DREAMS.md`` report and its audit line."""
    result = RunResult()
    ws = ctx.workspace(agent)
    d = dream_agent(ctx, ws)
    for k, v in d.counts().items():
        result.count(k, v)
    if d.aborted:
        result.error(f"{agent}: {d.aborted}")
    if d.dry_run:
        result.notes.extend(render_report(d).splitlines())
        return result
    if d.days or d.consolidated or d.aborted:
        if ctx.settings.dream.report:
            write_report(d, ws)
        audit_dream(ctx.settings, d)
    return result


def dream_agent(ctx: PipelineContext, ws: Workspace) -> AgentDream:
    memory, store = ctx.memory, ctx.memory.store
    agent = ws.agent_id
    d = AgentDream(
        agent=agent,
        run_id=ctx.run_id,
        started=ctx.now(),
        dry_run=ctx.dry_run,
        short_term_days=ctx.settings.dream.short_term_days,
    )
    d.long_term_before = long_term_count(memory, ctx.user_id, agent)
    before_step1 = store.kv_get(step1_key(agent))
    if not ctx.dry_run:
        with store.atomic():
            journal = dict(store.kv_get(journal_key(ctx.run_id)) or {})
            journal.setdefault(agent, {"step1_before": before_step1})
            store.kv_set(journal_key(ctx.run_id), journal)
    try:
        _step1(ctx, ws, d, before_step1)
        _step2(ctx, ws, d)
    except LossGuardTripped as exc:
        d.aborted = str(exc)
        if not ctx.dry_run:
            d.undone = undo_run(memory, ctx.run_id, agent=agent, user_id=ctx.user_id)
    d.long_term_after = (
        d.long_term_before + d.net if ctx.dry_run else long_term_count(memory, ctx.user_id, agent)
    )
    return d


def _guard(ctx: PipelineContext, d: AgentDream) -> None:
    s = ctx.settings.dream
    before = d.long_term_before
    if before < max(1, s.loss_guard_min):
        return
    after = before + d.net
    if after < before * (1 - s.loss_guard):
        raise LossGuardTripped(
            f"loss guard: long-term memory would shrink from {before} to {after} "
            f"(more than {s.loss_guard:.0%}); the run was undone. Look at the decisions "
            f"with `memoryd run dream --agent {d.agent} --dry-run`, or raise dream.loss_guard"
        )


def _days_to_digest(last_done: object, yesterday: date, max_days: int) -> list[date]:
    if isinstance(last_done, str):
        try:
            start = date.fromisoformat(last_done) + timedelta(days=1)
        except ValueError:
            start = yesterday
    else:
        start = yesterday
    start = max(start, yesterday - timedelta(days=max_days - 1))
    days = []
    day = start
    while day <= yesterday:
        days.append(day)
        day += timedelta(days=1)
    return days


def _step1(ctx: PipelineContext, ws: Workspace, d: AgentDream, last_done: object) -> None:
    s = ctx.settings
    yesterday = local_today(s.workspace, ctx.clock) - timedelta(days=1)
    for day in _days_to_digest(last_done, yesterday, s.dream.max_catch_up_days):
        path = ws.diary_path(day)
        if not path.is_file():
            continue
        full = read_from(path, 0, ws.fs)
        d.days.append(day.isoformat())
        d.diary_bytes += len(full)
        rel = ws.rel(path)
        for batch in batches(split_sections(full), s.digest.max_batch_bytes):
            text = plain_text(batch.text)
            if not any(ln.strip() and not ln.startswith("#") for ln in text.splitlines()):
                continue
            first, last = line_range(full, batch)
            ctx.pace()
            events = ctx.memory.add(
                text,
                user_id=ctx.user_id,
                agent_id=ws.agent_id,
                infer=True,
                metadata={"pipeline": "dream", "diary": day.isoformat()},
                source=Source(path=rel, start_line=first, end_line=last),
                # said on the diary's day, as its indexed lines are: not newer than the
                # lines it came from (newer-first would put it above the change after it)
                event_at=datetime.combine(day, time.min, tzinfo=UTC),
                actor=ctx.actor,
                idempotency_key=f"dream:s1:{batch.key('dream', ws.agent_id, rel)}",
                dry_run=ctx.dry_run,
            )
            d.tally(d.step1, events)
            _guard(ctx, d)
            if not ctx.dry_run:
                end_of_day = datetime.combine(day + timedelta(days=2), time.min, tzinfo=UTC)
                d.tasks_closed += close_finished_tasks(
                    ctx, ws.agent_id, text, said_before=end_of_day, diary=day.isoformat()
                )
    if not ctx.dry_run:
        ctx.memory.store.kv_set(step1_key(ws.agent_id), yesterday.isoformat())


def _step2(ctx: PipelineContext, ws: Workspace, d: AgentDream) -> None:
    s = ctx.settings
    cutoff = ctx.now() - timedelta(days=s.dream.short_term_days)
    old = list(
        ctx.memory.store.iter_all(
            Filters(
                user_id=ctx.user_id,
                agent_id=ws.agent_id,
                short_term_only=True,
                created_before=cutoff,
                origins=[Origin.API, Origin.FACT],
            )
        )
    )
    old.sort(key=lambda r: (r.created_at, r.id))
    for record in old:
        why_not = _not_for_long_term(ctx, record)
        if why_not is not None:
            d.left_out += 1
            if not ctx.dry_run:
                ctx.memory.delete(
                    record.id,
                    actor=ctx.actor,
                    reason=f"not consolidated by {ctx.run_id}: {why_not}",
                )
                d.removed += 1
            continue
        events = ctx.memory.add(
            record.text,
            user_id=ctx.user_id,
            agent_id=ws.agent_id,
            infer=True,
            category=_long_term_category(record),
            metadata={"pipeline": "dream", "from_run": record.run_id},
            source=record.source,
            # when it was said, not tonight: a value said before a change must not
            # supersede the change, nor rank as the newer evidence
            event_at=record.event_at or record.created_at,
            actor=ctx.actor,
            idempotency_key=f"dream:s2:{record.id}",
            dry_run=ctx.dry_run,
        )
        d.tally(d.step2, events)
        d.consolidated += 1
        _guard(ctx, d)
        if ctx.dry_run:
            continue
        d.tasks_closed += close_finished_tasks(
            ctx, ws.agent_id, record.text, said_before=record.created_at, skip=record.id
        )
        decided = ", ".join(sorted({e.event.value for e in events})) or "no facts"
        ctx.memory.delete(
            record.id,
            actor=ctx.actor,
            reason=f"consolidated into long-term by {ctx.run_id} ({decided})",
        )
        d.removed += 1


def _not_for_long_term(ctx: PipelineContext, record: MemoryRecord) -> str | None:
    """Why a week-old short-term memory is not carried to long-term, or None."""
    if is_task(record.category, record.text):
        if is_closed(record.metadata):
            return "a closed task"
        _, days = ttl_of(record.model_copy(update={"category": TASK_CATEGORY}), ctx.settings.decay)
        if days is not None and ctx.now() - touched_at(record) >= timedelta(days=days):
            return f"a task older than its {days:g}-day TTL"
    if is_chitchat(record.text):
        return "chit-chat, not a fact"
    return None


def _said_at(record: MemoryRecord) -> datetime:
    """When a task was said: its diary day for one the dream read from a diary."""
    day = record.metadata.get("diary")
    if isinstance(day, str):
        try:
            return datetime.combine(date.fromisoformat(day), time.min, tzinfo=UTC)
        except ValueError:
            pass
    return record.created_at


#: Lessons (the shared pool) say what was done and learned: never open work.
LESSON_CATEGORIES = ("experience", "procedural")


def close_finished_tasks(
    ctx: PipelineContext,
    agent: str,
    text: str,
    *,
    said_before: datetime,
    diary: str | None = None,
    skip: str | None = None,
) -> int:
    """Close the agent's open tasks that a statement in ``text`` finishes; how many.

    Only tasks said before the statement (``said_before``; any task of the same
    ``diary`` day) can be closed by it. A closed task keeps its text and history:
    ``metadata.closed_at`` / ``closed_by``, then archived with the match as reason.
    """
    if not completions(text):
        return 0  # most text finishes nothing: no need to read the open tasks
    open_tasks = [
        r
        for r in ctx.memory.store.iter_all(
            Filters(
                user_id=ctx.user_id,
                agent_id=agent,
                origins=[Origin.API, Origin.FACT],
            )
        )
        if r.id != skip
        and r.metadata.get("evergreen") is not True  # the agent's MEMORY.md lines are its own
        and r.category not in LESSON_CATEGORIES
        and wants_doing(r.category, r.text)
        and not is_closed(r.metadata)
        and (_said_at(r) <= said_before or (diary and r.metadata.get("diary") == diary))
    ]
    if not open_tasks:
        return 0
    found = match_tasks(text, [(r.id, r.text) for r in open_tasks])
    stamp = ctx.now().isoformat()
    for m in found:
        with ctx.memory.store.atomic():
            ctx.memory.update(
                m.task_id,
                metadata={"closed_at": stamp, "closed_by": m.why[:300]},
                actor=ctx.actor,
                reason=f"task closed: {m.why[:300]}",
            )
            ctx.memory.archive(m.task_id, actor=ctx.actor, reason=f"task closed: {m.why[:300]}")
    return len(found)


def _long_term_category(record: MemoryRecord) -> str | None:
    """``short_term`` is a tier, not a topic: it does not follow a memory to long-term."""
    return None if record.category in (None, "short_term") else record.category


def undo_run(
    memory: Memory, run_id: str, *, agent: str | None = None, user_id: str | None = None
) -> Undone:
    """Undo what dream run ``run_id`` wrote (for ``agent`` only, or every agent)."""
    actor = f"dream:{run_id}"
    entries = run_changes(memory, actor, user_id=user_id, agent_id=agent)
    undone = undo_changes(
        memory, entries, actor=f"rollback:{run_id}", reason=f"rollback of dream run {run_id}"
    )
    store = memory.store
    with store.atomic():
        journal = dict(store.kv_get(journal_key(run_id)) or {})
        for name, info in journal.items():
            if agent is not None and name != agent:
                continue
            if isinstance(info, dict):
                store.kv_set(step1_key(name), info.get("step1_before"))
    return undone


def rollback(memory: Memory, run_id: str) -> Undone:
    """``memoryd dream rollback RUN_ID``: undo every change of a dream run."""
    if not isinstance(run_id, str) or not run_id.startswith("dream-"):
        raise InvalidInputError(
            f"{run_id!r} is not a dream run id",
            "pick one from `memoryd pipelines --name dream` (they look like dream-20260328T020000-3fa2c1)",
        )
    if memory.store.kv_get(journal_key(run_id)) is None:
        raise NotFoundError(
            f"no dream run {run_id} is recorded", "list dream runs with `memoryd pipelines`"
        )
    agents = list(memory.store.kv_get(journal_key(run_id)) or {})
    undone = undo_run(memory, run_id)
    write_rollback_note(memory, run_id, agents, undone)
    return undone
