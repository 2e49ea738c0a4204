"""PostgreSQL + pgvector: the store for teams and for several memoryd servers.

* Tables live in their own schema (``memoryd`` by default), so memoryd can share
  a database with other programs; named migrations are recorded in it.
* Embeddings in an untyped ``vector`` column, so the dimension is whatever the
  model gives. Each dimension seen gets a partial HNSW cosine index on
  ``embedding::vector(dim)`` (``halfvec`` above 2000 dimensions, pgvector's
  limit), created on first write; queries use the same expression, so a model
  change (``memoryd reindex``) never needs an ALTER TABLE.
* Keyword side: the embedded store's BM25, to the same scores. Each memory's
  stems and their counts (``keywords.term_counts``, the SQLite store's analyser)
  go into a ``kw`` jsonb column; a trigger keeps, in the same transaction, a
  postings table (term, user, memory -> term frequency, length, scope columns)
  and per-scope statistics (memories with text and their total length per user,
  agent, run and state). A search reads only its query terms' postings in its
  scope (one covering-index range per term) and the scope's statistics (a few
  rows), not every matching document nor a count of the scope; filters the
  statistics do not cover (category, origin, time, source, ids) are counted
  exactly per query instead. A big user's postings of a common word are packed
  into blocks as they grow (:mod:`memoryd.store.pg_postings`).
* Vector side: a scope smaller than ``exact_scan_below`` memories (known from
  those statistics) is scanned exactly, so small users get exact recall at a cost
  that follows their size; larger scopes walk the HNSW graph. A user of at least
  ``scope_index_above`` memories gets a graph of their own (a partial index ``WHERE
  user_id = '<user>'``, built concurrently in the background), so their walk covers
  their vectors only; the query names the user literally, which is what lets the
  planner prove the index's predicate.
* A psycopg pool; ``atomic()`` pins one connection to the calling thread and
  nests with savepoints. Several processes share the database safely; a
  pipeline takes ``run_lock``, a session-level advisory lock, so exactly one
  server runs each job and a crashed server releases it.

psycopg is optional: ``pip install 'memoryd[postgres]'``.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

from memoryd.errors import DependencyMissingError, InvalidInputError, StoreError
from memoryd.models import Filters, MemoryRecord, RankFacts, State
from memoryd.search import turns
from memoryd.search.entities import names_of
from memoryd.settings import PostgresStoreSettings, StoreSettings
from memoryd.store import Store, pg_postings, register_store, sql
from memoryd.store.filter_sql import PostgresFilterSQL
from memoryd.store.keywords import MIN_SCALE, bm25_top, query_stems, term_counts
from memoryd.store.sql import Connection, Dialect, SQLStore

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

log = logging.getLogger(__name__)

_INSTALL_HINT = "pip install 'memoryd[postgres]'"
_MAX_VECTOR_DIM = 2000  # pgvector indexes vector up to 2000 dims, halfvec up to 4000
_MAX_HALFVEC_DIM = 4000
#: a migration step: SQL, or a function of the migrating connection
Migration = str | Callable[["psycopg.Connection[Any]"], None]
_MIN_PGVECTOR = (0, 8)
_MIN_POSTGRES = 150000  # server_version_num
#: the shared graph of one dimension, and a user's own graph of it
_DIM_INDEX = re.compile(r"memories_hnsw_(\d+)")
_SCOPE_INDEX = re.compile(r"memories_hnsw_\d+_u[0-9a-f]{16}")
_SCOPE_RETRY_S = 60.0  # a user's graph another server is building: look again after this


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


def _term_counts(text: str) -> str:
    """A memory's stems and their counts as the ``kw`` column's jsonb."""
    return json.dumps(term_counts(text), ensure_ascii=False)


def _aware(dt: datetime) -> datetime:
    """Naive datetimes are local time, as ``datetime.timestamp()`` (and SQLite) reads them."""
    if dt.tzinfo is not None:
        return dt
    return datetime.fromtimestamp(dt.timestamp(), UTC)


def _utc(dt: datetime) -> datetime:
    return dt.astimezone(UTC)


def _to_numpy(value: Any) -> np.ndarray:
    """pgvector loads ``vector`` columns as its own ``Vector`` type."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.array(value, dtype=np.float32)  # a writable copy, like SQLite's


def _float32(vector: np.ndarray | None) -> np.ndarray | None:
    return None if vector is None else np.asarray(vector, dtype=np.float32)


#: Timestamps are TIMESTAMPTZ, embeddings pgvector ``vector``s, a list is bound as one
#: array, and the keyword column is the text's stems and their counts (jsonb).
DIALECT = Dialect(
    mark="%s",
    seq="seq",
    batch=None,
    time_in=_aware,
    time_out=_utc,
    vector_in=_float32,
    vector_out=_to_numpy,
    keyword_column="kw",
    keyword_in=_term_counts,
    keyword_value="%s::jsonb",
    vector_value="%s::vector",
    row_lock=" FOR UPDATE",  # READ COMMITTED: get-then-update must hold the row
    serial_key="BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY",
    time_type="TIMESTAMPTZ",
    bytes_type="BYTEA",
    filter_sql=PostgresFilterSQL,
)


def _clip(x: float) -> float:
    if math.isnan(x) or x < 0:  # a zero vector has no cosine: NaN
        return 0.0
    return 1.0 if x > 1 else x


