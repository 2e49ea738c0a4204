"""mem0's platform API (``api.mem0.ai``), so mem0's own SDKs work against memoryd.

``MemoryClient(api_key=..., host="http://127.0.0.1:8230")`` (Python ``mem0ai``,
sync and async, and the npm ``mem0ai`` package) speaks these routes: ``/v1/ping/``,
``/v3/memories/add/``, ``/v3/memories/`` (get_all), ``/v3/memories/search/``,
``/v1/memories/{id}/`` (get, update, delete), ``/v1/memories/`` (delete_all),
history, ``/v1/batch/``, entities, feedback and exports. Each maps onto the same
:class:`~memoryd.scope.Scope` operations as every other face, so a key reaches
only its own users and agents here too.

The SDKs send entity ids inside ``filters`` (mem0's filter language,
:mod:`memoryd.filters`); a filter that pins ``user_id`` / ``agent_id`` with an
equality at its top picks the scope the key is checked against, and the whole
filter is then ANDed with that scope in the store. A key bound to one user acts
as that user when the filter names none. ``app_id`` is kept in metadata.

What memoryd does not have (organisations and projects, webhooks, profiles,
summaries, memory expiry, structured exports) answers 501 naming the feature,
never a fake success. The SDK sends ``Authorization: Token <key>``: one more way
to present a memoryd key (:func:`memoryd.access.token_from`).
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Body, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

import memoryd
from memoryd import audit
from memoryd.api.auth import Principal, principal
from memoryd.api.routes_memory import _add, _run, _top
from memoryd.core import Memory
from memoryd.errors import InvalidInputError, NotSupportedError
from memoryd.filters import FilterError, FilterNode, parse, pinned
from memoryd.models import Filters, utcnow
from memoryd.scope import Scope
from memoryd.shapes import FilterSpec, HistoryOut, HitOut, MemoryOut

router = APIRouter(tags=["mem0 platform"])

ENTITY_FIELDS = ("user_id", "agent_id", "app_id", "run_id")
#: request fields the SDKs send that change nothing here (formats and versions of old APIs)
_HARMLESS = frozenset(
    {"output_format", "version", "async_mode", "org_id", "project_id", "rerank", "keyword_search",
     "latest_only", "show_expired", "enable_graph", "filter_memories", "sync_type"}
)  # fmt: skip
#: request fields naming a platform feature memoryd does not have -> the feature's name
_NOT_HONOURED = {
    "expiration_date": "memory expiry (expiration_date)",
    "immutable": "immutable memories",
    "custom_categories": "custom categories per request",
    "structured_data_schema": "structured data extraction",
    "includes": "include/exclude extraction rules",
    "excludes": "include/exclude extraction rules",
    "agent_custom_instructions": "agent-scoped extraction instructions",
    "reference_date": "relative-date search (reference_date)",
}
_FEEDBACK = ("POSITIVE", "NEGATIVE", "VERY_NEGATIVE")


# -- shapes -------------------------------------------------------------------------------------
class _Loose(BaseModel):
    """A request body: the SDK's own fields, plus whatever else it sends, checked by
    :func:`_check_extras` (harmless, 501 or 400) instead of a bare 422."""

    model_config = ConfigDict(extra="allow")


class AddBody(_Loose):
    messages: list[dict[str, Any]] | dict[str, Any] | str
    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    filters: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    infer: bool = True
    custom_instructions: str | None = Field(default=None, description="what to extract, this call")
    prompt: str | None = None
    timestamp: int | float | str | None = Field(default=None, description="when it was said")


class GetAllBody(_Loose):
    filters: dict[str, Any] | None = None
    page: int | None = Field(default=None, ge=1)
    page_size: int | None = Field(default=None, ge=1, le=1000)
    start_date: str | None = None
    end_date: str | None = None
    categories: list[str] | None = None


class SearchBody(_Loose):
    query: str
    filters: dict[str, Any] | None = None
    top_k: int | None = Field(default=None, ge=1, le=100)
    limit: int | None = Field(default=None, ge=1, le=100)
    threshold: float | None = Field(default=None, ge=0, le=1)
    fields: list[str] | None = None
    categories: list[str] | None = None


class UpdateBody(_Loose):
    text: str | None = None
    metadata: dict[str, Any] | None = None
    timestamp: int | float | str | None = None


class BatchItem(_Loose):
    memory_id: str
    text: str | None = None
    metadata: dict[str, Any] | None = None


class BatchBody(BaseModel):
    memories: list[BatchItem] = Field(min_length=1, max_length=1000)


class FeedbackBody(BaseModel):
    memory_id: str
    feedback: str | None = None
    feedback_reason: str | None = None


class ExportBody(_Loose):
    schema_: dict[str, Any] | str | None = Field(default=None, alias="schema")
    filters: dict[str, Any] | None = None
    memory_export_id: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None


class Ping(BaseModel):
    status: str = "ok"
    message: str
    server: str = "memoryd"
    version: str
    # memoryd has no organisations or projects, but the Python SDK refuses to start
    # without both ids: these name the one store; the project calls then answer 501
    org_id: str = "memoryd"
    project_id: str = "default"
    user_email: str | None = None
    key: str  # the key's name


class PlatformMemory(BaseModel):
    id: str
    memory: str
    hash: str
    user_id: str
    agent_id: str | None
    app_id: str | None
    run_id: str | None
    metadata: dict[str, Any]
    categories: list[str]
    created_at: str
    updated_at: str
    expiration_date: None = None
    immutable: bool = False
    memory_type: str
    origin: str
    state: str

    @classmethod
    def of(cls, m: MemoryOut) -> PlatformMemory:
        return cls(
            id=m.id, memory=m.memory, hash=m.hash, user_id=m.user_id, agent_id=m.agent_id,
            app_id=_text(m.metadata.get("app_id")), run_id=m.run_id, metadata=m.metadata,
            categories=[m.category] if m.category else [], created_at=m.created_at,
            updated_at=m.updated_at, memory_type=m.memory_type, origin=m.origin, state=m.state,
        )  # fmt: skip


class AddEvent(BaseModel):
    id: str | None
    memory: str
    event: str
    data: dict[str, str]
    previous_memory: str | None = None


class Added(BaseModel):
    results: list[AddEvent]


class PageOut(BaseModel):
    count: int
    next: str | None
    previous: str | None
    results: list[PlatformMemory]


class Hits(BaseModel):
    results: list[dict[str, Any]] = Field(
        description="memories with a score; only the asked fields (and id) when fields is given"
    )


class Updated(PlatformMemory):
    message: str


class Message(BaseModel):
    message: str


class Deleted(Message):
    deleted: int


class HistoryItem(BaseModel):
    id: int
    memory_id: str
    event: str
    old_memory: str | None
    new_memory: str | None
    input: None = None
    metadata: dict[str, Any] | None
    actor: str | None
    reason: str | None
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, h: HistoryOut) -> HistoryItem:
        return cls(
            id=h.id, memory_id=h.memory_id, event=h.event, old_memory=h.old_memory,
            new_memory=h.new_memory, metadata=h.new_metadata, actor=h.actor, reason=h.reason,
            created_at=h.created_at, updated_at=h.created_at,
        )  # fmt: skip


class Entity(BaseModel):
    id: str
    name: str
    type: str
    total_memories: int
    owner: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str | None = None
    updated_at: str | None = None


class Entities(BaseModel):
    count: int
    next: str | None = None
    previous: str | None = None
    results: list[Entity]


class FeedbackOut(BaseModel):
    id: str
    feedback: str | None
    feedback_reason: str | None


class ExportCreated(BaseModel):
    message: str
    id: str


class Export(BaseModel):
    id: str | None
    status: str = "completed"
    note: str = (
        "memoryd exports the matching memories as they are; it does not fill the schema "
        "with a model"
    )
    schema_: dict[str, Any] | str | None = Field(default=None, serialization_alias="schema")
    count: int
    memories: list[PlatformMemory]


# -- helpers ------------------------------------------------------------------------------------
def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def _check_extras(body: BaseModel) -> None:
    """Fields a request carried beyond the route's own: harmless ones pass, a platform
    feature memoryd does not have is a 501 naming it, anything else a 400."""
    extra = body.model_extra or {}
    for name, value in extra.items():
        if name in _HARMLESS or value in (None, False, [], {}):
            continue
        if name in _NOT_HONOURED:
            raise NotSupportedError(
                f"memoryd does not support {_NOT_HONOURED[name]}",
                f"leave {name} out of the request (README: Coming from mem0)",
            )
        raise FilterError(
            f"unknown field {name!r} in the request",
            "see the request schema at /docs (mem0 platform routes)",
        )


def _memory(request: Request) -> Memory:
    mem: Memory = request.app.state.memory
    return mem


def _scope(request: Request, p: Principal, where: FilterNode | None, **named: str | None) -> Scope:
    """The scope a platform call acts in: the user and agent named outright, else the ones
    the filter pins, else the key's only user or agent; the key is checked against it."""

    def pick(field: str, allowed: list[str]) -> str | None:
        value = named.get(field) or pinned(where, field)
        if value is None and not p.admin and len(allowed) == 1:
            return allowed[0]
        return value

    return _memory(request).scope(p, pick("user_id", p.users), pick("agent_id", p.agents))


