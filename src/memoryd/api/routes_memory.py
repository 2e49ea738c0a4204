"""The memory routes: the seed service's ``/memory/*`` and mem0's REST shape.

Every handler is ``async`` and runs ``Memory`` in a worker thread, so slow
LLM or embedding work never blocks the event loop; adds also wait for one of
``server.max_concurrent_adds`` slots, so a burst of slow adds cannot take
every worker thread from searches and ``/health``.

Every handler checks the caller's key (:mod:`memoryd.api.auth`) before it
reads or writes: a scoped key gets 403 for a scope outside its own, and 404
for a memory id outside it (the same answer as for an id that does not
exist, so ids cannot be probed). Reset needs an admin key when keys are
configured, and always a ``user_id``: it never wipes other users.

Routes with fixed paths (``/memory/list``, ``/memory/reset``,
``/memory/history/{id}``...) are declared before ``/memory/{id}`` so the
parameter route cannot swallow them (a seed defect: its reset was
unreachable, and wiped every user when reached).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from fastapi import APIRouter, Body, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.concurrency import run_in_threadpool

from memoryd import audit
from memoryd.access import visible
from memoryd.api.auth import Principal, principal
from memoryd.api.shapes import event_out, history_out, hit_out, record_out
from memoryd.conversation import parse_time
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.models import Filters, MemoryRecord, Origin, SearchHit
from memoryd.search.tiers import LONG_TERM, SHARED, SHORT_TERM

router = APIRouter()
T = TypeVar("T")


# -- request bodies ------------------------------------------------------------------------
class FilterSpec(BaseModel):
    """Search and list filters. ``memory_type`` picks a tier (``long_term``:
    no run id; ``short_term``: a run id) or the shared pool's categories."""

    model_config = ConfigDict(extra="forbid")

    category: str | None = None
    categories: list[str] | None = None
    origin: str | None = None
    origins: list[str] | None = None
    memory_type: Literal["long_term", "short_term", "shared"] | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    source_path: str | None = None

    @field_validator("created_after", "created_before")
    @classmethod
    def _naive_is_utc(cls, v: datetime | None) -> datetime | None:
        # a naive time would be read as local time, which overflows near year 1
        return v.replace(tzinfo=UTC) if v is not None and v.tzinfo is None else v


_MESSAGES_DOC = (
    'conversation messages [{"role", "content", "name"?, "timestamp"?}] (or use text); '
    "name is the speaker, timestamp ISO 8601 or Unix seconds; with infer false each "
    "message is stored as one turn indexed with its speaker, time and previous turn"
)
_TIMESTAMP_DOC = "when the text or conversation happened (ISO 8601 or Unix seconds)"


class AddRequest(BaseModel):
    messages: list[dict[str, Any]] | None = Field(None, description=_MESSAGES_DOC)
    timestamp: str | float | None = Field(None, description=_TIMESTAMP_DOC)
    text: str | None = Field(None, description="text to remember (or use messages)")
    user_id: str
    agent_id: str | None = None
    run_id: str | None = Field(None, description="YYYY-MM-DD for short-term memory")
    metadata: dict[str, Any] | None = Field(None, description='e.g. {"category": "decision"}')
    infer: bool = Field(True, description="extract and reconcile facts; false stores as given")
    custom_extraction_prompt: str | None = Field(
        None, description="what to extract, for this call only"
    )


class SearchRequest(BaseModel):
    query: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    top_k: int = Field(5, description="1 to 100")
    min_score: float | None = Field(None, description="0 to 1, compared with the relevance")
    time_decay: bool = True
    include_shared: bool = True
    include_archived: bool = False  # also memories archived by TTL decay
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    filters: FilterSpec | None = None


class CombinedSearchRequest(BaseModel):
    query: str
    user_id: str
    agent_id: str | None = None
    top_k: int = Field(5, description="default for long_term_top_k and short_term_top_k")
    long_term_top_k: int | None = None
    short_term_top_k: int | None = None
    recent_days: int = 7
    min_score: float | None = None
    time_decay: bool = True
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    filters: FilterSpec | None = None


class UpdateRequest(BaseModel):
    memory_id: str
    text: str | None = None
    metadata: dict[str, Any] | None = None


class Mem0AddRequest(BaseModel):
    messages: list[dict[str, Any]] | str = Field(description=_MESSAGES_DOC)
    timestamp: str | float | None = Field(None, description=_TIMESTAMP_DOC)
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    metadata: dict[str, Any] | None = None
    infer: bool = True
    prompt: str | None = None


class Mem0SearchRequest(BaseModel):
    query: str
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    limit: int | None = None
    top_k: int | None = None
    threshold: float | None = None
    filters: FilterSpec | None = None


