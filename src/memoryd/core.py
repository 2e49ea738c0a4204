"""``Memory``: the one object the CLI, the HTTP API, MCP and the pipelines call.

It validates input, embeds (through a content-hash cache), writes through the
store and runs hybrid search. Everything is synchronous; async callers run it
in a thread (see ``memoryd.api``).
"""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memoryd.embed import Embedder, create_embedder, normalize
from memoryd.errors import InvalidInputError, ModelMismatchError, NotFoundError
from memoryd.models import (
    Event,
    Filters,
    HistoryEntry,
    MemoryEvent,
    MemoryRecord,
    Origin,
    SearchHit,
    Source,
    State,
    content_hash,
    utcnow,
)
from memoryd.search import hybrid_candidates
from memoryd.settings import Settings
from memoryd.store import Store, open_store
from memoryd.validate import check_id, check_metadata, check_text, check_top_k

Clock = Callable[[], datetime]


class Memory:
    """Long-term memory for agents: add, search, get, list, update, delete, history."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        clock: Clock = utcnow,
        id_factory: Callable[[], str] = lambda: str(uuid.uuid4()),
        allow_model_change: bool = False,
    ) -> None:
        self.settings = settings or Settings()
        self.store = store or open_store(self.settings.store_url, self.settings.store)
        self.embedder = embedder or create_embedder(self.settings.embed)
        self.clock = clock
        self.new_id = id_factory
        self._query_cache: dict[str, np.ndarray] = {}
        self._check_model(allow_model_change)

    # -- lifecycle ---------------------------------------------------------------------------
    def _check_model(self, allow_change: bool) -> None:
        name, dim = self.store.get_meta("embed_model"), self.store.get_meta("embed_dim")
        if name is None:
            self.store.set_meta("embed_model", self.embedder.name)
            self.store.set_meta("embed_dim", str(self.embedder.dim))
        elif (name != self.embedder.name or dim != str(self.embedder.dim)) and not allow_change:
            raise ModelMismatchError(
                f"the store at {self.store.url} was built with embedding model {name} "
                f"(dim {dim}); the configured model is {self.embedder.name} "
                f"(dim {self.embedder.dim})",
                "run `memoryd reindex` to re-embed every memory with the configured model, "
                "or configure the original model again",
            )

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- embedding ---------------------------------------------------------------------------
    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``; text already embedded by this model is never embedded again.

        Text longer than the model's window is embedded window by window and the
        windows averaged, instead of silently dropping everything past the window.
        """
        model = self.embedder.name
        hashes = [content_hash(t) for t in texts]
        cached = self.store.cache_get(model, hashes)
        todo = list(dict.fromkeys(h for h in hashes if h not in cached))
        if todo:
            text_of = dict(zip(hashes, texts, strict=True))
            fresh = self._embed_windowed([text_of[h] for h in todo])
            new = dict(zip(todo, fresh, strict=True))
            self.store.cache_put(model, new)
            cached.update(new)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([cached[h] for h in hashes])

    def _embed_windowed(self, texts: builtins.list[str]) -> builtins.list[np.ndarray]:
        limit = max(16, self.embedder.max_tokens - 2)  # room for [CLS] and [SEP]
        pieces: builtins.list[str] = []
        owners: builtins.list[int] = []
        for n, text in enumerate(texts):
            windows = [text]
            if len(text) > limit and self.embedder.count_tokens(text) > limit:
                windows = split_to_window(text, limit, self.embedder.count_tokens)
            pieces.extend(windows)
            owners.extend([n] * len(windows))
        vectors = self.embedder.embed(pieces)
        sums = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
        np.add.at(sums, owners, vectors)
        return list(normalize(sums))

    def embed_query(self, query: str) -> np.ndarray:
        vec = self._query_cache.get(query)
        if vec is None:
            vec = self.embedder.embed([query])[0]
            if len(self._query_cache) > 512:
                self._query_cache.clear()
            self._query_cache[query] = vec
        return vec

    # -- writes ------------------------------------------------------------------------------
    def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[dict[str, Any]] | None = None,
        user_id: str,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        category: str | None = None,
        origin: Origin = Origin.API,
        source: Source | None = None,
        context: str | None = None,
        event_at: datetime | None = None,
        memory_id: str | None = None,
        actor: str | None = None,
    ) -> builtins.list[MemoryEvent]:
        """Store ``text`` (or each message's content) as given.

        Identical text already active in the same scope is not stored twice: the
        event is NONE and names the existing memory.
        """
        limits = self.settings.limits
        check_id(user_id, "user_id", limits, required=True)
        check_id(agent_id, "agent_id", limits)
        check_id(run_id, "run_id", limits)
        metadata = dict(check_metadata(metadata, limits))
        category = category or metadata.get("category")
        if category is not None:
            category = str(category)
            metadata["category"] = category
        if (text is None) == (messages is None):
            raise InvalidInputError(
                "pass either text or messages", "add(text=...) or add(messages=[...])"
            )
        if text is not None:
            texts = [check_text(text, limits)]
            roles: builtins.list[str | None] = [None]
        else:
            assert messages is not None
            texts, roles = [], []
            for i, message in enumerate(messages):
                if not isinstance(message, dict) or "content" not in message:
                    raise InvalidInputError(
                        f"message {i} has no content",
                        'each message is {"role": ..., "content": ...}',
                    )
                content = message.get("content")
                if isinstance(content, str) and content.strip():
                    texts.append(check_text(content, limits, f"messages[{i}].content"))
                    roles.append(str(message.get("role", "user")))
            if not texts:
                raise InvalidInputError(
                    "every message is empty", "send at least one message with content"
                )
        now = self.clock()
        scope = Filters(user_id=user_id, agent_id=agent_id, run_id=run_id)
        events: builtins.list[MemoryEvent] = []
        records: builtins.list[MemoryRecord] = []
        for n, (body, role) in enumerate(zip(texts, roles, strict=True)):
            meta = dict(metadata)
            if role is not None:
                meta["role"] = role
            record = MemoryRecord(
                id=memory_id
                if (memory_id and len(texts) == 1)
                else (f"{memory_id}-{n}" if memory_id else self.new_id()),
                text=body,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                category=category,
                metadata=meta,
                origin=origin,
                source=source,
                context=context,
                created_at=now,
                updated_at=now,
                event_at=event_at,
            )
            same = self.store.find_by_hash(record.hash, scope)
            if same or any(r.hash == record.hash for r in records):
                existing = same[0].id if same else None
                events.append(MemoryEvent(id=existing, memory=body, event=Event.NONE))
                continue
            records.append(record)
            events.append(MemoryEvent(id=record.id, memory=body, event=Event.ADD))
        self.write_records(records, actor=actor)
        return events

    def write_records(
        self,
        records: Sequence[MemoryRecord],
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Embed and insert prepared records in one transaction (used by indexers)."""
        if not records:
            return
        vectors = self.embed_texts([r.index_text for r in records])
        for record, vector in zip(records, vectors, strict=True):
            record.embedding = vector
        self.store.add(records, actor=actor, reason=reason)

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        user_id: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        record = self.get(memory_id, user_id=user_id)
        if text is None and metadata is None:
            raise InvalidInputError("nothing to update", "pass new text, new metadata or both")
        changes: dict[str, Any] = {}
        if text is not None:
            changes["text"] = check_text(text, self.settings.limits)
        if metadata is not None:
            merged = {**record.metadata, **check_metadata(metadata, self.settings.limits)}
            changes["metadata"] = merged
            if "category" in metadata:
                changes["category"] = metadata["category"]
        new = record.model_copy(update=changes)
        if text is not None:
            new.embedding = self.embed_texts([new.index_text])[0]
        return self.store.update(new, actor=actor, reason=reason)

    def delete(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        """Soft delete: out of search and list, kept in history, restorable."""
        record = self.get(memory_id, user_id=user_id)
        if record.state == State.DELETED:
            return record
        return self.store.set_state(
            memory_id, State.DELETED, event=Event.DELETE, actor=actor, reason=reason
        )

    def restore(
        self, memory_id: str, *, user_id: str | None = None, actor: str | None = None
    ) -> MemoryRecord:
        record = self.get(memory_id, user_id=user_id, include_deleted=True)
        if record.state == State.ACTIVE:
            return record
        return self.store.set_state(memory_id, State.ACTIVE, event=Event.RESTORE, actor=actor)

    def reset(self, *, user_id: str, agent_id: str | None = None, run_id: str | None = None) -> int:
        """Erase every memory (and its history) in exactly this scope. Returns the count."""
        limits = self.settings.limits
        check_id(user_id, "user_id", limits, required=True)
        check_id(agent_id, "agent_id", limits)
        check_id(run_id, "run_id", limits)
        return self.store.purge(Filters(user_id=user_id, agent_id=agent_id, run_id=run_id))

    # -- reads -------------------------------------------------------------------------------
    def get(
        self, memory_id: str, *, user_id: str | None = None, include_deleted: bool = False
    ) -> MemoryRecord:
        if not memory_id or not isinstance(memory_id, str):
            raise InvalidInputError("memory id is empty", "pass the id returned by add or list")
        record = self.store.get(memory_id)
        if (
            record is None
            or (user_id is not None and record.user_id != user_id)
            or (record.state == State.DELETED and not include_deleted)
        ):
            raise NotFoundError(
                f"no memory with id {memory_id}", "check the id with `memoryd list`"
            )
        return record

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
        filters: Filters | None = None,
    ) -> builtins.list[MemoryRecord]:
        f = (filters or Filters()).model_copy(
            update={
                k: v
                for k, v in {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}.items()
                if v is not None
            }
        )
        return self.store.list(f, limit=max(0, min(limit, 10_000)), offset=max(0, offset))

    def history(self, memory_id: str, *, user_id: str | None = None) -> builtins.list[HistoryEntry]:
        self.get(memory_id, user_id=user_id, include_deleted=True)
        return self.store.history(memory_id)

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        filters: Filters | None = None,
        mode: str = "hybrid",
    ) -> builtins.list[SearchHit]:
        """Hybrid search in a scope. ``mode`` is ``hybrid``, ``vector`` or ``keyword``."""
        s = self.settings.search
        top_k = check_top_k(top_k if top_k is not None else s.default_top_k, s.max_top_k)
        query = check_text(query, self.settings.limits, "query")
        if mode not in ("hybrid", "vector", "keyword"):
            raise InvalidInputError(
                f"unknown search mode {mode!r}", "use hybrid, vector or keyword"
            )
        f = (filters or Filters()).model_copy(
            update={
                k: v
                for k, v in {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}.items()
                if v is not None
            }
        )
        qvec = self.embed_query(query) if mode != "keyword" else None
        n = max(top_k * s.candidate_multiplier, s.min_candidates)
        candidates = hybrid_candidates(self.store, query, qvec, f, n, s, mode)
        threshold = s.min_score if min_score is None else min_score
        chosen = [c for c in candidates if c.parts.fused >= threshold][:top_k]
        records = {r.id: r for r in self.store.get_many([c.id for c in chosen])}
        return [
            SearchHit(
                id=c.id,
                text=records[c.id].text,
                score=c.parts.fused,
                parts=c.parts,
                record=records[c.id],
            )
            for c in chosen
            if c.id in records
        ]

    def status(self) -> dict[str, Any]:
        everything = Filters(states=[])
        return {
            "store": self.store.url,
            "model": self.embedder.name,
            "dim": self.embedder.dim,
            "memories": self.store.count(Filters()),
            "by_state": self.store.counts_by("state", everything),
            "by_origin": self.store.counts_by("origin", Filters()),
            "by_user": self.store.counts_by("user_id", Filters()),
        }

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed every memory with the configured model, then record it as the store's model."""
        everything = Filters(states=[])
        total = self.store.count(everything)
        done = 0
        batch: builtins.list[MemoryRecord] = []
        for record in self.store.iter_all(everything):
            batch.append(record)
            if len(batch) == 256:
                done += self._reembed(batch)
                batch = []
                if progress:
                    progress(done, total)
        done += self._reembed(batch)
        if progress:
            progress(done, total)
        self.store.set_meta("embed_model", self.embedder.name)
        self.store.set_meta("embed_dim", str(self.embedder.dim))
        return done

    def _reembed(self, records: builtins.list[MemoryRecord]) -> int:
        if not records:
            return 0
        vectors = self.embed_texts([r.index_text for r in records])
        with self.store.atomic():
            for record, vector in zip(records, vectors, strict=True):
                record.embedding = vector
                self.store.update(
                    record,
                    event=Event.UPDATE,
                    actor="reindex",
                    reason=f"re-embedded with {self.embedder.name}",
                )
        return len(records)


def split_to_window(text: str, limit: int, count: Callable[[str], int]) -> builtins.list[str]:
    """Split on whitespace into pieces of at most ``limit`` tokens each."""
    words = text.split()
    pieces: builtins.list[str] = []
    current: builtins.list[str] = []
    used = 0
    for word in words:
        cost = count(word) or 1
        if current and used + cost > limit:
            pieces.append(" ".join(current))
            current, used = [], 0
        current.append(word)
        used += cost
    if current:
        pieces.append(" ".join(current))
    return pieces or [text]
