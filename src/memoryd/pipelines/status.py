"""What ``memoryd pipelines`` and ``GET /v1/pipelines`` show: one function for both."""

from __future__ import annotations

from typing import Any

from memoryd.core import Memory
from memoryd.pipelines import registry
from memoryd.pipelines.runs import list_runs
from memoryd.pipelines.scheduler import PipelineScheduler, next_run, schedule_of


def pipelines_status(
    memory: Memory,
    scheduler: PipelineScheduler | None = None,
    *,
    name: str | None = None,
    limit: int = 50,
) -> dict[str, Any]:
    """Every pipeline (schedule, enabled, next and last run) and recent runs, newest first.

    ``next_run`` is the live scheduler's when one runs in this process, otherwise
    when the schedule would fire next (``serve`` runs it then).
    """
    if name is not None:
        registry.get(name)  # a clear error for an unknown name
    live = scheduler.next_runs() if scheduler is not None else {}
    now = memory.clock()
    all_runs = list_runs(memory, limit=memory.settings.pipelines.keep_runs)
    pipelines = []
    for spec in registry.all_specs():
        enabled = spec.is_on(memory.settings) and memory.settings.pipelines.scheduler
        if spec.name in live:
            upcoming = live[spec.name]
        elif enabled:
            fire = next_run(memory, spec, now)
            upcoming = fire.isoformat() if fire else None
        else:
            upcoming = None
        last = next((r for r in all_runs if r.name == spec.name), None)
        pipelines.append(
            {
                "name": spec.name,
                "description": spec.description,
                "schedule": schedule_of(memory, spec),
                "timezone": memory.settings.pipelines.timezone,
                "enabled": enabled,
                "next_run": upcoming,
                "last_run": last.to_dict() if last else None,
            }
        )
    runs = [r for r in all_runs if name is None or r.name == name][:limit]
    return {
        "scheduler": scheduler is not None,
        "pipelines": pipelines,
        "runs": [r.to_dict() for r in runs],
    }
