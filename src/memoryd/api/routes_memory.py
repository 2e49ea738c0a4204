"""The memory routes: the seed service's ``/memory/*`` and mem0's REST shape.

Every handler is ``async`` and runs ``Memory`` in a worker thread, so slow
LLM or embedding work never blocks the event loop; adds also wait for one of
``server.max_concurrent_adds`` slots, so a burst of slow adds cannot take
every worker thread from searches and ``/health``.

Every handler parses the request, calls the caller's
:class:`~memoryd.scope.Scope` (``memory.scope(principal, user_id, agent_id)``),
which decides access, and answers with a declared response model built from
:mod:`memoryd.shapes`: a scoped key gets 403 for a scope outside its own, and
404 for a memory id outside it (the same answer as for an id that does not
exist, so ids cannot be probed). Reset needs an admin key when keys are
configured, and always a ``user_id``: it never wipes other users.

Routes with fixed paths (``/memory/list``, ``/memory/reset``,
``/memory/history/{id}``...) are declared before ``/memory/{id}`` so the
parameter route cannot swallow them (a seed defect: its reset was
unreachable, and wiped every user when reached).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, TypeVar

from fastapi import APIRouter, Body, Depends, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from memoryd import audit
from memoryd.api.auth import Principal, principal
from memoryd.conversation import parse_time
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.filters import FilterError
from memoryd.models import MemoryRecord
from memoryd.scope import Scope
from memoryd.shapes import EventOut, FilterSpec, HistoryOut, HitOut, MemoryOut

router = APIRouter()
T = TypeVar("T")
R = TypeVar("R", MemoryOut, MemoryRecord)


# -- request bodies ------------------------------------------------------------------------
_MESSAGES_DOC = (
    'conversation messages [{"role", "content", "name"?, "timestamp"?}] (or use text); '
    "name is the speaker, timestamp ISO 8601 or Unix seconds; with infer false each "
    "message is stored as one turn indexed with its speaker, time and previous turn"
)
_TIMESTAMP_DOC = "when the text or conversation happened (ISO 8601 or Unix seconds)"
_TURNS_DOC = (
    "also the turns of conversations added with inference, kept as the evidence of the "
    "facts extracted from them (searchable; left out of lists by default)"
)


class AddRequest(BaseModel):
    messages: list[dict[str, Any]] | None = Field(None, description=_MESSAGES_DOC)
    timestamp: str | float | None = Field(None, description=_TIMESTAMP_DOC)
    text: str | None = Field(None, description="text to remember (or use texts or messages)")
    texts: list[str] | None = Field(
        None,
        description="several independent texts, each stored as its own memory: one request, "
        "one model run and one transaction for all (a bulk import, or an agent saving many "
        "facts at once); each text is checked before any is written",
    )
    user_id: str | None = Field(None, description="default: the server's default_user")
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
    include_superseded: bool = False  # also facts a newer fact replaced
    as_of: datetime | None = Field(default=None, description="what was true then (ISO 8601)")
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
    include_superseded: bool = False  # also facts a newer fact replaced
    as_of: datetime | None = Field(default=None, description="what was true then (ISO 8601)")
    mode: Literal["hybrid", "vector", "keyword"] = "hybrid"
    filters: FilterSpec | None = None


class UpdateRequest(BaseModel):
    memory_id: str
    text: str | None = None
    metadata: dict[str, Any] | None = None
    reason: str | None = Field(None, description="why it changed, kept in history")


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
    filters: dict[str, Any] | None = Field(
        None,
        description='mem0\'s filter language: {"user_id": "alice"}, {"project": "orion"}, '
        '{"AND": [...]}, {"created_at": {"gte": "2026-01-01"}} (README: "Filters"); '
        "memoryd's own filter names (category, origin, memory_type...) work too",
    )


class Mem0UpdateRequest(BaseModel):
    text: str | None = None
    data: str | None = None  # what mem0's own server passes on
    memory: str | None = None
    metadata: dict[str, Any] | None = None


class ScopeRequest(BaseModel):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


# -- answers -------------------------------------------------------------------------------
class AddAnswer(BaseModel):
    status: str = "ok"
    results: list[EventOut]


class SearchAnswer(BaseModel):
    status: str = "ok"
    results: list[HitOut]


class CombinedAnswer(SearchAnswer):
    counts: dict[str, int]


class ListAnswer(BaseModel):
    status: str = "ok"
    results: list[MemoryOut]
    total: int
    limit: int
    offset: int


class MemoryAnswer(BaseModel):
    status: str = "ok"
    result: MemoryOut


class HistoryAnswer(BaseModel):
    status: str = "ok"
    results: list[HistoryOut]


class DeleteAnswer(BaseModel):
    status: str = "ok"
    deleted: str


class ResetAnswer(BaseModel):
    status: str = "ok"
    deleted: int
    scope: dict[str, str | None]


class Mem0Events(BaseModel):
    results: list[EventOut]


class Mem0Memories(BaseModel):
    results: list[MemoryOut]


class Mem0Hits(BaseModel):
    results: list[HitOut]


class Mem0Deleted(BaseModel):
    message: str
    deleted: int


class Mem0Reset(Mem0Deleted):
    scope: dict[str, str]


class Mem0Updated(MemoryOut):
    message: str


class Mem0Message(BaseModel):
    message: str
    id: str


# -- helpers ---------------------------------------------------------------------------------
def _scope(
    request: Request, p: Principal, user_id: str | None = None, agent_id: str | None = None
) -> Scope:
    mem: Memory = request.app.state.memory
    return mem.scope(p, user_id, agent_id)


async def _run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await run_in_threadpool(fn, *args, **kwargs)


def _top(hits: list[HitOut]) -> float | None:
    return round(hits[0].score, 4) if hits else None


def _noted(request: Request, record: R) -> R:
    audit.note(request, user_id=record.user_id, agent_id=record.agent_id, count=1)
    return record


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
    texts: list[str] | None = None,
) -> list[EventOut]:
    audit.note(request, op="add", user_id=user_id, agent_id=agent_id, run_id=run_id)
    scope = _scope(request, p, user_id, agent_id)
    scope.check()  # before waiting for a slot
    slots: asyncio.Semaphore = request.app.state.add_slots
    async with slots:
        events = await _run(
            scope.add,
            text,
            messages=messages,
            texts=texts,
            run_id=run_id,
            metadata=metadata,
            infer=infer,
            prompt=prompt,
            event_at=parse_time(timestamp, "timestamp"),
        )
    audit.note(request, count=len(events))
    return events


async def _reset(request: Request, p: Principal, scope: ScopeRequest) -> int:
    audit.note(request, op="reset", **scope.model_dump())
    count = await _run(_scope(request, p, scope.user_id, scope.agent_id).reset, run_id=scope.run_id)
    audit.note(request, count=count)
    return count


# -- the seed's routes: /memory/* --------------------------------------------------------------
@router.post("/memory/add", tags=["memory"], response_model=AddAnswer)
async def memory_add(
    body: AddRequest, request: Request, p: Principal = Depends(principal)
) -> AddAnswer:
    """Remember text, several texts or messages. ``infer`` (default true) extracts facts
    and reconciles them with what is stored: the events say ADD, UPDATE, DELETE or NONE."""
    results = await _add(
        request,
        p,
        user_id=request.app.state.memory.settings.acting_user(body.user_id),
        agent_id=body.agent_id,
        run_id=body.run_id,
        text=body.text,
        texts=body.texts,
        messages=body.messages,
        metadata=body.metadata,
        infer=body.infer,
        prompt=body.custom_extraction_prompt,
        timestamp=body.timestamp,
    )
    return AddAnswer(results=results)


@router.post("/memory/search", tags=["memory"], response_model=SearchAnswer)
async def memory_search(
    body: SearchRequest, request: Request, p: Principal = Depends(principal)
) -> SearchAnswer:
    """Hybrid search with time decay, the shared pool and the score parts; with an
    agent_id, that agent's own workspace files too."""
    audit.note(
        request, op="search", user_id=body.user_id, agent_id=body.agent_id, run_id=body.run_id
    )
    hits = await _run(
        _scope(request, p, body.user_id, body.agent_id).search,
        body.query,
        run_id=body.run_id,
        top_k=body.top_k,
        min_score=body.min_score,
        filters=body.filters,
        mode=body.mode,
        time_decay=body.time_decay,
        include_shared=body.include_shared,
        include_archived=body.include_archived,
        include_superseded=body.include_superseded,
        as_of=body.as_of,
    )
    audit.note(request, count=len(hits), top_score=_top(hits))
    return SearchAnswer(results=hits)