def _where(
    filters: dict[str, Any] | None, **named: Any
) -> tuple[FilterNode | None, dict[str, Any] | None]:
    """The parsed filter (for pinning the scope) and the raw one with the named entity
    ids (and app_id) ANDed in, for :class:`FilterSpec`."""
    extra = {k: v for k, v in named.items() if v is not None}
    raw: dict[str, Any] | None = filters
    if extra:
        raw = {"AND": [filters, extra]} if filters else extra
    return parse(raw), raw


def _page_url(request: Request, page: int, size: int) -> str:
    return str(request.url.include_query_params(page=page, page_size=size))


# -- ping ---------------------------------------------------------------------------------------
@router.get("/v1/ping/", response_model=Ping)
async def ping(p: Principal = Depends(principal)) -> Ping:
    """What the SDK checks its key with; memoryd has no organisations or projects."""
    return Ping(
        message=f"memoryd {memoryd.__version__}: mem0 platform API", version=memoryd.__version__,
        key=p.name,
    )  # fmt: skip


# -- memories -----------------------------------------------------------------------------------
@router.post("/v3/memories/add/", response_model=Added)
async def add(body: AddBody, request: Request, p: Principal = Depends(principal)) -> Added:
    """Remember messages (or a text). Entity ids at the top or in ``filters``;
    ``infer`` (default true) extracts facts, and the conversation's turns are kept
    as their evidence (searchable, left out of lists)."""
    _check_extras(body)
    ids = {f: getattr(body, f) for f in ENTITY_FIELDS}
    where = parse(body.filters)
    for f in ENTITY_FIELDS:
        ids[f] = ids[f] or pinned(where, f)
    if not ids["user_id"] and not p.admin and len(p.users) == 1:
        ids["user_id"] = p.users[0]
    if not ids["user_id"]:
        raise InvalidInputError(
            "user_id is required", 'memoryd scopes every memory to a user: pass user_id="..."'
        )
    metadata = dict(body.metadata or {})
    if ids["app_id"]:
        metadata["app_id"] = ids["app_id"]
    messages = body.messages
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    events = await _add(
        request, p, user_id=str(ids["user_id"]), agent_id=ids["agent_id"], run_id=ids["run_id"],
        text=None, messages=messages, metadata=metadata or None, infer=body.infer,
        prompt=body.custom_instructions or body.prompt, timestamp=body.timestamp,
    )  # fmt: skip
    return Added(
        results=[
            AddEvent(
                id=e.id,
                memory=e.memory,
                event=e.event,
                data={"memory": e.memory},
                previous_memory=e.previous_memory,
            )
            for e in events
        ]
    )


