"""The scheduler inside ``memoryd serve``: every pipeline on its crontab.

APScheduler (``BackgroundScheduler``, worker threads) runs each registered
pipeline on its schedule (``registry`` default, ``pipelines.schedules`` override)
in ``pipelines.timezone``. Each run goes through :func:`~memoryd.pipelines.runs.
run_pipeline`, so it takes the store's run lock (a second server skips it) and
is recorded.

**Catch-up.** When the server starts, a pipeline whose scheduled time passed
since its last run (or, for a pipeline that never ran, since the scheduler
first started on this store, kv ``pipelines:scheduler_since``) runs once, right
away: a laptop that sleeps through 02:00 still dreams, once, when it wakes.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger

from memoryd.core import Memory
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.pipelines import registry
from memoryd.pipelines.registry import Clock, PipelineSpec
from memoryd.pipelines.runs import last_started, run_pipeline

if TYPE_CHECKING:
    from fastapi import FastAPI

SINCE_KEY = "pipelines:scheduler_since"
log = logging.getLogger("memoryd.pipelines.scheduler")


def schedule_of(memory: Memory, spec: PipelineSpec) -> str:
    return memory.settings.pipelines.schedules.get(spec.name, spec.schedule)


def trigger_for(memory: Memory, spec: PipelineSpec) -> CronTrigger:
    expr = schedule_of(memory, spec)
    try:
        return CronTrigger.from_crontab(expr, timezone=ZoneInfo(memory.settings.pipelines.timezone))
    except ValueError as exc:
        raise InvalidInputError(
            f"schedule {expr!r} of pipeline {spec.name!r} is not a valid crontab ({exc})",
            f'fix pipelines.schedules["{spec.name}"], e.g. "0 2 * * *" for 02:00 every day',
        ) from None


def enabled_specs(memory: Memory) -> list[PipelineSpec]:
    return [s for s in registry.all_specs() if s.is_on(memory.settings)]


def next_run(memory: Memory, spec: PipelineSpec, after: datetime) -> datetime | None:
    """The first scheduled time strictly after ``after``."""
    fire: datetime | None = trigger_for(memory, spec).get_next_fire_time(
        None, after + timedelta(microseconds=1)
    )
    return fire


def missed(memory: Memory, now: datetime) -> list[str]:
    """Pipelines whose scheduled time passed since their last run (see the module doc)."""
    last = last_started(memory)
    since_raw = memory.store.kv_get(SINCE_KEY)
    since = _parse(since_raw) if isinstance(since_raw, str) else None
    out = []
    for spec in enabled_specs(memory):
        base = _parse(last[spec.name]) if spec.name in last else since
        if base is None:
            continue
        fire = next_run(memory, spec, base)
        if fire is not None and fire <= now:
            out.append(spec.name)
    return out


def latest_slot(memory: Memory, spec: PipelineSpec, now: datetime) -> datetime | None:
    """The last scheduled time at or before ``now`` (within five weeks), or None.

    Every run of a slot carries it (``run_pipeline(due_at=...)``), so a second server
    that fires the same slot skips it: a weekly or monthly slot must be found too (a
    catch-up of one missed three days ago would otherwise run on every server). Two
    days are looked at first, so a frequent schedule costs a few steps."""
    for days in (2, 35):
        slot: datetime | None = None
        fire = next_run(memory, spec, now - timedelta(days=days))
        while fire is not None and fire <= now:
            slot = fire
            fire = next_run(memory, spec, fire)
        if slot is not None:
            return slot
    return None


def _parse(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


class PipelineScheduler:
    """Owns one APScheduler for one ``Memory``; ``start`` and ``shutdown`` from serve."""

    def __init__(self, memory: Memory, *, clock: Clock | None = None) -> None:
        self.memory = memory
        self.clock = clock or memory.clock
        self.scheduler = BackgroundScheduler(
            timezone=ZoneInfo(memory.settings.pipelines.timezone),
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 600},
        )
        self.caught_up: list[str] = []

    def start(self) -> None:
        now = self.clock()
        store = self.memory.store
        if store.kv_get(SINCE_KEY) is None:
            store.kv_set(SINCE_KEY, now.isoformat())
        for spec in enabled_specs(self.memory):
            self.scheduler.add_job(
                self._run,
                trigger_for(self.memory, spec),
                args=[spec.name, "schedule"],
                id=spec.name,
                name=spec.name,
                replace_existing=True,
            )
        if self.memory.settings.pipelines.catch_up:
            self.caught_up = missed(self.memory, now)
            for name in self.caught_up:
                self.scheduler.add_job(
                    self._run, args=[name, "catch-up"], id=f"catch-up:{name}", name=name
                )
        self.scheduler.start()
        log.info("pipelines scheduled; catching up: %s", ", ".join(self.caught_up) or "none")

    def shutdown(self) -> None:
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)

    def next_runs(self) -> dict[str, str | None]:
        """Pipeline -> ISO time of its next scheduled run (while running)."""
        out: dict[str, str | None] = {}
        for job in self.scheduler.get_jobs():
            if job.id == job.name:
                fire = getattr(job, "next_run_time", None)
                out[job.name] = fire.isoformat() if fire else None
        return out

    def _run(self, name: str, trigger: str) -> None:
        due = latest_slot(self.memory, registry.get(name), self.clock())
        try:
            run_pipeline(self.memory, name, trigger=trigger, due_at=due)
        except MemorydError as exc:  # recorded in the run registry; keep the scheduler going
            log.error("pipeline %s failed: %s", name, exc)


@asynccontextmanager
async def scheduling(app: FastAPI, memory: Memory) -> AsyncIterator[Any]:
    """``serve``'s lifespan part: run the scheduler while the app runs (if enabled)."""
    if not memory.settings.pipelines.scheduler:
        app.state.pipeline_scheduler = None
        yield None
        return
    scheduler = PipelineScheduler(memory)
    scheduler.start()
    app.state.pipeline_scheduler = scheduler
    try:
        yield scheduler
    finally:
        scheduler.shutdown()
