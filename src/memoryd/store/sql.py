"""What the SQL stores share: filters to SQL, the record, history, cache and key/value
statements, and rows <-> records, written once.

SQLite and PostgreSQL differ in few ways that matter to these statements, and a
:class:`Dialect` names them: the parameter mark (``?``/``%s``), how a list is bound
(``IN (?, ?, ...)`` in batches, or one array with ``= ANY(%s)``), how timestamps
and vectors are stored, which column keeps insertion order, what the keyword
column holds and whether a row can be locked for update. :class:`SQLStore` builds
every shared statement from its dialect. What truly differs stays in each store:
connections and transactions, inserting rows (how a duplicate id is reported,
vector indexes), keyword and vector search, locks, bulk load and maintenance.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, Protocol, TypeVar

import numpy as np

from memoryd.errors import InvalidInputError, NotFoundError
from memoryd.models import (
    Event,
    Filters,
    HistoryEntry,
    Located,
    MemoryRecord,
    Origin,
    Source,
    State,
    content_hash,
    utcnow,
)
from memoryd.store.filter_sql import FilterSQL

#: A memory row as records are read and written (``SQLStore._record``, ``_values``).
COLUMNS = (
    "id, text, user_id, agent_id, run_id, category, metadata, origin, source_path, "
    "source_start, source_end, context, state, created_at, updated_at, event_at, hash"
)
_REWRITTEN = [c.strip() for c in COLUMNS.split(",")][1:]  # all but the id
_WIDTH = len(_REWRITTEN) + 1  # columns in COLUMNS
HISTORY_COLUMNS = (
    "id, memory_id, event, old_text, new_text, old_metadata, new_metadata,"
    " actor, reason, created_at"
)
_HISTORY_INSERT = (
    "memory_id, user_id, event, old_text, new_text, old_metadata, new_metadata,"
    " actor, reason, created_at"
)
#: The columns ``counts_by`` may group on.
GROUP_COLUMNS = frozenset({"user_id", "agent_id", "run_id", "category", "origin", "state"})

T = TypeVar("T")


class Connection(Protocol):
    """What the shared statements need of a connection (sqlite3's and psycopg's)."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...
    def cursor(self) -> Any: ...


#: the columns of the index ``Store.locate`` reads a file's memories of one state by
SOURCE_STATE = "source_path, state"


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one database spells what both stores say."""

    mark: str  # a parameter
    seq: str  # the column that orders rows by insertion
    batch: int | None  # most list values in one statement; None: a list is one array
    time_in: Callable[[datetime], Any]  # a timestamp as a parameter
    time_out: Callable[[Any], datetime]  # a timestamp column as an aware UTC datetime
    vector_in: Callable[[np.ndarray | None], Any]  # an embedding as a parameter
    vector_out: Callable[[Any], np.ndarray]  # an embedding column as a writable array
    keyword_column: str  # the column keyword search reads, written from ``index_text``
    keyword_in: Callable[[str], str]  # ``index_text`` as that column's parameter
    keyword_value: str  # that column's value expression (around one mark)
    vector_value: str  # an embedding parameter's expression where it meets a column
    row_lock: str  # appended to a SELECT that locks its rows until the transaction ends
    serial_key: str  # the type of an integer key numbered by the database
    time_type: str  # the type of a timestamp column
    bytes_type: str  # the type of a byte-string column
    filter_sql: type[FilterSQL]  # mem0's filter language (Filters.where) as SQL

    def marks(self, n: int) -> str:
        return ", ".join([self.mark] * n)

    def is_in(self, column: str, values: Sequence[Any]) -> tuple[str, builtins.list[Any]]:
        """``column`` is one of ``values``: a condition and its parameters."""
        if self.batch is None:
            return f"{column} = ANY({self.mark})", [list(values)]
        if not values:
            return "0 = 1", []
        return f"{column} IN ({self.marks(len(values))})", list(values)

    def chunks(self, values: Sequence[T]) -> Iterator[builtins.list[T]]:
        """``values`` in as few statements' worth as binding allows (none when empty)."""
        step = self.batch or max(len(values), 1)
        for start in range(0, len(values), step):
            yield list(values[start : start + step])

    def where(self, f: Filters) -> tuple[str, builtins.list[Any]]:
        """``WHERE ...`` (or ``""``) and its parameters: the rows ``f`` admits."""
        m = self.mark
        clauses: builtins.list[str] = []
        params: builtins.list[Any] = []
        for column in ("user_id", "agent_id", "run_id", "source_path"):
            value = getattr(f, column)
            if value is not None:
                clauses.append(f"{column} = {m}")
                params.append(value)
        if f.ids is not None:
            clause, values = self.is_in("id", f.ids)
            clauses.append(clause)
            params.extend(values)
        if f.long_term_only:
            clauses.append("run_id IS NULL")
        if f.short_term_only:
            clauses.append("run_id IS NOT NULL")
        for column, listed in (
            ("category", f.categories),
            ("origin", [str(o) for o in f.origins] if f.origins else None),
            ("state", [str(s) for s in f.states] if f.states else None),
        ):
            if listed is not None:
                clause, values = self.is_in(column, listed)
                clauses.append(clause)
                params.extend(values)
        if f.created_after is not None:
            clauses.append(f"created_at >= {m}")
            params.append(self.time_in(f.created_after))
        if f.created_before is not None:
            clauses.append(f"created_at < {m}")
            params.append(self.time_in(f.created_before))
        compiler = self.filter_sql(self.is_in, self.time_in)
        if not f.evidence_turns:
            clauses.append(compiler.negate(f"(origin = 'turn' AND {compiler.evidence_turn()})"))
        if f.where is not None:
            clause, values = compiler.compile(f.where)
            clauses.append(clause)
            params.extend(values)
        return ("WHERE " + " AND ".join(clauses)) if clauses else "", params


