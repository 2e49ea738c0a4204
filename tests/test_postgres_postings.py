"""Packed keyword postings on PostgreSQL (store/pg_postings.py): a big user's postings of
a common word move from rows into blocks, and nothing a search or a writer sees changes:
the same hits with the same scores as the embedded store, through deletes, edits, state
changes and purges, and beside concurrent writers."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memoryd.errors import InvalidInputError
from memoryd.models import Event, Filters, MemoryRecord, State
from memoryd.settings import StoreSettings
from memoryd.store import Store, open_store
from memoryd.store.postgres import PostgresStore
from tests import pgserver

pytestmark = pytest.mark.skipif(
    not pgserver.enabled(), reason="PostgreSQL tests run with MEMORYD_TEST_PG=1"
)

WORDS = [
    "deploy",
    "staging",
    "postgres",
    "port",
    "cache",
    "redis",
    "alert",
    "pager",
    "review",
    "release",
]


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[str]:
    url = pgserver.fresh_database(pg_url)
    yield url
    pgserver.drop_database(url)


def _packing_store(url: str, above: int = 5) -> PostgresStore:
    store = open_store(url, StoreSettings(postgres={"pack_postings_above": above}))
    assert isinstance(store, PostgresStore)
    return store


def _notes(n: int, seed: int, prefix: str = "m") -> list[MemoryRecord]:
    """``n`` memories of two users over two agents and a run, sharing common words."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [*rng.sample(WORDS, 4), f"ticket{i % 7}"]
        out.append(
            MemoryRecord(
                id=f"{prefix}{i}",
                text=" ".join(words) + (" " + rng.choice(WORDS) if i % 3 == 0 else ""),
                user_id="alice" if i % 5 else "bob",
                agent_id="ops" if i % 2 else "dev",
                run_id="2026-03-01" if i % 4 == 0 else None,
                category="fact" if i % 3 else None,
            )
        )
    return out


QUERIES = [
    ("deploy staging", Filters(user_id="alice")),
    ("redis cache pager ticket3", Filters(user_id="alice", agent_id="ops")),
    ("release review alert", Filters(user_id="alice", states=[State.ACTIVE, State.SUPERSEDED])),
    ("postgres port", Filters(user_id="bob")),
    ("deploy ticket1", Filters(user_id="alice", long_term_only=True)),
    ("staging cache", Filters(user_id="alice", categories=["fact"])),  # not in the statistics
]


def _search(store: Store) -> list[list[tuple[str, float]]]:
    return [store.keyword_search(q, f, 500) for q, f in QUERIES]  # every match


def _assert_same(
    got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]], tol: float
) -> None:
    """The same matches with the same scores; within ``tol`` (the two stores sum in other
    orders and break ties by their own row order, so they are compared as sets)."""
    for hits, expected in zip(got, want, strict=True):
        assert dict(hits).keys() == dict(expected).keys()
        for i, score in expected:
            assert dict(hits)[i] == pytest.approx(score, abs=tol)


def _postings(url: str) -> tuple[Counter[tuple[object, ...]], Counter[tuple[object, ...]], int]:
    """(postings held as rows or in blocks, postings the memories' terms call for, rows
    left) as (term, memory, agent, run, state) multisets."""
    with psycopg.connect(url) as conn:
        held = Counter(
            conn.execute(
                "SELECT term, seq, agent_id, run_id, state FROM memoryd.kw_postings"
                " UNION ALL SELECT b.term, u.seq, b.agent_id, b.run_id, b.state"
                " FROM memoryd.kw_blocks b CROSS JOIN LATERAL unnest(b.seqs) AS u(seq)"
            ).fetchall()
        )
        wanted = Counter(
            conn.execute(
                "SELECT k, seq, agent_id, run_id, state FROM memoryd.memories"
                " CROSS JOIN LATERAL jsonb_object_keys(kw) AS k"
            ).fetchall()
        )
        rows = conn.execute("SELECT count(*) FROM memoryd.kw_postings").fetchone()
    assert rows is not None
    return held, wanted, int(rows[0])


