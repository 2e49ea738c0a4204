"""What only the PostgreSQL store has to get right: its indexes really serve the
queries, dimensions change without ALTER TABLE, the schema is its own, threads
do not share transactions, and failures say what to do. The behaviour shared
with SQLite is in test_store_contract.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from memoryd.errors import InvalidInputError, StoreError
from memoryd.models import Event, Filters, MemoryRecord, State
from memoryd.settings import StoreSettings
from memoryd.store import open_store
from memoryd.store.postgres import PostgresStore
from tests import pgserver

pytestmark = pytest.mark.skipif(
    not pgserver.enabled(), reason="PostgreSQL tests run with MEMORYD_TEST_PG=1"
)


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[str]:
    url = pgserver.fresh_database(pg_url)
    yield url
    pgserver.drop_database(url)


@pytest.fixture
def pg(pg_db: str) -> Iterator[PostgresStore]:
    store = open_store(pg_db)
    assert isinstance(store, PostgresStore)
    yield store
    store.close()


def unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def records(vectors: np.ndarray, prefix: str = "r", **kw: object) -> list[MemoryRecord]:
    out = []
    for i, v in enumerate(vectors):
        user = kw.get("user_id") or ("alice" if i % 100 == 0 else "bob")
        r = MemoryRecord(id=f"{prefix}{i}", text=f"note number {i}", user_id=str(user))
        r.embedding = v
        out.append(r)
    return out


def plan(pg: PostgresStore, vector: np.ndarray, where: str = "") -> str:
    dim = vector.shape[-1]
    with psycopg.connect(pg._dsn) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        rows = conn.execute(
            f"EXPLAIN SELECT id FROM {pg.t_memories} WHERE vector_dims(embedding) = {dim}"
            f" {where} ORDER BY embedding::vector({dim}) <=> %s::vector({dim}) LIMIT 10",
            (vector,),
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def test_bulk_load_builds_the_index_once_at_the_end(pg: PostgresStore) -> None:
    rng = np.random.default_rng(6)
    with pg.bulk_load():
        pg.add(records(unit(rng, 50, 16), "a"))
        with pg.bulk_load():  # nested: still deferred
            pg.add(records(unit(rng, 50, 16), "b"))
        assert 16 not in pg._indexed_dims()
        assert pg.integrity_check() == ["no HNSW index for 16-dimensional vectors"]
        assert len(pg.vector_search(unit(rng, 1, 16)[0], Filters(), 10)) == 10  # exact scan
    assert 16 in pg._indexed_dims() and pg.integrity_check() == []
    with pytest.raises(RuntimeError), pg.bulk_load():
        pg.add(records(unit(rng, 5, 20), "c"))
        raise RuntimeError("killed mid-load")
    assert 20 not in pg._indexed_dims()  # committed rows, no index yet...
    pg.add(records(unit(rng, 1, 20), "d"))
    assert 20 in pg._indexed_dims()  # ...until the next write of that dimension


def test_hnsw_index_serves_vector_search_with_high_recall(pg: PostgresStore) -> None:
    rng = np.random.default_rng(7)
    vectors = unit(rng, 3000, 32)
    with pg.bulk_load():
        pg.add(records(vectors))
    with psycopg.connect(pg._dsn, autocommit=True) as conn:
        conn.execute(f"ANALYZE {pg.t_memories}")
    queries = unit(rng, 20, 32)
    assert "memories_hnsw_32" in plan(pg, queries[0])  # the expression index really matches
    found = 0
    for q in queries:
        exact = {f"r{i}" for i in np.argsort(-(vectors @ q))[:10]}
        hits = pg.vector_search(q, Filters(), 10)
        assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
        found += len(exact & {i for i, _ in hits})
    assert found / (10 * len(queries)) >= 0.95
    wide = pg.vector_search(queries[0], Filters(), 900)  # more than the session's ef_search
    assert pg.settings.ef_search < 900
    exact = [f"r{i}" for i in np.argsort(-(vectors @ queries[0]))[:900]]
    assert len(wide) == 900 and len({i for i, _ in wide} & set(exact)) >= 0.9 * 900


def test_selective_filter_still_fills_the_limit(pg: PostgresStore) -> None:
    rng = np.random.default_rng(8)
    vectors = unit(rng, 3000, 16)
    with pg.bulk_load():
        pg.add(records(vectors))  # alice owns 30 of 3000
    hits = pg.vector_search(unit(rng, 1, 16)[0], Filters(user_id="alice"), 20)
    assert len(hits) == 20 and all(int(i[1:]) % 100 == 0 for i, _ in hits)


def test_a_second_dimension_gets_its_own_index_and_never_mixes(pg: PostgresStore) -> None:
    rng = np.random.default_rng(9)
    small, large = unit(rng, 5, 8), unit(rng, 5, 12)
    pg.add(records(small, "s"))
    pg.add(records(large, "l"))  # a model change midway through `memoryd reindex`
    assert {i for i, _ in pg.vector_search(small[0], Filters(), 10)} == {f"s{i}" for i in range(5)}
    assert pg.vector_search(large[2], Filters(), 1)[0][0] == "l2"
    assert set(pg.vector_scores(large[2], ["s1", "l2"])) == {"l2"}
    assert pg._indexed_dims() >= {8, 12} and pg.integrity_check() == []


def test_index_created_in_a_rolled_back_transaction_is_recreated(pg: PostgresStore) -> None:
    rng = np.random.default_rng(10)
    with pytest.raises(RuntimeError), pg.atomic():
        pg.add(records(unit(rng, 2, 24), "x"))
        raise RuntimeError("boom")
    assert 24 not in pg._indexed_dims()
    pg.add(records(unit(rng, 2, 24), "y"))
    assert 24 in pg._indexed_dims() and pg.integrity_check() == []


@pytest.mark.parametrize(
    "query",
    [
        "it's o'clock \\ back'slash",
        "a & b | !c <-> (d) :* e:A",
        "or and not",
        "'; DROP SCHEMA memoryd CASCADE; --",
        "\u0000 nul",
    ],
)
def test_keyword_query_syntax_is_never_interpreted(pg: PostgresStore, query: str) -> None:
    r = MemoryRecord(
        id="m1", text="It's five o'clock: back up the slash and the ampersand", user_id="a"
    )
    r.embedding = np.ones(4, dtype=np.float32) / 2
    pg.add([r])
    hits = pg.keyword_search(query, Filters(), 5)
    assert all(0.0 <= s <= 1.0 for _, s in hits)
    assert pg.get("m1") is not None  # and nothing was dropped


def test_keyword_search_stems_and_ignores_stop_words(pg: PostgresStore) -> None:
    docs = ["The runners were running fast", "A quiet library", "the the the"]
    for n, text in enumerate(docs):
        r = MemoryRecord(id=f"d{n}", text=text, user_id="a")
        r.embedding = np.ones(4, dtype=np.float32) / 2
        pg.add([r])
    assert [i for i, _ in pg.keyword_search("run", Filters(), 5)] == ["d0"]
    # only stop words: they are the query (as on SQLite), and the memory of nothing else wins
    assert [i for i, _ in pg.keyword_search("the", Filters(), 5)] == ["d2", "d0"]
    assert pg.keyword_search("libraries", Filters(), 5)[0] == ("d1", 1.0)


def test_rare_words_outweigh_common_ones_once_analyzed(pg: PostgresStore) -> None:
    def note(n: int, text: str) -> MemoryRecord:
        r = MemoryRecord(id=f"k{n}", text=text, user_id="a")
        r.embedding = np.ones(4, dtype=np.float32) / 2
        return r

    common = [note(n, f"weekly meeting notes number {n}") for n in range(200)]
    with pg.bulk_load():  # ends with ANALYZE: the planner's word frequencies
        pg.add([*common, note(999, "the Zanzibar offsite")])
    hits = dict(pg.keyword_search("meeting in zanzibar", Filters(), 300))
    assert max(hits, key=hits.__getitem__) == "k999" and hits["k999"] == 1.0
    assert max(s for i, s in hits.items() if i != "k999") < 0.3  # "meeting" is everywhere


def test_another_users_words_do_not_change_my_keyword_ranking(pg: PostgresStore) -> None:
    """Word frequencies are counted over the searched scope, even after ANALYZE has
    given the planner store-wide statistics."""

    def note(n: int, text: str, user: str) -> MemoryRecord:
        r = MemoryRecord(id=f"k{n}", text=text, user_id=user)
        r.embedding = np.ones(4, dtype=np.float32) / 2
        return r

    mine = [note(1, "kubernetes upgrade on friday", "alice"), note(2, "ansible hosts", "alice")]
    with pg.bulk_load():
        pg.add(mine)
    alice = Filters(user_id="alice")
    before = pg.keyword_search("kubernetes ansible", alice, 10)
    with pg.bulk_load():  # bob makes "kubernetes" a common word store-wide
        pg.add([note(100 + n, f"kubernetes pods {n}", "bob") for n in range(200)])
    after = pg.keyword_search("kubernetes ansible", alice, 10)
    assert [i for i, _ in after] == [i for i, _ in before]
    assert [s for _, s in after] == pytest.approx([s for _, s in before], abs=1e-6)


def test_schemas_keep_two_stores_apart_in_one_database(pg_db: str) -> None:
    one = open_store(pg_db)
    two = open_store(pg_db, StoreSettings(postgres={"db_schema": "team_b"}))
    try:
        r = MemoryRecord(id="m1", text="only in the default schema", user_id="a")
        r.embedding = np.ones(4, dtype=np.float32) / 2
        one.add([r])
        assert two.get("m1") is None and two.count(Filters()) == 0
        with one.run_lock("job") as a, two.run_lock("job") as b:
            assert a and b  # locks are per schema too
    finally:
        one.close()
        two.close()


def test_refuses_a_schema_another_program_owns(pg_db: str) -> None:
    with psycopg.connect(pg_db, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA crm; CREATE TABLE crm.customers (id int)")
    with pytest.raises(StoreError, match="did not create") as info:
        open_store(pg_db, StoreSettings(postgres={"db_schema": "crm"}))
    assert "DB_SCHEMA" in (info.value.hint or "")


def test_threads_do_not_share_a_transaction(pg: PostgresStore) -> None:
    inside, release = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def writer() -> None:
        with pg.atomic():
            r = MemoryRecord(id="w1", text="uncommitted for now", user_id="a")
            r.embedding = np.ones(4, dtype=np.float32) / 2
            pg.add([r])
            seen["inside"] = pg.get("w1") is not None  # its own transaction sees it
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    assert inside.wait(10)
    seen["other thread"] = pg.get("w1")  # another thread, same handle: not yet
    release.set()
    thread.join(10)
    assert seen == {"inside": True, "other thread": None}
    assert pg.get("w1") is not None


def test_nul_in_context_is_a_clear_error_and_stores_nothing(pg: PostgresStore) -> None:
    r = MemoryRecord(id="n1", text="fine", context="bad\x00heading", user_id="a")
    r.embedding = np.ones(4, dtype=np.float32) / 2
    with pytest.raises(InvalidInputError) as info:
        pg.add([r])
    assert "NUL" in (info.value.hint or "")
    assert pg.get("n1") is None and pg.history("n1") == []


def test_unreachable_server_is_a_store_error_without_the_password() -> None:
    with pytest.raises(StoreError, match="cannot connect") as info:
        open_store(
            "postgresql://memoryd:hunter2@127.0.0.1:1/memoryd",
            StoreSettings(postgres={"connect_timeout_s": 2}),
        )
    assert "hunter2" not in str(info.value) and "***" in str(info.value)
    assert "running" in (info.value.hint or "")


def test_missing_driver_names_the_pip_line() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"  # as if it were not installed
        "from memoryd.errors import DependencyMissingError\n"
        "from memoryd.store import open_store\n"
        "try:\n"
        "    open_store('postgresql://u@127.0.0.1:1/db')\n"
        "except DependencyMissingError as e:\n"
        "    print(e.hint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "pip install 'memoryd[postgres]'"


def test_redacted_url_is_what_status_shows(pg_db: str) -> None:
    from memoryd.store.postgres import redact

    assert redact("postgresql://u:pw@h:5432/db") == "postgresql://u:***@h:5432/db"
    assert redact("postgresql://u@h/db") == "postgresql://u@h/db"
    store = open_store(pg_db.replace("postgresql://", "postgres://"))  # the alias works
    try:
        assert store.url == pg_db
    finally:
        store.close()


def test_missing_pgvector_says_who_must_install_it(pg_url: str) -> None:
    from urllib.parse import urlsplit, urlunsplit

    name = f"memoryd_t_novec_{os.getpid()}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        try:
            if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'memoryd_app'").fetchone():
                admin.execute("CREATE ROLE memoryd_app LOGIN")  # not a superuser
            admin.execute(f"CREATE DATABASE {name} OWNER memoryd_app TEMPLATE template0")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("this server does not let the tests create roles")
    parts = urlsplit(pg_url)
    url = urlunsplit(
        parts._replace(netloc=f"memoryd_app@{parts.hostname}:{parts.port}", path=f"/{name}")
    )
    try:
        with pytest.raises(StoreError, match="pgvector extension is not installed") as info:
            open_store(url)
        assert "CREATE EXTENSION vector" in (info.value.hint or "")
    finally:
        pgserver.drop_database(urlunsplit(parts._replace(path=f"/{name}")))


def test_a_server_that_goes_away_is_a_store_error(tmp_path: object) -> None:
    url, stop = pgserver.start_pg(str(tmp_path))
    try:
        store = open_store(url, StoreSettings(postgres={"connect_timeout_s": 2}))
        r = MemoryRecord(id="m1", text="written before the outage", user_id="a")
        r.embedding = np.ones(4, dtype=np.float32) / 2
        store.add([r])
        stop()  # the database server is gone
        with pytest.raises(StoreError) as info:
            store.get("m1")
        assert "PostgreSQL" in str(info.value) or "no connection" in str(info.value)
        assert "running" in (info.value.hint or "") or "retry" in (info.value.hint or "")
        store.close()
    finally:
        stop()


def test_named_migrations_apply_once_and_catch_up_old_databases(pg_db: str) -> None:
    """A database from before ``003_keyword_postings`` (a tsvector column, no postings)
    upgrades in place when a newer memoryd opens it: every memory is analysed again and
    searches find what they found before, with the same scores."""
    store = open_store(pg_db)
    records = [
        MemoryRecord(id=f"u{n}", text=text, user_id=user, context="## Trips" if n % 2 else None)
        for n, (user, text) in enumerate(
            [
                ("alice", "Flew to Lisbon for the conference"),
                ("alice", "The Lisbon hotel was near the river"),
                ("alice", "Booked a train to Porto"),
                ("bob", "Lisbon again, then Madrid"),
            ]
        )
    ]
    store.add(records)
    store.set_state("u2", State.DELETED, event=Event.DELETE)
    queries = [("lisbon river", Filters(user_id="alice")), ("trips lisbon", Filters())]
    before = [store.keyword_search(q, f, 10) for q, f in queries]
    store.close()
    with psycopg.connect(pg_db, autocommit=True) as conn:  # as a database from older code
        conn.execute("DROP TRIGGER memories_kw ON memoryd.memories")
        for event in ("deleted", "updated"):
            conn.execute(f"DROP TRIGGER memories_kw_unblock_{event} ON memoryd.memories")
            conn.execute(f"DROP FUNCTION memoryd.kw_unblock_{event}()")
        conn.execute("DROP FUNCTION memoryd.kw_sync()")
        conn.execute("DROP TABLE memoryd.kw_postings, memoryd.kw_stats, memoryd.kw_blocks")
        conn.execute("ALTER TABLE memoryd.memories DROP COLUMN kw")
        conn.execute("ALTER TABLE memoryd.memories ADD COLUMN tsv tsvector NOT NULL DEFAULT ''")
        conn.execute("CREATE INDEX memories_tsv ON memoryd.memories USING gin (tsv)")
        conn.execute("DROP INDEX memoryd.memories_source_state")
        conn.execute("DELETE FROM memoryd.migrations WHERE name <> '001_initial'")
    store = open_store(pg_db)
    after = [store.keyword_search(q, f, 10) for q, f in queries]
    store.close()
    open_store(pg_db).close()  # and again: nothing left to do
    with psycopg.connect(pg_db) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM memoryd.migrations ORDER BY name")]
        columns = {
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = 'memoryd' AND table_name = 'memories'"
            )
        }
    assert names == [
        "001_initial",
        "002_gin_fastupdate_off",
        "003_keyword_postings",
        "004_vectors_in_row",
        "005_source_state",
        "006_keyword_blocks",
    ]
    assert "kw" in columns and "tsv" not in columns
    assert before[0] and before[1] and "u2" not in dict(before[1])
    assert after == before


def test_a_small_scope_is_scanned_exactly_and_a_large_one_through_the_graph(pg_db: str) -> None:
    """The scope's size comes from the keyword statistics; below ``exact_scan_below`` the
    vector search is an exact scan (the true top 10, whatever the graph would find)."""
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(600, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = []
    for n, v in enumerate(vectors):
        r = MemoryRecord(id=f"v{n}", text=f"note {n}", user_id="small" if n < 150 else "large")
        r.embedding = v
        records.append(r)
    small = Filters(user_id="small")
    exact = open_store(pg_db, StoreSettings(postgres={"exact_scan_below": 200}))
    graph = open_store(pg_db, StoreSettings(postgres={"exact_scan_below": 0}))
    try:
        exact.add(records)
        assert exact.scope_size(small) == 150  # type: ignore[attr-defined]
        assert exact.scope_size(Filters(user_id="large")) == 450  # type: ignore[attr-defined]
        assert exact.scope_size(Filters(user_id="small", categories=["x"])) is None  # type: ignore[attr-defined]
        for q in rng.normal(size=(20, 32)).astype(np.float32):
            q /= np.linalg.norm(q)
            truth = [f"v{i}" for i in np.argsort(-(vectors[:150] @ q), kind="stable")[:10]]
            assert [i for i, _ in exact.vector_search(q, small, 10)] == truth
            via_graph = {i for i, _ in graph.vector_search(q, small, 10)}
            assert via_graph <= {f"v{i}" for i in range(150)}  # filtered, whichever path
    finally:
        exact.close()
        graph.close()


def test_candidates_come_with_the_facts_ranking_reads_on_every_path(pg_db: str) -> None:
    """A search ranks its candidates by their RankFacts; the store reads them with the
    candidates (no round trip of their own), and they are exactly what ``rank_facts``
    answers: on the keyword side (scoped by the statistics or not), on the vector side
    (exact scan or graph) and for the keyword hits' vector scores."""
    rng = np.random.default_rng(11)
    vectors = unit(rng, 300, 16)
    records = []
    for n, v in enumerate(vectors):
        r = MemoryRecord(
            id=f"f{n}",
            text=f"deploy note {n} about the staging cluster" + (" ?" if n % 7 == 0 else ""),
            user_id="small" if n < 60 else "large",
            agent_id="ops" if n % 2 else None,
            category="infra" if n % 3 else None,
            metadata={"evergreen": n % 5 == 0, "speaker": "Ravi", "turn": n, "session": "s1"}
            if n % 4 == 0
            else {"person": "Nadia"},
        )
        r.embedding = v
        records.append(r)
    exact = open_store(pg_db, StoreSettings(postgres={"exact_scan_below": 100}))
    graph = open_store(pg_db, StoreSettings(postgres={"exact_scan_below": 0}))
    try:
        exact.add(records)
        q = vectors[3]
        scopes = [
            Filters(user_id="small"),  # exact scan, size read with it
            Filters(user_id="large"),  # the graph
            Filters(user_id="small", categories=["infra"]),  # no statistics: joined
            Filters(user_id="large", agent_id="ops"),
        ]
        checked = 0
        for store in (exact, graph):
            for scope in scopes:
                for find in (
                    lambda f, st=store, sc=scope: st.keyword_search(
                        "staging deploy", sc, 20, facts=f
                    ),
                    lambda f, st=store, sc=scope: st.vector_search(q, sc, 20, facts=f),
                ):
                    facts: dict[str, object] = {}
                    hits = find(facts)
                    assert hits
                    assert facts == store.rank_facts([i for i, _ in hits])
                    checked += len(hits)
            facts = {}
            scores = store.vector_scores(q, ["f1", "f2", "f200", "gone"], facts=facts)
            assert set(scores) == set(facts) == {"f1", "f2", "f200"}
            assert facts == store.rank_facts(["f1", "f2", "f200"])
        assert checked > 100
        turn = exact.rank_facts(["f0"])["f0"]  # the facts compared are not all defaults
        assert turn.turn is not None and turn.evergreen and turn.names == {"ravi"}
    finally:
        exact.close()
        graph.close()


