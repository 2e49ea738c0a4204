"""Recall events: which memories searches returned, for how, how often and when.

Promotion (:mod:`memoryd.pipelines.promote`, OpenClaw's deep dreaming, seed 002)
ranks memories by how they are *used*: a fact that comes back for several
different questions on several days is worth a line in ``MEMORY.md``. So every
:meth:`memoryd.Memory.search` hands its hits to a :class:`RecallLog`, which folds
them into one small summary per memory in the store's key/value table
(``recall:<memory id>``)::

    {"agent": "dev", "user": "default", "count": 4, "score_sum": 3.1, "max_score": 0.9,
     "queries": ["3f2a9c1b04de", ...], "days": ["2026-03-27", ...],
     "first": "2026-03-27T09:00:00+00:00", "last": "2026-03-29T10:12:00+00:00"}

Only memories that belong to an agent are recorded, and of the file chunks only
those of daily diaries and session notes (``memory/YYYY-MM-DD*.md``): promotion
distils a recalled diary excerpt into one line; curated files (``MEMORY.md``,
topic notes) are promoted already. Queries are kept
as short hashes, never as text. Summaries are buffered and written in batches
(every ``FLUSH_EVERY`` hits or ``FLUSH_SECONDS``, and on ``Memory.close``) by a
thread of their own, so a search never waits for the write (one batch is a read and a
write of each memory's summary: 3 ms on SQLite, a few hundred round trips on
PostgreSQL, and it came every 7th search of an agent); promotion flushes before it
reads. A crash loses at most one unflushed batch of statistics, never a memory.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memoryd.models import MemoryRecord, Origin, SearchHit
from memoryd.store import Store

log = logging.getLogger(__name__)

PREFIX = "recall:"
FLUSH_EVERY = 64
FLUSH_SECONDS = 60.0
MAX_QUERIES = 32  # distinct query hashes kept per memory
MAX_DAYS = 30  # distinct days kept per memory


_DIARY = re.compile(r"^memory/\d{4}-\d{2}-\d{2}[^/]*\.md$")


def is_diary_chunk(record: MemoryRecord) -> bool:
    """A chunk of a daily diary or session note: raw days whose recalled excerpts
    promotion may distil into a line of MEMORY.md (curated files are not recorded)."""
    return (
        record.origin == Origin.CHUNK
        and record.source is not None
        and _DIARY.match(record.source.path) is not None
    )


def query_hash(query: str) -> str:
    return hashlib.sha256(" ".join(query.lower().split()).encode()).hexdigest()[:12]


@dataclass
class Recall:
    """One memory's recall summary (see the module docstring)."""

    memory_id: str
    agent: str
    user: str
    count: int = 0
    score_sum: float = 0.0
    max_score: float = 0.0
    queries: list[str] = field(default_factory=list)
    days: list[str] = field(default_factory=list)
    first: str = ""
    last: str = ""

    @classmethod
    def from_kv(cls, memory_id: str, value: dict[str, Any]) -> Recall:
        return cls(
            memory_id=memory_id,
            agent=str(value.get("agent") or ""),
            user=str(value.get("user") or ""),
            count=int(value.get("count") or 0),
            score_sum=float(value.get("score_sum") or 0.0),
            max_score=float(value.get("max_score") or 0.0),
            queries=list(value.get("queries") or []),
            days=list(value.get("days") or []),
            first=str(value.get("first") or ""),
            last=str(value.get("last") or ""),
        )

    def to_kv(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "user": self.user,
            "count": self.count,
            "score_sum": round(self.score_sum, 6),
            "max_score": round(self.max_score, 6),
            "queries": self.queries,
            "days": self.days,
            "first": self.first,
            "last": self.last,
        }

    def add(self, qhash: str, score: float, when: datetime) -> None:
        self.count += 1
        self.score_sum += score
        self.max_score = max(self.max_score, score)
        if qhash not in self.queries:
            self.queries = [*self.queries, qhash][-MAX_QUERIES:]
        day = when.date().isoformat()
        if day not in self.days:
            self.days = [*self.days, day][-MAX_DAYS:]
        stamp = when.isoformat()
        self.first = self.first or stamp
        self.last = max(self.last, stamp)

    @property
    def avg_score(self) -> float:
        return self.score_sum / self.count if self.count else 0.0


@dataclass(frozen=True)
class _Event:
    memory_id: str
    agent: str
    user: str
    qhash: str
    score: float
    when: datetime