@router.post("/memory/search_combined", tags=["memory"], response_model=CombinedAnswer)
async def memory_search_combined(
    body: CombinedSearchRequest, request: Request, p: Principal = Depends(principal)
) -> CombinedAnswer:
    """Long-term memories plus the last ``recent_days`` of short-term ones, each part
    capped at its own ``top_k``, returned as one ranking by score, each hit labelled
    by ``memory_type``."""
    audit.note(request, op="search_combined", user_id=body.user_id, agent_id=body.agent_id)
    combined = await _run(
        _scope(request, p, body.user_id, body.agent_id).search_combined,
        body.query,
        long_term_top_k=body.long_term_top_k or body.top_k,
        short_term_top_k=body.short_term_top_k or body.top_k,
        recent_days=body.recent_days,
        min_score=body.min_score,
        time_decay=body.time_decay,
        filters=body.filters,
        mode=body.mode,
        include_superseded=body.include_superseded,
        as_of=body.as_of,
    )
    audit.note(request, count=len(combined.results), top_score=_top(combined.results))
    return CombinedAnswer(results=combined.results, counts=combined.counts)


@router.get("/memory/list", tags=["memory"], response_model=ListAnswer)
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
    include_turns: bool = Query(False, description=_TURNS_DOC),
    p: Principal = Depends(principal),
) -> ListAnswer:
    """Memories in a scope, newest first, with the total for paging."""
    audit.note(request, op="list", user_id=user_id, agent_id=agent_id, run_id=run_id)
    spec = FilterSpec(category=category, origin=origin, memory_type=memory_type)
    page = await _run(
        _scope(request, p, user_id, agent_id).list,
        run_id=run_id,
        filters=spec,
        limit=limit,
        offset=offset,
        include_turns=include_turns,
    )
    audit.note(request, count=len(page.results))
    return ListAnswer(results=page.results, total=page.total, limit=limit, offset=offset)