def test_a_vector_stays_in_its_row_when_the_row_outgrows_a_page_share(
    pg: PostgresStore, pg_db: str
) -> None:
    """pgvector stores vectors out of line by default; a memory of a 384-dimension vector
    and a few hundred characters passes the 2 kB toast threshold (the vector is its
    largest value, so the first to go), and an exact scan then
    read every vector from the toast table. Text and keyword counts move out instead."""
    rng = np.random.default_rng(3)
    words = " ".join(f"w{n:x}{rng.integers(1 << 30):x}" for n in range(45))  # ~500 bytes
    rows = records(unit(rng, 3, 384), prefix="t", user_id="toast")
    for r in rows:
        r.text = f"{r.text} {words}"
    pg.add(rows)
    with psycopg.connect(pg_db) as conn:
        found = conn.execute(
            "SELECT pg_column_toast_chunk_id(embedding), pg_column_size(embedding),"
            " pg_column_toast_chunk_id(kw) IS NOT NULL OR pg_column_toast_chunk_id(text) IS NOT NULL"
            " FROM memoryd.memories WHERE user_id = 'toast'"
        ).fetchall()
    assert len(found) == 3
    for vector_chunk, size, others_out in found:
        assert others_out  # the row was too big: something had to leave it
        assert vector_chunk is None and size >= 384 * 4  # not the vector
    q = unit(rng, 1, 384)[0]
    assert len(pg.vector_search(q, Filters(user_id="toast"), 3)) == 3


