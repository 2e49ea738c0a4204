"""Keyword postings in PostgreSQL: rows as they arrive, packed into blocks as they grow.

The trigger of ``003_keyword_postings`` files each memory's postings as rows of
``kw_postings`` (term, user, memory -> frequency, length, scope columns). Read row
by row, a posting costs ~0.5 us on two cores (an index-only scan, then the
aggregate that packs the rows for the client): 7 ms for the 16,000 postings the
words of one query have among a user's 100,000 memories. So a user's rows of one
term, once there are more than ``pack_postings_above`` of them, are packed
(:func:`pack_sql`) into ``kw_blocks``: up to :data:`BLOCK` postings of one scope a
row, as three arrays, read several times faster. Postings go on arriving as rows
(the tail); a search reads its terms' blocks and their tails (:func:`read_sql`)
and scores them as before, so scores do not change.

A posting that leaves (its memory deleted, its text edited, its state or agent
changed) is deleted from the rows by the row trigger as before; when it had been
packed, a statement trigger (``kw_unblock_*``) takes it out of its block. Packing
takes rows ``FOR UPDATE SKIP LOCKED``: a row that a writer is changing stays in
the tail, and a writer that reaches a row being packed waits for the pack to
commit and then finds the posting in its block. A pack never waits for a
writer (blocks it would drop are taken ``SKIP LOCKED`` too), so the two cannot
deadlock.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: postings a block holds at most: three arrays of ~4 kB, kept in the row
#: (``toast_tuple_target``), not compressed out of line
BLOCK = 256
INT8_ARRAY_OID = 1016
INT4_ARRAY_OID = 1007

_SAME_SCOPE = (
    "{a}.user_id = {b}.user_id AND {a}.agent_id IS NOT DISTINCT FROM {b}.agent_id"
    " AND {a}.run_id IS NOT DISTINCT FROM {b}.run_id AND {a}.state = {b}.state"
)


def _unblock_function(s: str, name: str, left: str) -> str:
    """A statement trigger's function that takes the postings of the rows that ``left``
    selects from the transition table ``kw_old`` out of the blocks holding them."""
    return f"""CREATE FUNCTION {s}.{name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT EXISTS (SELECT 1 FROM {s}.kw_blocks) THEN
            RETURN NULL;  -- nothing was ever packed: every posting is a row
        END IF;
        -- each posting's block found through the index, one posting at a time: a posting
        -- is in one block at most, and walking the term's blocks up from its memory's seq
        -- meets it first (a join of all postings with all blocks scanned the table)
        WITH gone AS MATERIALIZED (
            SELECT k.term, o.user_id, o.agent_id, o.run_id, o.state, o.seq
            FROM kw_old o CROSS JOIN LATERAL jsonb_object_keys(o.kw) AS k(term)
            WHERE {left}
        ), hit AS (
            SELECT b.id, array_agg(g.seq) AS seqs
            FROM gone g CROSS JOIN LATERAL (
                SELECT b.id FROM {s}.kw_blocks b
                WHERE b.term = g.term AND {_SAME_SCOPE.format(a="b", b="g")}
                    AND b.last_seq >= g.seq AND b.first_seq <= g.seq AND g.seq = ANY(b.seqs)
                ORDER BY b.last_seq LIMIT 1
            ) b
            GROUP BY b.id
        )
        UPDATE {s}.kw_blocks b SET (seqs, tfs, lens) = (
            SELECT coalesce(array_agg(u.seq ORDER BY u.seq), '{{}}'),
                coalesce(array_agg(u.tf ORDER BY u.seq), '{{}}'),
                coalesce(array_agg(u.len ORDER BY u.seq), '{{}}')
            FROM unnest(b.seqs, b.tfs, b.lens) AS u(seq, tf, len)
            WHERE u.seq <> ALL(hit.seqs)
        )
        FROM hit WHERE b.id = hit.id;
        RETURN NULL;
    END $$"""


def schema(s: str, memories: str) -> list[str]:
    """The blocks table, its index and the statement triggers that keep packed postings
    equal to the memories (``s``: the quoted schema, ``memories``: its memories table)."""
    return [
        f"""CREATE TABLE {s}.kw_blocks (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            term TEXT NOT NULL, user_id TEXT NOT NULL,
            agent_id TEXT, run_id TEXT, state TEXT NOT NULL,
            first_seq BIGINT NOT NULL, last_seq BIGINT NOT NULL,
            seqs BIGINT[] NOT NULL, tfs INTEGER[] NOT NULL, lens INTEGER[] NOT NULL
        ) WITH (toast_tuple_target = 8160)""",
        f"""CREATE INDEX kw_blocks_term ON {s}.kw_blocks (term, user_id, last_seq)
            INCLUDE (first_seq, state, agent_id, run_id)""",
        _unblock_function(s, "kw_unblock_deleted", "true"),
        # an update that keeps a memory's terms and scope keeps its postings where they are
        _unblock_function(
            s,
            "kw_unblock_updated",
            "NOT EXISTS (SELECT 1 FROM kw_new n WHERE n.seq = o.seq AND n.kw = o.kw"
            f" AND {_SAME_SCOPE.format(a='n', b='o')})",
        ),
        f"""CREATE TRIGGER memories_kw_unblock_deleted AFTER DELETE ON {memories}
            REFERENCING OLD TABLE AS kw_old
            FOR EACH STATEMENT EXECUTE FUNCTION {s}.kw_unblock_deleted()""",
        f"""CREATE TRIGGER memories_kw_unblock_updated AFTER UPDATE ON {memories}
            REFERENCING OLD TABLE AS kw_old NEW TABLE AS kw_new
            FOR EACH STATEMENT EXECUTE FUNCTION {s}.kw_unblock_updated()""",
    ]


def pack_sql(s: str) -> str:
    """One statement that packs a user's rows of one term (parameters: term, user) into
    blocks of one scope each, and drops that term's blocks that leaving postings emptied.
    Rows and blocks another transaction holds are skipped (they stay as they are), so a
    pack never waits: a writer holding a block from an earlier statement of its
    transaction while it waits for a row being packed cannot deadlock with it."""
    return f"""WITH picked AS (
            SELECT term, user_id, seq FROM {s}.kw_postings
            WHERE term = %(term)s AND user_id = %(user)s
            FOR UPDATE SKIP LOCKED
        ), moved AS (
            DELETE FROM {s}.kw_postings p USING picked k
            WHERE p.term = k.term AND p.user_id = k.user_id AND p.seq = k.seq
            RETURNING p.*
        ), emptied AS (
            DELETE FROM {s}.kw_blocks WHERE id IN (
                SELECT id FROM {s}.kw_blocks
                WHERE term = %(term)s AND user_id = %(user)s AND cardinality(seqs) = 0
                FOR UPDATE SKIP LOCKED
            )
        )
        INSERT INTO {s}.kw_blocks
            (term, user_id, agent_id, run_id, state, first_seq, last_seq, seqs, tfs, lens)
        SELECT term, user_id, agent_id, run_id, state, min(seq), max(seq),
            array_agg(seq ORDER BY seq), array_agg(tf ORDER BY seq), array_agg(len ORDER BY seq)
        FROM (
            SELECT *, (row_number() OVER (
                PARTITION BY agent_id, run_id, state ORDER BY seq) - 1) / {BLOCK} AS block
            FROM moved
        ) m
        GROUP BY term, user_id, agent_id, run_id, state, block"""


def read_sql(stats: str, rows: str, blocks: str) -> str:
    """The statement a keyword search runs: the scope's statistics (``stats``: n, total
    length) beside each query term's postings, one result row per term and place: its
    rows (``rows``: term, seq, tf, len) packed into arrays, flagged as the tail, and each
    of its blocks (``blocks``: term, seqs, tfs, lens)."""
    return f"""WITH st AS MATERIALIZED ({stats})
        SELECT (SELECT n FROM st), (SELECT tl FROM st), x.term, x.seqs, x.tfs, x.lens, x.tail
        FROM (
            SELECT p.term, array_agg(p.seq) AS seqs, array_agg(p.tf) AS tfs,
                array_agg(p.len) AS lens, true AS tail
            FROM ({rows}) p GROUP BY p.term
            UNION ALL
            SELECT b.term, b.seqs, b.tfs, b.lens, false FROM ({blocks}) b
        ) x"""


def _array_loader(dtype: str) -> type:
    """A psycopg binary loader that reads a one-dimensional array without NULLs of
    ``dtype`` ('>i8' or '>i4') straight into numpy: PostgreSQL's binary array is a
    header (dimensions, NULL flag, element type, then size and lower bound per
    dimension) and a length before each element."""
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    record = np.dtype([("size", ">i4"), ("value", dtype)])

    class ArrayLoader(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> np.ndarray:
            dims = int.from_bytes(data[0:4], "big")
            if dims == 0:
                return np.zeros(0, dtype=dtype)
            return np.frombuffer(data, dtype=record, offset=12 + 8 * dims)["value"]

    return ArrayLoader


def register_loaders(adapters: Any) -> None:
    """Make ``adapters`` (a connection's or cursor's) load bigint[] and integer[] as numpy."""
    adapters.register_loader(INT8_ARRAY_OID, _array_loader(">i8"))
    adapters.register_loader(INT4_ARRAY_OID, _array_loader(">i4"))
