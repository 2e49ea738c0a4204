"""The embedded default store: one SQLite file.

* WAL mode, ``BEGIN IMMEDIATE`` writes, a busy timeout plus retry with backoff,
  so several processes can share one file without "database is locked" errors.
* Embeddings as packed float32 BLOBs. A :class:`VectorIndex` holds them in a
  numpy matrix next to BM25 postings of each memory's ``index_text`` (see
  ``keywords.py``: it replaced FTS5, whose ``bm25()`` took ~50 ms at 100k rows).
  A ``changes`` table, filled by triggers in the same transaction as every
  write, lets each process replay what others wrote before it searches.
* Named migrations, applied in order and recorded.
"""

from __future__ import annotations

import builtins
import json
import logging
import random
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from memoryd.errors import InvalidInputError, NotFoundError, StoreError
from memoryd.models import (
    Event,
    Filters,
    HistoryEntry,
    MemoryRecord,
    Origin,
    RankFacts,
    Source,
    State,
    content_hash,
    utcnow,
)
from memoryd.search.text import keyword_terms
from memoryd.settings import StoreSettings
from memoryd.store import register_store, snapshot
from memoryd.store.vectors import VectorIndex

log = logging.getLogger(__name__)
APP_ID = 0x4D454D44  # "MEMD", in the SQLite header: marks the file as ours
#: A process that replayed this many changes onto its index saves a new snapshot at close.
SNAPSHOT_AFTER = 1000

#: What the search index holds of a row: scope columns, then what ranking needs
#: (``RankFacts``: event time, evergreen, speaker/person), then the vector and text.
_INDEX_COLUMNS = (
    "id, user_id, agent_id, run_id, category, origin, state, created_at, event_at,"
    " json_type(metadata, '$.evergreen') = 'true',"
    " CASE json_type(metadata, '$.speaker') WHEN 'text'"
    " THEN json_extract(metadata, '$.speaker') END,"
    " CASE json_type(metadata, '$.person') WHEN 'text'"
    " THEN json_extract(metadata, '$.person') END,"
    " embedding, index_text"
)

_COLUMNS = (
    "id, text, user_id, agent_id, run_id, category, metadata, origin, source_path, "
    "source_start, source_end, context, state, created_at, updated_at, event_at, hash"
)


def _run_script(db: sqlite3.Connection, script: str) -> None:
    """Run statements one by one: ``executescript`` would commit the open transaction."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""


def _m001_initial(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            text TEXT NOT NULL,
            index_text TEXT NOT NULL,
            user_id TEXT NOT NULL,
            agent_id TEXT,
            run_id TEXT,
            category TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            origin TEXT NOT NULL,
            source_path TEXT,
            source_start INTEGER,
            source_end INTEGER,
            context TEXT,
            state TEXT NOT NULL DEFAULT 'active',
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            event_at REAL,
            hash TEXT NOT NULL,
            embedding BLOB
        );
        CREATE INDEX memories_scope ON memories(user_id, agent_id, run_id, state);
        CREATE INDEX memories_hash ON memories(hash);
        CREATE INDEX memories_source ON memories(source_path);
        CREATE INDEX memories_created ON memories(created_at);

        CREATE VIRTUAL TABLE memories_fts USING fts5(
            index_text, content='memories', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2'
        );

        CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, memory_id TEXT NOT NULL);

        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, index_text) VALUES (new.rowid, new.index_text);
            INSERT INTO changes(memory_id) VALUES (new.id);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, index_text)
                VALUES ('delete', old.rowid, old.index_text);
            INSERT INTO changes(memory_id) VALUES (old.id);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, index_text)
                VALUES ('delete', old.rowid, old.index_text);
            INSERT INTO memories_fts(rowid, index_text) VALUES (new.rowid, new.index_text);
            INSERT INTO changes(memory_id) VALUES (new.id);
        END;

        CREATE TABLE history (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            event TEXT NOT NULL,
            old_text TEXT,
            new_text TEXT,
            old_metadata TEXT,
            new_metadata TEXT,
            actor TEXT,
            reason TEXT,
            created_at REAL NOT NULL
        );
        CREATE INDEX history_memory ON history(memory_id);

        CREATE TABLE embed_cache (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (model, hash)
        ) WITHOUT ROWID;

        CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """,
    )