def test_batches_over_several_scopes_in_any_order_never_deadlock(pg_db: str) -> None:
    """Every insert updates its scope's keyword statistics row, locked to the end of the
    transaction: two servers writing batches for the same users in opposite orders would
    wait on each other (PostgreSQL then aborts one). Rows go in scope order instead."""
    stores = [open_store(pg_db), open_store(pg_db)]
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def write(n: int) -> None:
        users = ["ada", "bob", "cyd"] if n == 0 else ["cyd", "bob", "ada"]
        try:
            start.wait()
            for i in range(25):
                batch = [
                    MemoryRecord(id=f"w{n}-{i}-{u}", text=f"note {i} from writer {n}", user_id=u)
                    for u in users
                ]
                stores[n].add(batch)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for s in stores:
        s.close()
    assert not errors, errors
    check = open_store(pg_db)
    try:
        assert check.scope_size(Filters(user_id="ada")) == 50  # type: ignore[attr-defined]
    finally:
        check.close()


def _own_graph_store(pg_db: str) -> PostgresStore:
    store = open_store(
        pg_db, StoreSettings(postgres={"exact_scan_below": 50, "scope_index_above": 200})
    )
    assert isinstance(store, PostgresStore)
    return store


def _index_state(pg_db: str, name: str) -> tuple[bool, str] | None:
    """(valid, predicate) of index ``name``, or None."""
    with psycopg.connect(pg_db) as conn:
        row = conn.execute(
            "SELECT i.indisvalid, pg_get_expr(i.indpred, i.indrelid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = %s",
            (name,),
        ).fetchone()
    return None if row is None else (bool(row[0]), str(row[1]))