def record_columns(d: Dialect) -> str:
    """The memory table's columns from ``user_id`` to ``hash``, the same in both
    stores: each adds its own key, keyword column and embedding around them."""
    t = d.time_type
    return f"""user_id TEXT NOT NULL,
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
            created_at {t} NOT NULL,
            updated_at {t} NOT NULL,
            event_at {t},
            hash TEXT NOT NULL"""


def shared_tables(
    d: Dialect, memories: str, history: str, cache: str, kv: str, *, cache_options: str = ""
) -> builtins.list[str]:
    """The statements of the first migration that both stores run as they are: the
    memory table's indexes, history, the embedding cache and key/value state."""
    return [
        f"CREATE INDEX memories_scope ON {memories} (user_id, agent_id, run_id, state)",
        f"CREATE INDEX memories_hash ON {memories} (hash)",
        f"CREATE INDEX memories_source ON {memories} (source_path)",
        f"CREATE INDEX memories_created ON {memories} (created_at)",
        f"""CREATE TABLE {history} (
            id {d.serial_key},
            memory_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            event TEXT NOT NULL,
            old_text TEXT,
            new_text TEXT,
            old_metadata TEXT,
            new_metadata TEXT,
            actor TEXT,
            reason TEXT,
            created_at {d.time_type} NOT NULL
        )""",
        f"CREATE INDEX history_memory ON {history} (memory_id)",
        f"""CREATE TABLE {cache} (
            model TEXT NOT NULL,
            hash TEXT NOT NULL,
            vector {d.bytes_type} NOT NULL,
            PRIMARY KEY (model, hash)
        ){cache_options}""",
        key_value_table(kv),
    ]


def key_value_table(name: str, *, if_not_exists: bool = False) -> str:
    exists = " IF NOT EXISTS" if if_not_exists else ""
    return f"CREATE TABLE{exists} {name} (key TEXT PRIMARY KEY, value TEXT NOT NULL)"


