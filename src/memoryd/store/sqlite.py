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
import hashlib
import json
import logging
import os
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

try:  # run locks the kernel releases when their process dies (POSIX)
    import fcntl
except ImportError:  # Windows: the lease row in ``locks``
    fcntl = None  # type: ignore[assignment]

from memoryd.errors import InvalidInputError, StoreError
from memoryd.models import Filters, MemoryRecord, RankFacts
from memoryd.search import turns
from memoryd.search.text import keyword_terms
from memoryd.settings import StoreSettings
from memoryd.store import register_store, snapshot, sql
from memoryd.store.filter_sql import SQLiteFilterSQL
from memoryd.store.sql import Connection, Dialect, SQLStore
from memoryd.store.vectors import VectorIndex, headroom

log = logging.getLogger(__name__)
APP_ID = 0x4D454D44  # "MEMD", in the SQLite header: marks the file as ours
MIN_SQLITE = (3, 24)  # 2018: INSERT ... ON CONFLICT, which store/sql.py shares with PostgreSQL
#: A process that replayed this many changes onto its index saves a new snapshot at close.
SNAPSHOT_AFTER = 1000

#: What the search index holds of a row: scope columns, then what ranking needs
#: (``RankFacts``: event time, evergreen, speaker/person), then the vector and text,
#: then a conversation turn's place and text (``search.turns``; see ``_turn``).
_INDEX_COLUMNS = (
    "id, user_id, agent_id, run_id, category, origin, state, created_at, event_at,"
    " json_type(metadata, '$.evergreen') = 'true',"
    " CASE json_type(metadata, '$.speaker') WHEN 'text'"
    " THEN json_extract(metadata, '$.speaker') END,"
    " CASE json_type(metadata, '$.person') WHEN 'text'"
    " THEN json_extract(metadata, '$.person') END,"
    " embedding, index_text,"
    " CASE json_type(metadata, '$.turn') WHEN 'integer' THEN json_extract(metadata, '$.turn') END,"
    " json_type(metadata, '$.session'), json_extract(metadata, '$.session'), source_path,"
    " CASE json_type(metadata, '$.turn') WHEN 'integer' THEN text END"
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
        f"""
        CREATE TABLE memories (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            text TEXT NOT NULL,
            index_text TEXT NOT NULL,
            {sql.record_columns(DIALECT)},
            embedding BLOB
        );

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
        """,
    )
    shared = sql.shared_tables(
        DIALECT, "memories", "history", "embed_cache", "kv", cache_options=" WITHOUT ROWID"
    )
    for statement in shared:
        db.execute(statement)


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


def _m004_source_state(db: sqlite3.Connection) -> None:
    """A file's memories of one state by index (``Store.locate``): a diary day has many
    memories (its chunks, short-term and long-term facts), and a search reads only those
    that were superseded."""
    db.execute(f"CREATE INDEX memories_source_state ON memories ({sql.SOURCE_STATE})")


MIGRATIONS: builtins.list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("001_initial", _m001_initial),
    ("002_locks", _m002_locks),
    ("003_drop_fts", _m003_drop_fts),
    ("004_source_state", _m004_source_state),
]


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _pack(vector: Any) -> bytes | None:
    if vector is None:
        return None
    return np.asarray(vector, dtype=np.float32).tobytes()


def _unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32).copy()


#: Timestamps are epoch seconds (REAL), embeddings packed float32 BLOBs, lists are
#: expanded into ``?`` marks 500 at a time (older SQLite builds allow 999), and the
#: keyword column holds ``index_text`` as it is (keywords.py analyses it in memory).
DIALECT = Dialect(
    mark="?",
    seq="rowid",
    batch=500,
    time_in=datetime.timestamp,
    time_out=_dt,
    vector_in=_pack,
    vector_out=_unpack,
    keyword_column="index_text",
    keyword_in=str,
    keyword_value="?",
    vector_value="?",
    row_lock="",  # one writer at a time: BEGIN IMMEDIATE already serialises writes
    serial_key="INTEGER PRIMARY KEY AUTOINCREMENT",
    time_type="REAL",
    bytes_type="BLOB",
    filter_sql=SQLiteFilterSQL,
)


