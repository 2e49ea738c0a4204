"""Digest (every 15 minutes): new diary text -> short-term memory.

Seed 000/001's ``auto_digest --today``. For each agent, today's diary (and
yesterday's, so the last sections written before midnight are not left out)
is read from the byte offset the digest reached last time. Only finished
``##`` sections are taken (see :func:`~memoryd.pipelines.sections.complete_prefix`);
when less than ``digest.min_bytes`` (500, seed 000's minimum batch) of them is
new, the run waits for more, except for a diary whose day is over, which is
always finished. Seed 001's 2,000-byte extraction threshold is the same knob set
higher: ``MEMORYD_DIGEST__MIN_BYTES=2000`` for fewer, larger LLM calls.

The new sections go in batches of at most ``digest.max_batch_bytes`` (~50 KB,
cut on ``##``) through ``Memory.add(infer=True)`` with the digest prompt,
``run_id`` = the diary's date (short-term, deduplicated within that day only)
and ``category=short_term``; a second pass with the task prompt stores finished
work as ``category=task`` (with an LLM: the offline extractor ignores prompts,
so there the second pass would only repeat the first and is skipped).

Exactly once, whenever it is killed: each pass carries an idempotency key
derived from the batch (agent, file, byte range, content), recorded by
``Memory.add`` in the same transaction as its writes; the offset moves past a
batch only after both passes. A run killed anywhere repeats at most the passes
that did not commit, and a pass that did commit is not written twice. Before
its first batch a run records where it means to stop (``digest:target:...``),
so the run after a kill finishes those same batches even when what is left is
under ``min_bytes``: the result is the uninterrupted run's, byte for byte.

Rate control (seed 001: "batches with sleep between"): a run waits
``digest.batch_pause_s`` (0.5 s; 0 turns it off) before each batch but its
first, through ``ctx.sleep``. Each agent is digested on its own
(:meth:`~memoryd.pipelines.registry.PipelineContext.each`): a batch that keeps
failing holds back its own agent, recorded in the run, and no other.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from memoryd.extract import get_prompt
from memoryd.models import Event, MemoryEvent, Source
from memoryd.pipelines.registry import PipelineContext, RunResult, pipeline
from memoryd.pipelines.sections import (
    Batch,
    Section,
    batches,
    complete_prefix,
    line_range,
    plain_text,
    read_from,
    split_sections,
)
from memoryd.workspace import Workspace, local_today


def offset_key(agent: str, day: date) -> str:
    """How far the digest has read (and committed) this diary, in bytes."""
    return f"digest:offset:{agent}:{day.isoformat()}"


def target_key(agent: str, day: date) -> str:
    """Where the last run that passed the thresholds meant to stop: a run killed before
    getting there is finished by the next one exactly as planned."""
    return f"digest:target:{agent}:{day.isoformat()}"


@pipeline("digest", schedule="*/15 * * * *", description="new diary text -> short-term memory")
def digest(ctx: PipelineContext) -> RunResult:
    """New diary sections -> short-term memory (and open tasks), exactly once."""
    result = RunResult()
    today = local_today(ctx.settings.workspace, ctx.clock)

    def digest_agent(agent: str) -> None:
        ws = ctx.workspace(agent)
        for day in (today - timedelta(days=1), today):
            digest_diary(ctx, ws, day, day_over=day < today, result=result)

    ctx.each(result, ctx.agents(), digest_agent)
    return result


def digest_diary(
    ctx: PipelineContext,
    ws: Workspace,
    day: date,
    *,
    day_over: bool,
    result: RunResult | None = None,
) -> RunResult:
    """Digest what is new in one diary file, counting into ``result`` (a new one by default)."""
    result = RunResult() if result is None else result
    path = ws.diary_path(day)
    if not path.is_file():
        return result
    store = ctx.memory.store
    s = ctx.settings.digest
    offset = int(store.kv_get(offset_key(ws.agent_id, day)) or 0)
    planned = int(store.kv_get(target_key(ws.agent_id, day)) or 0)
    full = read_from(path, 0, ws.fs)
    rel = ws.rel(path)
    if len(full) < max(offset, planned):
        result.note(f"{ws.agent_id}: {rel} shrank below the digested offset; reading it again")
        offset = planned = 0
    if offset < planned:
        # a run was cut short: finish exactly the batches it planned, whatever the threshold
        planned_sections = split_sections(full[offset:planned], offset)
        _run_batches(ctx, ws, day, rel, full, planned_sections, result)
        offset = planned
    if len(full) == offset:
        return result
    tz = ZoneInfo(ctx.settings.workspace.timezone)
    sections = split_sections(full[offset:], offset)
    ready = complete_prefix(
        sections,
        day_over=day_over,
        now=ctx.now(),
        day=day,
        tz=tz,
        settle=timedelta(minutes=s.settle_minutes),
    )
    new_bytes = sum(sec.size for sec in ready)
    if len(ready) < len(sections):
        result.note(f"{ws.agent_id}: {rel}: the newest section is still being written")
    if not ready:
        return result
    if new_bytes < s.min_bytes and not day_over:
        result.count("waiting_bytes", new_bytes)
        result.note(f"{ws.agent_id}: {rel}: {new_bytes} new bytes, waiting for {s.min_bytes}")
        return result
    if not ctx.dry_run:
        store.kv_set(target_key(ws.agent_id, day), ready[-1].end)
    _run_batches(ctx, ws, day, rel, full, ready, result)
    return result


def _run_batches(
    ctx: PipelineContext,
    ws: Workspace,
    day: date,
    rel: str,
    full: bytes,
    sections: list[Section],
    result: RunResult,
) -> None:
    for batch in batches(sections, ctx.settings.digest.max_batch_bytes):
        if ctx.dry_run:
            result.count("batches")
            result.count("bytes", len(batch.data))
            result.note(
                f"{ws.agent_id}: would digest {rel} bytes {batch.start}-{batch.end} "
                f"into short-term run {day.isoformat()}"
            )
            continue
        _digest_batch(ctx, ws, day, rel, full, batch, result)
        ctx.memory.store.kv_set(offset_key(ws.agent_id, day), batch.end)


def _digest_batch(
    ctx: PipelineContext,
    ws: Workspace,
    day: date,
    rel: str,
    full: bytes,
    batch: Batch,
    result: RunResult,
) -> None:
    text = plain_text(batch.text)
    if not any(line.strip() and not line.startswith("#") for line in text.splitlines()):
        result.count("empty_batches")
        return  # only headings: nothing to extract, just move past it
    ctx.pace()
    first, last = line_range(full, batch)
    bkey = batch.key("digest", ws.agent_id, rel)

    def extract(prompt: str, category: str, suffix: str) -> list[MemoryEvent]:
        return ctx.memory.add(
            text,
            user_id=ctx.user_id,
            agent_id=ws.agent_id,
            run_id=day.isoformat(),
            infer=True,
            prompt=get_prompt(prompt),
            category=category,
            metadata={"pipeline": "digest"},
            source=Source(path=rel, start_line=first, end_line=last),
            # said on the diary's day (as its indexed lines are), not when digest ran:
            # the dream carries this time on to long-term
            event_at=datetime.combine(day, time.min, tzinfo=UTC),
            actor=ctx.actor,
            idempotency_key=f"digest:{bkey}:{suffix}",
        )

    tally(result, extract("digest", "short_term", "facts"), "")
    # the offline extractor ignores prompts: a task pass would only repeat the first
    if ctx.settings.digest.task_pass and ctx.memory.extractor.follows_prompts:
        tally(result, extract("task", "task", "tasks"), "task_")
    result.count("batches")
    result.count("bytes", len(batch.data))


def tally(result: RunResult, events: list[MemoryEvent], prefix: str) -> None:
    """Count events by decision: ``added``, ``updated``, ``deleted``, ``unchanged``."""
    names = {
        Event.ADD: "added",
        Event.UPDATE: "updated",
        Event.DELETE: "deleted",
        Event.NONE: "unchanged",
    }
    for e in events:
        result.count(prefix + names.get(e.event, e.event.value.lower()))
