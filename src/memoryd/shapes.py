"""The shapes memoryd answers in, one per thing, for every face.

:class:`~memoryd.scope.Scope` returns these; the HTTP routes declare them as
response models (so the OpenAPI schema shows them), the CLI prints them
(local, or parsed back from a server's JSON with the same models), MCP tools
answer with them (a hit or record's :meth:`brief` view, fewer tokens for a
model) and the dashboard's edits go through the same scope. Field names follow
the seed service and mem0: ``memory`` is the text, ``score`` the ranking score,
``original_score`` the score before time decay. Times are ISO 8601 text, as
``datetime.isoformat`` writes them.

:class:`FilterSpec` is the one request-side shape: what a search or list is
narrowed to, as every face names it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    field_validator,
    model_serializer,
)

from memoryd.errors import InvalidInputError
from memoryd.filters import FilterError
from memoryd.filters import parse as parse_filters
from memoryd.models import Filters, HistoryEntry, MemoryEvent, MemoryRecord, Origin, SearchHit
from memoryd.models import State as RecordState
from memoryd.search.tiers import LONG_TERM, SHARED, SHORT_TERM, memory_type

MemoryType = Literal["long_term", "short_term", "shared"]
#: memoryd's own filter names, which a mem0 ``filters`` object may use beside mem0's
_OWN_FILTERS = frozenset(
    {
        "category",
        "origin",
        "origins",
        "memory_type",
        "created_after",
        "created_before",
        "source_path",
    }
)


def snippet(text: str, limit: int = 700) -> str:
    """The first ``limit`` characters of a chunk, cut at a word boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


def _score(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


class _Shape(BaseModel):
    """A shape whose optional extras are left out of the JSON when they are None
    (``_OMIT_NONE``), as the API has always answered; the rest is always there."""

    _OMIT_NONE: ClassVar[tuple[str, ...]] = ()  # a ClassVar: no private attribute per instance

    # left unannotated on purpose: the JSON schema (OpenAPI) then stays the fields' own
    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: Any, info: SerializationInfo):
        out = handler(self)
        if isinstance(out, dict):
            for name in self._OMIT_NONE:
                if out.get(name, 0) is None:
                    del out[name]
        return out

    def _pick(self, *names: str, if_set: tuple[str, ...] = ()) -> dict[str, Any]:
        """A brief view: the fields ``names``, then those of ``if_set`` that are not None."""
        out = {name: getattr(self, name) for name in names}
        out.update((name, v) for name in if_set if (v := getattr(self, name)) is not None)
        return out


# -- request side ------------------------------------------------------------------------------
class FilterSpec(BaseModel):
    """Search and list filters. ``memory_type`` picks a tier (``long_term``:
    no run id; ``short_term``: a run id) or the shared pool's categories."""

    model_config = ConfigDict(extra="forbid")

    category: str | None = None
    categories: list[str] | None = None
    origin: str | None = None
    origins: list[str] | None = None
    memory_type: MemoryType | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    source_path: str | None = None
    where: dict[str, Any] | None = Field(
        default=None,
        description='mem0\'s filter language, e.g. {"AND": [{"user_id": "alice"}, '
        '{"created_at": {"gte": "2026-01-01"}}]} (README: "Filters")',
    )

    @classmethod
    def from_mem0(cls, raw: dict[str, Any] | None) -> FilterSpec | None:
        """A mem0 ``filters`` object: memoryd's own filter names (category, origin,
        memory_type, created_after...) as they are, every other key in mem0's language."""
        if raw is None:
            return None
        if not isinstance(raw, dict):
            raise FilterError("filters must be a JSON object", 'write e.g. {"user_id": "alice"}')
        own = {k: v for k, v in raw.items() if k in _OWN_FILTERS}
        rest = {k: v for k, v in raw.items() if k not in _OWN_FILTERS}
        return cls.model_validate({**own, "where": rest or None})

    @field_validator("created_after", "created_before")
    @classmethod
    def _naive_is_utc(cls, v: datetime | None) -> datetime | None:
        # a naive time would be read as local time, which overflows near year 1
        return v.replace(tzinfo=UTC) if v is not None and v.tzinfo is None else v

    def to_filters(self, shared: list[str]) -> Filters:
        """The store's :class:`Filters` (scope fields left for the caller to set)."""
        categories = [c for c in [self.category, *(self.categories or [])] if c]
        origins: list[Origin] = []
        for name in [self.origin, *(self.origins or [])]:
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
            "created_after": self.created_after,
            "created_before": self.created_before,
            "source_path": self.source_path,
            "where": parse_filters(self.where),
        }
        if self.memory_type == LONG_TERM:
            update["long_term_only"] = True
        elif self.memory_type == SHORT_TERM:
            update["short_term_only"] = True
        elif self.memory_type == SHARED:
            update["categories"] = [c for c in shared if not categories or c in categories] or [""]
        return Filters().model_copy(update=update)