@router.post("/v3/memories/", response_model=PageOut)
async def get_all(
    request: Request,
    body: GetAllBody | None = Body(None),
    page: int | None = Query(None, ge=1, le=1_000_000),
    page_size: int | None = Query(None, ge=1, le=1000),
    p: Principal = Depends(principal),
) -> PageOut:
    """Memories matching ``filters``, newest first, a page at a time (``page``,
    ``page_size``: query or body; default 1 and 100)."""
    body = body or GetAllBody()
    _check_extras(body)
    number = page or body.page or 1
    size = page_size or body.page_size or 100
    dated = {k: v for k, v in (("gte", body.start_date), ("lte", body.end_date)) if v is not None}
    extra: dict[str, Any] = {}
    if dated:
        extra["created_at"] = dated
    if body.categories:
        extra["categories"] = {"in": body.categories}
    where, raw = _where(body.filters, **extra)
    scope = _scope(request, p, where)
    audit.note(request, op="list", user_id=scope.user_id, agent_id=scope.agent_id)
    found = await _run(
        scope.list, filters=FilterSpec(where=raw), limit=size, offset=(number - 1) * size
    )
    audit.note(request, count=len(found.results))
    last = (found.total + size - 1) // size
    return PageOut(
        count=found.total,
        next=_page_url(request, number + 1, size) if number < last else None,
        previous=_page_url(request, number - 1, size) if number > 1 else None,
        results=[PlatformMemory.of(m) for m in found.results],
    )