def _m002_locks(db: sqlite3.Connection) -> None:
    """Run locks for pipelines shared by several processes (see ``run_lock``)."""
    db.execute(
        "CREATE TABLE locks (name TEXT PRIMARY KEY, owner TEXT NOT NULL, expires_at REAL NOT NULL)"
    )


def _m003_drop_fts(db: sqlite3.Connection) -> None:
    """BM25 moved into the in-memory index (keywords.py): FTS5 would only cost writes."""
    _run_script(
        db,
        """
        DROP TRIGGER memories_ai;
        DROP TRIGGER memories_ad;
        DROP TRIGGER memories_au;
        DROP TABLE memories_fts;
        CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
            INSERT INTO changes(memory_id) VALUES (new.id);
        END;
        CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
            INSERT INTO changes(memory_id) VALUES (old.id);
        END;
        CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
            INSERT INTO changes(memory_id) VALUES (new.id);
        END;
        """,
    )


MIGRATIONS: builtins.list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("001_initial", _m001_initial),
    ("002_locks", _m002_locks),
    ("003_drop_fts", _m003_drop_fts),
]


def _ts(dt: datetime | None) -> float | None:
    return None if dt is None else dt.timestamp()


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _opt_dt(ts: float | None) -> datetime | None:
    return None if ts is None else _dt(ts)


def _pack(vector: Any) -> bytes | None:
    if vector is None:
        return None
    return np.asarray(vector, dtype=np.float32).tobytes()


