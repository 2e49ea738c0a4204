"""The records and results every layer speaks.

One record type, :class:`MemoryRecord`, holds every memory whatever its origin:
text written through the API, a chunk of a Markdown file, or a fact extracted
from text. All of them live in one index and are found by one search.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from memoryd.filters import FilterNode


def utcnow() -> datetime:
    return datetime.now(UTC)


def _when(value: Any) -> datetime | None:
    """A timestamp kept in metadata (ISO 8601 text), as an aware datetime."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Origin(StrEnum):
    API = "api"  # written as given by a caller
    CHUNK = "chunk"  # a chunk of a Markdown file in a workspace
    FACT = "fact"  # a fact extracted from text (LLM or offline extractor)
    TURN = "turn"  # one turn of a conversation, indexed with its context (conversation.py)


class State(StrEnum):
    ACTIVE = "active"
    ARCHIVED = "archived"  # out of default search, still searchable on request
    DELETED = "deleted"  # deleted; kept for history and restore
    # a newer fact on the same subject and attribute replaced it: out of default search,
    # found with include_superseded or as_of; metadata valid_until and superseded_by
    SUPERSEDED = "superseded"


class Event(StrEnum):
    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NONE = "NONE"
    RESTORE = "RESTORE"
    ARCHIVE = "ARCHIVE"
    SUPERSEDE = "SUPERSEDE"  # a newer fact replaced it (history of the old memory)


class Source(BaseModel):
    """Where a memory came from: a file and a 1-based inclusive line range."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    @property
    def citation(self) -> str:
        if self.start_line is None:
            return self.path
        return f"{self.path}#L{self.start_line}-L{self.end_line or self.start_line}"


class MemoryRecord(BaseModel):
    """One memory. ``text`` is what the memory says; ``context`` is extra text
    indexed with it (speaker, date, heading path) without changing ``text``."""

    model_config = ConfigDict(frozen=False)

    id: str
    text: str
    user_id: str
    agent_id: str | None = None
    run_id: str | None = None
    category: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    origin: Origin = Origin.API
    source: Source | None = None
    context: str | None = None
    state: State = State.ACTIVE
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    event_at: datetime | None = None  # when the remembered thing happened, if known
    hash: str = ""
    embedding: Any = Field(default=None, exclude=True, repr=False)  # np.ndarray | None

    def model_post_init(self, __context: Any) -> None:
        if not self.hash:
            self.hash = content_hash(self.text)

    @property
    def valid_from(self) -> datetime:
        """When what it says became true: ``metadata.valid_from`` when set (a superseding
        fact, or a caller who knows), else when it happened, else when it was learned."""
        return _when(self.metadata.get("valid_from")) or self.event_at or self.created_at

    @property
    def valid_until(self) -> datetime | None:
        """When it stopped being true (a newer fact superseded it); None while current."""
        return _when(self.metadata.get("valid_until"))

    @property
    def superseded_by(self) -> str | None:
        """The id of the memory that replaced this one."""
        value = self.metadata.get("superseded_by")
        return value if isinstance(value, str) else None

    def valid_at(self, when: datetime) -> bool:
        """True when what it says was true at ``when`` (an as-of search), as memoryd
        knows it now."""
        until = self.valid_until
        return self.valid_from <= when and (until is None or when < until)

    @property
    def index_text(self) -> str:
        """The text that is embedded and keyword-indexed."""
        return f"{self.context}\n{self.text}" if self.context else self.text


@dataclass(frozen=True, slots=True)
class RankFacts:
    """What ranking needs of a memory besides its relevance, so a search can rank every
    candidate before reading any record: when the remembered thing happened (epoch
    seconds of ``event_at``, else ``created_at``), whether it is evergreen (never
    decays), who it is about (``search.entities``) and, for a conversation turn,
    its place and what it says (``search.turns``): ``turn`` is (its conversation,
    its position there), ``words`` its length in words, ``asks`` whether it ends
    in a question mark, ``dated`` whether it states a time ("last week", "in May")
    and ``directs`` whether it tells how to work or what the speaker prefers
    ("always use type hints", "I prefer polars"); 0 and False for a memory that is
    not a turn)."""

    when: float
    evergreen: bool = False
    names: frozenset[str] = frozenset()
    turn: tuple[str, int] | None = None
    words: int = 0
    asks: bool = False
    dated: bool = False
    directs: bool = False


class Located(NamedTuple):
    """Where a record was said (:meth:`Store.locate`)."""

    id: str
    user_id: str | None
    agent_id: str | None
    hash: str
    path: str | None
    start_line: int | None
    end_line: int | None


class Filters(BaseModel):
    """What a list or search is restricted to. ``None`` means "any"."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    categories: list[str] | None = None
    origins: list[Origin] | None = None
    states: list[State] = Field(default_factory=lambda: [State.ACTIVE])
    created_after: datetime | None = None
    created_before: datetime | None = None
    source_path: str | None = None
    ids: list[str] | None = None  # only these memories
    long_term_only: bool = False  # run_id IS NULL
    short_term_only: bool = False  # run_id IS NOT NULL
    # mem0's filter language (memoryd.filters), compiled to SQL by the store, ANDed
    # with the fields above (the scope): it narrows, never widens
    where: FilterNode | None = None
    # a conversation's turns stored as evidence beside the facts extracted from it
    # (metadata evidence_turn): lists leave them out, searches keep them
    evidence_turns: bool = True