@router.post("/v3/memories/search/", response_model=Hits)
async def search(body: SearchBody, request: Request, p: Principal = Depends(principal)) -> Hits:
    """Hybrid search within ``filters``: ``top_k`` (default 10), ``threshold`` (the
    least relevance, 0 to 1), ``fields`` (only those fields of each hit, and its id)."""
    _check_extras(body)
    if not body.query.strip():
        raise InvalidInputError("the query is empty", "pass the question to search for")
    extra = {"categories": {"in": body.categories}} if body.categories else {}
    where, raw = _where(body.filters, **extra)
    scope = _scope(request, p, where)
    audit.note(request, op="search", user_id=scope.user_id, agent_id=scope.agent_id)
    hits: list[HitOut] = await _run(
        scope.search,
        body.query,
        top_k=body.top_k or body.limit or 10,
        min_score=body.threshold,
        filters=FilterSpec(where=raw),
    )
    audit.note(request, count=len(hits), top_score=_top(hits))
    results = []
    for h in hits:
        out = _hit(h)
        if body.fields:
            out = {k: v for k, v in out.items() if k in body.fields or k == "id"}
        results.append(out)
    return Hits(results=results)


def _hit(h: HitOut) -> dict[str, Any]:
    return {
        "id": h.id, "memory": h.memory, "score": h.score, "user_id": h.user_id,
        "agent_id": h.agent_id, "app_id": _text(h.metadata.get("app_id")), "run_id": h.run_id,
        "metadata": h.metadata, "categories": [h.category] if h.category else [],
        "created_at": h.created_at, "updated_at": h.updated_at, "memory_type": h.memory_type,
        "origin": h.origin, "citation": h.citation,
    }  # fmt: skip