class SQLiteStore:
    def __init__(self, url: str, settings: StoreSettings | None = None) -> None:
        settings = settings or StoreSettings()
        path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
        self.url = url
        self.path = Path(path).expanduser() if path != ":memory:" else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._depth = 0
        self._changes_kept = settings.changes_kept
        self._snapshot_min_rows = settings.index_snapshot_min_rows
        self._snapshot_seq = 0  # the change-log position of the last snapshot read or written
        self._snapshot_prepared = False  # whether that snapshot holds the coarse projection
        try:
            self._db = sqlite3.connect(
                str(self.path) if self.path else ":memory:",
                timeout=settings.busy_timeout_ms / 1000,
                isolation_level=None,
                check_same_thread=False,
            )
            self._check_is_ours()
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{url} is not a memoryd store ({exc})",
                "point MEMORYD_STORE__URL at a new file or at an existing memoryd store",
            ) from exc
        self._db.execute(f"PRAGMA busy_timeout={settings.busy_timeout_ms}")
        # switching a new file to WAL takes a lock that the busy timeout does not wait for
        self._retry_locked(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._retry_locked(self._migrate)
        self._index: VectorIndex | None = None
        self._seen_seq = 0

    # -- lifecycle -----------------------------------------------------------------------
    def _check_is_ours(self) -> None:
        # tables first: they and the application id are committed together, so a file
        # another process is creating right now never looks like someone else's
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        app_id = self._db.execute("PRAGMA application_id").fetchone()[0]
        if app_id == APP_ID:
            return
        if tables:
            raise StoreError(
                f"{self.url} is an SQLite file but not a memoryd store",
                "memoryd will not write into another program's database; choose another path",
            )

    def _migrate(self) -> None:
        with self._write():
            self._db.execute(f"PRAGMA application_id={APP_ID}")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            done = {r[0] for r in self._db.execute("SELECT name FROM migrations")}
            for name, migration in MIGRATIONS:
                if name not in done:
                    migration(self._db)
                    self._db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))

    def close(self) -> None:
        with self._lock:
            index = self._index
            if index is not None and (
                self._seen_seq - self._snapshot_seq >= SNAPSHOT_AFTER
                or (index.prepared and not self._snapshot_prepared)
            ):
                self._save_snapshot(index)
            self._db.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; nested calls become savepoints."""
        with self._lock:
            if self._depth:
                name = f"sp{self._depth}"
                self._db.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield self._db
                except BaseException:
                    self._db.execute(f"ROLLBACK TO {name}")
                    self._db.execute(f"RELEASE {name}")
                    raise
                else:
                    self._db.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self._begin_immediate()
            self._depth = 1
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            else:
                self._db.execute("COMMIT")
            finally:
                self._depth = 0
            self._prune_if_long()

    def _begin_immediate(self) -> None:
        self._retry_locked(lambda: self._db.execute("BEGIN IMMEDIATE"))

    def _retry_locked(self, step: Callable[[], object]) -> None:
        """Run ``step``, retrying with jittered backoff (~10 s in all) while another
        process holds the lock; a lock that never frees is a StoreError, not a traceback."""
        delay = 0.01
        for attempt in range(16):
            try:
                step()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if attempt == 15:
                    raise StoreError(
                        f"the store {self.url} stayed locked by another process",
                        "retry; if it persists, look for a stuck memoryd process",
                    ) from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._write():
            yield

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def kv_get(self, key: str) -> Any:
        with self._lock:
            row = self._db.execute("SELECT value FROM kv WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def kv_set(self, key: str, value: Any) -> None:
        with self._write() as db:
            if value is None:
                db.execute("DELETE FROM kv WHERE key=?", (key,))
            else:
                db.execute("INSERT OR REPLACE INTO kv VALUES (?, ?)", (key, json.dumps(value)))

    @contextmanager
    def run_lock(self, name: str, ttl_s: float = 3600) -> Iterator[bool]:
        """Yield True if this caller holds ``name`` for the block, False if another does.

        A row in ``locks``, taken inside ``BEGIN IMMEDIATE`` so two processes never
        both win. A holder that crashed cannot release it, so it lapses after
        ``ttl_s`` seconds: make that longer than the job. Take it outside ``atomic()``.
        """
        owner = uuid.uuid4().hex
        with self._write() as db:
            now = time.time()
            row = db.execute("SELECT expires_at FROM locks WHERE name=?", (name,)).fetchone()
            got = row is None or row[0] <= now
            if got:
                db.execute(
                    "INSERT OR REPLACE INTO locks VALUES (?, ?, ?)", (name, owner, now + ttl_s)
                )
        try:
            yield got
        finally:
            if got:
                with self._write() as db:
                    db.execute("DELETE FROM locks WHERE name=? AND owner=?", (name, owner))

    # -- rows -------------------------------------------------------------------------------
    def _row_to_record(self, row: sqlite3.Row | tuple[Any, ...]) -> MemoryRecord:
        (
            mid,
            text,
            user_id,
            agent_id,
            run_id,
            category,
            metadata,
            origin,
            spath,
            sstart,
            send,
            context,
            state,
            created,
            updated,
            event_at,
            text_hash,
        ) = row
        return MemoryRecord(
            id=mid,
            text=text,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            category=category,
            metadata=json.loads(metadata),
            origin=Origin(origin),
            source=Source(path=spath, start_line=sstart, end_line=send) if spath else None,
            context=context,
            state=State(state),
            created_at=_dt(created),
            updated_at=_dt(updated),
            event_at=_opt_dt(event_at),
            hash=text_hash,
        )

    @staticmethod
    def _values(r: MemoryRecord) -> tuple[Any, ...]:
        return (
            r.id,
            r.text,
            r.index_text,
            r.user_id,
            r.agent_id,
            r.run_id,
            r.category,
            json.dumps(r.metadata, ensure_ascii=False),
            str(r.origin),
            r.source.path if r.source else None,
            r.source.start_line if r.source else None,
            r.source.end_line if r.source else None,
            r.context,
            str(r.state),
            _ts(r.created_at),
            _ts(r.updated_at),
            _ts(r.event_at),
            r.hash,
            _pack(r.embedding),
        )

    def _history(
        self,
        db: sqlite3.Connection,
        memory_id: str,
        user_id: str,
        event: Event,
        old: MemoryRecord | None,
        new: MemoryRecord | None,
        actor: str | None,
        reason: str | None,
    ) -> None:
        db.execute(
            "INSERT INTO history (memory_id, user_id, event, old_text, new_text, old_metadata,"
            " new_metadata, actor, reason, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                memory_id,
                user_id,
                str(event),
                old.text if old else None,
                new.text if new else None,
                json.dumps(old.metadata, ensure_ascii=False) if old else None,
                json.dumps(new.metadata, ensure_ascii=False) if new else None,
                actor,
                reason,
                time.time(),
            ),
        )

    def add(
        self,
        records: Sequence[MemoryRecord],
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> None:
        with self._write() as db:
            for r in records:
                try:
                    db.execute(
                        "INSERT INTO memories (id, text, index_text, user_id, agent_id, run_id,"
                        " category, metadata, origin, source_path, source_start, source_end,"
                        " context, state, created_at, updated_at, event_at, hash, embedding)"
                        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                        self._values(r),
                    )
                except sqlite3.IntegrityError as exc:
                    raise InvalidInputError(
                        f"a memory with id {r.id} already exists",
                        "use update() to change it, or let memoryd choose the id",
                    ) from exc
                self._history(db, r.id, r.user_id, Event.ADD, None, r, actor, reason)

    def get(self, memory_id: str) -> MemoryRecord | None:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE id=?", (memory_id,)
            ).fetchone()
        return self._row_to_record(row) if row else None

    def get_many(self, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        if not ids:
            return []
        found: dict[str, MemoryRecord] = {}
        with self._lock:
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for row in self._db.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE id IN ({marks})", chunk
                ):
                    found[row[0]] = self._row_to_record(row)
        return [found[i] for i in ids if i in found]

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return {r.id for r in self.get_many(ids)}

    def get_embedding(self, memory_id: str) -> np.ndarray | None:
        with self._lock:
            row = self._db.execute(
                "SELECT embedding FROM memories WHERE id=?", (memory_id,)
            ).fetchone()
        if not row or row[0] is None:
            return None
        return np.frombuffer(row[0], dtype=np.float32).copy()

    def update(
        self,
        record: MemoryRecord,
        *,
        event: Event = Event.UPDATE,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        with self._write() as db:
            old = self.get(record.id)
            if old is None:
                raise NotFoundError(f"no memory with id {record.id}", "check the id with list")
            record.hash = content_hash(record.text)
            record.updated_at = utcnow()
            values = self._values(record)
            db.execute(
                "UPDATE memories SET text=?, index_text=?, user_id=?, agent_id=?, run_id=?,"
                " category=?, metadata=?, origin=?, source_path=?, source_start=?,"
                " source_end=?, context=?, state=?, created_at=?, updated_at=?, event_at=?,"
                " hash=?, embedding=COALESCE(?, embedding) WHERE id=?",
                (*values[1:], record.id),
            )
            self._history(db, record.id, record.user_id, event, old, record, actor, reason)
        return record

    def set_state(
        self,
        memory_id: str,
        state: State,
        *,
        event: Event,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        with self._write() as db:
            old = self.get(memory_id)
            if old is None:
                raise NotFoundError(f"no memory with id {memory_id}", "check the id with list")
            now = utcnow()
            db.execute(
                "UPDATE memories SET state=?, updated_at=? WHERE id=?",
                (str(state), now.timestamp(), memory_id),
            )
            new = old.model_copy(update={"state": state, "updated_at": now})
            self._history(db, memory_id, old.user_id, event, old, new, actor, reason)
        return new

    def purge(self, filters: Filters) -> int:
        where, params = self._where(filters.model_copy(update={"states": []}))
        with self._write() as db:
            ids = [r[0] for r in db.execute(f"SELECT id FROM memories {where}", params)]
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                db.execute(f"DELETE FROM history WHERE memory_id IN ({marks})", chunk)
                db.execute(f"DELETE FROM memories WHERE id IN ({marks})", chunk)
        return len(ids)

    @staticmethod
    def _where(f: Filters, alias: str = "") -> tuple[str, builtins.list[Any]]:
        a = f"{alias}." if alias else ""
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        for column in ("user_id", "agent_id", "run_id", "source_path"):
            value = getattr(f, column)
            if value is not None:
                clauses.append(f"{a}{column} = ?")
                params.append(value)
        if f.ids is not None:
            clauses.append(f"{a}id IN ({','.join('?' * len(f.ids))})" if f.ids else "0")
            params.extend(f.ids)
        if f.long_term_only:
            clauses.append(f"{a}run_id IS NULL")
        if f.short_term_only:
            clauses.append(f"{a}run_id IS NOT NULL")
        for column, values in (
            ("category", f.categories),
            ("origin", [str(o) for o in f.origins] if f.origins else None),
            ("state", [str(s) for s in f.states] if f.states else None),
        ):
            if values is not None:
                clauses.append(f"{a}{column} IN ({','.join('?' * len(values))})")
                params.extend(values)
        if f.created_after is not None:
            clauses.append(f"{a}created_at >= ?")
            params.append(f.created_after.timestamp())
        if f.created_before is not None:
            clauses.append(f"{a}created_at < ?")
            params.append(f.created_before.timestamp())
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", params

    def list(
        self, filters: Filters, *, limit: int = 100, offset: int = 0, newest_first: bool = True
    ) -> builtins.list[MemoryRecord]:
        where, params = self._where(filters)
        order = "DESC" if newest_first else "ASC"
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories {where} ORDER BY created_at {order}, rowid "
                f"{order} LIMIT ? OFFSET ?",
                (*params, limit, offset),
            ).fetchall()
        return [self._row_to_record(r) for r in rows]

    def iter_all(self, filters: Filters, batch: int = 1000) -> Iterator[MemoryRecord]:
        where, params = self._where(filters)
        last = 0
        while True:
            cond = f"{where} AND rowid > ?" if where else "WHERE rowid > ?"
            with self._lock:
                rows = self._db.execute(
                    f"SELECT rowid, {_COLUMNS} FROM memories {cond} ORDER BY rowid LIMIT ?",
                    (*params, last, batch),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield self._row_to_record(row[1:])
            last = rows[-1][0]

    def count(self, filters: Filters) -> int:
        where, params = self._where(filters)
        with self._lock:
            return int(
                self._db.execute(f"SELECT count(*) FROM memories {where}", params).fetchone()[0]
            )

    def counts_by(self, column: str, filters: Filters) -> dict[str, int]:
        if column not in {"user_id", "agent_id", "run_id", "category", "origin", "state"}:
            raise InvalidInputError(f"cannot group by {column!r}", "use a scope column")
        where, params = self._where(filters)
        with self._lock:
            rows = self._db.execute(
                f"SELECT {column}, count(*) FROM memories {where} GROUP BY {column}", params
            ).fetchall()
        return {str(k) if k is not None else "": int(n) for k, n in rows}

    def history(self, memory_id: str) -> builtins.list[HistoryEntry]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, memory_id, event, old_text, new_text, old_metadata, new_metadata,"
                " actor, reason, created_at FROM history WHERE memory_id=? ORDER BY id",
                (memory_id,),
            ).fetchall()
        return [self._history_entry(r) for r in rows]

    @staticmethod
    def _history_entry(r: tuple[Any, ...]) -> HistoryEntry:
        return HistoryEntry(
            id=r[0],
            memory_id=r[1],
            event=Event(r[2]),
            old_text=r[3],
            new_text=r[4],
            old_metadata=json.loads(r[5]) if r[5] else None,
            new_metadata=json.loads(r[6]) if r[6] else None,
            actor=r[7],
            reason=r[8],
            created_at=_dt(r[9]),
        )

    def find_by_hash(self, text_hash: str, filters: Filters) -> builtins.list[MemoryRecord]:
        where, params = self._where(filters)
        cond = f"{where} AND hash = ?" if where else "WHERE hash = ?"
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM memories {cond}", (*params, text_hash)
            ).fetchall()
        return [self._row_to_record(r) for r in rows]

    # -- retrieval ----------------------------------------------------------------------------
    def keyword_search(
        self, query: str, filters: Filters, limit: int
    ) -> builtins.list[tuple[str, float]]:
        """BM25 from the in-memory postings (see keywords.py for why not FTS5's bm25())."""
        if limit <= 0 or not keyword_terms(query):
            return []
        index = self._sync_index()
        return index.keyword_search(query, self._mask(index, filters), limit)

    def _mask(self, index: VectorIndex, filters: Filters) -> np.ndarray:
        mask = index.mask(filters)
        if filters.source_path is not None or filters.ids is not None:
            mask &= index.mask_ids(set(self._ids_where(filters)))
        return mask

    def _sync_index(self) -> VectorIndex:
        """Bring the in-memory matrix up to date with every committed write."""
        with self._lock:
            if self._index is None and not self._load_snapshot():
                return self._load_index()
            assert self._index is not None
            low = self._db.execute("SELECT min(seq) FROM changes").fetchone()[0]
            if low is not None and low > self._seen_seq + 1 and self._seen_seq:
                return self._load_index()  # the log was pruned past us
            rows = self._db.execute(
                "SELECT seq, memory_id FROM changes WHERE seq > ? ORDER BY seq",
                (self._seen_seq,),
            ).fetchall()
            if not rows:
                return self._index
            changed = list(dict.fromkeys(r[1] for r in rows))
            self._seen_seq = rows[-1][0]
            self._apply(changed)
            return self._index

    def _load_index(self) -> VectorIndex:
        seq = self._db.execute("SELECT coalesce(max(seq), 0) FROM changes").fetchone()[0]
        dim_row = self._db.execute(
            "SELECT length(embedding) FROM memories WHERE embedding IS NOT NULL LIMIT 1"
        ).fetchone()
        dim = int(dim_row[0]) // 4 if dim_row else int(self.get_meta("embed_dim") or 384)
        count = self._db.execute("SELECT count(*) FROM memories").fetchone()[0]
        index = VectorIndex(dim, capacity=max(1024, int(count * 1.25)))
        cursor = self._db.execute(f"SELECT {_INDEX_COLUMNS} FROM memories WHERE state != 'deleted'")
        while rows := cursor.fetchmany(10_000):  # bounded: a full fetch doubles peak memory
            (ids, users, agents, runs, cats, origins, states, created, events, evergreen,
             speakers, persons, blobs, texts) = zip(*rows, strict=True)  # fmt: skip
            size = 4 * dim
            has_vec = np.fromiter(
                (b is not None and len(b) == size for b in blobs), bool, len(rows)
            )
            vectors = np.zeros((len(rows), dim), dtype=np.float32)
            if has_vec.any():
                joined = b"".join(b for b, ok in zip(blobs, has_vec, strict=True) if ok)
                vectors[has_vec] = np.frombuffer(joined, dtype=np.float32).reshape(-1, dim)
            columns = {"user_id": users, "agent_id": agents, "run_id": runs, "category": cats}
            columns |= {"origin": origins, "state": states, "speaker": speakers, "person": persons}
            when = np.fromiter(
                (c if e is None else e for c, e in zip(created, events, strict=True)),
                np.float64,
                len(rows),
            )
            index.load_block(
                ids,
                vectors,
                has_vec,
                columns,
                np.asarray(created),
                texts,
                when=when,
                evergreen=np.fromiter((bool(e) for e in evergreen), bool, len(rows)),
            )
        self._index = index
        self._seen_seq = seq
        if self._snapshot_path() is not None and len(index) >= self._snapshot_min_rows:
            index.prepare()
        self._save_snapshot(index)
        return index

    # -- the index snapshot (memoryd.store.snapshot) -----------------------------------------
    def _snapshot_path(self) -> Path | None:
        if self.path is None or not self._snapshot_min_rows:
            return None
        return snapshot.path_for(self.path)

    def _position(self, seq: int) -> snapshot.Position | None:
        row = self._db.execute("SELECT memory_id FROM changes WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else snapshot.Position(seq, row[0])

    def _load_snapshot(self) -> bool:
        """Start from the saved index when its change-log position is still in the log."""
        path = self._snapshot_path()
        if path is None or not path.is_file():
            return False
        loaded = snapshot.load(path)
        if loaded is None:
            return False
        index, at = loaded
        if self._position(at.seq) != at:  # pruned, or another history (a restored backup)
            return False
        self._index, self._seen_seq, self._snapshot_seq = index, at.seq, at.seq
        self._snapshot_prepared = index.prepared
        return True

    def _save_snapshot(self, index: VectorIndex) -> None:
        path = self._snapshot_path()
        if path is None or len(index) < self._snapshot_min_rows:
            return
        at = self._position(self._seen_seq)
        if at is None:
            return
        try:
            snapshot.save(path, index, at)
        except OSError as exc:  # a read-only or full disk costs start-up time, nothing else
            log.warning("could not save the search index snapshot %s: %s", path, exc)
            return
        self._snapshot_seq = at.seq
        self._snapshot_prepared = index.prepared

    @staticmethod
    def _vector(blob: bytes | None, dim: int) -> np.ndarray | None:
        if blob is None or len(blob) // 4 != dim:
            return None
        return np.frombuffer(blob, dtype=np.float32)

    @staticmethod
    def _attrs(row: tuple[Any, ...]) -> dict[str, Any]:
        return {
            "user_id": row[1],
            "agent_id": row[2],
            "run_id": row[3],
            "category": row[4],
            "origin": row[5],
            "state": row[6],
            "created_at": row[7],
            "event_at": row[8],
            "evergreen": bool(row[9]),
            "speaker": row[10],
            "person": row[11],
        }

    def _apply(self, ids: builtins.list[str]) -> None:
        assert self._index is not None
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = {
                r[0]: r
                for r in self._db.execute(
                    f"SELECT {_INDEX_COLUMNS} FROM memories WHERE id IN ({marks})",
                    chunk,
                )
            }
            for mid in chunk:
                row = rows.get(mid)
                if row is None or row[6] == "deleted":
                    self._index.remove(mid)
                elif row[12] is not None and len(row[12]) // 4 != self._index.dim:
                    self._load_index()  # the model's dimension changed under us
                    return
                else:
                    vector = self._vector(row[12], self._index.dim)
                    self._index.upsert(mid, vector, self._attrs(row), row[13])

    def vector_search(
        self, vector: np.ndarray, filters: Filters, limit: int
    ) -> builtins.list[tuple[str, float]]:
        index = self._sync_index()
        if len(index) == 0 or vector.shape[-1] != index.dim:
            return []
        return index.search(vector, self._mask(index, filters), limit)

    def _ids_where(self, filters: Filters) -> builtins.list[str]:
        where, params = self._where(filters)
        with self._lock:
            return [r[0] for r in self._db.execute(f"SELECT id FROM memories {where}", params)]

    def vector_scores(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        index = self._sync_index()
        if vector.shape[-1] != index.dim:
            return {}
        return index.scores(vector, ids)

    def rank_facts(self, ids: Sequence[str]) -> dict[str, RankFacts]:
        return self._sync_index().rank_facts(ids)

    # -- embedding cache ------------------------------------------------------------------------
    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(hashes))
        with self._lock:
            for start in range(0, len(unique), 500):
                chunk = unique[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for h, blob in self._db.execute(
                    f"SELECT hash, vector FROM embed_cache WHERE model=? AND hash IN ({marks})",
                    (model, *chunk),
                ):
                    out[h] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def cache_put(self, model: str, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        with self._write() as db:
            db.executemany(
                "INSERT OR IGNORE INTO embed_cache VALUES (?, ?, ?)",
                [(model, h, _pack(v)) for h, v in items.items()],
            )

    # -- bulk copy (memoryd store migrate) --------------------------------------------------------
    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Nothing to defer: the in-memory index is kept current change by change."""
        yield

    def export_memories(
        self, after: int, limit: int
    ) -> tuple[builtins.list[MemoryRecord], builtins.list[HistoryEntry], int]:
        with self._lock:
            rows = self._db.execute(
                f"SELECT rowid, {_COLUMNS}, embedding FROM memories WHERE rowid > ?"
                " ORDER BY rowid LIMIT ?",
                (after, limit),
            ).fetchall()
            if not rows:
                return [], [], after
            ids = [r[1] for r in rows]
            history: builtins.list[HistoryEntry] = []
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                marks = ",".join("?" * len(chunk))
                history.extend(
                    self._history_entry(h)
                    for h in self._db.execute(
                        "SELECT id, memory_id, event, old_text, new_text, old_metadata,"
                        " new_metadata, actor, reason, created_at FROM history"
                        f" WHERE memory_id IN ({marks}) ORDER BY id",
                        chunk,
                    )
                )
        records = []
        for row in rows:
            record = self._row_to_record(row[1:18])
            if row[18] is not None:
                record.embedding = np.frombuffer(row[18], dtype=np.float32).copy()
            records.append(record)
        history.sort(key=lambda h: h.id)
        return records, history, int(rows[-1][0])

    def import_memories(
        self, records: Sequence[MemoryRecord], history: Sequence[HistoryEntry]
    ) -> int:
        inserted: set[str] = set()
        owner = {r.id: r.user_id for r in records}
        with self._write() as db:
            for r in records:
                cursor = db.execute(
                    "INSERT OR IGNORE INTO memories (id, text, index_text, user_id, agent_id,"
                    " run_id, category, metadata, origin, source_path, source_start, source_end,"
                    " context, state, created_at, updated_at, event_at, hash, embedding)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    self._values(r),
                )
                if cursor.rowcount:
                    inserted.add(r.id)
            db.executemany(
                "INSERT INTO history (memory_id, user_id, event, old_text, new_text,"
                " old_metadata, new_metadata, actor, reason, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        h.memory_id,
                        owner[h.memory_id],
                        str(h.event),
                        h.old_text,
                        h.new_text,
                        None
                        if h.old_metadata is None
                        else json.dumps(h.old_metadata, ensure_ascii=False),
                        None
                        if h.new_metadata is None
                        else json.dumps(h.new_metadata, ensure_ascii=False),
                        h.actor,
                        h.reason,
                        h.created_at.timestamp(),
                    )
                    for h in history
                    if h.memory_id in inserted
                ],
            )
        return len(inserted)

    def export_cache(
        self, after: tuple[str, str] | None, limit: int
    ) -> builtins.list[tuple[str, str, np.ndarray]]:
        model, text_hash = after or ("", "")
        with self._lock:
            rows = self._db.execute(
                "SELECT model, hash, vector FROM embed_cache WHERE (model, hash) > (?, ?)"
                " ORDER BY model, hash LIMIT ?",
                (model, text_hash, limit),
            ).fetchall()
        return [(m, h, np.frombuffer(v, dtype=np.float32).copy()) for m, h, v in rows]

    def import_cache(self, items: Sequence[tuple[str, str, np.ndarray]]) -> None:
        if not items:
            return
        with self._write() as db:
            db.executemany(
                "INSERT OR IGNORE INTO embed_cache VALUES (?, ?, ?)",
                [(m, h, _pack(v)) for m, h, v in items],
            )

    def kv_items(self) -> dict[str, Any]:
        with self._lock:
            rows = self._db.execute("SELECT key, value FROM kv ORDER BY key").fetchall()
        return {k: json.loads(v) for k, v in rows}

    def meta_items(self) -> dict[str, str]:
        with self._lock:
            rows = self._db.execute("SELECT key, value FROM meta ORDER BY key").fetchall()
        return {k: v for k, v in rows}

    def totals(self) -> dict[str, int]:
        with self._lock:
            row = self._db.execute(
                "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM history),"
                " (SELECT count(*) FROM embed_cache), (SELECT count(*) FROM kv)"
            ).fetchone()
        return {"memories": row[0], "history": row[1], "cache": row[2], "kv": row[3]}

    # -- maintenance ------------------------------------------------------------------------------
    def integrity_check(self) -> builtins.list[str]:
        """Problems found (empty when healthy): SQLite and in-memory index agreement."""
        problems: builtins.list[str] = []
        with self._lock:
            result = self._db.execute("PRAGMA integrity_check").fetchone()[0]
            if result != "ok":
                problems.append(f"sqlite: {result}")
            live = {
                r[0] for r in self._db.execute("SELECT id FROM memories WHERE state != 'deleted'")
            }
        index = self._sync_index()
        if index.live_ids() != live:
            problems.append(f"search index has {len(index)} rows, store has {len(live)}")
        return problems

    def prune_changes(self, keep: int | None = None) -> None:
        """Drop all but the last ``keep`` entries of the change log. Safe while other
        processes read: one that fell further behind reloads its index in full."""
        keep = self._changes_kept if keep is None else keep
        with self._write() as db:
            db.execute(
                "DELETE FROM changes WHERE seq < (SELECT max(seq) FROM changes) - ?", (keep,)
            )

    def _prune_if_long(self) -> None:
        """After a commit: prune once the log holds twice what is kept (two lookups on
        the primary key, so this costs nothing until it is due)."""
        low, high = self._db.execute("SELECT min(seq), max(seq) FROM changes").fetchone()
        if low is not None and high - low > 2 * self._changes_kept:
            self.prune_changes()


def _factory(url: str, settings: StoreSettings) -> SQLiteStore:
    return SQLiteStore(url, settings)


register_store("sqlite", _factory)