class ScoreParts(BaseModel):
    """Why a hit ranked where it did. All parts are in [0, 1]."""

    vector: float = 0.0
    keyword: float = 0.0
    fused: float = 0.0
    decay: float | None = None  # recency weight, when time decay was applied
    entity: float | None = None  # boost for naming the memory's speaker/person
    neighbours: float | None = None  # boost for adjacent turns of the conversation matching too
    turn: float | None = None  # a conversation turn's prior (<= 0): short, or a question
    when: float | None = None  # boost for a turn stating a time, when the query asks when
    # boost for an instruction or preference, when the query asks how the user wants things
    directs: float | None = None
    # what a turn's keyword match loses (<= 0): a long turn's for sharing words but little
    # meaning; for a question asking how the user wants something, all of it for a turn
    # that is not an instruction or preference (memoryd.search.turns.topic_cut)
    meaning: float | None = None
    rerank: float | None = None
    # brought in above a turn that says a value since replaced, as that value's current
    # one: the turn's score at this hit's own age (Memory._current_above)
    current: float | None = None


class SearchHit(BaseModel):
    id: str
    text: str
    score: float
    parts: ScoreParts
    record: MemoryRecord
    original_score: float | None = None  # the score before time decay, when decay applied
    memory_type: str = "long_term"  # long_term, short_term or shared (memoryd.search.tiers)

    @property
    def metadata(self) -> dict[str, Any]:
        return self.record.metadata

    @property
    def created_at(self) -> datetime:
        return self.record.created_at


class CombinedHits(BaseModel):
    """``Memory.search_combined``: long-term hits and recent short-term hits, apart."""

    long_term: list[SearchHit] = Field(default_factory=list)
    short_term: list[SearchHit] = Field(default_factory=list)

    @property
    def results(self) -> list[SearchHit]:
        """Both lists in one ranking by score; each hit keeps its ``memory_type`` label."""
        return sorted([*self.long_term, *self.short_term], key=lambda h: -h.score)


class HistoryEntry(BaseModel):
    id: int
    memory_id: str
    event: Event
    old_text: str | None = None
    new_text: str | None = None
    old_metadata: dict[str, Any] | None = None
    new_metadata: dict[str, Any] | None = None
    actor: str | None = None
    reason: str | None = None
    created_at: datetime


class MemoryEvent(BaseModel):
    """The outcome of one fact in an ``add``: mem0's event shape."""

    id: str | None
    memory: str
    event: Event
    previous_memory: str | None = None
    message: int | None = None  # for a conversation: the index of the message it came from