def test_packed_postings_score_as_the_embedded_store_through_every_change(
    pg_db: str, tmp_path: Path
) -> None:
    pg = _packing_store(pg_db, above=0)  # packed only when told, below
    lite = open_store(str(tmp_path / "m.db"))
    try:
        for store in (pg, lite):
            store.add(_notes(120, seed=1))
        as_rows = _search(pg)
        _assert_same(as_rows, _search(lite), 1e-6)
        pg.settings.pack_postings_above = 5
        assert pg.pack_postings() > 0
        held, wanted, rows = _postings(pg_db)
        assert held == wanted and rows < sum(wanted.values()) // 4  # most were packed
        assert _search(pg) == as_rows  # packed: the very same answer

        # every way a posting leaves or moves, on both stores: a delete, a state change
        # (supersede, archive), an edit of the text, an agent change, a purge
        for store in (pg, lite):
            store.set_state("m1", State.DELETED, event=Event.DELETE)
            store.set_state("m2", State.SUPERSEDED, event=Event.UPDATE)
            store.set_state("m3", State.ARCHIVED, event=Event.UPDATE)
            edited = store.get("m4")
            assert edited is not None
            edited.text = "release notes for the redis upgrade"
            store.update(edited)
            moved = store.get("m6")
            assert moved is not None
            moved.agent_id = "ops" if moved.agent_id == "dev" else "dev"
            store.update(moved)
            store.purge(Filters(user_id="alice", run_id="2026-03-01"))
            store.add(_notes(30, seed=2, prefix="n"))  # new rows beside the blocks
        held, wanted, _ = _postings(pg_db)
        assert held == wanted
        _assert_same(_search(pg), _search(lite), 1e-6)
        assert pg.pack_postings() > 0  # the new rows pack too, and emptied blocks go
        held, wanted, _ = _postings(pg_db)
        assert held == wanted
        _assert_same(_search(pg), _search(lite), 1e-6)
    finally:
        pg.close()
        lite.close()


def test_a_search_packs_a_big_users_common_words_in_the_background(pg_db: str) -> None:
    store = _packing_store(pg_db, above=20)
    try:
        store.add(_notes(200, seed=3))
        before = store.keyword_search("deploy staging", Filters(user_id="alice"), 10)
        assert before
    finally:
        store.close()  # waits for the packing the search started
    with psycopg.connect(pg_db) as conn:
        packed = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT term FROM memoryd.kw_blocks WHERE user_id = 'alice'"
            )
        }
    assert packed == {"deploy", "stage"}  # the query's words with more than 20 rows; stems
    held, wanted, _ = _postings(pg_db)
    assert held == wanted
    again = open_store(pg_db)
    try:
        assert again.keyword_search("deploy staging", Filters(user_id="alice"), 10) == before
    finally:
        again.close()


def test_packing_beside_writers_loses_nothing_and_never_deadlocks(pg_db: str) -> None:
    """Writers add, edit, delete and move memories while another server packs the same
    user's postings over and over: no error (a deadlock would be one), and afterwards every
    posting is held exactly once, as a row or in a block."""
    packer, writers = _packing_store(pg_db, above=3), [open_store(pg_db), open_store(pg_db)]
    for store in writers:
        store.add(_notes(60, seed=len(writers), prefix=f"w{id(store)}-"))
    errors: list[BaseException] = []
    done = threading.Event()

    def pack() -> None:
        try:
            while not done.is_set():
                packer.pack_postings("alice", ["deploy", "stage", "redi", "cach", "ticket1"])
        except BaseException as exc:  # reported below
            errors.append(exc)

    def write(n: int) -> None:
        store, rng = writers[n], random.Random(n)
        try:
            for i in range(40):
                store.add(_notes(3, seed=100 * n + i, prefix=f"x{n}-{i}-"))
                victim = store.list(Filters(user_id="alice"), limit=50)
                if not victim:
                    continue
                one = rng.choice(victim)
                if i % 3 == 0:
                    store.set_state(one.id, State.SUPERSEDED, event=Event.UPDATE)
                elif i % 3 == 1:
                    one.text = f"{one.text} deploy again"
                    store.update(one)
                else:
                    store.purge(Filters(ids=[one.id]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=pack)] + [
        threading.Thread(target=write, args=(n,)) for n in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join(300)
    done.set()
    threads[0].join(60)
    for store in (packer, *writers):
        store.close()
    assert not errors, errors
    held, wanted, _ = _postings(pg_db)
    assert held == wanted


def test_packing_one_user_leaves_the_other_users_rows(pg_db: str) -> None:
    store = _packing_store(pg_db, above=5)
    try:
        store.add(_notes(120, seed=4))
        assert store.pack_postings("bob") > 0
        with psycopg.connect(pg_db) as conn:
            users = {r[0] for r in conn.execute("SELECT DISTINCT user_id FROM memoryd.kw_blocks")}
        assert users == {"bob"}
        with pytest.raises(InvalidInputError, match="user"):
            store.pack_postings(terms=["deploy"])  # whose?
    finally:
        store.close()
    held, wanted, _ = _postings(pg_db)
    assert held == wanted