def _of_record(r: MemoryRecord) -> dict[str, Any]:
    """What a memory and a search hit both say of the record."""
    return {
        "metadata": r.metadata,
        "category": r.category,
        "user_id": r.user_id,
        "agent_id": r.agent_id,
        "run_id": r.run_id,
        "origin": str(r.origin),
        "created_at": r.created_at.isoformat(),
        "updated_at": r.updated_at.isoformat(),
        "citation": r.source.citation if r.source else None,
    }


# -- answers -----------------------------------------------------------------------------------
class MemoryOut(_Shape):
    """One memory (``GET /memory/{id}``, list pages, update and restore answers)."""

    _OMIT_NONE = ("source", "citation")

    id: str
    memory: str
    hash: str
    metadata: dict[str, Any]
    category: str | None
    user_id: str
    agent_id: str | None
    run_id: str | None
    memory_type: str
    origin: str
    state: str
    created_at: str
    updated_at: str
    event_at: str | None
    source: dict[str, Any] | None = None  # a chunk of a workspace file: path and lines
    citation: str | None = None  # path#Lx-Ly of that chunk

    @classmethod
    def of(cls, r: MemoryRecord, shared_categories: list[str]) -> MemoryOut:
        return cls(
            id=r.id,
            memory=r.text,
            hash=r.hash,
            memory_type=memory_type(r, shared_categories),
            state=str(r.state),
            event_at=r.event_at.isoformat() if r.event_at else None,
            source=r.source.model_dump() if r.source else None,
            **_of_record(r),
        )

    def brief(self) -> dict[str, Any]:
        """What an MCP tool shows a model of a memory."""
        return self._pick(
            "id", "memory", "category", "memory_type", "agent_id", "state", "created_at",
            "updated_at", if_set=("citation",),
        )  # fmt: skip


class HitOut(_Shape):
    """One search hit: the memory, its score and the score's parts."""

    _OMIT_NONE = ("original_score", "snippet", "state")

    id: str
    memory: str
    score: float
    original_score: float | None = None  # the relevance before time decay
    memory_type: str
    created_at: str
    updated_at: str
    metadata: dict[str, Any]
    category: str | None
    user_id: str
    agent_id: str | None
    run_id: str | None
    origin: str
    parts: dict[str, float]
    citation: str | None
    snippet: str | None = None  # a chunk of a workspace file: the start of its lines
    state: str | None = None  # archived by TTL decay (include_archived searches)

    @classmethod
    def of(cls, h: SearchHit) -> HitOut:
        r = h.record
        return cls(
            id=h.id,
            memory=h.text,
            score=round(h.score, 6),
            original_score=_score(h.original_score),
            memory_type=h.memory_type,
            parts={k: round(v, 6) for k, v in h.parts.model_dump(exclude_none=True).items()},
            snippet=snippet(r.text) if r.source is not None else None,
            state=str(r.state) if r.state != RecordState.ACTIVE else None,
            **_of_record(r),
        )

    def brief(self) -> dict[str, Any]:
        """What an MCP tool shows a model of a hit."""
        return self._pick(
            "id", "memory", "score", "parts", "memory_type", "category", "agent_id",
            "created_at", if_set=("original_score", "citation"),
        )  # fmt: skip


class EventOut(_Shape):
    """What an add did to one memory: ADD, UPDATE, DELETE or NONE."""

    _OMIT_NONE = ("previous_memory", "message")

    id: str | None
    memory: str
    event: str
    previous_memory: str | None = None
    message: int | None = None  # a conversation's: the index of the message it came from

    @classmethod
    def of(cls, e: MemoryEvent) -> EventOut:
        return cls(
            id=e.id,
            memory=e.memory,
            event=str(e.event),
            previous_memory=e.previous_memory,
            message=e.message,
        )


class HistoryOut(BaseModel):
    """One change to a memory: the old and new text and metadata, who and why."""

    id: int
    memory_id: str
    event: str
    old_memory: str | None
    new_memory: str | None
    old_metadata: dict[str, Any] | None
    new_metadata: dict[str, Any] | None
    actor: str | None
    reason: str | None
    created_at: str

    @classmethod
    def of(cls, h: HistoryEntry) -> HistoryOut:
        return cls(
            id=h.id,
            memory_id=h.memory_id,
            event=str(h.event),
            old_memory=h.old_text,
            new_memory=h.new_text,
            old_metadata=h.old_metadata,
            new_metadata=h.new_metadata,
            actor=h.actor,
            reason=h.reason,
            created_at=h.created_at.isoformat(),
        )


class Page(BaseModel):
    """One page of a list, newest first, with the total for paging."""

    results: list[MemoryOut]
    total: int


class Combined(BaseModel):
    """Long-term hits and recent short-term ones in one ranking, with each part's count."""

    results: list[HitOut]
    counts: dict[str, int]


class Deleted(BaseModel):
    id: str
    deleted: bool = True