#: what ranking needs of a memory (:class:`RankFacts`), as columns of a row ``{m}`` of
#: the memories with ``j`` its parsed metadata (``_FACTS_JSON``): read with a search's
#: candidates, so ranking them costs no round trip of its own
_FACTS = (
    "extract(epoch FROM coalesce({m}event_at, {m}created_at)),"
    " j -> 'evergreen' = 'true'::jsonb, j -> 'speaker', j -> 'person',"
    " j -> 'turn', j -> 'session', {m}user_id, {m}agent_id, {m}run_id, {m}source_path,"
    " CASE jsonb_typeof(j -> 'turn') WHEN 'number' THEN {m}text END"
)
#: the metadata parsed once a row (OFFSET 0 keeps it from being inlined into each use)
_FACTS_JSON = "LATERAL (SELECT {m}metadata::jsonb AS j OFFSET 0) meta"
_FACTS_WIDTH = 11  # columns of _FACTS
#: the memories' columns _FACTS reads, for a query that carries them to where it computes it
_FACTS_READS = "event_at, created_at, metadata, user_id, agent_id, run_id, source_path, text"


def _facts_sql(alias: str = "") -> tuple[str, str]:
    """(the :data:`_FACTS` columns, the ``LATERAL`` item they need) for rows ``alias``."""
    m = f"{alias}." if alias else ""
    return _FACTS.format(m=m), _FACTS_JSON.format(m=m)


def _rank_facts(row: Sequence[Any]) -> RankFacts:
    """The :class:`RankFacts` of the :data:`_FACTS` columns of a row."""
    when, ever, speaker, person, turn, session, user, agent, run, path, text = row
    return RankFacts(
        when=float(when),
        evergreen=bool(ever),
        names=names_of((speaker, person)),
        **turns.facts(turn, (user, agent, run, session, path), text),
    )


def _vector_sql(dim: int) -> tuple[str, str]:
    """(cast type, operator class) for an index and queries on ``dim`` dimensions.

    Above 4000 dimensions nothing can be indexed; such queries scan exactly.
    """
    if dim <= _MAX_VECTOR_DIM or dim > _MAX_HALFVEC_DIM:
        return f"vector({dim})", "vector_cosine_ops"
    return f"halfvec({dim})", "halfvec_cosine_ops"