def test_a_large_user_gets_a_graph_of_their_own_that_the_planner_walks(pg_db: str) -> None:
    """A user past ``scope_index_above`` gets a partial HNSW index of their own, started
    in the background by a search; once valid, their searches walk it (EXPLAIN names
    it) and find what an exact scan finds. A quote in the user id stays a literal."""
    rng = np.random.default_rng(34)
    big, small = "o'brien", "sam"
    vectors = unit(rng, 700, 32)
    rows = records(vectors[:400], prefix="b", user_id=big)
    rows += records(vectors[400:], prefix="o", user_id=small)  # 300: over the threshold too
    store = _own_graph_store(pg_db)
    name = store.scope_index_name(32, big)
    try:
        store.add(rows)
        q = unit(rng, 1, 32)[0]
        scope = Filters(user_id=big)
        assert "memories_hnsw_32 " in store.explain_vector_search(q, scope) + " "  # shared
        assert _index_state(pg_db, name) is None
        store.vector_search(q, scope, 10)  # finds it missing: the build starts
        for _ in range(600):
            if name in store._scope_indexes:
                break
            threading.Event().wait(0.1)
        assert _index_state(pg_db, name) == (
            True,
            "((vector_dims(embedding) = 32) AND (user_id = 'o''brien'::text))",
        )
        assert name in store.explain_vector_search(q, scope)
        # another user's search never walks it
        assert name not in store.explain_vector_search(q, Filters(user_id=small))
        for q in unit(rng, 20, 32):
            truth = [f"b{i}" for i in np.argsort(-(vectors[:400] @ q), kind="stable")[:10]]
            assert [i for i, _ in store.vector_search(q, scope, 10)] == truth
    finally:
        store.close()
    reopened = _own_graph_store(pg_db)  # a store opened later finds it, and the shared one
    try:
        assert reopened._dims == {32} and name in reopened._scope_indexes
        assert name in reopened.explain_vector_search(q, scope)
        assert reopened.integrity_check() == []
    finally:
        reopened.close()


