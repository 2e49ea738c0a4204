"""Running a pipeline once, and the record every run leaves.

:func:`run_pipeline` is what ``memoryd run NAME``, ``POST``-less ``serve``
scheduling and the tests call: it takes the pipeline's run lock
(``store.run_lock("pipeline:NAME")``: two processes never run one pipeline at
once), records the run as ``running``, calls the pipeline, and records how it
ended. Records live in the store's kv key ``pipelines:runs`` (a list of dicts,
newest last, the last ``pipelines.keep_runs`` kept) which the dashboard, ``memoryd
pipelines`` and ``GET /v1/pipelines`` read::

    {"name": "dream", "run_id": "dream-20260328T020000-3fa2c1", "agent": null,
     "started_at": "...", "finished_at": "...", "status": "ok", "counts": {...},
     "notes": [...], "errors": [...], "error": null, "dry_run": false, "trigger": "schedule"}

``status`` is ``running``, ``ok``, ``partial`` (some agents failed, the others
ran through: ``errors`` has one ``agent NAME: ...`` line per failed agent),
``error``, ``skipped`` (another process held the lock) or ``interrupted`` (the
process died: found still ``running`` by the next run that got the lock, or by any
listing on the same host once its ``pid`` is gone). The lock dies with its process
(see ``Store.run_lock``), so a run killed with ``kill -9`` never blocks the next
one. ``pipelines:last`` maps each pipeline to the start of its
last real (not dry) run, which the scheduler uses to catch up missed runs.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from memoryd.core import Memory
from memoryd.pipelines import registry
from memoryd.pipelines.registry import Clock, PipelineContext
from memoryd.validate import check_id

RUNS_KEY = "pipelines:runs"
LAST_KEY = "pipelines:last"
_MAX_NOTES = 50


@dataclass
class RunRecord:
    name: str
    run_id: str
    agent: str | None
    started_at: str
    finished_at: str | None = None
    status: str = "running"
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error: str | None = None
    dry_run: bool = False
    trigger: str = "manual"  # manual | schedule | catch-up
    host: str | None = None  # where the run's process runs, and its pid: a ``running``
    pid: int | None = None  # record whose process is gone on this host was interrupted

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> RunRecord:
        known = {k: value[k] for k in cls.__dataclass_fields__ if k in value}
        return cls(**known)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def new_run_id(name: str, now: datetime) -> str:
    """Sortable and unique: ``dream-20260328T020000-3fa2c1``."""
    return f"{name}-{now:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def run_pipeline(
    memory: Memory,
    name: str,
    *,
    agent: str | None = None,
    dry_run: bool = False,
    clock: Clock | None = None,
    run_id: str | None = None,
    trigger: str = "manual",
    options: dict[str, Any] | None = None,
    due_at: datetime | None = None,
) -> RunRecord:
    """Run pipeline ``name`` once under its lock and record the run.

    Returns the record (``status`` says how it went; ``skipped`` when another
    process holds the lock). An exception from the pipeline is recorded and
    raised again.

    ``due_at`` is the scheduled slot a scheduler run is for: when another process
    already started a real run of ``name`` at or after it (checked under the lock),
    this run is ``skipped``, so a slot runs once however many servers fire it.
    """
    spec = registry.get(name)
    check_id(agent, "agent", memory.settings.limits)
    clock = clock or memory.clock
    run_id = run_id or new_run_id(name, clock())
    check_id(run_id, "run_id", memory.settings.limits)
    record = RunRecord(
        name=name,
        run_id=run_id,
        agent=agent,
        started_at=clock().isoformat(),
        dry_run=dry_run,
        trigger=trigger,
        host=socket.gethostname(),
        pid=os.getpid(),
    )
    store = memory.store
    log = logging.getLogger(f"memoryd.pipelines.{name}")
    with store.run_lock(f"pipeline:{name}", memory.settings.pipelines.lock_ttl_s) as got:
        if not got:
            record.status = "skipped"
            record.finished_at = clock().isoformat()
            record.error = f"another process is running {name}; this run did nothing"
            save_run(memory, record)
            log.info("%s skipped: another process holds its lock", name)
            return record
        last = last_started(memory).get(name)
        if due_at is not None and last is not None and datetime.fromisoformat(last) >= due_at:
            record.status = "skipped"
            record.finished_at = clock().isoformat()
            record.error = f"{name} already ran for the slot due at {due_at.isoformat()}"
            save_run(memory, record)
            log.info("%s skipped: another process already ran this slot", name)
            return record
        _mark_interrupted(memory, name)
        save_run(memory, record)
        ctx = PipelineContext(
            memory=memory,
            name=name,
            run_id=run_id,
            clock=clock,
            dry_run=dry_run,
            agent=agent,
            log=log,
            options=dict(options or {}),
        )
        try:
            result = spec.fn(ctx)
        except BaseException as exc:
            record.status = "error" if isinstance(exc, Exception) else "interrupted"
            record.error = f"{type(exc).__name__}: {exc}"[:1000]
            record.finished_at = clock().isoformat()
            save_run(memory, record)
            if not dry_run:
                _set_last(memory, name, record.started_at)
            raise
        record.status = result.status
        record.counts = dict(result.counts)
        record.notes = result.notes[:_MAX_NOTES]
        record.errors = result.errors[:_MAX_NOTES]
        record.error = "; ".join(result.errors)[:1000] or None
        record.finished_at = clock().isoformat()
        save_run(memory, record)
        if not dry_run:
            _set_last(memory, name, record.started_at)
    log.info("%s %s: %s", name, record.status, record.counts)
    return record


def save_run(memory: Memory, record: RunRecord) -> None:
    """Insert or replace ``record`` (by run id) in ``pipelines:runs``."""
    store = memory.store
    keep = memory.settings.pipelines.keep_runs
    with store.atomic():
        runs = [r for r in (store.kv_get(RUNS_KEY) or []) if isinstance(r, dict)]
        for n, r in enumerate(runs):
            if r.get("run_id") == record.run_id:
                runs[n] = record.to_dict()
                break
        else:
            runs.append(record.to_dict())
        store.kv_set(RUNS_KEY, runs[-keep:])


def list_runs(memory: Memory, *, name: str | None = None, limit: int = 50) -> list[RunRecord]:
    """Recorded runs, newest first."""
    stored = _reap(memory, memory.store.kv_get(RUNS_KEY) or [])
    runs = [
        (RunRecord.from_dict(r), n)
        for n, r in enumerate(stored)
        if isinstance(r, dict) and r.get("name") and r.get("run_id")
    ]
    if name is not None:
        runs = [(r, n) for r, n in runs if r.name == name]
    runs.sort(key=lambda rn: (rn[0].started_at, rn[1]), reverse=True)  # ties: later entry first
    return [r for r, _ in runs[: max(0, limit)]]


def get_run(memory: Memory, run_id: str) -> RunRecord | None:
    for r in _reap(memory, memory.store.kv_get(RUNS_KEY) or []):
        if isinstance(r, dict) and r.get("run_id") == run_id:
            return RunRecord.from_dict(r)
    return None


def last_started(memory: Memory) -> dict[str, str]:
    """Pipeline name -> ISO start of its last real run."""
    value = memory.store.kv_get(LAST_KEY)
    return dict(value) if isinstance(value, dict) else {}


def _set_last(memory: Memory, name: str, started_at: str) -> None:
    with memory.store.atomic():
        last = last_started(memory)
        last[name] = started_at
        memory.store.kv_set(LAST_KEY, last)


def _owner_gone(run: Any) -> bool:
    """A ``running`` record whose process, on this host, no longer exists."""
    if not isinstance(run, dict) or run.get("status") != "running":
        return False
    pid = run.get("pid")
    if run.get("host") != socket.gethostname() or not isinstance(pid, int) or pid <= 0:
        return False  # another host's run (its next run there marks it), or an old record
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return _zombie(pid)


def _zombie(pid: int) -> bool:
    """Killed but not yet reaped by its parent: dead for our purpose (Linux's /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False


def _reap(memory: Memory, stored: list[Any]) -> list[Any]:
    """``stored`` with the runs whose process died marked ``interrupted`` (and saved)."""
    if not any(_owner_gone(r) for r in stored):
        return stored
    with memory.store.atomic():
        runs = memory.store.kv_get(RUNS_KEY) or []
        for r in runs:
            if _owner_gone(r):
                r["status"] = "interrupted"
                r["error"] = r.get("error") or "the process ended before the run finished"
        memory.store.kv_set(RUNS_KEY, runs)
    return list(runs)


def _mark_interrupted(memory: Memory, name: str) -> None:
    """Runs of ``name`` still ``running`` while we hold its lock died mid-run."""
    store = memory.store
    with store.atomic():
        runs = store.kv_get(RUNS_KEY) or []
        changed = False
        for r in runs:
            if isinstance(r, dict) and r.get("name") == name and r.get("status") == "running":
                r["status"] = "interrupted"
                r["error"] = r.get("error") or "the process ended before the run finished"
                changed = True
        if changed:
            store.kv_set(RUNS_KEY, runs)