#: False while an HTTP GET is answered (memoryd.api.guard): a GET changes nothing, and a
#: link on any site can make a browser send one, so its searches (the dashboard's search
#: page, ``GET /v1/context``) are not recalls that promotion would count.
RECORDING: ContextVar[bool] = ContextVar("memoryd_recording_recalls", default=True)


class RecallLog:
    """Buffers recall events of one ``Memory`` and folds them into the store."""

    def __init__(self, store: Store, *, enabled: bool = True) -> None:
        self.store = store
        self.enabled = enabled
        self._buffer: list[_Event] = []
        self._lock = threading.Lock()  # the buffer
        # one flush at a time: each reads, adds to and writes a memory's summary
        self._flushing = threading.Lock()
        self._flushed_at = time.monotonic()
        self._due = threading.Event()
        self._stopped = threading.Event()  # closed: the writer ends, none starts again
        self._writer: threading.Thread | None = None

    def record(self, query: str, hits: Sequence[SearchHit], when: datetime) -> None:
        """Note that ``query`` returned ``hits`` (relevance before time decay counts)."""
        if not self.enabled or not hits or not RECORDING.get():
            return
        qhash = query_hash(query)
        events = [
            _Event(
                h.id,
                h.record.agent_id,
                h.record.user_id,
                qhash,
                float(h.original_score if h.original_score is not None else h.score),
                when,
            )
            for h in hits
            if h.record.agent_id and (h.record.origin != Origin.CHUNK or is_diary_chunk(h.record))
        ]
        if not events:
            return
        with self._lock:
            self._buffer.extend(events)
            due = (
                len(self._buffer) >= FLUSH_EVERY
                or time.monotonic() - self._flushed_at >= FLUSH_SECONDS
            )
            # (a writer that is gone, in a forked child say, is started again)
            if (
                due
                and not self._stopped.is_set()
                and not (self._writer and self._writer.is_alive())
            ):
                self._writer = threading.Thread(
                    target=self._write_when_due, name="memoryd-recalls", daemon=True
                )
                self._writer.start()
        if due:
            self._due.set()

    def _write_when_due(self) -> None:
        """The writer thread: a batch when one is due, and whatever waits every
        ``FLUSH_SECONDS`` (an idle server's last searches are not left in memory). A
        write that fails (the database locked by another writer past its busy timeout)
        is retried after 1, 2, 4, ... seconds, not at every search meanwhile: each try
        holds the store for as long as the busy timeout."""
        backoff = 0.0
        while not self._stopped.is_set():
            if backoff:
                self._stopped.wait(backoff)
            else:
                self._due.wait(FLUSH_SECONDS)
            self._due.clear()
            if self._stopped.is_set():
                return
            try:
                self.flush()
                backoff = 0.0
            except Exception:  # the events are back in the buffer
                backoff = min(FLUSH_SECONDS, max(1.0, 2 * backoff))
                log.warning(
                    "recall statistics not written; retrying in %.0f s", backoff, exc_info=True
                )

    def flush(self) -> int:
        """Write buffered events now; returns how many. Safe to call any time, from any
        thread (it waits for a batch being written). If the write fails, the events go
        back to the buffer and the error is raised."""
        with self._flushing:
            with self._lock:
                events, self._buffer = self._buffer, []
                self._flushed_at = time.monotonic()
            if not events:
                return 0
            try:
                self._write(events)
            except BaseException:
                with self._lock:
                    self._buffer[:0] = events
                raise
            return len(events)

    def _write(self, events: Sequence[_Event]) -> None:
        by_memory: dict[str, list[_Event]] = {}
        for e in events:
            by_memory.setdefault(e.memory_id, []).append(e)
        with self.store.atomic():
            for memory_id, mine in by_memory.items():
                value = self.store.kv_get(PREFIX + memory_id)
                first = mine[0]
                summary = (
                    Recall.from_kv(memory_id, value)
                    if isinstance(value, dict)
                    else Recall(memory_id, first.agent, first.user)
                )
                for e in mine:
                    summary.add(e.qhash, e.score, e.when)
                self.store.kv_set(PREFIX + memory_id, summary.to_kv())

    def close(self) -> None:
        """Stop the writer thread and write what is left."""
        with self._lock:
            self._stopped.set()
            writer = self._writer
        self._due.set()
        if writer is not None:
            writer.join()
        self.flush()


def summaries(store: Store, agent: str | None = None) -> Iterator[Recall]:
    """Every recall summary in the store (of one agent), for promotion."""
    for key, value in store.kv_items().items():
        if key.startswith(PREFIX) and isinstance(value, dict):
            summary = Recall.from_kv(key[len(PREFIX) :], value)
            if agent is None or summary.agent == agent:
                yield summary