def _json_or_none(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


class SQLStore:
    """The :class:`~memoryd.store.Store` methods both SQL stores share.

    A store sets ``dialect`` and the table names and provides ``_read`` (a
    connection, inside ``atomic()`` the transaction's), ``_write`` (a transaction,
    nested ones savepoints), ``_insert_memories`` and the rest of the protocol.
    """

    dialect: Dialect
    #: what stamps ``updated_at`` and history times: ``Memory`` gives the store its own
    #: clock, so a test or a benchmark that moves the clock sees every write at its time
    clock: Callable[[], datetime] = staticmethod(utcnow)
    t_memories = "memories"
    t_history = "history"
    t_cache = "embed_cache"
    t_kv = "kv"
    t_meta = "meta"

    def _read(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Connection]:
        raise NotImplementedError

    def _insert_memories(
        self, conn: Connection, records: Sequence[MemoryRecord], *, skip_existing: bool
    ) -> set[str]:
        """Insert rows as given (``_insert_sql``); returns the ids that were inserted.
        A duplicate id is an InvalidInputError unless ``skip_existing``."""
        raise NotImplementedError

    @contextmanager
    def atomic(self) -> Iterator[None]:
        with self._write():
            yield

    # -- small state -----------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT value FROM {self.t_meta} WHERE key = {self.dialect.mark}", (key,)
            ).fetchone()
        return row[0] if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self._write() as conn:
            conn.execute(self._upsert_sql(self.t_meta), (key, value))

    def kv_get(self, key: str) -> Any:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT value FROM {self.t_kv} WHERE key = {self.dialect.mark}", (key,)
            ).fetchone()
        return json.loads(row[0]) if row else None

    def kv_set(self, key: str, value: Any) -> None:
        with self._write() as conn:
            if value is None:
                conn.execute(f"DELETE FROM {self.t_kv} WHERE key = {self.dialect.mark}", (key,))
            else:
                conn.execute(self._upsert_sql(self.t_kv), (key, json.dumps(value)))

    def _upsert_sql(self, table: str) -> str:
        return (
            f"INSERT INTO {table} (key, value) VALUES ({self.dialect.marks(2)})"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value"
        )

    # -- rows ------------------------------------------------------------------------------------
    def _record(self, row: Sequence[Any]) -> MemoryRecord:
        """A record from a row of ``COLUMNS``."""
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
        time_out = self.dialect.time_out
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
            created_at=time_out(created),
            updated_at=time_out(updated),
            event_at=None if event_at is None else time_out(event_at),
            hash=text_hash,
        )

    def _values(self, r: MemoryRecord) -> tuple[Any, ...]:
        """Parameters in ``COLUMNS`` order, then the embedding and the keyword text."""
        d = self.dialect
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
            d.time_in(r.created_at),
            d.time_in(r.updated_at),
            None if r.event_at is None else d.time_in(r.event_at),
            r.hash,
            d.vector_in(r.embedding),
            d.keyword_in(r.index_text),
        )

    def _insert_sql(self, *, skip_existing: bool) -> str:
        """Insert one record's ``_values``."""
        d = self.dialect
        return (
            f"INSERT INTO {self.t_memories} ({COLUMNS}, embedding, {d.keyword_column})"
            f" VALUES ({d.marks(_WIDTH + 1)}, {d.keyword_value})"
            + (" ON CONFLICT (id) DO NOTHING" if skip_existing else "")
        )

    @cached_property
    def _rewrite_sql(self) -> str:
        d, m = self.dialect, self.dialect.mark
        assign = ", ".join(f"{c} = {m}" for c in _REWRITTEN)
        return (
            f"UPDATE {self.t_memories} SET {assign},"
            f" embedding = COALESCE({d.vector_value}, embedding),"
            f" {d.keyword_column} = {d.keyword_value} WHERE id = {m}"
        )

    def _rewrite(self, conn: Connection, record: MemoryRecord) -> None:
        """Replace the row of ``record.id`` with ``record`` (a missing embedding keeps
        the stored one)."""
        conn.execute(self._rewrite_sql, (*self._values(record)[1:], record.id))

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
        """A history entry written now, as ``_insert_history`` takes it."""
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
            self.dialect.time_in(self.clock()),
        )

    def _insert_history(self, conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
        if not rows:
            return
        cursor = conn.cursor()
        try:
            cursor.executemany(
                f"INSERT INTO {self.t_history} ({_HISTORY_INSERT})"
                f" VALUES ({self.dialect.marks(10)})",
                rows,
            )
        finally:
            cursor.close()

    def _history_entry(self, r: Sequence[Any]) -> HistoryEntry:
        """An entry from a row of ``HISTORY_COLUMNS``."""
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
            created_at=self.dialect.time_out(r[9]),
        )

    # -- records ------------------------------------------------------------------------------
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

    @cached_property
    def _get_sql(self) -> str:
        return f"SELECT {COLUMNS} FROM {self.t_memories} WHERE id = {self.dialect.mark}"

    def get(self, memory_id: str) -> MemoryRecord | None:
        with self._read() as conn:
            row = conn.execute(self._get_sql, (memory_id,)).fetchone()
        return self._record(row) if row else None

    def _get_for_update(self, conn: Connection, memory_id: str) -> MemoryRecord | None:
        """The row as it is now, locked (where the database can) until the transaction
        ends: two writers of one memory take turns, and each history entry's old text
        is right."""
        row = conn.execute(self._get_sql + self.dialect.row_lock, (memory_id,)).fetchone()
        return self._record(row) if row else None

    def get_many(self, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        if not ids:
            return []
        d = self.dialect
        found: dict[str, MemoryRecord] = {}
        with self._read() as conn:
            for chunk in d.chunks(ids):
                clause, params = d.is_in("id", chunk)
                for row in conn.execute(
                    f"SELECT {COLUMNS} FROM {self.t_memories} WHERE {clause}", params
                ).fetchall():
                    found[row[0]] = self._record(row)
        return [found[i] for i in ids if i in found]

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        d = self.dialect
        found: set[str] = set()
        with self._read() as conn:
            for chunk in d.chunks(ids):
                clause, params = d.is_in("id", chunk)
                found.update(
                    r[0]
                    for r in conn.execute(
                        f"SELECT id FROM {self.t_memories} WHERE {clause}", params
                    ).fetchall()
                )
        return found

    def get_embedding(self, memory_id: str) -> np.ndarray | None:
        with self._read() as conn:
            row = conn.execute(
                f"SELECT embedding FROM {self.t_memories} WHERE id = {self.dialect.mark}",
                (memory_id,),
            ).fetchone()
        if not row or row[0] is None:
            return None
        return self.dialect.vector_out(row[0])

    def update(
        self,
        record: MemoryRecord,
        *,
        event: Event = Event.UPDATE,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        with self._write() as conn:
            old = self._get_for_update(conn, record.id)
            if old is None:
                raise NotFoundError(f"no memory with id {record.id}", "check the id with list")
            record.hash = content_hash(record.text)
            record.updated_at = self.clock()
            self._rewrite(conn, record)
            self._insert_history(
                conn,
                [self._history_row(record.id, record.user_id, event, old, record, actor, reason)],
            )
        return record

    def reembed(self, records: Sequence[MemoryRecord]) -> None:
        """Store each record's new ``embedding`` and nothing else of it: a rebuild for
        another model changes no memory, so ``updated_at`` (what expiry and recency
        read) and history stay as they were (``update`` would stamp both)."""
        with self._write() as conn:
            for record in records:
                current = self._get_for_update(conn, record.id)
                if current is None:
                    continue  # deleted since it was read: nothing to re-embed
                current.embedding = record.embedding
                self._rewrite(conn, current)

    def set_state(
        self,
        memory_id: str,
        state: State,
        *,
        event: Event,
        actor: str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        m = self.dialect.mark
        with self._write() as conn:
            old = self._get_for_update(conn, memory_id)
            if old is None:
                raise NotFoundError(f"no memory with id {memory_id}", "check the id with list")
            now = self.clock()
            conn.execute(
                f"UPDATE {self.t_memories} SET state = {m}, updated_at = {m} WHERE id = {m}",
                (str(state), self.dialect.time_in(now), memory_id),
            )
            new = old.model_copy(update={"state": state, "updated_at": now})
            self._insert_history(
                conn, [self._history_row(memory_id, old.user_id, event, old, new, actor, reason)]
            )
        return new

    def purge(self, filters: Filters) -> int:
        d = self.dialect
        where, params = d.where(filters.model_copy(update={"states": []}))
        with self._write() as conn:
            ids = [
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM {self.t_memories} {where}", params
                ).fetchall()
            ]
            for chunk in d.chunks(ids):
                clause, values = d.is_in("memory_id", chunk)
                conn.execute(f"DELETE FROM {self.t_history} WHERE {clause}", values)
                clause, values = d.is_in("id", chunk)
                conn.execute(f"DELETE FROM {self.t_memories} WHERE {clause}", values)
        return len(ids)

    def list(
        self, filters: Filters, *, limit: int = 100, offset: int = 0, newest_first: bool = True
    ) -> builtins.list[MemoryRecord]:
        d = self.dialect
        where, params = d.where(filters)
        order = "DESC" if newest_first else "ASC"
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM {self.t_memories} {where}"
                f" ORDER BY created_at {order}, {d.seq} {order} LIMIT {d.mark} OFFSET {d.mark}",
                (*params, limit, offset),
            ).fetchall()
        return [self._record(r) for r in rows]

    def iter_all(self, filters: Filters, batch: int = 1000) -> Iterator[MemoryRecord]:
        d = self.dialect
        where, params = d.where(filters)
        after = f"{d.seq} > {d.mark}"
        cond = f"{where} AND {after}" if where else f"WHERE {after}"
        last = 0
        while True:
            with self._read() as conn:
                rows = conn.execute(
                    f"SELECT {COLUMNS}, {d.seq} FROM {self.t_memories} {cond}"
                    f" ORDER BY {d.seq} LIMIT {d.mark}",
                    (*params, last, batch),
                ).fetchall()
            if not rows:
                return
            for row in rows:
                yield self._record(row[:_WIDTH])
            last = rows[-1][_WIDTH]

    def count(self, filters: Filters) -> int:
        where, params = self.dialect.where(filters)
        with self._read() as conn:
            row = conn.execute(f"SELECT count(*) FROM {self.t_memories} {where}", params).fetchone()
        return int(row[0]) if row else 0

    def counts_by(self, column: str, filters: Filters) -> dict[str, int]:
        if column not in GROUP_COLUMNS:
            raise InvalidInputError(f"cannot group by {column!r}", "use a scope column")
        where, params = self.dialect.where(filters)
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {column}, count(*) FROM {self.t_memories} {where} GROUP BY {column}",
                params,
            ).fetchall()
        return {str(k) if k is not None else "": int(n) for k, n in rows}

    def history(self, memory_id: str) -> builtins.list[HistoryEntry]:
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {HISTORY_COLUMNS} FROM {self.t_history}"
                f" WHERE memory_id = {self.dialect.mark} ORDER BY id",
                (memory_id,),
            ).fetchall()
        return [self._history_entry(r) for r in rows]

    def find_by_hash(self, text_hash: str, filters: Filters) -> builtins.list[MemoryRecord]:
        d = self.dialect
        where, params = d.where(filters)
        cond = f"{where} AND hash = {d.mark}" if where else f"WHERE hash = {d.mark}"
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM {self.t_memories} {cond}", (*params, text_hash)
            ).fetchall()
        return [self._record(r) for r in rows]

    def locate(
        self, filters: Filters, hashes: Sequence[str], paths: Sequence[str]
    ) -> builtins.list[Located]:
        d = self.dialect
        where, params = d.where(filters)
        wanted: builtins.list[tuple[str, builtins.list[str]]] = [
            ("hash", sorted(set(hashes))),
            ("source_path", sorted(set(paths))),
        ]
        looks: builtins.list[str] = []
        values: builtins.list[Any] = []
        columns = (
            "id, user_id, agent_id, run_id, category, origin, state, created_at, metadata, hash,"
            " source_path, source_start, source_end"
        )
        # the record kinds asked for narrow each look at once (a file's lines have
        # many memories: chunks, short-term and long-term facts)
        narrow: builtins.list[str] = []
        narrowed: builtins.list[Any] = []
        for column, kinds in (("origin", filters.origins), ("state", filters.states)):
            if kinds:
                clause, bound = d.is_in(column, [str(k) for k in kinds])
                narrow.append(clause)
                narrowed.extend(bound)
        for column, listed in wanted:
            for part in d.chunks(listed):
                clause, bound = d.is_in(column, part)
                cond = " AND ".join([clause, *narrow])
                looks.append(f"SELECT {columns} FROM {self.t_memories} WHERE {cond}")
                values.extend([*bound, *narrowed])
        if not looks:
            return []
        # each look by its own index (hash, source_path), then the scope: the planner
        # would otherwise read the whole of a large scope by its columns
        with self._read() as conn:
            rows = conn.execute(
                f"WITH said AS MATERIALIZED ({' UNION ALL '.join(looks)})"
                " SELECT id, user_id, agent_id, hash, source_path, source_start, source_end"
                f" FROM said {where}",
                (*values, *params),
            ).fetchall()
        return [Located(*row) for row in rows]

    # -- embedding cache --------------------------------------------------------------------------
    def cache_get(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        if not hashes:
            return {}
        d = self.dialect
        out: dict[str, np.ndarray] = {}
        with self._read() as conn:
            for chunk in d.chunks(list(dict.fromkeys(hashes))):
                clause, params = d.is_in("hash", chunk)
                for h, blob in conn.execute(
                    f"SELECT hash, vector FROM {self.t_cache} WHERE model = {d.mark} AND {clause}",
                    (model, *params),
                ).fetchall():
                    out[h] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def cache_put(self, model: str, items: dict[str, np.ndarray]) -> None:
        self.import_cache([(model, h, v) for h, v in items.items()])

    # -- bulk copy (memoryd store migrate) ----------------------------------------------------------
    def export_memories(
        self, after: int, limit: int
    ) -> tuple[builtins.list[MemoryRecord], builtins.list[HistoryEntry], int]:
        d = self.dialect
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS}, embedding, {d.seq} FROM {self.t_memories}"
                f" WHERE {d.seq} > {d.mark} ORDER BY {d.seq} LIMIT {d.mark}",
                (after, limit),
            ).fetchall()
            if not rows:
                return [], [], after
            history: builtins.list[Any] = []
            for chunk in d.chunks([r[0] for r in rows]):
                clause, params = d.is_in("memory_id", chunk)
                history.extend(
                    conn.execute(
                        f"SELECT {HISTORY_COLUMNS} FROM {self.t_history} WHERE {clause}"
                        " ORDER BY id",
                        params,
                    ).fetchall()
                )
        records = []
        for row in rows:
            record = self._record(row[:_WIDTH])
            if row[_WIDTH] is not None:
                record.embedding = d.vector_out(row[_WIDTH])
            records.append(record)
        entries = sorted((self._history_entry(h) for h in history), key=lambda h: h.id)
        return records, entries, int(rows[-1][_WIDTH + 1])

    def import_memories(
        self, records: Sequence[MemoryRecord], history: Sequence[HistoryEntry]
    ) -> int:
        if not records:
            return 0
        owner = {r.id: r.user_id for r in records}
        time_in = self.dialect.time_in
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
                        time_in(h.created_at),
                    )
                    for h in history
                    if h.memory_id in inserted
                ],
            )
        return len(inserted)

    def export_cache(
        self, after: tuple[str, str] | None, limit: int
    ) -> builtins.list[tuple[str, str, np.ndarray]]:
        mark = self.dialect.mark
        model, text_hash = after or ("", "")
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT model, hash, vector FROM {self.t_cache}"
                f" WHERE (model, hash) > ({mark}, {mark}) ORDER BY model, hash LIMIT {mark}",
                (model, text_hash, limit),
            ).fetchall()
        return [(m, h, np.frombuffer(v, dtype=np.float32).copy()) for m, h, v in rows]

    def import_cache(self, items: Sequence[tuple[str, str, np.ndarray]]) -> None:
        if not items:
            return
        with self._write() as conn:
            cursor = conn.cursor()
            try:
                cursor.executemany(
                    f"INSERT INTO {self.t_cache} (model, hash, vector)"
                    f" VALUES ({self.dialect.marks(3)}) ON CONFLICT DO NOTHING",
                    [(m, h, np.asarray(v, dtype=np.float32).tobytes()) for m, h, v in items],
                )
            finally:
                cursor.close()

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
        return {"memories": row[0], "history": row[1], "cache": row[2], "kv": row[3]}