class _Held:
    """The connection under the store's lock, for ``with``: what ``_read`` hands out,
    a few times cheaper than a generator context manager on the hottest reads."""

    __slots__ = ("_db", "_lock")

    def __init__(self, lock: threading.RLock, db: sqlite3.Connection) -> None:
        self._lock, self._db = lock, db

    def __enter__(self) -> sqlite3.Connection:
        self._lock.acquire()
        return self._db

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class SQLiteStore(SQLStore):
    dialect = DIALECT

    def __init__(self, url: str, settings: StoreSettings | None = None) -> None:
        if sqlite3.sqlite_version_info < MIN_SQLITE:  # upserts (ON CONFLICT ... DO)
            raise StoreError(
                f"memoryd needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; this Python"
                f" has {sqlite3.sqlite_version}",
                "use a Python built against a newer SQLite (python.org, pyenv, or uv builds)",
            )
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
        self._held = _Held(self._lock, self._db)
        self._db.execute(f"PRAGMA busy_timeout={settings.busy_timeout_ms}")
        # switching a new file to WAL takes a lock that the busy timeout does not wait for
        self._retry_locked(lambda: self._db.execute("PRAGMA journal_mode=WAL"))
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._retry_locked(self._migrate)
        self._index: VectorIndex | None = None
        self._seen_seq = 0
        self._synced_at: tuple[int, int] | None = None  # see _sync_index

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
            self._db.execute(sql.key_value_table("meta", if_not_exists=True))
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
            if index is not None:
                index.stop_building()
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

    def _read(self) -> _Held:
        return self._held

    @contextmanager
    def run_lock(self, name: str, ttl_s: float = 3600) -> Iterator[bool]:
        """Yield True if this caller holds ``name`` for the block, False if another does.

        For a database file: ``flock`` on a file beside it (``<db>-locks/``), which the
        kernel releases when the holder's process ends, ``kill -9`` included, so a
        crashed run never blocks the next one (``ttl_s`` is not needed). Each call
        opens its own descriptor, so two handles in one process exclude each other too.
        An in-memory store (one process) keeps a row in ``locks`` that lapses after
        ``ttl_s``. Take it outside ``atomic()``.
        """
        if self.path is not None and fcntl is not None:
            with self._file_lock(name) as got:
                yield got
            return
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

    @contextmanager
    def _file_lock(self, name: str) -> Iterator[bool]:
        assert self.path is not None and fcntl is not None
        folder = self.path.with_name(self.path.name + "-locks")
        folder.mkdir(exist_ok=True)
        digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        fd = os.open(folder / f"{digest}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    # -- rows -------------------------------------------------------------------------------
    def _insert_memories(
        self, conn: Connection, records: Sequence[MemoryRecord], *, skip_existing: bool
    ) -> set[str]:
        statement = self._insert_sql(skip_existing=skip_existing)
        inserted: set[str] = set()
        for r in records:  # one by one, so a duplicate id can be named
            try:
                cursor = conn.execute(statement, self._values(r))
            except sqlite3.IntegrityError as exc:
                raise InvalidInputError(
                    f"a memory with id {r.id} already exists",
                    "use update() to change it, or let memoryd choose the id",
                ) from exc
            if cursor.rowcount:
                inserted.add(r.id)
        return inserted

    # -- retrieval ----------------------------------------------------------------------------
    def keyword_search(
        self,
        query: str,
        filters: Filters,
        limit: int,
        *,
        facts: dict[str, RankFacts] | None = None,  # rank_facts answers from the index
    ) -> builtins.list[tuple[str, float]]:
        """BM25 from the in-memory postings (see keywords.py for why not FTS5's bm25())."""
        if limit <= 0 or not keyword_terms(query):
            return []
        # under the store's lock: the scope's mask and the index rows it masks are of one
        # moment (another thread's sync appends or compacts rows in between otherwise: a
        # 500 under concurrent writes); the index answers in milliseconds, a write waits
        with self._lock:
            index = self._sync_index()
            return index.keyword_search(query, self._mask(index, filters), limit)

    def _mask(self, index: VectorIndex, filters: Filters) -> np.ndarray:
        mask = index.mask(filters)
        if (
            filters.source_path is not None
            or filters.ids is not None
            or filters.where is not None
            or not filters.evidence_turns
        ):  # what the index's columns cannot say: the rows SQL admits
            mask &= index.mask_ids(set(self._ids_where(filters)))
        return mask

    def _sync_index(self) -> VectorIndex:
        """Bring the in-memory matrix up to date with every committed write.

        A hybrid search asks four or five times; when no other connection has committed
        (``PRAGMA data_version``) and this one has written nothing (``total_changes``)
        since the last look, the index is current without reading the change log."""
        with self._lock:
            stamp = (self._db.total_changes, self._db.execute("PRAGMA data_version").fetchone()[0])
            if self._index is not None and stamp == self._synced_at:
                return self._index
            index = self._catch_up()
            self._synced_at = stamp  # read before catching up: a later write changes it
            return index

    def _catch_up(self) -> VectorIndex:
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
        index = VectorIndex(dim, capacity=headroom(count))
        cursor = self._db.execute(f"SELECT {_INDEX_COLUMNS} FROM memories WHERE state != 'deleted'")
        while rows := cursor.fetchmany(10_000):  # bounded: a full fetch doubles peak memory
            (ids, users, agents, runs, cats, origins, states, created, events, evergreen,
             speakers, persons, blobs, texts) = list(zip(*rows, strict=True))[:14]  # fmt: skip
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
                turns=[self._turn(r) for r in rows],
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
            **SQLiteStore._turn(row),
        }

    @staticmethod
    def _turn(row: tuple[Any, ...]) -> dict[str, Any]:
        """A row's conversation facts (``search.turns.facts``); ``metadata.session`` is
        any JSON, which ``json_extract`` hands back as SQL values or JSON text."""
        turn, kind, session, path, text = row[14:19]
        if turn is None:
            return {}
        if kind in ("object", "array"):
            session = json.loads(session)
        elif kind in ("true", "false"):
            session = kind == "true"
        return turns.facts(turn, (row[1], row[2], row[3], session, path), text)

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
        self,
        vector: np.ndarray,
        filters: Filters,
        limit: int,
        *,
        facts: dict[str, RankFacts] | None = None,  # rank_facts answers from the index
    ) -> builtins.list[tuple[str, float]]:
        with self._lock:  # see keyword_search
            index = self._sync_index()
            if len(index) == 0 or vector.shape[-1] != index.dim:
                return []
            return index.search(vector, self._mask(index, filters), limit)

    def _ids_where(self, filters: Filters) -> builtins.list[str]:
        where, params = self.dialect.where(filters)
        with self._lock:
            return [r[0] for r in self._db.execute(f"SELECT id FROM memories {where}", params)]

    def vector_scores(
        self,
        vector: np.ndarray,
        ids: Sequence[str],
        *,
        facts: dict[str, RankFacts] | None = None,  # rank_facts answers from the index
    ) -> dict[str, float]:
        with self._lock:  # see keyword_search
            index = self._sync_index()
            if vector.shape[-1] != index.dim:
                return {}
            return index.scores(vector, ids)

    def rank_facts(self, ids: Sequence[str]) -> dict[str, RankFacts]:
        with self._lock:  # see keyword_search
            return self._sync_index().rank_facts(ids)

    # -- bulk copy (memoryd store migrate) --------------------------------------------------------
    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Nothing to defer: the in-memory index is kept current change by change."""
        yield

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
