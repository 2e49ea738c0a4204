"""Stores: one protocol, a registry keyed by URL scheme.

A store persists :class:`~memoryd.models.MemoryRecord` rows with their
embeddings and history, and answers keyword and vector candidate queries with
scores normalised to [0, 1]. Fusion, decay and everything else above that is
the search layer's job, so every backend behaves the same. The contract suite
in ``tests/test_store_contract.py`` runs against every registered store.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from memoryd.errors import InvalidInputError
from memoryd.models import (
    Event,
    Filters,
    HistoryEntry,
    Located,
    MemoryRecord,
    RankFacts,
    State,
)
from memoryd.settings import StoreSettings


class Store(Protocol):
    url: str
    #: stamps updated_at and history times (``Memory`` sets its own clock here)
    clock: Callable[[], datetime]

    # -- lifecycle and small state -------------------------------------------------
    def close(self) -> None: ...
    def atomic(self) -> AbstractContextManager[None]:
        """All writes inside commit together or not at all (re-entrant)."""
        ...

    def get_meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...

    # -- records ----------------------------------------------------------------------
    def add(
        self,
        records: Sequence[MemoryRecord],
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> None:
        """Insert records (each with ``embedding`` set) and their ADD history."""
        ...

    def get(self, memory_id: str) -> MemoryRecord | None: ...
    def get_many(self, ids: Sequence[str]) -> builtins.list[MemoryRecord]: ...
    def existing_ids(self, ids: Sequence[str]) -> set[str]: ...

    def update(
        self,
        record: MemoryRecord,
        *,
        event: Event = Event.UPDATE,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        """Replace text/metadata/embedding/scope of ``record.id``; history keeps the old."""
        ...

    def reembed(self, records: Sequence[MemoryRecord]) -> None:
        """Replace only the embedding of each ``record.id`` (model rebuilds): no
        ``updated_at`` stamp, no history entry; ids no longer stored are skipped."""
        ...

    def set_state(
        self,
        memory_id: str,
        state: State,
        *,
        event: Event,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord: ...

    def purge(self, filters: Filters) -> int:
        """Hard-delete every record matching ``filters`` (any state) and its history."""
        ...

    def list(
        self, filters: Filters, *, limit: int = 100, offset: int = 0, newest_first: bool = True
    ) -> builtins.list[MemoryRecord]: ...
    def iter_all(self, filters: Filters, batch: int = 1000) -> Iterator[MemoryRecord]: ...
    def count(self, filters: Filters) -> int: ...
    def counts_by(self, column: str, filters: Filters) -> dict[str, int]: ...
    def history(self, memory_id: str) -> builtins.list[HistoryEntry]: ...
    def find_by_hash(self, text_hash: str, filters: Filters) -> builtins.list[MemoryRecord]: ...
    def locate(
        self, filters: Filters, hashes: Sequence[str], paths: Sequence[str]
    ) -> builtins.list[Located]:
        """Where the records ``filters`` admit that say one of ``hashes`` (their text's
        :func:`~memoryd.models.content_hash`) or cite one of ``paths`` were said: e.g. the
        superseded facts that a search's turns say again or were extracted from."""
        ...

    # -- retrieval --------------------------------------------------------------------
    # A search ranks its candidates by their RankFacts (rank_facts). A store that reads
    # the candidates' rows anyway may put their facts into ``facts`` as it finds them,
    # which spares the search that round trip; one that does not (an in-memory index
    # answers rank_facts at once) leaves it alone.
    def keyword_search(
        self,
        query: str,
        filters: Filters,
        limit: int,
        *,
        facts: dict[str, RankFacts] | None = None,
    ) -> builtins.list[tuple[str, float]]:
        """BM25 candidates, best first, scores in [0, 1]."""
        ...

    def vector_search(
        self,
        vector: np.ndarray,
        filters: Filters,
        limit: int,
        *,
        facts: dict[str, RankFacts] | None = None,
    ) -> builtins.list[tuple[str, float]]:
        """Cosine candidates, best first, scores in [0, 1]."""
        ...

    def vector_scores(
        self,
        vector: np.ndarray,
        ids: Sequence[str],
        *,
        facts: dict[str, RankFacts] | None = None,
    ) -> dict[str, float]:
        """Cosine similarity of ``vector`` with the given records, in [0, 1]."""
        ...

    def rank_facts(self, ids: Sequence[str]) -> dict[str, RankFacts]:
        """What ranking needs of each live record among ``ids`` (absent: deleted), read
        from the search index where the store keeps one, so no record is read."""
        ...

    # -- embedding cache --------------------------------------------------------------
    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]: ...
    def cache_put(self, model: str, items: dict[str, np.ndarray]) -> None: ...

    # -- key/value state for pipelines --------------------------------------------------
    def kv_get(self, key: str) -> Any:
        """The JSON value stored under ``key``; None when there is none."""
        ...

    def kv_set(self, key: str, value: Any) -> None:
        """Store ``value`` (JSON-able) under ``key``; None removes the key."""
        ...

    def run_lock(self, name: str, ttl_s: float = 3600) -> AbstractContextManager[bool]:
        """Yield True if this caller holds lock ``name`` for the block, False if another
        handle (in any process) holds it. For "exactly one server runs this job".

        A holder that dies releases it (PostgreSQL: with its session; an SQLite file:
        with its process, an OS file lock; only an in-memory SQLite store, or one on a
        system without ``fcntl``, waits ``ttl_s`` seconds). Take it outside ``atomic()``.
        """
        ...

    # -- bulk copy (``memoryd store migrate``) ----------------------------------------------
    def bulk_load(self) -> AbstractContextManager[None]:
        """Many writes are coming: a store may defer index building to the block's end."""
        ...

    def export_memories(
        self, after: int, limit: int
    ) -> tuple[builtins.list[MemoryRecord], builtins.list[HistoryEntry], int]:
        """Up to ``limit`` records (any state, with embeddings) in insertion order after
        cursor ``after`` (0: from the start), their history oldest first, and the cursor
        to continue from."""
        ...

    def import_memories(
        self, records: Sequence[MemoryRecord], history: Sequence[HistoryEntry]
    ) -> int:
        """Insert records exactly as given (state, timestamps, hash, embedding) with their
        history, in one transaction. Ids already present are skipped, history and all.
        Returns how many were inserted."""
        ...

    def export_cache(
        self, after: tuple[str, str] | None, limit: int
    ) -> builtins.list[tuple[str, str, np.ndarray]]:
        """Embedding cache entries ``(model, hash, vector)`` ordered by (model, hash)."""
        ...

    def import_cache(self, items: Sequence[tuple[str, str, np.ndarray]]) -> None: ...
    def kv_items(self) -> dict[str, Any]: ...
    def meta_items(self) -> dict[str, str]: ...
    def totals(self) -> dict[str, int]:
        """Row counts: ``memories`` (any state), ``history``, ``cache``, ``kv``."""
        ...


StoreFactory = Callable[[str, StoreSettings], Store]
_REGISTRY: dict[str, StoreFactory] = {}


def register_store(scheme: str, factory: StoreFactory) -> None:
    _REGISTRY[scheme] = factory


def open_store(url: str, settings: StoreSettings | None = None) -> Store:
    """Open the store a URL names: ``postgresql://...``; ``sqlite:///path`` or a path."""
    settings = settings or StoreSettings()
    scheme = url.split("://", 1)[0] if "://" in url else "sqlite"
    if scheme == "postgres":
        scheme = "postgresql"
    if scheme == "postgresql" and scheme not in _REGISTRY:
        import memoryd.store.postgres  # noqa: F401  (registers itself)
    if scheme == "sqlite" and scheme not in _REGISTRY:
        from memoryd.store import sqlite  # noqa: F401
    try:
        factory = _REGISTRY[scheme]
    except KeyError:
        raise InvalidInputError(
            f"no store for URL scheme {scheme!r}",
            "use a file path, sqlite:///path or postgresql://user@host/db",
        ) from None
    return factory(url, settings)