@router.delete("/memory/reset", tags=["memory"], response_model=ResetAnswer)
async def memory_reset(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    p: Principal = Depends(principal),
) -> ResetAnswer:
    """Erase every memory of exactly one scope (admin only when keys are configured)."""
    scope = ScopeRequest(user_id=user_id, agent_id=agent_id, run_id=run_id)
    count = await _reset(request, p, scope)
    return ResetAnswer(deleted=count, scope=scope.model_dump())


@router.put("/memory/update", tags=["memory"], response_model=MemoryAnswer)
async def memory_update(
    body: UpdateRequest, request: Request, p: Principal = Depends(principal)
) -> MemoryAnswer:
    """Change a memory's text and/or metadata; the old version stays in history."""
    audit.note(request, op="update")
    scope = _scope(request, p)
    record = await _run(scope.update, body.memory_id, body.text, body.metadata, reason=body.reason)
    return MemoryAnswer(result=_noted(request, record))


@router.get("/memory/history/{memory_id}", tags=["memory"], response_model=HistoryAnswer)
async def memory_history(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> HistoryAnswer:
    """Every change to a memory, oldest first, with who and why."""
    audit.note(request, op="history")
    scope = _scope(request, p)

    def history() -> list[HistoryOut]:
        _noted(request, scope.record(memory_id, include_deleted=True))
        return scope.history(memory_id)

    entries = await _run(history)
    audit.note(request, count=len(entries))
    return HistoryAnswer(results=entries)


@router.post("/memory/restore/{memory_id}", tags=["memory"], response_model=MemoryAnswer)
async def memory_restore(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> MemoryAnswer:
    """Bring back a deleted (or superseded) memory."""
    audit.note(request, op="restore")
    record = await _run(_scope(request, p).restore, memory_id)
    return MemoryAnswer(result=_noted(request, record))


@router.get("/memory/{memory_id}", tags=["memory"], response_model=MemoryAnswer)
async def memory_get(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> MemoryAnswer:
    """One memory."""
    audit.note(request, op="get")
    record = await _run(_scope(request, p).get, memory_id)
    return MemoryAnswer(result=_noted(request, record))


@router.delete("/memory/{memory_id}", tags=["memory"], response_model=DeleteAnswer)
async def memory_delete(
    memory_id: str,
    request: Request,
    reason: str | None = Query(None, description="why, kept in history"),
    p: Principal = Depends(principal),
) -> DeleteAnswer:
    """Delete a memory: out of search and list, kept in history, restorable."""
    audit.note(request, op="delete")
    scope = _scope(request, p)

    def delete() -> None:
        _noted(request, scope.record(memory_id))
        scope.delete(memory_id, reason=reason)

    await _run(delete)
    return DeleteAnswer(deleted=memory_id)


# -- mem0's REST shape -----------------------------------------------------------------------
@router.post("/memories", tags=["mem0"], response_model=Mem0Events)
async def mem0_add(
    body: Mem0AddRequest, request: Request, p: Principal = Depends(principal)
) -> Mem0Events:
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
    return Mem0Events(results=results)


@router.get("/memories", tags=["mem0"], response_model=Mem0Memories)
async def mem0_list(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    limit: int = Query(100, ge=1, le=10_000),
    filters: str | None = Query(
        None, description='mem0\'s filter language as JSON, e.g. {"project": "orion"}'
    ),
    include_turns: bool = Query(False, description=_TURNS_DOC),
    p: Principal = Depends(principal),
) -> Mem0Memories:
    """mem0's ``GET /memories``: ``{"results": [memories]}``."""
    audit.note(request, op="list", user_id=user_id, agent_id=agent_id, run_id=run_id)
    page = await _run(
        _scope(request, p, user_id, agent_id).list,
        run_id=run_id,
        filters=FilterSpec.from_mem0(_json_filters(filters)),
        limit=limit,
        include_turns=include_turns,
    )
    audit.note(request, count=len(page.results))
    return Mem0Memories(results=page.results)


def _json_filters(text: str | None) -> dict[str, Any] | None:
    if text is None or not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError:
        raise FilterError(
            "filters is not JSON", 'send filters={"user_id": "alice"} (URL-encoded JSON)'
        ) from None
    if not isinstance(value, dict):
        raise FilterError("filters must be a JSON object", 'send filters={"user_id": "alice"}')
    return value


@router.post("/search", tags=["mem0"], response_model=Mem0Hits)
async def mem0_search(
    body: Mem0SearchRequest, request: Request, p: Principal = Depends(principal)
) -> Mem0Hits:
    """mem0's ``POST /search``: ``{"results": [hits]}``."""
    converted = SearchRequest(
        query=body.query,
        user_id=body.user_id,
        agent_id=body.agent_id,
        run_id=body.run_id,
        top_k=body.top_k or body.limit or 5,
        min_score=body.threshold,
        filters=FilterSpec.from_mem0(body.filters),
    )
    found = await memory_search(converted, request, p)
    return Mem0Hits(results=found.results)


@router.post("/reset", tags=["mem0"], response_model=Mem0Reset)
async def mem0_reset(
    request: Request,
    body: ScopeRequest | None = Body(None),
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    p: Principal = Depends(principal),
) -> Mem0Reset:
    """mem0's ``POST /reset``, but scoped: it needs a ``user_id`` (body or query)
    and erases only that scope. mem0's own reset wipes every user."""
    scope = body or ScopeRequest(user_id=user_id, agent_id=agent_id, run_id=run_id)
    count = await _reset(request, p, scope)
    named = scope.model_dump(exclude_none=True)
    return Mem0Reset(
        message="Memories reset for " + ", ".join(f"{k}={v}" for k, v in named.items()),
        deleted=count,
        scope=named,
    )


@router.delete("/memories", tags=["mem0"], response_model=Mem0Deleted)
async def mem0_delete_all(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    p: Principal = Depends(principal),
) -> Mem0Deleted:
    """mem0's ``DELETE /memories``: erase one scope (same rules as reset)."""
    scope = ScopeRequest(user_id=user_id, agent_id=agent_id, run_id=run_id)
    count = await _reset(request, p, scope)
    return Mem0Deleted(message="All relevant memories deleted", deleted=count)


@router.get("/memories/{memory_id}/history", tags=["mem0"], response_model=list[HistoryOut])
async def mem0_history(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> list[HistoryOut]:
    """mem0's history: a bare list."""
    return (await memory_history(memory_id, request, p)).results


@router.get("/memories/{memory_id}", tags=["mem0"], response_model=MemoryOut)
async def mem0_get(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> MemoryOut:
    """mem0's get: the memory itself."""
    return (await memory_get(memory_id, request, p)).result


@router.put("/memories/{memory_id}", tags=["mem0"], response_model=Mem0Updated)
async def mem0_update(
    memory_id: str, body: Mem0UpdateRequest, request: Request, p: Principal = Depends(principal)
) -> Mem0Updated:
    """mem0's update: new text as ``text`` (or ``data``/``memory``) and/or ``metadata``."""
    text = body.text if body.text is not None else (body.data or body.memory)
    found = await memory_update(
        UpdateRequest(memory_id=memory_id, text=text, metadata=body.metadata, reason=None),
        request,
        p,
    )
    return Mem0Updated(message="Memory updated successfully!", **found.result.model_dump())


@router.delete("/memories/{memory_id}", tags=["mem0"], response_model=Mem0Message)
async def mem0_delete(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> Mem0Message:
    await memory_delete(memory_id, request, None, p)
    return Mem0Message(message="Memory deleted successfully", id=memory_id)
