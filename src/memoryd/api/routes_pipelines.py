"""``GET /v1/pipelines``: the pipelines, their schedules and their recorded runs.

The same view as ``memoryd pipelines``: each registered pipeline with its
crontab, whether ``serve`` schedules it, its next scheduled run (when this
server runs the scheduler) and its last run; then recent runs, newest first.
Run notes can quote memory text, so only admin keys see notes and errors of
runs; other keys see the runs of the agents they may access, without them
(:meth:`memoryd.scope.WorkspaceAccess.pipelines` holds that rule).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool

from memoryd.api.auth import Principal, principal
from memoryd.core import Memory
from memoryd.file_shapes import Pipelines

router = APIRouter(tags=["pipelines"])


@router.get("/v1/pipelines", response_model=Pipelines)
async def get_pipelines(
    request: Request,
    p: Principal = Depends(principal),
    name: str | None = Query(default=None, description="only runs of this pipeline"),
    limit: int = Query(default=50, ge=1, le=500, description="recent runs to return"),
) -> dict[str, Any]:
    mem: Memory = request.app.state.memory
    scheduler = getattr(request.app.state, "pipeline_scheduler", None)
    runs = mem.scope(p).workspaces()
    return await run_in_threadpool(runs.pipelines, scheduler, name=name, limit=limit)