class Mem0UpdateRequest(BaseModel):
    text: str | None = None
    data: str | None = None  # what mem0's own server passes on
    memory: str | None = None
    metadata: dict[str, Any] | None = None


class ScopeRequest(BaseModel):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


# -- helpers ---------------------------------------------------------------------------------
def _memory(request: Request) -> Memory:
    mem: Memory = request.app.state.memory
    return mem


async def _run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await run_in_threadpool(fn, *args, **kwargs)


def _filters(spec: FilterSpec | None, shared: list[str], **scope: Any) -> Filters:
    f = Filters(**{k: v for k, v in scope.items() if v is not None})
    if spec is None:
        return f
    categories = [c for c in [spec.category, *(spec.categories or [])] if c]
    origins: list[Origin] = []
    for name in [spec.origin, *(spec.origins or [])]:
        if name is None:
            continue
        try:
            origins.append(Origin(name))
        except ValueError:
            raise InvalidInputError(
                f"unknown origin {name!r}", f"use one of {', '.join(o.value for o in Origin)}"
            ) from None
    update: dict[str, Any] = {
        "categories": categories or None,
        "origins": origins or None,
        "created_after": spec.created_after,
        "created_before": spec.created_before,
        "source_path": spec.source_path,
    }
    if spec.memory_type == LONG_TERM:
        update["long_term_only"] = True
    elif spec.memory_type == SHORT_TERM:
        update["short_term_only"] = True
    elif spec.memory_type == SHARED:
        update["categories"] = [c for c in shared if not categories or c in categories] or [""]
    return f.model_copy(update=update)


def _owned(
    mem: Memory, p: Principal, memory_id: str, include_deleted: bool = False
) -> MemoryRecord:
    """The record, if it exists and the key may see it; 404 either way otherwise."""
    return visible(mem, p, memory_id, include_deleted=include_deleted)


def _top(hits: list[SearchHit]) -> float | None:
    return round(hits[0].score, 4) if hits else None


async def _add(
    request: Request,
    p: Principal,
    *,
    user_id: str,
    agent_id: str | None,
    run_id: str | None,
    text: str | None,
    messages: list[dict[str, Any]] | None,
    metadata: dict[str, Any] | None,
    infer: bool,
    prompt: str | None,
    timestamp: str | float | None = None,
) -> list[dict[str, Any]]:
    audit.note(request, op="add", user_id=user_id, agent_id=agent_id, run_id=run_id)
    p.check(user_id, agent_id)
    mem = _memory(request)
    slots: asyncio.Semaphore = request.app.state.add_slots
    async with slots:
        events = await _run(
            mem.add,
            text,
            messages=messages,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            metadata=metadata,
            infer=infer,
            prompt=prompt,
            event_at=parse_time(timestamp, "timestamp"),
            actor=p.name,
        )
    audit.note(request, count=len(events))
    return [event_out(e) for e in events]


async def _reset(request: Request, p: Principal, scope: ScopeRequest) -> int:
    audit.note(request, op="reset", **scope.model_dump())
    p.require_admin()
    if not scope.user_id:
        raise InvalidInputError(
            "reset needs a user_id: memoryd never wipes every user at once",
            "pass user_id (and agent_id / run_id to narrow it further)",
        )
    count = await _run(
        _memory(request).reset,
        user_id=scope.user_id,
        agent_id=scope.agent_id,
        run_id=scope.run_id,
    )
    audit.note(request, count=count)
    return count


