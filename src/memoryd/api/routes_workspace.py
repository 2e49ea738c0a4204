"""Workspace routes: memory_get, memory_search, session-start context, session
notes, the pre-compaction flush, grounded backfill, indexing and per-agent status.

Workspace files belong to the workspace owner (``workspace.user_id``) and the
agent; every route asks :meth:`memoryd.scope.Scope.workspace` for the agent's
workspace, which checks the caller's key, before touching a file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from memoryd.api.auth import Principal, principal
from memoryd.core import Memory
from memoryd.file_shapes import (
    BackfillOut,
    CommitmentOut,
    Commitments,
    ContextOut,
    FileHits,
    FileSliceOut,
    FlushOut,
    IndexOut,
    RollbackOut,
    SessionNoteOut,
    Workspaces,
)
from memoryd.scope import AgentFiles

router = APIRouter(prefix="/v1", tags=["workspace"])


class AgentBody(BaseModel):
    """A request body that names the agent whose files it works on (also the wiki
    routes'); a field the route does not know is refused, not ignored."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str


def _memory(request: Request) -> Memory:  # also the wiki routes'
    mem: Memory = request.app.state.memory
    return mem


def _files(mem: Memory, p: Principal, agent_id: str) -> AgentFiles:
    """The agent's workspace, if the key may use it (:meth:`Scope.files`)."""
    return mem.scope(p, agent_id=agent_id).files()


async def on_files(
    request: Request, p: Principal, agent_id: str, op: Callable[[AgentFiles], Any]
) -> Any:
    """``op`` on the agent's files (:meth:`Scope.files` checks the key), in the thread
    pool: file, model and store work must not hold up the event loop."""
    mem = _memory(request)
    return await run_in_threadpool(lambda: op(_files(mem, p, agent_id)))


@router.get("/memory_get", response_model=FileSliceOut)
@router.get("/memory/get", include_in_schema=False, response_model=FileSliceOut)
async def get_file(
    request: Request,
    agent_id: str,
    path: str,
    from_line: int | None = Query(default=None, alias="from", description="first line, 1-based"),
    lines: int | None = Query(default=None, description="how many lines (default: to the end)"),
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """Lines of a workspace memory file; empty text when the file does not exist."""
    return await on_files(
        request, p, agent_id, lambda files: files.read(path, from_line, lines).to_json()
    )


class SearchBody(AgentBody):
    query: str
    max_results: int | None = Field(default=None, ge=1, le=100)
    max_tokens: int | None = Field(
        default=None, ge=1, le=100_000, description="budget of returned text, model tokens"
    )
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    mmr: bool | None = None


@router.post("/memory_search", response_model=FileHits)
async def search_files(
    request: Request, body: SearchBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Hybrid search over the agent's workspace chunks; hits cite ``path#Lx-Ly``."""

    def run(files: AgentFiles) -> dict[str, Any]:
        hits = files.search(
            body.query,
            max_results=body.max_results,
            max_tokens=body.max_tokens,
            min_score=body.min_score,
            mmr=body.mmr,
        )
        return {"results": [h.to_json(files.workspace.settings.snippet_chars) for h in hits]}

    return await on_files(request, p, body.agent_id, run)


@router.get("/context", response_model=ContextOut)
async def session_context(
    request: Request,
    agent_id: str,
    query: str | None = None,
    budget: int | None = Query(default=None, description="characters (default 20000)"),
    user_id: str | None = None,
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """Session-start context: identity files, MEMORY.md, today's and yesterday's diary,
    and the memories most relevant to ``query``, within ``budget`` characters."""

    def run(files: AgentFiles) -> dict[str, Any]:
        if user_id is not None:
            _memory(request).scope(p, user_id, agent_id).check()
        return files.context(query, budget, user_id=user_id).to_json()

    return await on_files(request, p, agent_id, run)


class SessionEndBody(AgentBody):
    messages: list[dict[str, Any]]
    session_id: str | None = None
    limit: int | None = Field(default=None, ge=1, le=200, description="last N messages (15)")


@router.post("/sessions/end", response_model=SessionNoteOut)
async def session_end(
    request: Request, body: SessionEndBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Write the session's last messages to ``memory/YYYY-MM-DD-<slug>.md`` and index it."""

    def run(files: AgentFiles) -> dict[str, Any]:
        note = files.session_end(  # the LLM (if any) names the file
            body.messages, session_id=body.session_id, limit=body.limit
        )
        return note.to_json()

    return await on_files(request, p, body.agent_id, run)


class FlushBody(AgentBody):
    notes: list[str] | str | None = Field(
        default=None, description="durable facts to keep, written as given"
    )
    messages: list[dict[str, Any]] | None = Field(
        default=None,
        description="instead of notes: the conversation about to be compacted; its facts "
        "that the diary does not already hold are written",
    )


@router.post("/flush", response_model=FlushOut)
async def flush_notes(
    request: Request, body: FlushBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Append durable notes to today's diary before the agent compacts its context
    (``notes``), or what of the compacted ``messages`` the diary lacks."""
    return await on_files(
        request,
        p,
        body.agent_id,
        lambda files: files.flush(body.notes, messages=body.messages).to_json(),
    )


class BackfillBody(AgentBody):
    path: str = Field(default="memory", max_length=1000)
    stage_short_term: bool = False
    rollback: bool = False
    rollback_short_term: bool = False
    dry_run: bool = False


@router.post("/rem-backfill", response_model=BackfillOut | RollbackOut)
async def rem_backfill(
    request: Request, body: BackfillBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Replay old daily files as standalone days into DREAMS.md (grounded review entries),
    optionally staging the candidates as short-term memory; or undo what backfills added."""

    def run(files: AgentFiles) -> dict[str, Any]:
        return files.backfill(
            path=body.path,
            stage_short_term=body.stage_short_term,
            rollback=body.rollback,
            rollback_short_term=body.rollback_short_term,
            dry_run=body.dry_run,
        ).to_json()

    return await on_files(request, p, body.agent_id, run)


@router.post("/commitments/due", response_model=Commitments)
async def commitments_due(
    request: Request,
    agent_id: str,
    channel: str | None = None,
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """The agent's inferred follow-ups that are due now (in ``channel``), marked delivered:
    call it from the agent's heartbeat. A POST, as it changes them (a GET never changes
    anything); ``GET /v1/commitments?status=pending`` only reads."""

    def run(files: AgentFiles) -> dict[str, Any]:
        due = files.commitments(due=True, channel=channel)
        return {"results": [c.to_json() for c in due]}

    return await on_files(request, p, agent_id, run)


@router.get("/commitments", response_model=Commitments)
async def commitments_list(
    request: Request,
    agent_id: str,
    status: str | None = None,
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """Every commitment of the agent (pending, delivered, done, expired), by due time."""

    def run(files: AgentFiles) -> dict[str, Any]:
        listed = files.commitments(status=status)
        return {"results": [c.to_json() for c in listed]}

    return await on_files(request, p, agent_id, run)


@router.post("/commitments/{commitment_id}/done", response_model=CommitmentOut)
async def commitment_done(
    request: Request, commitment_id: str, agent_id: str, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Close a delivered (or pending) commitment."""
    return await on_files(
        request, p, agent_id, lambda files: files.close_commitment(commitment_id).to_json()
    )


class IndexBody(AgentBody):
    force: bool = False


@router.post("/index", response_model=IndexOut)
async def index_files(
    request: Request, body: IndexBody, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Index the agent's workspace now (the watcher does this on its own under ``serve``)."""
    return await on_files(
        request, p, body.agent_id, lambda files: files.index(force=body.force).to_json()
    )


@router.get("/workspaces", response_model=Workspaces)
async def workspaces(request: Request, p: Principal = Depends(principal)) -> dict[str, Any]:
    """Per agent the key may see: files, chunks, model, last index, files waiting."""
    mem = _memory(request)

    def run() -> dict[str, Any]:
        results = [
            mem.scope(p, agent_id=agent).files().status()
            for agent in mem.scope(p).workspaces().agents()
        ]
        return {"results": results}

    return await run_in_threadpool(run)
