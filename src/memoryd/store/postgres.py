"""PostgreSQL + pgvector: the store for teams and for several memoryd servers.

* Tables live in their own schema (``memoryd`` by default), so memoryd can share
  a database with other programs; named migrations are recorded in it.
* Embeddings in an untyped ``vector`` column, so the dimension is whatever the
  model gives. Each dimension seen gets a partial HNSW cosine index on
  ``embedding::vector(dim)`` (``halfvec`` above 2000 dimensions, pgvector's
  limit), created on first write; queries use the same expression, so a model
  change (``memoryd reindex``) never needs an ALTER TABLE.
* Keyword side: a ``tsvector`` (``english`` config, Snowball stemming, stop
  words) with a GIN index, ranked by each word's ``ts_rank_cd`` weighted by its
  inverse document frequency (BM25's idea, counted over the rows the search's
  filter admits) and divided by the best hit, so scores are in [0, 1] like
  SQLite's BM25. Documents and queries are both cut into ``\\w+`` words in
  Python first, so they tokenise the same way on every server and no query
  syntax ever reaches PostgreSQL.
* A psycopg pool; ``atomic()`` pins one connection to the calling thread and
  nests with savepoints. Several processes share the database safely; a
  pipeline takes ``run_lock``, a session-level advisory lock, so exactly one
  server runs each job and a crashed server releases it.

psycopg is optional: ``pip install 'memoryd[postgres]'``.
"""

from __future__ import annotations

import builtins
import json
import math
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from memoryd.errors import DependencyMissingError, InvalidInputError, NotFoundError, StoreError
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
from memoryd.search.entities import names_of
from memoryd.search.text import query_words, words
from memoryd.settings import PostgresStoreSettings, StoreSettings
from memoryd.store import Store, register_store

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_INSTALL_HINT = "pip install 'memoryd[postgres]'"
_MAX_VECTOR_DIM = 2000  # pgvector indexes vector up to 2000 dims, halfvec up to 4000
_MAX_HALFVEC_DIM = 4000
_MIN_PGVECTOR = (0, 8)
_COLUMNS = (
    "id, text, user_id, agent_id, run_id, category, metadata, origin, source_path, "
    "source_start, source_end, context, state, created_at, updated_at, event_at, hash"
)


def _import_psycopg() -> tuple[Any, Any, Any, type[Exception]]:
    """psycopg, the pool class, pgvector's adapter and PoolTimeout, or a clear error."""
    try:
        import psycopg
        from pgvector.psycopg import register_vector
        from psycopg_pool import ConnectionPool, PoolTimeout
    except ImportError as exc:
        raise DependencyMissingError(
            f"the PostgreSQL store needs psycopg, psycopg-pool and pgvector ({exc.name} is "
            "missing)",
            _INSTALL_HINT,
        ) from exc
    return psycopg, ConnectionPool, register_vector, PoolTimeout


def redact(url: str) -> str:
    """The URL without its password, for messages and ``status``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def _search_text(text: str) -> str:
    """Words only: what goes into the tsvector, cut exactly like queries are."""
    return " ".join(words(text))


def _query_text(text: str) -> str:
    """The query's words as plain text for ``to_tsvector`` (which stems them and drops
    stop words): the same cut as documents (``search.text``), at most 64 distinct words,
    and single letters dropped as on SQLite. Nothing here is ever parsed as query syntax."""
    return " ".join(query_words(text)[:64])


def _aware(dt: datetime | None) -> datetime | None:
    """Naive datetimes are local time, as ``datetime.timestamp()`` (and SQLite) reads them."""
    if dt is None or dt.tzinfo is not None:
        return dt
    return datetime.fromtimestamp(dt.timestamp(), UTC)


def _utc(dt: datetime | None) -> datetime | None:
    return None if dt is None else dt.astimezone(UTC)


def _to_numpy(value: Any) -> np.ndarray:
    """pgvector loads ``vector`` columns as its own ``Vector`` type."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.array(value, dtype=np.float32)  # a writable copy, like SQLite's