class PostgresStore(SQLStore):
    dialect = DIALECT

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
        # users' own graphs (see build_scope_index): valid ones by name, builds under way
        # (their connections, so close() can cancel them) and when each was last tried
        self._scope_indexes: set[str] = set()
        self._scope_builds: dict[str, threading.Thread] = {}
        self._scope_conns: dict[str, psycopg.Connection[Any]] = {}
        self._scope_tried: dict[str, float] = {}
        self._scope_lock = threading.Lock()
        # (term, user) keyword postings being packed, and the threads packing them
        self._packing: set[tuple[str, str]] = set()
        self._packers: set[threading.Thread] = set()
        self._closed = False
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
        self._scope_indexes = self._valid_scope_indexes()

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
        neighbours, keep walking the graph rather than return fewer than asked for.
        No parallel workers: memoryd's queries are short, and a plan with a Gather
        starts its workers even when a one-time filter then skips the scan (150 ms on
        a busy machine for the vector query of a user of 100k)."""
        self._register_vector(conn)
        conn.execute(
            f"SET TIME ZONE 'UTC'; SET hnsw.ef_search = {self.settings.ef_search};"
            " SET hnsw.iterative_scan = strict_order; SET max_parallel_workers_per_gather = 0"
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

    def close(self) -> None:
        """Cancel users' graphs still building (the next search starts them again: an
        interrupted concurrent build leaves an invalid index, dropped then), then close."""
        with self._scope_lock:
            self._closed = True
            builds = [*self._scope_builds.values(), *self._packers]
            for conn in self._scope_conns.values():
                conn.cancel_safe()
        for thread in builds:
            thread.join()
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
                        if callable(statement):
                            statement(conn)
                        else:
                            conn.execute(statement)
                    conn.execute(f"INSERT INTO {self.t_migrations} (name) VALUES (%s)", (name,))

    def _ensure_extension(self, conn: psycopg.Connection[Any]) -> None:
        """PostgreSQL 15 or newer (the keyword statistics' NULLS NOT DISTINCT key) and
        pgvector 0.8 or newer (iterative index scans keep filtered searches full)."""
        server = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
        if server < _MIN_POSTGRES:
            raise StoreError(
                f"{self.url} runs PostgreSQL {server // 10000}; memoryd needs 15 or newer",
                "upgrade the server (pg_upgrade), or keep memoryd on SQLite",
            )
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

    def _migrations(self) -> builtins.list[tuple[str, builtins.list[Migration]]]:
        """Named steps, applied in order in one transaction: SQL, or a function of the
        connection for what SQL cannot do (the keyword backfill analyses text in Python)."""
        m = self.t_memories
        return [
            (
                "001_initial",
                [
                    f"""CREATE TABLE {m} (
                        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                        id TEXT NOT NULL UNIQUE,
                        text TEXT NOT NULL,
                        {sql.record_columns(DIALECT)},
                        embedding vector,
                        tsv tsvector NOT NULL
                    )""",
                    f"CREATE INDEX memories_tsv ON {m} USING gin (tsv)",
                    *sql.shared_tables(DIALECT, m, self.t_history, self.t_cache, self.t_kv),
                    sql.key_value_table(self.t_meta),
                ],
            ),
            (
                # Every keyword search reads the GIN index's pending list row by row
                # until (auto)vacuum merges it: with it off, a write costs a little
                # more and searches stay fast. Memories are read far more than written.
                "002_gin_fastupdate_off",
                [f'ALTER INDEX "{self._schema}".memories_tsv SET (fastupdate = off)'],
            ),
            (
                # BM25 as the embedded store scores it, from maintained statistics
                # (see the module docstring); the tsvector and its GIN index go
                "003_keyword_postings",
                [*self._keyword_schema(), f"ALTER TABLE {m} DROP COLUMN tsv", self._backfill_kw],
            ),
            (
                # pgvector's type is stored out of line by default, and a memory's row
                # (a 384-dimension vector is 1.5 kB, plus text and keyword counts) passes
                # the 2 kB toast threshold: an exact scan then read each vector from the
                # toast table, twice (13.8 ms and 8,510 buffers for a user of 2,211).
                # Kept in the row, the text and keyword counts go out of line first.
                # Rows written before keep their out-of-line vectors until rewritten.
                "004_vectors_in_row",
                [f"ALTER TABLE {m} ALTER COLUMN embedding SET STORAGE MAIN"],
            ),
            (
                # a file's memories of one state (Store.locate: the superseded facts a
                # search's diary lines were extracted from)
                "005_source_state",
                [f"CREATE INDEX memories_source_state ON {m} ({sql.SOURCE_STATE})"],
            ),
            (
                # a big user's postings of a common word, packed into blocks as they grow
                # (store/pg_postings.py); until a search or bulk_load packs them, rows
                "006_keyword_blocks",
                [*pg_postings.schema(f'"{self._schema}"', m)],
            ),
        ]

    def _keyword_schema(self) -> builtins.list[str]:
        """The ``kw`` column, the postings and statistics tables and the trigger that keeps
        them equal to the memories in every transaction, whichever statement writes.

        The postings' key leads with the term and the user, so a user's search reads one
        short range per query term; the other columns ride along in the index (an
        index-only scan). Statistics count memories with at least one term, as the
        embedded store's BM25 does."""
        m, s = self.t_memories, f'"{self._schema}"'
        same_scope = (
            "{a}user_id = {r}.user_id AND {a}agent_id IS NOT DISTINCT FROM {r}.agent_id"
            " AND {a}run_id IS NOT DISTINCT FROM {r}.run_id AND {a}state = {r}.state"
        )
        return [
            f"ALTER TABLE {m} ADD COLUMN kw jsonb NOT NULL DEFAULT '{{}}'",
            f"""CREATE TABLE {s}.kw_postings (
                term TEXT NOT NULL, user_id TEXT NOT NULL, seq BIGINT NOT NULL,
                agent_id TEXT, run_id TEXT, state TEXT NOT NULL,
                tf INTEGER NOT NULL, len INTEGER NOT NULL,
                PRIMARY KEY (term, user_id, seq) INCLUDE (tf, len, state, agent_id, run_id)
            )""",
            f"""CREATE TABLE {s}.kw_stats (
                user_id TEXT NOT NULL, agent_id TEXT, run_id TEXT, state TEXT NOT NULL,
                n BIGINT NOT NULL, total_len BIGINT NOT NULL,
                UNIQUE NULLS NOT DISTINCT (user_id, agent_id, run_id, state)
            )""",
            f"""CREATE FUNCTION {s}.kw_sync() RETURNS trigger LANGUAGE plpgsql AS $$
            DECLARE l BIGINT;
            BEGIN
                IF TG_OP = 'UPDATE' AND NEW.kw = OLD.kw AND {same_scope.format(a="NEW.", r="OLD")} THEN
                    RETURN NULL;
                END IF;
                IF TG_OP <> 'INSERT' THEN
                    DELETE FROM {s}.kw_postings WHERE user_id = OLD.user_id AND seq = OLD.seq
                        AND term IN (SELECT jsonb_object_keys(OLD.kw));
                    SELECT coalesce(sum(value::bigint), 0) INTO l FROM jsonb_each_text(OLD.kw);
                    IF l > 0 THEN
                        UPDATE {s}.kw_stats SET n = n - 1, total_len = total_len - l
                        WHERE {same_scope.format(a="", r="OLD")};
                    END IF;
                END IF;
                IF TG_OP <> 'DELETE' THEN
                    SELECT coalesce(sum(value::bigint), 0) INTO l FROM jsonb_each_text(NEW.kw);
                    IF l > 0 THEN
                        INSERT INTO {s}.kw_postings
                            (term, user_id, seq, agent_id, run_id, state, tf, len)
                        SELECT key, NEW.user_id, NEW.seq, NEW.agent_id, NEW.run_id, NEW.state,
                            value::int, l
                        FROM jsonb_each_text(NEW.kw);
                        INSERT INTO {s}.kw_stats (user_id, agent_id, run_id, state, n, total_len)
                        VALUES (NEW.user_id, NEW.agent_id, NEW.run_id, NEW.state, 1, l)
                        ON CONFLICT (user_id, agent_id, run_id, state) DO UPDATE
                        SET n = kw_stats.n + 1, total_len = kw_stats.total_len + l;
                    END IF;
                END IF;
                RETURN NULL;
            END $$""",
            f"""CREATE TRIGGER memories_kw AFTER INSERT OR UPDATE OR DELETE ON {m}
                FOR EACH ROW EXECUTE FUNCTION {s}.kw_sync()""",
        ]

    def _backfill_kw(self, conn: psycopg.Connection[Any]) -> None:
        """Analyse every memory of a database from before ``003_keyword_postings`` (the
        trigger files its postings and statistics)."""
        after = 0
        while True:
            rows = conn.execute(
                f"SELECT seq, text, context FROM {self.t_memories} WHERE seq > %s"
                " ORDER BY seq LIMIT 1000",
                (after,),
            ).fetchall()
            if not rows:
                return
            with conn.cursor() as cur:
                cur.executemany(
                    f"UPDATE {self.t_memories} SET kw = %s::jsonb WHERE seq = %s",
                    [(_term_counts(f"{c}\n{t}" if c else t), q) for q, t, c in rows],
                )
            after = rows[-1][0]

    def _indexed_dims(self) -> set[int]:
        """Dimensions that already have an HNSW index (named ``memories_hnsw_<dim>``)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s"
                " AND indexname LIKE 'memories\\_hnsw\\_%%'",
                (self._schema,),
            ).fetchall()
        return {int(m.group(1)) for r in rows if (m := _DIM_INDEX.fullmatch(r[0]))}

    def _scope_indexes_found(self) -> dict[str, bool]:
        """Users' own graphs in the schema, by name: valid (False while a concurrent build
        runs, or after one was interrupted)."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT c.relname, i.indisvalid FROM pg_index i"
                " JOIN pg_class c ON c.oid = i.indexrelid"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE n.nspname = %s AND c.relname LIKE 'memories\\_hnsw\\_%%'",
                (self._schema,),
            ).fetchall()
        return {name: bool(valid) for name, valid in rows if _SCOPE_INDEX.fullmatch(name)}

    def _valid_scope_indexes(self) -> set[str]:
        return {name for name, valid in self._scope_indexes_found().items() if valid}

    def _ensure_index(self, conn: Connection, dim: int) -> None:
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

    def _index_sql(self, dim: int, name: str = "", user_sql: str = "") -> str:
        """The shared graph of ``dim``, or with ``user_sql`` (a quoted literal) that user's
        own, built concurrently (outside any transaction)."""
        cast, ops = _vector_sql(dim)
        concurrently = " CONCURRENTLY" if user_sql else ""
        return (
            f"CREATE INDEX{concurrently} IF NOT EXISTS {name or f'memories_hnsw_{dim}'}"
            f" ON {self.t_memories} USING hnsw ((embedding::{cast}) {ops})"
            f" WITH (m = {self.settings.hnsw_m},"
            f" ef_construction = {self.settings.hnsw_ef_construction})"
            f" WHERE vector_dims(embedding) = {dim}"
            + (f" AND user_id = {user_sql}" if user_sql else "")
        )

    @staticmethod
    def scope_index_name(dim: int, user_id: str) -> str:
        """A user's own graph of ``dim``: named by a hash (any user id fits the 63-byte limit)."""
        digest = hashlib.blake2b(user_id.encode(), digest_size=8).hexdigest()
        return f"memories_hnsw_{dim}_u{digest}"

    def build_scope_index(self, user_id: str, dim: int) -> bool:
        """Give ``user_id`` an HNSW graph of their own for ``dim``-dimensional vectors, now.

        ``CREATE INDEX CONCURRENTLY``: writes go on while it builds. A session advisory
        lock makes one process the builder; the others return False at once (and their
        next search looks again). An invalid index of that name (a build that was
        interrupted) is dropped and built again. True once the index is valid."""
        if dim > _MAX_HALFVEC_DIM:
            return False
        name = self.scope_index_name(dim, user_id)
        key = f"memoryd:index:{self._schema}:{name}"
        with self._connect() as conn:
            with self._scope_lock:
                if self._closed:
                    return False
                self._scope_conns[name] = conn
            try:
                got = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,))
                if not got.fetchone()[0]:  # type: ignore[index]
                    return False
                try:
                    valid = self._scope_indexes_found().get(name)
                    if valid is False:
                        conn.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{self._schema}".{name}')
                    if not valid:
                        conn.execute(
                            "SELECT set_config('maintenance_work_mem', %s, false)",
                            (self.settings.index_build_memory,),
                        )
                        user_sql = self._psycopg.sql.Literal(user_id).as_string()
                        conn.execute(self._index_sql(dim, name, user_sql))
                finally:
                    if not conn.closed:
                        conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
            finally:
                with self._scope_lock:
                    self._scope_conns.pop(name, None)
        with self._scope_lock:
            self._scope_indexes.add(name)
        return True

    def index_large_scopes(self) -> builtins.list[str]:
        """Build, now, the own graph of every user of at least ``scope_index_above``
        memories (and not scanned exactly) that lacks one; returns the users built for.
        Searches start these builds by themselves; this is for after a bulk load and for
        a benchmark that must not measure a build."""
        threshold = max(self.settings.scope_index_above, self.settings.exact_scan_below)
        if self.settings.scope_index_above <= 0:
            return []
        with self._read() as conn:
            users = [
                r[0]
                for r in conn.execute(
                    f'SELECT user_id FROM "{self._schema}".kw_stats WHERE state = %s'
                    " GROUP BY user_id HAVING sum(n) >= %s ORDER BY user_id",
                    (str(State.ACTIVE), threshold),
                )
            ]
        built = []
        for dim in sorted(self._indexed_dims()):
            for user in users:
                name = self.scope_index_name(dim, user)
                if name not in self._scope_indexes and self.build_scope_index(user, dim):
                    built.append(user)
        return built

    def _own_graph(self, dim: int, user_id: str | None, size: int | None) -> bool:
        """Whether ``user_id`` has a valid graph of their own for ``dim``. When their scope
        of ``size`` memories (None: unknown, or not to be built) has reached
        ``scope_index_above`` and there is none, a background thread starts building it
        (at most once a minute per user and process); until it is valid, their searches
        walk the shared graph."""
        if user_id is None or self.settings.scope_index_above <= 0:
            return False
        name = self.scope_index_name(dim, user_id)
        if name in self._scope_indexes:
            return True
        if size is None or size < self.settings.scope_index_above or dim > _MAX_HALFVEC_DIM:
            return False
        now = time.monotonic()
        with self._scope_lock:
            last = self._scope_tried.get(name)
            if self._closed or name in self._scope_builds:
                return False
            if last is not None and now - last < _SCOPE_RETRY_S:
                return False
            self._scope_tried[name] = now
            thread = threading.Thread(
                target=self._build_in_background,
                args=(user_id, dim, name),
                name=f"memoryd-{name}",
                daemon=True,
            )
            self._scope_builds[name] = thread
        thread.start()
        return False

    def _build_in_background(self, user_id: str, dim: int, name: str) -> None:
        try:
            self.build_scope_index(user_id, dim)
        except self._psycopg.Error as exc:  # cancelled by close(), or the server went away
            if not self._closed:
                log.warning(
                    "building %s (user %r's own graph) failed: %s; a search of that user"
                    " retries in %.0f s",
                    name,
                    user_id,
                    str(exc).strip(),
                    _SCOPE_RETRY_S,
                )
        finally:
            with self._scope_lock:
                self._scope_builds.pop(name, None)

    def pack_postings(self, user_id: str | None = None, terms: Sequence[str] | None = None) -> int:
        """Pack ``user_id``'s keyword postings of ``terms`` into blocks
        (:mod:`memoryd.store.pg_postings`). Without ``terms``, the terms of which that user
        (without ``user_id``: any user) has more than ``pack_postings_above`` rows, then a
        vacuum of the rows they leave. Returns the blocks written. Safe beside writers and
        other packers, on any server."""
        with self._connect() as conn:
            if terms is None:
                if self.settings.pack_postings_above <= 0:
                    return 0
                mine = " WHERE user_id = %s" if user_id is not None else ""
                pairs = conn.execute(
                    f'SELECT term, user_id FROM "{self._schema}".kw_postings{mine}'
                    " GROUP BY term, user_id HAVING count(*) > %s",
                    (
                        *([user_id] if user_id is not None else []),
                        self.settings.pack_postings_above,
                    ),
                ).fetchall()
            elif user_id is None:
                raise InvalidInputError("pack_postings: terms need a user_id", "name the user")
            else:
                pairs = [(term, user_id) for term in terms]
            statement = pg_postings.pack_sql(f'"{self._schema}"')
            blocks = 0
            for term, user in pairs:
                blocks += conn.execute(statement, {"term": term, "user": user}).rowcount
            if pairs and terms is None:
                # the rows packed leave dead index entries each search would step over until
                # autovacuum comes: gone now, and the visibility map set for index-only scans
                conn.execute(
                    f'VACUUM (ANALYZE) "{self._schema}".kw_postings, "{self._schema}".kw_blocks'
                )
        return blocks

    def _pack_in_background(self, user_id: str, terms: Sequence[str]) -> None:
        """Pack ``terms`` of ``user_id`` in a thread, unless a pack of them is under way."""
        with self._scope_lock:
            todo = [t for t in terms if (t, user_id) not in self._packing]
            if self._closed or not todo:
                return
            self._packing.update((t, user_id) for t in todo)
            thread = threading.Thread(
                target=self._pack, args=(user_id, todo), name="memoryd-pack", daemon=True
            )
            self._packers.add(thread)
        thread.start()

    def _pack(self, user_id: str, terms: builtins.list[str]) -> None:
        try:
            self.pack_postings(user_id, terms)
        except (StoreError, self._psycopg.Error) as exc:
            # the server went away or is shutting down: a later search packs them
            log.warning("packing user %r's postings of %s failed: %s", user_id, terms, exc)
        finally:
            with self._scope_lock:
                self._packing.difference_update((t, user_id) for t in terms)
                self._packers.discard(threading.current_thread())

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
            # and the keyword postings' visibility map: a search reads them index-only
            conn.execute(
                f'VACUUM (ANALYZE) "{self._schema}".kw_postings, "{self._schema}".kw_stats'
            )
        self.index_large_scopes()  # users loaded past scope_index_above: their own graphs
        self.pack_postings()  # and their common words' postings, in blocks

    # -- small state ----------------------------------------------------------------------------
    def kv_get(self, key: str) -> Any:
        """Inside ``atomic()`` the key stays locked until the transaction ends, so a
        read-modify-write of one key (a run list, an offset) is never lost to another
        server doing the same: SQLite gets this from its single writer, PostgreSQL's
        READ COMMITTED needs the lock. A key that does not exist yet is locked too."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"memoryd:kv:{self._schema}:{key}",),
            )  # before the read: the read's snapshot must include the holder's commit
        return super().kv_get(key)

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
    def _insert_memories(
        self, conn: Connection, records: Sequence[MemoryRecord], *, skip_existing: bool
    ) -> set[str]:
        for dim in {
            int(np.asarray(r.embedding).shape[-1]) for r in records if r.embedding is not None
        }:
            self._ensure_index(conn, dim)
        statement = self._insert_sql(skip_existing=skip_existing) + " RETURNING id"
        # each row locks its scope's kw_stats row to the end of the transaction: rows in
        # scope order, so two batches over the same scopes never wait on each other
        records = sorted(records, key=_scope_order)
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

    def _rewrite(self, conn: Connection, record: MemoryRecord) -> None:
        if record.embedding is not None:
            self._ensure_index(conn, int(np.asarray(record.embedding).shape[-1]))
        try:
            super()._rewrite(conn, record)
        except self._psycopg.DataError as exc:
            raise InvalidInputError(
                f"PostgreSQL refused a value: {str(exc).strip()}",
                "remove NUL (\\x00) characters from the text, context and metadata",
            ) from exc

    def get(self, memory_id: str) -> MemoryRecord | None:
        """Inside ``atomic()`` the row stays locked until the transaction ends (see
        ``_get_for_update``), so get-then-update is safe with other servers writing."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return self._get_for_update(conn, memory_id)
        return super().get(memory_id)

    # -- retrieval ------------------------------------------------------------------------------
    def _scope_sql(self, filters: Filters) -> tuple[str, builtins.list[Any]] | None:
        """``AND ...`` over the scope columns that ``kw_postings`` and ``kw_stats`` share,
        or None when ``filters`` also name what the statistics do not keep (a filter
        expression, evidence turns left out, category, origin, time, source, ids)."""
        f = filters
        if (
            f.categories is not None
            or f.origins is not None
            or f.created_after is not None
            or f.created_before is not None
            or f.source_path is not None
            or f.ids is not None
            or f.where is not None
            or not f.evidence_turns
        ):
            return None
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        for column in ("user_id", "agent_id", "run_id"):
            value = getattr(f, column)
            if value is not None:
                clauses.append(f" AND {column} = %s")
                params.append(value)
        if f.long_term_only:
            clauses.append(" AND run_id IS NULL")
        if f.short_term_only:
            clauses.append(" AND run_id IS NOT NULL")
        if f.states is not None:
            clauses.append(" AND state = ANY(%s)")
            params.append([str(s) for s in f.states])
        return "".join(clauses), params

    def scope_size(self, filters: Filters) -> int | None:
        """Memories with text that ``filters`` admit, from the maintained statistics (a
        few rows), or None when the statistics do not cover those filters."""
        scope = self._scope_sql(filters)
        if scope is None:
            return None
        cond, params = scope
        with self._read() as conn:
            row = conn.execute(
                f'SELECT coalesce(sum(n), 0) FROM "{self._schema}".kw_stats WHERE true {cond}',
                params,
            ).fetchone()
        return int(row[0]) if row else 0

    def keyword_search(
        self,
        query: str,
        filters: Filters,
        limit: int,
        *,
        facts: dict[str, RankFacts] | None = None,
    ) -> builtins.list[tuple[str, float]]:
        """BM25 with the embedded store's analyser, statistics and scores (keywords.py):
        N, the average length and each term's document frequency are those of the rows
        ``filters`` admit, so one user's memories never change another's ranking.

        With filters on user, agent, run and state only (what searches use), N and the
        total length come from ``kw_stats`` and the postings read are the query terms'
        in that scope, so the cost follows the scope's matches, not the database. Other
        filters join the memories and count the scope exactly. Each term's postings come
        back packed (one row a term) and are scored by :func:`bm25_top`, the embedded
        store's formula. Scores are divided by the best one, or by ``MIN_SCALE`` x the
        query's ceiling when that is larger, as on SQLite; ties go to the older memory."""
        terms = query_stems(query)
        if not terms or limit <= 0:
            return []
        s = f'"{self._schema}"'
        scope = self._scope_sql(filters)
        if scope is not None:
            cond, cparams = scope
            rows = f"SELECT term, seq, tf, len FROM {s}.kw_postings WHERE term = ANY(%s){cond}"
            blocks = f"SELECT term, seqs, tfs, lens FROM {s}.kw_blocks WHERE term = ANY(%s){cond}"
            stats = (
                "SELECT sum(n)::float8 AS n, sum(total_len)::float8 AS tl"
                f" FROM {s}.kw_stats WHERE true {cond}"
            )
            params: builtins.list[Any] = [*cparams, terms, *cparams, terms, *cparams]
        else:
            where, wparams = self.dialect.where(filters)
            rows_sql = f"SELECT seq, kw FROM {self.t_memories} {where}"
            # the user's postings only, when the filters name one (the index leads with it)
            user = " AND {}.user_id = %s" if filters.user_id is not None else ""
            uparams = [filters.user_id] if filters.user_id is not None else []
            rows = (
                f"SELECT k.term, k.seq, k.tf, k.len FROM {s}.kw_postings k"
                f" JOIN ({rows_sql}) m ON m.seq = k.seq"
                f" WHERE k.term = ANY(%s){user.format('k')}"
            )
            blocks = (
                "SELECT b.term, array_agg(u.seq) AS seqs, array_agg(u.tf) AS tfs,"
                f" array_agg(u.len) AS lens FROM {s}.kw_blocks b"
                " CROSS JOIN LATERAL unnest(b.seqs, b.tfs, b.lens) AS u(seq, tf, len)"
                f" JOIN ({rows_sql}) m ON m.seq = u.seq"
                f" WHERE b.term = ANY(%s){user.format('b')} GROUP BY b.term"
            )
            stats = (
                "SELECT count(*) FILTER (WHERE l > 0)::float8 AS n, sum(l)::float8 AS tl"
                " FROM (SELECT (SELECT coalesce(sum(value::bigint), 0)"
                f" FROM jsonb_each_text(m.kw)) AS l FROM ({rows_sql}) m) AS lens"
            )
            params = [*wparams, *wparams, terms, *uparams, *wparams, terms, *uparams]
        # each term's postings in scope as arrays (document, frequency, length), from its
        # rows and its packed blocks, loaded straight into numpy: the scoring is numpy's
        # (bm25_top). PostgreSQL joining, summing and sorting ~14k postings of a user of
        # 100k itself: ~20 ms
        with self._read() as conn:
            cur = conn.cursor(binary=True)
            pg_postings.register_loaders(cur.adapters)
            found_rows = cur.execute(pg_postings.read_sql(stats, rows, blocks), params).fetchall()
            if not found_rows or not found_rows[0][0]:
                return []
            per_term: dict[str, builtins.list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
            unpacked: builtins.list[str] = []
            for _, _, term, docs, tfs, lens, tail in found_rows:
                per_term.setdefault(term, []).append((docs, tfs, lens))
                if tail and len(docs) > self.settings.pack_postings_above > 0:
                    unpacked.append(term)
            seqs, scores, ceiling = bm25_top(
                (_joined(per_term[t]) for t in sorted(per_term)),  # sums in one order
                float(found_rows[0][0]),
                float(found_rows[0][1]),
                limit,
            )
            columns, parsed = _facts_sql("m") if facts is not None else ("NULL", "")
            found = conn.execute(
                f"SELECT m.seq, m.id, {columns} FROM {self.t_memories} m"
                f"{', ' if parsed else ''}{parsed} WHERE m.seq = ANY(%s) AND m.state <> 'deleted'",
                (seqs.tolist(),),
            ).fetchall()
        if unpacked and filters.user_id is not None:
            self._pack_in_background(filters.user_id, unpacked)
        ids = {row[0]: row[1] for row in found}
        if facts is not None:
            facts.update((row[1], _rank_facts(row[2:])) for row in found)
        best = max(float(scores[0]), MIN_SCALE * ceiling)
        return [
            (ids[q], _clip(float(score) / best))
            for q, score in zip(seqs.tolist(), scores.tolist(), strict=True)
            if q in ids
        ]

    def vector_search(
        self,
        vector: np.ndarray,
        filters: Filters,
        limit: int,
        *,
        facts: dict[str, RankFacts] | None = None,
    ) -> builtins.list[tuple[str, float]]:
        """The ``limit`` nearest memories that ``filters`` admit: an exact scan of a
        scope under ``exact_scan_below`` memories (through the scope index: its cost
        follows the scope), else the user's own HNSW graph when they have one, else the
        shared graph, with an iterative scan."""
        if limit <= 0:
            return []
        rows = self._vector_query(vector, filters, limit, facts=facts is not None)
        if facts is not None:
            facts.update((row[0], _rank_facts(row[2:])) for row in rows)
        return [(row[0], _clip(1.0 - float(row[1]))) for row in rows]

    def explain_vector_search(self, vector: np.ndarray, filters: Filters, limit: int = 10) -> str:
        """PostgreSQL's plan for ``vector_search`` (which index, or an exact scan); unlike
        a search, it never starts building a user's own graph."""
        return "\n".join(r[0] for r in self._vector_query(vector, filters, limit, "EXPLAIN "))

    def _vector_query(
        self,
        vector: np.ndarray,
        filters: Filters,
        limit: int,
        prefix: str = "",
        facts: bool = False,
    ) -> builtins.list[Any]:
        """Rows of (id, distance), and each one's :data:`_FACTS` when ``facts``."""
        vector = np.asarray(vector, dtype=np.float32)
        dim = int(vector.shape[-1])
        cast, _ = _vector_sql(dim)
        where, params = self.dialect.where(filters)
        extra = where.replace("WHERE", "AND", 1)
        distance = f"(embedding::{cast} <=> %s::{cast})"
        below = self.settings.exact_scan_below
        # OFFSET 0 keeps the planner from ordering through the graph; no cast to
        # vector(dim) either (a copy of every row's vector, ~15% of the scan)
        exact_sql = (
            f"SELECT {'*' if facts else 'id, d'} FROM (SELECT id, seq, embedding <=> %s AS d"
            f"{', ' + _FACTS_READS if facts else ''} FROM {self.t_memories}"
            f" WHERE vector_dims(embedding) = {dim} {extra} /*gate*/ OFFSET 0) s"
            " ORDER BY d, seq LIMIT %s"
        )
        if facts:  # the facts of the nearest only, not of every row of the scope
            columns, parsed = _facts_sql("c")
            exact_sql = (
                f"SELECT c.id, c.d, {columns} FROM ({exact_sql}) c, {parsed} ORDER BY c.d, c.seq"
            )
        width = 2 + (_FACTS_WIDTH if facts else 0)  # columns of a row: id, distance, facts
        scope = self._scope_sql(filters)
        size: int | None = None
        user = filters.user_id
        if user is not None and self.scope_index_name(dim, user) in self._scope_indexes:
            pass  # a user with a graph of their own is large: no size needed
        elif scope is not None and below > 0 and not prefix:
            # one round trip: the scope's size, and its exact scan when that is under
            # ``below`` (a one-time filter: a larger scope's rows are never read)
            cond, cparams = scope
            with self._read() as conn:
                rows = conn.execute(
                    "WITH sz AS MATERIALIZED (SELECT coalesce(sum(n), 0)::bigint AS n"
                    f' FROM "{self._schema}".kw_stats WHERE true {cond})'
                    f" SELECT {'NULL, ' * width}n FROM sz UNION ALL"
                    f" (SELECT *, NULL FROM ({exact_sql.replace('/*gate*/', f'AND (SELECT n FROM sz) < {below}')}) e)",
                    (*cparams, vector, *params, limit),
                ).fetchall()
            size = next(int(row[-1]) for row in rows if row[0] is None)
            if size < below:
                return [row[:-1] for row in rows if row[0] is not None]
        elif below > 0 or self.settings.scope_index_above > 0:
            size = self.scope_size(filters)
            if size is not None and size < below:
                with self._read() as conn:
                    return conn.execute(prefix + exact_sql, (vector, *params, limit)).fetchall()
        ef_search = self.settings.ef_search
        if self._own_graph(dim, filters.user_id, None if prefix else size):
            # the user's own graph: the planner must see its predicate, so the user is a
            # literal (a bound parameter proves it only while a plan is custom)
            extra += f" AND user_id = {self._psycopg.sql.Literal(filters.user_id).as_string()}"
            ef_search = self.settings.scope_ef_search
        ef_search = min(1000, max(limit, ef_search))  # no fewer than asked for
        # a large scope is the graph's: left to itself, the planner reads a user's rows
        # through the scope index and sorts them all (seconds for a user of 100k), since
        # it cannot tell the graph's cost. One pipeline: the transaction, its settings
        # and the query go out together (one round trip, and one more for the commit)
        with self._read() as conn, conn.pipeline(), conn.transaction():
            conn.execute("SET LOCAL enable_sort = off")
            if ef_search != self.settings.ef_search:
                conn.execute(f"SET LOCAL hnsw.ef_search = {ef_search}")
            columns, parsed = _facts_sql() if facts else ("NULL", "")
            return conn.execute(
                f"{prefix}SELECT id, {distance} AS d{', ' + columns if facts else ''}"
                f" FROM {self.t_memories}{', ' if parsed else ''}{parsed}"
                f" WHERE vector_dims(embedding) = {dim} {extra} ORDER BY {distance} LIMIT %s",
                (vector, *params, vector, limit),
            ).fetchall()

    def vector_scores(
        self,
        vector: np.ndarray,
        ids: Sequence[str],
        *,
        facts: dict[str, RankFacts] | None = None,
    ) -> dict[str, float]:
        if not ids:
            return {}
        vector = np.asarray(vector, dtype=np.float32)
        dim = int(vector.shape[-1])
        columns, parsed = _facts_sql() if facts is not None else ("NULL", "")
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT id, embedding <=> %s, {columns} FROM {self.t_memories}"
                f"{', ' if parsed else ''}{parsed} WHERE id = ANY(%s) AND state <> 'deleted'"
                f" AND vector_dims(embedding) = {dim}",
                (vector, list(ids)),
            ).fetchall()
        if facts is not None:
            facts.update((row[0], _rank_facts(row[2:])) for row in rows)
        return {row[0]: _clip(1.0 - float(row[1])) for row in rows}

    def rank_facts(self, ids: Sequence[str]) -> dict[str, RankFacts]:
        if not ids:
            return {}
        columns, parsed = _facts_sql()
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT id, {columns} FROM {self.t_memories}, {parsed}"
                " WHERE id = ANY(%s) AND state <> 'deleted'",
                (list(ids),),
            ).fetchall()
        return {row[0]: _rank_facts(row[1:]) for row in rows}

    # -- maintenance ------------------------------------------------------------------------------
    def integrity_check(self) -> builtins.list[str]:
        """Problems found (empty when healthy): every live vector's dimension is indexed,
        and no user's own graph is left invalid."""
        with self._read() as conn:
            dims = {
                int(r[0])
                for r in conn.execute(
                    f"SELECT DISTINCT vector_dims(embedding) FROM {self.t_memories}"
                    " WHERE embedding IS NOT NULL"
                )
            }
        missing = sorted(d for d in dims - self._indexed_dims() if d <= _MAX_HALFVEC_DIM)
        invalid = sorted(n for n, valid in self._scope_indexes_found().items() if not valid)
        return [f"no HNSW index for {d}-dimensional vectors" for d in missing] + [
            f"index {n} (a user's own graph) is invalid: its build was cut short or is still"
            " running; the next search of that user builds it again"
            for n in invalid
        ]


def _joined(
    places: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One term's postings (documents, frequencies, lengths) from its rows and blocks."""
    if len(places) == 1:
        return places[0]
    docs, tfs, lens = zip(*places, strict=True)
    return np.concatenate(docs), np.concatenate(tfs), np.concatenate(lens)


def _scope_order(r: MemoryRecord) -> tuple[str, str, str, str]:
    return (r.user_id or "", r.agent_id or "", r.run_id or "", str(r.state))


def _factory(url: str, settings: StoreSettings) -> Store:
    return PostgresStore(url, settings)  # typed as Store: mypy checks the protocol is met


register_store("postgresql", _factory)

__all__ = ["PostgresStore", "redact"]