@router.get("/v1/memories/{memory_id}/history/", response_model=list[HistoryItem])
async def history(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> list[HistoryItem]:
    """Every change to a memory, oldest first."""
    audit.note(request, op="history")
    scope = _memory(request).scope(p)
    return [HistoryItem.of(h) for h in await _run(scope.history, memory_id)]


@router.get("/v1/memories/{memory_id}/", response_model=PlatformMemory)
async def get(
    memory_id: str, request: Request, p: Principal = Depends(principal)
) -> PlatformMemory:
    audit.note(request, op="get")
    return PlatformMemory.of(await _run(_memory(request).scope(p).get, memory_id))


@router.put("/v1/memories/{memory_id}/", response_model=Updated)
async def update(
    memory_id: str, body: UpdateBody, request: Request, p: Principal = Depends(principal)
) -> Updated:
    """New text and/or metadata; the old version stays in history."""
    _check_extras(body)
    if body.timestamp is not None:
        raise NotSupportedError(
            "memoryd does not change when a stored memory happened (timestamp)",
            "leave timestamp out; update the text or metadata",
        )
    if body.text is None and body.metadata is None:
        raise InvalidInputError("nothing to update", "pass text and/or metadata")
    audit.note(request, op="update")
    new = await _run(_memory(request).scope(p).update, memory_id, body.text, body.metadata)
    return Updated(message="Memory updated successfully!", **PlatformMemory.of(new).model_dump())


@router.delete("/v1/memories/{memory_id}/", response_model=Message)
async def delete(
    memory_id: str,
    request: Request,
    delete_linked: bool = False,
    p: Principal = Depends(principal),
) -> Message:
    """Delete a memory (kept in history, restorable with ``memoryd restore``)."""
    if delete_linked:
        raise NotSupportedError(
            "memoryd does not delete linked memories (delete_linked)",
            "delete each memory by id; superseded facts are listed by search with "
            "include_superseded",
        )
    audit.note(request, op="delete")
    await _run(_memory(request).scope(p).delete, memory_id)
    return Message(message="Memory deleted successfully!")


@router.delete("/v1/memories/", response_model=Deleted)
async def delete_all(
    request: Request,
    user_id: str | None = None,
    agent_id: str | None = None,
    app_id: str | None = None,
    run_id: str | None = None,
    p: Principal = Depends(principal),
) -> Deleted:
    """Erase every memory of one user (and agent / run / app): an admin key when keys
    are configured, and always a user: memoryd never wipes every user at once."""
    audit.note(request, op="reset", user_id=user_id, agent_id=agent_id, run_id=run_id)
    count = await _run(_erase, _memory(request).scope(p, user_id, agent_id), run_id, app_id)
    audit.note(request, count=count)
    return Deleted(message="Memories deleted successfully!", deleted=count)


def _erase(scope: Scope, run_id: str | None, app_id: str | None) -> int:
    """:meth:`Scope.reset`, narrowed to one app (a metadata key) when one is named."""
    if app_id is None:
        return scope.reset(run_id=run_id)
    scope.caller.require_admin()
    if not scope.user_id:
        raise InvalidInputError(
            "deleting an app's memories needs a user_id", "pass user_id with app_id"
        )
    f = Filters(user_id=scope.user_id, agent_id=scope.agent_id, run_id=run_id, states=[])
    f = f.model_copy(update={"where": parse({"app_id": app_id})})
    return scope.memory.store.purge(f)


# -- batch --------------------------------------------------------------------------------------
@router.put("/v1/batch/", response_model=Message)
async def batch_update(
    body: BatchBody, request: Request, p: Principal = Depends(principal)
) -> Message:
    """Update up to 1,000 memories; every id is checked before any is changed."""
    for item in body.memories:
        _check_extras(item)
        if item.text is None and item.metadata is None:
            raise InvalidInputError(
                f"nothing to update for memory {item.memory_id}", "pass text and/or metadata"
            )
    scope = _memory(request).scope(p)
    audit.note(request, op="update", count=len(body.memories))

    def run() -> int:
        for item in body.memories:
            scope.record(item.memory_id)  # 404 before anything changes
        for item in body.memories:
            scope.update(item.memory_id, item.text, item.metadata)
        return len(body.memories)

    n = await _run(run)
    return Message(message=f"Successfully updated {n} memories")


@router.delete("/v1/batch/", response_model=Message)
async def batch_delete(
    body: BatchBody, request: Request, p: Principal = Depends(principal)
) -> Message:
    """Delete up to 1,000 memories; every id is checked before any is deleted."""
    scope = _memory(request).scope(p)
    audit.note(request, op="delete", count=len(body.memories))

    def run() -> int:
        for item in body.memories:
            scope.record(item.memory_id)
        for item in body.memories:
            scope.delete(item.memory_id)
        return len(body.memories)

    n = await _run(run)
    return Message(message=f"Successfully deleted {n} memories")


# -- entities -----------------------------------------------------------------------------------
@router.get("/v1/entities/", response_model=Entities)
async def entities(
    request: Request,
    page: int = Query(1, ge=1, le=1_000_000),
    page_size: int = Query(100, ge=1, le=1000),
    p: Principal = Depends(principal),
) -> Entities:
    """The users, agents and runs that have memories, as far as the key reaches."""
    audit.note(request, op="list")
    mem = _memory(request)

    def run() -> list[Entity]:
        totals: dict[tuple[str, str], int] = {}
        for scope in mem.scope(p).spans():
            for kind, column in (("user", "user_id"), ("agent", "agent_id"), ("run", "run_id")):
                for name, n in scope.count(Filters(), by=column).items():
                    if name:
                        totals[(kind, name)] = totals.get((kind, name), 0) + n
        return [
            Entity(id=name, name=name, type=kind, total_memories=n)
            for (kind, name), n in sorted(totals.items())
        ]

    found = await _run(run)
    start = (page - 1) * page_size
    return Entities(count=len(found), results=found[start : start + page_size])


@router.delete("/v1/entities/{entity_type}/{entity_id}/", response_model=Deleted)
@router.delete("/v2/entities/{entity_type}/{entity_id}/", response_model=Deleted)
async def delete_entity(
    entity_type: str, entity_id: str, request: Request, p: Principal = Depends(principal)
) -> Deleted:
    """Erase an entity's memories: a user's, or an agent's / run's / app's across the
    users the key reaches (an admin key when keys are configured)."""
    kinds = {"user": "user_id", "agent": "agent_id", "run": "run_id", "app": "app_id"}
    if entity_type not in kinds:
        raise InvalidInputError(
            f"unknown entity type {entity_type!r}", f"use one of {', '.join(kinds)}"
        )
    field = kinds[entity_type]
    audit.note(request, op="reset", **({field: entity_id} if field != "app_id" else {}))
    mem = _memory(request)

    def run() -> int:
        p.require_admin()
        if field == "user_id":
            return mem.scope(p, entity_id).reset()
        where = parse({field: entity_id})
        users = mem.scope(p).count(Filters(where=where), by="user_id")
        count = 0
        for user in users:
            scope = mem.scope(p, user, entity_id if field == "agent_id" else None)
            if field == "run_id":
                count += scope.reset(run_id=entity_id)
            elif field == "app_id":
                count += _erase(scope, None, entity_id)
            else:
                count += scope.reset()
        return count

    count = await _run(run)
    audit.note(request, count=count)
    return Deleted(message="Entity deleted successfully!", deleted=count)


# -- feedback and exports -----------------------------------------------------------------------
@router.post("/v1/feedback/", response_model=FeedbackOut)
async def feedback(
    body: FeedbackBody, request: Request, p: Principal = Depends(principal)
) -> FeedbackOut:
    """Feedback on a memory, kept with it (metadata ``feedback``); search does not use it."""
    if body.feedback is not None and body.feedback.upper() not in _FEEDBACK:
        raise InvalidInputError(
            f"unknown feedback {body.feedback!r}", f"use one of {', '.join(_FEEDBACK)} or null"
        )
    value = body.feedback.upper() if body.feedback else None
    audit.note(request, op="update")
    scope = _memory(request).scope(p)

    def run() -> None:
        record = scope.record(body.memory_id)
        note = {"feedback": value, "reason": body.feedback_reason, "at": utcnow().isoformat()}
        scope.update(record.id, None, {**record.metadata, "feedback": note}, reason="feedback")

    await _run(run)
    return FeedbackOut(id=body.memory_id, feedback=value, feedback_reason=body.feedback_reason)


@router.post("/v1/exports/", response_model=ExportCreated)
async def create_export(
    body: ExportBody, request: Request, p: Principal = Depends(principal)
) -> ExportCreated:
    """Record an export request; :func:`get_export` answers it (at once: nothing is queued)."""
    _check_extras(body)
    where, _ = _where(body.filters, **_ids(body))
    _scope(request, p, where).check()
    export_id = str(uuid.uuid4())
    saved = {"filters": body.filters, **_ids(body), "schema": body.schema_, "key": p.name}
    await _run(_memory(request).store.kv_set, f"mem0:export:{export_id}", saved)
    return ExportCreated(message="Memory export request received.", id=export_id)


@router.post("/v1/exports/get/", response_model=Export, response_model_by_alias=True)
async def get_export(
    body: ExportBody, request: Request, p: Principal = Depends(principal)
) -> Export:
    """The memories an export asks for (by ``memory_export_id``, or by ``filters``),
    as they are: memoryd does not fill the export's schema with a model."""
    _check_extras(body)
    request_body: dict[str, Any] = {"filters": body.filters, **_ids(body), "schema": body.schema_}
    if body.memory_export_id:
        saved = await _run(_memory(request).store.kv_get, f"mem0:export:{body.memory_export_id}")
        if not isinstance(saved, dict) or saved.get("key") != p.name:
            raise InvalidInputError(
                f"no export with id {body.memory_export_id}",
                "create one with POST /v1/exports/ (create_memory_export)",
            )
        request_body = saved
    filters = request_body.get("filters")
    named = {f: request_body.get(f) for f in ENTITY_FIELDS}
    where, raw = _where(filters, **named)
    scope = _scope(request, p, where)
    audit.note(request, op="list", user_id=scope.user_id, agent_id=scope.agent_id)
    found = await _run(scope.list, filters=FilterSpec(where=raw), limit=10_000)
    return Export(
        id=body.memory_export_id, schema_=request_body.get("schema"), count=found.total,
        memories=[PlatformMemory.of(m) for m in found.results],
    )  # fmt: skip


def _ids(body: ExportBody) -> dict[str, str | None]:
    return {f: getattr(body, f) for f in ENTITY_FIELDS}


# -- what memoryd does not have -----------------------------------------------------------------
_NOT_HERE = {
    "/api/v1/orgs/{rest:path}": "organisations and projects",
    "/api/v1/webhooks/{rest:path}": "webhooks",
    "/v2/profiles/{rest:path}": "memory profiles",
    "/v2/entities/{entity_type}/{entity_id}/profile/": "memory profiles",
    "/v1/summary/": "memory summaries",
}


def _not_supported(feature: str) -> Any:
    async def answer(p: Principal = Depends(principal)) -> None:
        raise NotSupportedError(
            f"memoryd does not support mem0's {feature}",
            "memoryd serves one store; see README 'Coming from mem0' for what is supported",
        )

    return answer


for _path, _feature in _NOT_HERE.items():
    router.add_api_route(
        _path,
        _not_supported(_feature),
        methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        status_code=501,
        include_in_schema=False,
    )