# -- the seed's routes: /memory/* --------------------------------------------------------------
@router.post("/memory/add", tags=["memory"])
async def memory_add(
    body: AddRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Remember text or messages. ``infer`` (default true) extracts facts and
    reconciles them with what is stored: the events say ADD, UPDATE, DELETE or NONE."""
    results = await _add(
        request,
        p,
        user_id=body.user_id,
        agent_id=body.agent_id,
        run_id=body.run_id,
        text=body.text,
        messages=body.messages,
        metadata=body.metadata,
        infer=body.infer,
        prompt=body.custom_extraction_prompt,
        timestamp=body.timestamp,
    )
    return {"status": "ok", "results": results}


@router.post("/memory/search", tags=["memory"])
async def memory_search(
    body: SearchRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Hybrid search with time decay, the shared pool and the score parts."""
    audit.note(
        request, op="search", user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id
    )
    p.check(body.user_id, body.agent_id)
    mem = _memory(request)
    hits = await _run(
        mem.search,
        body.query,
        user_id=body.user_id,
        agent_id=body.agent_id,
        run_id=body.run_id,
        top_k=body.top_k,
        min_score=body.min_score,
        filters=_filters(body.filters, mem.settings.search.shared_categories),
        mode=body.mode,
        time_decay=body.time_decay,
        include_shared=body.include_shared,
        include_archived=body.include_archived,
    )
    audit.note(request, count=len(hits), top_score=_top(hits))
    return {"status": "ok", "results": [hit_out(h) for h in hits]}


@router.post("/memory/search_combined", tags=["memory"])
async def memory_search_combined(
    body: CombinedSearchRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Long-term memories plus the last ``recent_days`` of short-term ones, each part
    capped at its own ``top_k``, returned as one ranking by score, each hit labelled
    by ``memory_type``."""
    audit.note(request, op="search_combined", user_id=body.user_id, agent_id=body.agent_id)
    p.check(body.user_id, body.agent_id)
    mem = _memory(request)
    combined = await _run(
        mem.search_combined,
        body.query,
        user_id=body.user_id,
        agent_id=body.agent_id,
        long_term_top_k=body.long_term_top_k or body.top_k,
        short_term_top_k=body.short_term_top_k or body.top_k,
        recent_days=body.recent_days,
        min_score=body.min_score,
        time_decay=body.time_decay,
        filters=_filters(body.filters, mem.settings.search.shared_categories),
        mode=body.mode,
    )
    hits = combined.results
    audit.note(request, count=len(hits), top_score=_top(hits))
    return {
        "status": "ok",
        "results": [hit_out(h) for h in hits],
        "counts": {"long_term": len(combined.long_term), "short_term": len(combined.short_term)},
    }


@router.get("/memory/list", tags=["memory"])
async def memory_list(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    category: str | None = None,
    origin: str | None = None,
    memory_type: Literal["long_term", "short_term", "shared"] | None = None,
    limit: int = Query(100, ge=1, le=10_000),
    offset: int = Query(0, ge=0, le=2**62),  # SQLite integers are 64-bit
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """Memories in a scope, newest first, with the total for paging."""
    audit.note(request, op="list", user_id=user_id, agent_id=agent_id, run_id=run_id)
    p.check(user_id, agent_id)
    mem = _memory(request)
    shared = mem.settings.search.shared_categories
    spec = FilterSpec(category=category, origin=origin, memory_type=memory_type)
    f = _filters(spec, shared, user_id=user_id, agent_id=agent_id, run_id=run_id)

    def page() -> tuple[list[MemoryRecord], int]:
        return mem.list(filters=f, limit=limit, offset=offset), mem.count(f)

    records, total = await _run(page)
    audit.note(request, count=len(records))
    return {
        "status": "ok",
        "results": [record_out(r, shared) for r in records],
        "total": total,
        "limit": limit,
        "offset": offset,
    }


@router.delete("/memory/reset", tags=["memory"])
async def memory_reset(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """Erase every memory of exactly one scope (admin only when keys are configured)."""
    scope = ScopeRequest(user_id=user_id, agent_id=agent_id, run_id=run_id)
    count = await _reset(request, p, scope)
    return {"status": "ok", "deleted": count, "scope": scope.model_dump()}


@router.put("/memory/update", tags=["memory"])
async def memory_update(
    body: UpdateRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Change a memory's text and/or metadata; the old version stays in history."""
    mem = _memory(request)

    def update() -> MemoryRecord:
        record = _owned(mem, p, body.memory_id)
        audit.note(request, user_id=record.user_id, agent_id=record.agent_id)
        return mem.update(body.memory_id, body.text, metadata=body.metadata, actor=p.name)

    audit.note(request, op="update")
    record = await _run(update)
    audit.note(request, count=1)
    return {"status": "ok", "result": record_out(record, mem.settings.search.shared_categories)}


@router.get("/memory/history/{memory_id}", tags=["memory"])
async def memory_history(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Every change to a memory, oldest first, with who and why."""
    mem = _memory(request)
    audit.note(request, op="history")

    def history() -> list[dict[str, Any]]:
        record = _owned(mem, p, memory_id, include_deleted=True)
        audit.note(request, user_id=record.user_id, agent_id=record.agent_id)
        return [history_out(h) for h in mem.history(memory_id)]

    entries = await _run(history)
    audit.note(request, count=len(entries))
    return {"status": "ok", "results": entries}


@router.post("/memory/restore/{memory_id}", tags=["memory"])
async def memory_restore(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Bring back a deleted (or superseded) memory."""
    mem = _memory(request)
    audit.note(request, op="restore")

    def restore() -> MemoryRecord:
        record = _owned(mem, p, memory_id, include_deleted=True)
        audit.note(request, user_id=record.user_id, agent_id=record.agent_id)
        return mem.restore(memory_id, actor=p.name)

    record = await _run(restore)
    audit.note(request, count=1)
    return {"status": "ok", "result": record_out(record, mem.settings.search.shared_categories)}


@router.get("/memory/{memory_id}", tags=["memory"])
async def memory_get(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """One memory."""
    mem = _memory(request)
    audit.note(request, op="get")
    record = await _run(_owned, mem, p, memory_id)
    audit.note(request, user_id=record.user_id, agent_id=record.agent_id, count=1)
    return {"status": "ok", "result": record_out(record, mem.settings.search.shared_categories)}


@router.delete("/memory/{memory_id}", tags=["memory"])
async def memory_delete(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """Delete a memory: out of search and list, kept in history, restorable."""
    mem = _memory(request)
    audit.note(request, op="delete")

    def delete() -> MemoryRecord:
        record = _owned(mem, p, memory_id)
        audit.note(request, user_id=record.user_id, agent_id=record.agent_id)
        return mem.delete(memory_id, actor=p.name)

    await _run(delete)
    audit.note(request, count=1)
    return {"status": "ok", "deleted": memory_id}


# -- mem0's REST shape -----------------------------------------------------------------------
@router.post("/memories", tags=["mem0"])
async def mem0_add(
    body: Mem0AddRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """mem0's ``POST /memories``: ``{"results": [events]}``."""
    if not body.user_id:
        raise InvalidInputError("user_id is required", "memoryd scopes every memory to a user")
    text = body.messages if isinstance(body.messages, str) else None
    messages = None if isinstance(body.messages, str) else body.messages
    results = await _add(
        request,
        p,
        user_id=body.user_id,
        agent_id=body.agent_id,
        run_id=body.run_id,
        text=text,
        messages=messages,
        metadata=body.metadata,
        infer=body.infer,
        prompt=body.prompt,
        timestamp=body.timestamp,
    )
    return {"results": results}


@router.get("/memories", tags=["mem0"])
async def mem0_list(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    limit: int = Query(100, ge=1, le=10_000),
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """mem0's ``GET /memories``: ``{"results": [memories]}``."""
    page = await memory_list(
        request, user_id, agent_id, run_id, None, None, None, limit=limit, offset=0, p=p
    )
    return {"results": page["results"]}


@router.post("/search", tags=["mem0"])
async def mem0_search(
    body: Mem0SearchRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """mem0's ``POST /search``: ``{"results": [hits]}``."""
    converted = SearchRequest(
        query=body.query,
        user_id=body.user_id,
        agent_id=body.agent_id,
        run_id=body.run_id,
        top_k=body.top_k or body.limit or 5,
        min_score=body.threshold,
        filters=body.filters,
    )
    found = await memory_search(converted, request, p)
    return {"results": found["results"]}


@router.post("/reset", tags=["mem0"])
async def mem0_reset(
    request: Request,
    body: ScopeRequest | None = Body(None),
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """mem0's ``POST /reset``, but scoped: it needs a ``user_id`` (body or query)
    and erases only that scope. mem0's own reset wipes every user."""
    scope = body or ScopeRequest(user_id=user_id, agent_id=agent_id, run_id=run_id)
    count = await _reset(request, p, scope)
    named = scope.model_dump(exclude_none=True)
    return {
        "message": "Memories reset for " + ", ".join(f"{k}={v}" for k, v in named.items()),
        "deleted": count,
        "scope": named,
    }


@router.delete("/memories", tags=["mem0"])
async def mem0_delete_all(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    p: Principal = Depends(principal),
) -> dict[str, Any]:
    """mem0's ``DELETE /memories``: erase one scope (same rules as reset)."""
    scope = ScopeRequest(user_id=user_id, agent_id=agent_id, run_id=run_id)
    count = await _reset(request, p, scope)
    return {"message": "All relevant memories deleted", "deleted": count}


@router.get("/memories/{memory_id}/history", tags=["mem0"])
async def mem0_history(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> list[dict[str, Any]]:
    """mem0's history: a bare list."""
    found = await memory_history(memory_id, request, p)
    entries: list[dict[str, Any]] = found["results"]
    return entries


@router.get("/memories/{memory_id}", tags=["mem0"])
async def mem0_get(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """mem0's get: the memory itself."""
    found = await memory_get(memory_id, request, p)
    record: dict[str, Any] = found["result"]
    return record


@router.put("/memories/{memory_id}", tags=["mem0"])
async def mem0_update(
    memory_id: str, body: Mem0UpdateRequest, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    """mem0's update: new text as ``text`` (or ``data``/``memory``) and/or ``metadata``."""
    text = body.text if body.text is not None else (body.data or body.memory)
    found = await memory_update(
        UpdateRequest(memory_id=memory_id, text=text, metadata=body.metadata), request, p
    )
    return {"message": "Memory updated successfully!", **found["result"]}


@router.delete("/memories/{memory_id}", tags=["mem0"])
async def mem0_delete(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> dict[str, Any]:
    await memory_delete(memory_id, request, p)
    return {"message": "Memory deleted successfully", "id": memory_id}