def test_an_interrupted_build_of_a_users_graph_is_dropped_and_built_again(pg_db: str) -> None:
    """A concurrent build that stops half way (a server killed, a timeout) leaves an
    invalid index the planner ignores; the next build drops it and builds it whole."""
    rng = np.random.default_rng(35)
    store = _own_graph_store(pg_db)
    name = store.scope_index_name(32, "ann")
    try:
        store.add(records(unit(rng, 250, 32), prefix="a", user_id="ann"))
        with (
            psycopg.connect(pg_db, autocommit=True) as holder,
            psycopg.connect(pg_db, autocommit=True) as builder,
        ):
            holder.execute("BEGIN")  # a writer's open transaction: the build waits for it
            holder.execute("UPDATE memoryd.memories SET text = text WHERE id = 'a0'")
            builder.execute("SET statement_timeout = '500ms'")
            with pytest.raises(psycopg.errors.QueryCanceled):
                builder.execute(store._index_sql(32, name, "'ann'"))
            holder.execute("ROLLBACK")
        assert _index_state(pg_db, name) == (
            False,
            "((vector_dims(embedding) = 32) AND (user_id = 'ann'::text))",
        )
        q = unit(rng, 1, 32)[0]
        assert name not in store.explain_vector_search(q, Filters(user_id="ann"))
        assert any(name in problem for problem in store.integrity_check())
        assert store.build_scope_index("ann", 32)
        assert store.integrity_check() == []
        assert _index_state(pg_db, name) == (
            True,
            "((vector_dims(embedding) = 32) AND (user_id = 'ann'::text))",
        )
        assert name in store.explain_vector_search(q, Filters(user_id="ann"))
    finally:
        store.close()


def test_bulk_load_gives_large_users_their_own_graph(pg_db: str) -> None:
    rng = np.random.default_rng(36)
    store = _own_graph_store(pg_db)
    try:
        with store.bulk_load():
            store.add(records(unit(rng, 260, 32), prefix="l", user_id="lea"))
            store.add(records(unit(rng, 60, 32), prefix="t", user_id="tim"))
        assert _index_state(pg_db, store.scope_index_name(32, "lea")) is not None
        assert _index_state(pg_db, store.scope_index_name(32, "tim")) is None  # under 200
    finally:
        store.close()