def _json_or_none(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _clip(x: float) -> float:
    if math.isnan(x) or x < 0:  # a zero vector has no cosine: NaN
        return 0.0
    return 1.0 if x > 1 else x


def _vector_sql(dim: int) -> tuple[str, str]:
    """(cast type, operator class) for an index and queries on ``dim`` dimensions.

    Above 4000 dimensions nothing can be indexed; such queries scan exactly.
    """
    if dim <= _MAX_VECTOR_DIM or dim > _MAX_HALFVEC_DIM:
        return f"vector({dim})", "vector_cosine_ops"
    return f"halfvec({dim})", "halfvec_cosine_ops"


class PostgresStore:
    def __init__(self, url: str, settings: StoreSettings | None = None) -> None:
        settings = settings or StoreSettings()
        self._psycopg, pool_class, self._register_vector, self._pool_timeout = _import_psycopg()
        self.settings: PostgresStoreSettings = settings.postgres
        self._dsn = "postgresql://" + url.split("://", 1)[1]  # postgres:// is an alias
        self.url = redact(self._dsn)
        s = f'"{self.settings.db_schema}"'
        self._schema = self.settings.db_schema
        self.t_memories = f"{s}.memories"
        self.t_history = f"{s}.history"
        self.t_cache = f"{s}.embed_cache"
        self.t_kv = f"{s}.kv"
        self.t_meta = f"{s}.meta"
        self.t_migrations = f"{s}.migrations"
        self._local = threading.local()
        self._dims: set[int] = set()
        self._dims_lock = threading.Lock()
        self._deferring = 0  # > 0 inside bulk_load()
        self._migrate()
        self._pool: ConnectionPool = pool_class(
            self._dsn,
            min_size=self.settings.pool_min,
            max_size=max(self.settings.pool_max, self.settings.pool_min, 1),
            kwargs={"autocommit": True, "connect_timeout": int(self.settings.connect_timeout_s)},
            configure=self._configure,
            open=False,
            name=f"memoryd-{self._schema}",
        )
        self._pool.open(wait=self.settings.pool_min > 0, timeout=self.settings.connect_timeout_s)
        self._dims = self._indexed_dims()

    # -- connections -------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn: psycopg.Connection[Any] = self._psycopg.connect(
                self._dsn, autocommit=True, connect_timeout=int(self.settings.connect_timeout_s)
            )
        except self._psycopg.OperationalError as exc:
            raise StoreError(
                f"cannot connect to {self.url}: {str(exc).strip()}",
                "check that PostgreSQL is running and the URL's host, port, user, password "
                "and database are right (the database must exist: createdb NAME)",
            ) from exc
        return conn

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        """Every pooled connection: vectors as numpy arrays, timestamps in UTC, and the
        HNSW search settings, once per session so a search is a single round trip.
        ``strict_order``: when filters reject most of the first ``ef_search``
        neighbours, keep walking the graph rather than return fewer than asked for."""
        self._register_vector(conn)
        conn.execute(
            f"SET TIME ZONE 'UTC'; SET hnsw.ef_search = {self.settings.ef_search};"
            " SET hnsw.iterative_scan = strict_order"
        )

    @contextmanager
    def _pooled(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; a lost server becomes a StoreError that says so."""
        try:
            conn = self._pool.getconn(timeout=self.settings.connect_timeout_s)
        except self._pool_timeout as exc:
            raise StoreError(
                f"no connection to {self.url} within {self.settings.connect_timeout_s:g}s",
                "check that PostgreSQL is running and reachable; if it is just busy, raise "
                "MEMORYD_STORE__POSTGRES__POOL_MAX or CONNECT_TIMEOUT_S",
            ) from exc
        try:
            yield conn
        except self._psycopg.OperationalError as exc:
            if conn.broken:  # the server restarted or the network dropped: the other idle
                self._pool.check()  # connections are likely dead too, so replace them now
            raise StoreError(
                f"PostgreSQL at {self.url} did not complete the request: {str(exc).strip()}",
                "retry; if it keeps failing, check the server and the network",
            ) from exc
        finally:
            self._pool.putconn(conn)

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection[Any]]:
        """The thread's transaction connection inside ``atomic()``, else one from the pool."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        with self._pooled() as pooled:
            yield pooled

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Any]]:
        """A transaction; nested calls on the same thread become savepoints."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            with conn.transaction():
                yield conn
            return
        with self._pooled() as pooled:
            self._local.conn = pooled
            try:
                with pooled.transaction():
                    yield pooled
            except BaseException:
                # an HNSW index created in this transaction was rolled back with it
                with self._dims_lock:
                    self._dims.clear()
                raise
            finally:
                self._local.conn = None

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._write():
            yield

    def close(self) -> None:
        self._pool.close()

    # -- schema ---------------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Create the extension, the schema and apply named migrations, once per database.

        An advisory lock serialises servers that start at the same moment.
        """
        with self._connect() as conn:
            lock_key = f"memoryd:migrate:{self._schema}"
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key,))
                self._ensure_extension(conn)
                self._check_is_ours(conn)
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self._schema}"')
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.t_migrations}"
                    " (name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                done = {r[0] for r in conn.execute(f"SELECT name FROM {self.t_migrations}")}
                for name, statements in self._migrations():
                    if name in done:
                        continue
                    for statement in statements:
                        conn.execute(statement)
                    conn.execute(f"INSERT INTO {self.t_migrations} (name) VALUES (%s)", (name,))

    def _ensure_extension(self, conn: psycopg.Connection[Any]) -> None:
        """pgvector, 0.8 or newer (iterative index scans keep filtered searches full)."""
        row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        found = row.fetchone()
        if found is None:
            try:
                with conn.transaction():
                    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except self._psycopg.Error as exc:
                raise StoreError(
                    f"the pgvector extension is not installed in {self.url} and memoryd may "
                    f"not create it ({str(exc).strip()})",
                    "install pgvector (0.8 or newer) on the server and run CREATE EXTENSION "
                    "vector; in this database as a superuser, then start memoryd again",
                ) from exc
            return
        version = tuple(int(p) for p in re.findall(r"\d+", found[0])[:2])
        if version < _MIN_PGVECTOR:
            raise StoreError(
                f"{self.url} has pgvector {found[0]}; memoryd needs 0.8 or newer",
                "upgrade pgvector on the server, then run ALTER EXTENSION vector UPDATE; "
                "as a superuser",
            )

    def _check_is_ours(self, conn: psycopg.Connection[Any]) -> None:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (self._schema,),
            )
        }
        if tables and "migrations" not in tables:
            raise StoreError(
                f"schema {self._schema!r} in {self.url} holds tables that memoryd did not create",
                "memoryd will not write into another program's tables; set "
                "MEMORYD_STORE__POSTGRES__DB_SCHEMA to another schema",
            )

    def _migrations(self) -> builtins.list[tuple[str, builtins.list[str]]]:
        m, h = self.t_memories, self.t_history
        return [
            (
                "001_initial",
                [
                    f"""CREATE TABLE {m} (
                        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        text TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        agent_id TEXT,
                        run_id TEXT,
                        category TEXT,
                        metadata TEXT NOT NULL DEFAULT '{{}}',
                        origin TEXT NOT NULL,
                        source_path TEXT,
                        source_start INTEGER,
                        source_end INTEGER,
                        context TEXT,
                        state TEXT NOT NULL DEFAULT 'active',
                        created_at TIMESTAMPTZ NOT NULL,
                        updated_at TIMESTAMPTZ NOT NULL,
                        event_at TIMESTAMPTZ,
                        hash TEXT NOT NULL,
                        embedding vector,
                        tsv tsvector NOT NULL
                    )""",
                    f"CREATE INDEX memories_scope ON {m} (user_id, agent_id, run_id, state)",
                    f"CREATE INDEX memories_hash ON {m} (hash)",
                    f"CREATE INDEX memories_source ON {m} (source_path)",
                    f"CREATE INDEX memories_created ON {m} (created_at)",
                    f"CREATE INDEX memories_tsv ON {m} USING gin (tsv)",
                    f"""CREATE TABLE {h} (
                        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        memory_id TEXT NOT NULL,
                        user_id TEXT NOT NULL,
                        event TEXT NOT NULL,
                        old_text TEXT,
                        new_text TEXT,
                        old_metadata TEXT,
                        new_metadata TEXT,
                        actor TEXT,
                        reason TEXT,
                        created_at TIMESTAMPTZ NOT NULL
                    )""",
                    f"CREATE INDEX history_memory ON {h} (memory_id)",
                    f"""CREATE TABLE {self.t_cache} (
                        model TEXT NOT NULL,
                        hash TEXT NOT NULL,
                        vector BYTEA NOT NULL,
                        PRIMARY KEY (model, hash)
                    )""",
                    f"CREATE TABLE {self.t_kv} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                    f"CREATE TABLE {self.t_meta} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                ],
            ),
            (
                # Every keyword search reads the GIN index's pending list row by row
                # until (auto)vacuum merges it: with it off, a write costs a little
                # more and searches stay fast. Memories are read far more than written.
                "002_gin_fastupdate_off",
                [f'ALTER INDEX "{self._schema}".memories_tsv SET (fastupdate = off)'],
            ),
        ]

    def _indexed_dims(self) -> set[int]:
        """Dimensions that already have an HNSW index (named ``memories_hnsw_<dim>``)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s"
                " AND indexname LIKE 'memories\\_hnsw\\_%%'",
                (self._schema,),
            ).fetchall()
        return {int(r[0].rsplit("_", 1)[1]) for r in rows}

    def _ensure_index(self, conn: psycopg.Connection[Any], dim: int) -> None:
        """Create the partial HNSW index for ``dim`` in the current transaction
        (inside ``bulk_load()``: leave it to the end of the load)."""
        if dim in self._dims or dim > _MAX_HALFVEC_DIM or self._deferring:
            return
        name = f"memories_hnsw_{dim}"
        exists = conn.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s",
            (self._schema, name),
        ).fetchone()
        if exists:
            with self._dims_lock:
                self._dims.add(dim)
            return
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"memoryd:index:{self._schema}:{dim}",),
        )
        conn.execute(self._index_sql(dim))
        with self._dims_lock:
            self._dims.add(dim)

    def _index_sql(self, dim: int) -> str:
        cast, ops = _vector_sql(dim)
        return (
            f"CREATE INDEX IF NOT EXISTS memories_hnsw_{dim} ON {self.t_memories}"
            f" USING hnsw ((embedding::{cast}) {ops})"
            f" WITH (m = {self.settings.hnsw_m},"
            f" ef_construction = {self.settings.hnsw_ef_construction})"
            f" WHERE vector_dims(embedding) = {dim}"
        )

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Many rows are coming: an HNSW index that does not exist yet is built once,
        when the block ends, which is several times faster than growing the graph
        row by row. Indexes that already exist are kept up to date as usual. If the
        block fails, the next write of that dimension builds the index instead."""
        with self._dims_lock:
            self._deferring += 1
        ok = False
        try:
            yield
            ok = True
        finally:
            with self._dims_lock:
                self._deferring -= 1
                last = self._deferring == 0
            if ok and last:
                self._build_missing_indexes()

    def _build_missing_indexes(self) -> None:
        with self._connect() as conn:
            conn.execute(
                "SELECT set_config('maintenance_work_mem', %s, false)",
                (self.settings.index_build_memory,),
            )
            dims = [
                int(r[0])
                for r in conn.execute(
                    f"SELECT DISTINCT vector_dims(embedding) FROM {self.t_memories}"
                    " WHERE embedding IS NOT NULL"
                )
            ]
            for dim in dims:
                if dim in self._indexed_dims() or dim > _MAX_HALFVEC_DIM:
                    continue
                with conn.transaction():
                    self._ensure_index(conn, dim)
            # the GIN index's pending list is merged, which otherwise every keyword
            # search scans row by row until autovacuum gets to it; the visibility map
            # lets keyword_search count a scope's rows from the index alone
            conn.execute(f"VACUUM (ANALYZE) {self.t_memories}")

    # -- small state ----------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._read() as conn:
            row = conn.execute(f"SELECT value FROM {self.t_meta} WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO {self.t_meta} (key, value) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, value),
            )

    def kv_get(self, key: str) -> Any:
        """Inside ``atomic()`` the key stays locked until the transaction ends, so a
        read-modify-write of one key (a run list, an offset) is never lost to another
        server doing the same: SQLite gets this from its single writer, PostgreSQL's
        READ COMMITTED needs the lock. A key that does not exist yet is locked too."""
        with self._read() as conn:
            if getattr(self._local, "conn", None) is conn:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"memoryd:kv:{self._schema}:{key}",),
                )  # before the read: the read's snapshot must include the holder's commit
            row = conn.execute(f"SELECT value FROM {self.t_kv} WHERE key = %s", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def kv_set(self, key: str, value: Any) -> None:
        with self._write() as conn:
            if value is None:
                conn.execute(f"DELETE FROM {self.t_kv} WHERE key = %s", (key,))
                return
            conn.execute(
                f"INSERT INTO {self.t_kv} (key, value) VALUES (%s, %s)"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, json.dumps(value)),
            )

    @contextmanager
    def run_lock(self, name: str, ttl_s: float = 3600) -> Iterator[bool]:
        """Yield True if this caller holds ``name`` for the block, False if another does.

        A session-level advisory lock on a connection of its own: held while the
        block runs, released at its end or when the process dies (so ``ttl_s``,
        which protects SQLite from crashed holders, is not needed here).
        """
        key = f"memoryd:lock:{self._schema}:{name}"
        with self._connect() as conn:
            got = bool(
                conn.execute(
                    "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)
                ).fetchone()[0]  # type: ignore[index]
            )
            try:
                yield got
            finally:
                if got and not conn.closed:
                    conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    # -- rows -----------------------------------------------------------------------------------
    @staticmethod
    def _row_to_record(row: Sequence[Any]) -> MemoryRecord:
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
        ) = row[:17]
        record = MemoryRecord(
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
            created_at=created.astimezone(UTC),
            updated_at=updated.astimezone(UTC),
            event_at=_utc(event_at),
            hash=text_hash,
        )
        if len(row) > 17 and row[17] is not None:
            record.embedding = _to_numpy(row[17])
        return record

    @staticmethod
    def _values(r: MemoryRecord) -> tuple[Any, ...]:
        """Column values in ``_COLUMNS`` order, then embedding and the tsvector's text."""
        embedding = r.embedding
        if embedding is not None:
            embedding = np.asarray(embedding, dtype=np.float32)
        return (
            r.id,
            r.text,
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
            _aware(r.created_at),
            _aware(r.updated_at),
            _aware(r.event_at),
            r.hash,
            embedding,
            _search_text(r.index_text),
        )

    def _history_row(
        self,
        memory_id: str,
        user_id: str,
        event: Event,
        old: MemoryRecord | None,
        new: MemoryRecord | None,
        actor: str | None,
        reason: str | None,
    ) -> tuple[Any, ...]:
        return (
            memory_id,
            user_id,
            str(event),
            old.text if old else None,
            new.text if new else None,
            json.dumps(old.metadata, ensure_ascii=False) if old else None,
            json.dumps(new.metadata, ensure_ascii=False) if new else None,
            actor,
            reason,
            datetime.now(UTC),
        )

    def _insert_history(
        self, conn: psycopg.Connection[Any], rows: Sequence[tuple[Any, ...]]
    ) -> None:
        if not rows:
            return
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self.t_history} (memory_id, user_id, event, old_text, new_text,"
                " old_metadata, new_metadata, actor, reason, created_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )

    def _insert_memories(
        self, conn: psycopg.Connection[Any], records: Sequence[MemoryRecord], *, skip_existing: bool
    ) -> set[str]:
        """Insert rows as given; returns the ids that were inserted."""
        for dim in {
            int(np.asarray(r.embedding).shape[-1]) for r in records if r.embedding is not None
        }:
            self._ensure_index(conn, dim)
        conflict = " ON CONFLICT (id) DO NOTHING" if skip_existing else ""
        statement = (
            f"INSERT INTO {self.t_memories} ({_COLUMNS}, embedding, tsv) VALUES"
            " (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
            f" to_tsvector('english', %s)){conflict} RETURNING id"
        )
        inserted: set[str] = set()
        try:
            with conn.cursor() as cur:
                cur.executemany(statement, [self._values(r) for r in records], returning=True)
                while True:
                    row = cur.fetchone()
                    if row is not None:
                        inserted.add(row[0])
                    if not cur.nextset():
                        break
        except self._psycopg.errors.UniqueViolation as exc:
            detail = (exc.diag.message_detail or "").strip()
            found = re.search(r"\(id\)=\((.*)\) already exists", detail)
            which = found.group(1) if found else "one of these ids"
            raise InvalidInputError(
                f"a memory with id {which} already exists",
                "use update() to change it, or let memoryd choose the id",
            ) from exc
        except self._psycopg.DataError as exc:
            raise InvalidInputError(
                f"PostgreSQL refused a value: {str(exc).strip()}",
                "remove NUL (\\x00) characters and check that every vector has one dimension count",
            ) from exc
        return inserted

    def add(
        self,
        records: Sequence[MemoryRecord],
        *,
        actor: str | None = None,
        reason: str | None = None,
    ) -> None:
        if not records:
            return
        with self._write() as conn:
            self._insert_memories(conn, records, skip_existing=False)
            self._insert_history(
                conn,
                [
                    self._history_row(r.id, r.user_id, Event.ADD, None, r, actor, reason)
                    for r in records
                ],
            )

    def get(self, memory_id: str) -> MemoryRecord | None:
        """Inside ``atomic()`` the row stays locked until the transaction ends (see
        ``_get_locked``), so get-then-update is safe with other servers writing."""
        with self._read() as conn:
            if getattr(self._local, "conn", None) is conn:
                return self._get_locked(conn, memory_id)
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM {self.t_memories} WHERE id = %s", (memory_id,)
            ).fetchone()
        return self._row_to_record(row) if row else None

    def _get_locked(self, conn: psycopg.Connection[Any], memory_id: str) -> MemoryRecord | None:
        """The row as it is now, locked until the transaction ends: two servers
        changing one memory take turns, and each history entry's old text is right."""
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM {self.t_memories} WHERE id = %s FOR UPDATE", (memory_id,)
        ).fetchone()
        return self._row_to_record(row) if row else None

    def get_many(self, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        if not ids:
            return []
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {self.t_memories} WHERE id = ANY(%s)", (list(ids),)
            ).fetchall()
        found = {r[0]: self._row_to_record(r) for r in rows}
        return [found[i] for i in ids if i in found]

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT id FROM {self.t_memories} WHERE id = ANY(%s)", (list(ids),)
            ).fetchall()
        return {r[0] for r in rows}

    def get_embedding(self, memory_id: str) -> np.ndarray | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT embedding FROM {self.t_memories} WHERE id = %s", (memory_id,)
            ).fetchone()
        if not row or row[0] is None:
            return None
        return _to_numpy(row[0])

    def update(
        self,
        record: MemoryRecord,
        *,
        event: Event = Event.UPDATE,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        with self._write() as conn:
            old = self._get_locked(conn, record.id)
            if old is None:
                raise NotFoundError(f"no memory with id {record.id}", "check the id with list")
            record.hash = content_hash(record.text)
            record.updated_at = utcnow()
            values = self._values(record)
            if record.embedding is not None:
                self._ensure_index(conn, int(np.asarray(record.embedding).shape[-1]))
            try:
                conn.execute(
                    f"UPDATE {self.t_memories} SET text=%s, user_id=%s, agent_id=%s,"
                    " run_id=%s, category=%s, metadata=%s, origin=%s, source_path=%s,"
                    " source_start=%s, source_end=%s, context=%s, state=%s, created_at=%s,"
                    " updated_at=%s, event_at=%s, hash=%s,"
                    " embedding=COALESCE(%s::vector, embedding),"
                    " tsv=to_tsvector('english', %s) WHERE id=%s",
                    (*values[1:], record.id),
                )
            except self._psycopg.DataError as exc:
                raise InvalidInputError(
                    f"PostgreSQL refused a value: {str(exc).strip()}",
                    "remove NUL (\\x00) characters from the text, context and metadata",
                ) from exc
            self._insert_history(
                conn,
                [self._history_row(record.id, record.user_id, event, old, record, actor, reason)],
            )
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
        with self._write() as conn:
            old = self._get_locked(conn, memory_id)
            if old is None:
                raise NotFoundError(f"no memory with id {memory_id}", "check the id with list")
            conn.execute(
                f"UPDATE {self.t_memories} SET state = %s, updated_at = %s WHERE id = %s",
                (str(state), now := datetime.now(UTC), memory_id),
            )
            new = old.model_copy(update={"state": state, "updated_at": now})
            self._insert_history(
                conn, [self._history_row(memory_id, old.user_id, event, old, new, actor, reason)]
            )
        return new

    def purge(self, filters: Filters) -> int:
        where, params = self._where(filters.model_copy(update={"states": []}))
        with self._write() as conn:
            ids = [r[0] for r in conn.execute(f"SELECT id FROM {self.t_memories} {where}", params)]
            if ids:
                conn.execute(f"DELETE FROM {self.t_history} WHERE memory_id = ANY(%s)", (ids,))
                conn.execute(f"DELETE FROM {self.t_memories} WHERE id = ANY(%s)", (ids,))
        return len(ids)

    @staticmethod
    def _where(f: Filters) -> tuple[str, builtins.list[Any]]:
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        for column in ("user_id", "agent_id", "run_id", "source_path"):
            value = getattr(f, column)
            if value is not None:
                clauses.append(f"{column} = %s")
                params.append(value)
        if f.ids is not None:
            clauses.append("id = ANY(%s)")
            params.append(list(f.ids))
        if f.long_term_only:
            clauses.append("run_id IS NULL")
        if f.short_term_only:
            clauses.append("run_id IS NOT NULL")
        for column, values in (
            ("category", f.categories),
            ("origin", [str(o) for o in f.origins] if f.origins else None),
            ("state", [str(s) for s in f.states] if f.states else None),
        ):
            if values is not None:
                clauses.append(f"{column} = ANY(%s)")
                params.append(list(values))
        if f.created_after is not None:
            clauses.append("created_at >= %s")
            params.append(_aware(f.created_after))
        if f.created_before is not None:
            clauses.append("created_at < %s")
            params.append(_aware(f.created_before))
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", params

    def list(
        self, filters: Filters, *, limit: int = 100, offset: int = 0, newest_first: bool = True
    ) -> builtins.list[MemoryRecord]:
        where, params = self._where(filters)
        order = "DESC" if newest_first else "ASC"
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {self.t_memories} {where}"
                f" ORDER BY created_at {order}, seq {order} LIMIT %s OFFSET %s",
                (*params, limit, offset),
            ).fetchall()
        return [self._row_to_record(r) for r in rows]

    def iter_all(self, filters: Filters, batch: int = 1000) -> Iterator[MemoryRecord]:
        where, params = self._where(filters)
        cond = f"{where} AND seq > %s" if where else "WHERE seq > %s"
        last = 0
        while True:
            with self._read() as conn:
                rows = conn.execute(
                    f"SELECT {_COLUMNS}, seq FROM {self.t_memories} {cond} ORDER BY seq LIMIT %s",
                    (*params, last, batch),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield self._row_to_record(row[:17])
            last = rows[-1][17]

    def count(self, filters: Filters) -> int:
        where, params = self._where(filters)
        with self._read() as conn:
            row = conn.execute(f"SELECT count(*) FROM {self.t_memories} {where}", params).fetchone()
        return int(row[0]) if row else 0

    def counts_by(self, column: str, filters: Filters) -> dict[str, int]:
        if column not in {"user_id", "agent_id", "run_id", "category", "origin", "state"}:
            raise InvalidInputError(f"cannot group by {column!r}", "use a scope column")
        where, params = self._where(filters)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {column}, count(*) FROM {self.t_memories} {where} GROUP BY {column}",
                params,
            ).fetchall()
        return {str(k) if k is not None else "": int(n) for k, n in rows}

    def history(self, memory_id: str) -> builtins.list[HistoryEntry]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, memory_id, event, old_text, new_text, old_metadata, new_metadata,"
                f" actor, reason, created_at FROM {self.t_history} WHERE memory_id = %s"
                " ORDER BY id",
                (memory_id,),
            ).fetchall()
        return [self._history_entry(r) for r in rows]

    @staticmethod
    def _history_entry(r: Sequence[Any]) -> HistoryEntry:
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
            created_at=r[9].astimezone(UTC),
        )

    def find_by_hash(self, text_hash: str, filters: Filters) -> builtins.list[MemoryRecord]:
        where, params = self._where(filters)
        cond = f"{where} AND hash = %s" if where else "WHERE hash = %s"
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM {self.t_memories} {cond}", (*params, text_hash)
            ).fetchall()
        return [self._row_to_record(r) for r in rows]

    # -- retrieval ------------------------------------------------------------------------------
    def keyword_search(
        self, query: str, filters: Filters, limit: int
    ) -> builtins.list[tuple[str, float]]:
        """Full-text candidates ranked like BM25: each query word's ``ts_rank_cd``
        weighted by its inverse document frequency, the best hit scaled to 1.

        ``ts_rank_cd`` alone weighs every word the same, so a word in half the
        memories counts as much as a rare name. The frequencies are counted over the
        rows ``filters`` admit, as on SQLite, so one user's memories never change
        another's ranking: N is a count of the filter's rows (an index-only scan of
        ``memories_scope`` for a user/agent/run/state filter), and a word's document
        frequency is the number of matching rows that contain it, counted over the
        matches the query reads and ranks anyway.
        """
        text = _query_text(query)
        if not text or limit <= 0:
            return []
        where, params = self._where(filters)
        extra = where.replace("WHERE", "AND", 1)
        with self._read() as conn:
            rows = conn.execute(
                f"""WITH w AS (
                    SELECT quote_literal(t.lexeme)::tsquery AS tq  -- lexemes of a tsvector are distinct
                    FROM unnest(to_tsvector('english', %s)) AS t
                ), q AS (
                    SELECT string_agg(w.tq::text, ' | ')::tsquery AS q FROM w
                ), hits AS MATERIALIZED (
                    SELECT m.id, m.seq, m.tsv FROM {self.t_memories} m, q
                    WHERE m.tsv @@ q.q {extra}
                ), pop AS (
                    SELECT count(*) AS n FROM {self.t_memories} {where}
                ), idf AS MATERIALIZED (  -- once: inlined per hit it made a query quadratic
                    SELECT w.tq, ln(1 + (pop.n - d.df + 0.5) / (d.df + 0.5)) AS idf
                    FROM w, pop, LATERAL (
                        SELECT count(*) AS df FROM hits WHERE hits.tsv @@ w.tq
                    ) AS d
                )
                SELECT hits.id, sum(idf.idf * ts_rank_cd(hits.tsv, idf.tq, 1)) AS s
                FROM hits CROSS JOIN idf
                GROUP BY hits.id, hits.seq ORDER BY s DESC, hits.seq LIMIT %s""",
                (text, *params, *params, limit),
            ).fetchall()
        if not rows:
            return []
        best = max(float(s) for _, s in rows) or 1.0
        return [(mid, _clip(float(s) / best)) for mid, s in rows]

    def vector_search(
        self, vector: np.ndarray, filters: Filters, limit: int
    ) -> builtins.list[tuple[str, float]]:
        if limit <= 0:
            return []
        vector = np.asarray(vector, dtype=np.float32)
        dim = int(vector.shape[-1])
        cast, _ = _vector_sql(dim)
        where, params = self._where(filters)
        extra = where.replace("WHERE", "AND", 1)
        distance = f"(embedding::{cast} <=> %s::{cast})"
        query = (
            f"SELECT id, {distance} AS d FROM {self.t_memories}"
            f" WHERE vector_dims(embedding) = {dim} {extra}"
            f" ORDER BY {distance} LIMIT %s"
        )
        args = (vector, *params, vector, limit)
        with self._read() as conn:
            if limit <= self.settings.ef_search:  # the session's ef_search suffices
                rows = conn.execute(query, args).fetchall()
            else:  # more candidates than the graph walk keeps: widen it for this query
                with conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {min(1000, limit)}")
                    rows = conn.execute(query, args).fetchall()
        return [(mid, _clip(1.0 - float(d))) for mid, d in rows]

    def vector_scores(self, vector: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        if not ids:
            return {}
        vector = np.asarray(vector, dtype=np.float32)
        dim = int(vector.shape[-1])
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT id, embedding <=> %s FROM {self.t_memories}"
                f" WHERE id = ANY(%s) AND state <> 'deleted' AND vector_dims(embedding) = {dim}",
                (vector, list(ids)),
            ).fetchall()
        return {mid: _clip(1.0 - float(d)) for mid, d in rows}

    def rank_facts(self, ids: Sequence[str]) -> dict[str, RankFacts]:
        if not ids:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                "SELECT id, extract(epoch FROM coalesce(event_at, created_at)),"
                " metadata::jsonb -> 'evergreen' = 'true'::jsonb,"
                " metadata::jsonb -> 'speaker', metadata::jsonb -> 'person'"
                f" FROM {self.t_memories} WHERE id = ANY(%s) AND state <> 'deleted'",
                (list(ids),),
            ).fetchall()
        return {
            mid: RankFacts(when=float(when), evergreen=bool(ever), names=names_of((sp, pe)))
            for mid, when, ever, sp, pe in rows
        }

    # -- embedding cache --------------------------------------------------------------------------
    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        unique = list(dict.fromkeys(hashes))
        if not unique:
            return {}
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT hash, vector FROM {self.t_cache} WHERE model = %s AND hash = ANY(%s)",
                (model, unique),
            ).fetchall()
        return {h: np.frombuffer(blob, dtype=np.float32).copy() for h, blob in rows}

    def cache_put(self, model: str, items: dict[str, np.ndarray]) -> None:
        if not items:
            return
        with self._write() as conn, conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self.t_cache} (model, hash, vector) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()],
            )

    # -- bulk copy (memoryd store migrate) ------------------------------------------------------
    def export_memories(
        self, after: int, limit: int
    ) -> tuple[builtins.list[MemoryRecord], builtins.list[HistoryEntry], int]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS}, embedding, seq FROM {self.t_memories}"
                " WHERE seq > %s ORDER BY seq LIMIT %s",
                (after, limit),
            ).fetchall()
            if not rows:
                return [], [], after
            ids = [r[0] for r in rows]
            history = conn.execute(
                "SELECT id, memory_id, event, old_text, new_text, old_metadata, new_metadata,"
                f" actor, reason, created_at FROM {self.t_history} WHERE memory_id = ANY(%s)"
                " ORDER BY id",
                (ids,),
            ).fetchall()
        records = [self._row_to_record(r[:18]) for r in rows]
        return records, [self._history_entry(h) for h in history], int(rows[-1][18])

    def import_memories(
        self, records: Sequence[MemoryRecord], history: Sequence[HistoryEntry]
    ) -> int:
        if not records:
            return 0
        owner = {r.id: r.user_id for r in records}
        with self._write() as conn:
            inserted = self._insert_memories(conn, records, skip_existing=True)
            self._insert_history(
                conn,
                [
                    (
                        h.memory_id,
                        owner[h.memory_id],
                        str(h.event),
                        h.old_text,
                        h.new_text,
                        _json_or_none(h.old_metadata),
                        _json_or_none(h.new_metadata),
                        h.actor,
                        h.reason,
                        _aware(h.created_at),
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
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT model, hash, vector FROM {self.t_cache} WHERE (model, hash) > (%s, %s)"
                " ORDER BY model, hash LIMIT %s",
                (model, text_hash, limit),
            ).fetchall()
        return [(m, h, np.frombuffer(v, dtype=np.float32).copy()) for m, h, v in rows]

    def import_cache(self, items: Sequence[tuple[str, str, np.ndarray]]) -> None:
        if not items:
            return
        with self._write() as conn, conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {self.t_cache} (model, hash, vector) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                [(m, h, np.asarray(v, dtype=np.float32).tobytes()) for m, h, v in items],
            )

    def kv_items(self) -> dict[str, Any]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT key, value FROM {self.t_kv} ORDER BY key").fetchall()
        return {k: json.loads(v) for k, v in rows}

    def meta_items(self) -> dict[str, str]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT key, value FROM {self.t_meta} ORDER BY key").fetchall()
        return dict(rows)

    def totals(self) -> dict[str, int]:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT (SELECT count(*) FROM {self.t_memories}),"
                f" (SELECT count(*) FROM {self.t_history}),"
                f" (SELECT count(*) FROM {self.t_cache}),"
                f" (SELECT count(*) FROM {self.t_kv})"
            ).fetchone()
        assert row is not None
        return {"memories": row[0], "history": row[1], "cache": row[2], "kv": row[3]}

    # -- maintenance ------------------------------------------------------------------------------
    def integrity_check(self) -> builtins.list[str]:
        """Problems found (empty when healthy): every live vector's dimension is indexed."""
        with self._read() as conn:
            dims = {
                int(r[0])
                for r in conn.execute(
                    f"SELECT DISTINCT vector_dims(embedding) FROM {self.t_memories}"
                    " WHERE embedding IS NOT NULL"
                )
            }
        missing = sorted(d for d in dims - self._indexed_dims() if d <= _MAX_HALFVEC_DIM)
        return [f"no HNSW index for {d}-dimensional vectors" for d in missing]


def _factory(url: str, settings: StoreSettings) -> Store:
    return PostgresStore(url, settings)  # typed as Store: mypy checks the protocol is met


register_store("postgresql", _factory)

__all__ = ["PostgresStore", "redact"]
