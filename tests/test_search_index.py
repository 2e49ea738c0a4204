"""The in-memory search index (store/vectors.py + store/keywords.py) on its own,
and the SQLite store built on it: BM25 scoring, dead rows, compaction, and an
old file with an FTS5 table upgraded in place."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memoryd.models import Event, Filters, MemoryRecord, Origin, State
from memoryd.store.keywords import K1, B, KeywordIndex
from memoryd.store.sqlite import APP_ID, MIGRATIONS, SQLiteStore
from memoryd.store.vectors import COARSE_MIN_ROWS, VectorIndex

DIM = 8


def unit(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i % DIM] = 1.0
    return v


def attrs(user: str = "alice") -> dict[str, object]:
    return {"user_id": user, "state": "active", "created_at": 0.0}


def test_bm25_matches_the_formula() -> None:
    docs = ["the cat sat", "the cat ate the cat food", "a dog barked loudly at night"]
    idx = KeywordIndex()
    for row, text in enumerate(docs):
        idx.add(row, text)
    scores = idx.scores("cats", 3)
    assert scores is not None
    lengths = [3, 6, 6]
    avgdl = sum(lengths) / 3
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    for row, tf in ((0, 1), (1, 2)):
        norm = K1 * (1 - B + B * lengths[row] / avgdl)
        assert scores[row] == pytest.approx(idf * tf * (K1 + 1) / (tf + norm), rel=1e-5)
    assert scores[2] == 0.0
    assert idx.scores("the a at", 3) is not None  # only stopwords: they are kept then
    assert idx.scores("zebra", 3) is None
    # the ceiling counts the query's terms found in scope, each at BM25's upper bound
    found = idx.scored("cats bark zebras", 3)
    assert found is not None and list(found.rows) == [0, 1, 2]
    idf_bark = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    assert found.ceiling == pytest.approx((idf + idf_bark) * (K1 + 1), rel=1e-6)


def test_bulk_load_and_one_by_one_agree() -> None:
    docs = [
        f"note {i} about {'deploys' if i % 3 else 'running'} on host {i % 7}" for i in range(50)
    ]
    one, bulk = KeywordIndex(), KeywordIndex()
    for row, text in enumerate(docs):
        one.add(row, text)
    bulk.add_many(list(range(50)), docs)
    for q in ("deploy host", "run 3", "notes about hosts"):
        a, b = one.scores(q, 50), bulk.scores(q, 50)
        assert a is not None and b is not None
        assert np.allclose(a, b)


def test_analysis_folds_case_accents_and_stems() -> None:
    idx = KeywordIndex()
    idx.add(0, "Café Ångström RUNNING")
    idx.add(1, "日本語のメモ")
    for q, row in (("cafe", 0), ("angstrom", 0), ("runs", 0), ("日本語のメモ", 1)):
        s = idx.scores(q, 2)
        assert s is not None and int(np.argmax(s)) == row and s[1 - row] == 0.0


def test_dead_rows_stop_scoring_and_counting() -> None:
    index = VectorIndex(DIM)
    index.upsert("a", unit(0), attrs(), "deploy the api")
    index.upsert("b", unit(1), attrs(), "deploy the web app")
    index.upsert("c", unit(2), attrs(), "lunch with bob")
    index.remove("b")
    assert [i for i, _ in index.keyword_search("deploy", None, 10)] == ["a"]
    assert "b" not in [i for i, _ in index.search(unit(1), None, 10)]
    # the text changed: the old words no longer find it, the new ones do
    index.upsert("a", unit(0), attrs(), "dinner with carol")
    assert index.keyword_search("deploy", None, 10) == []
    assert [i for i, _ in index.keyword_search("dinner", None, 10)] == ["a"]
    # same text, new scope: updated in place, found under the new user only
    index.upsert("c", unit(2), attrs("bob"), "lunch with bob")
    alice = index.mask(Filters(user_id="alice"))
    assert index.keyword_search("lunch", alice, 10) == []
    assert index.keyword_search("lunch", index.mask(Filters(user_id="bob")), 10)[0][0] == "c"
    assert index.live_ids() == {"a", "c"}


def test_compaction_keeps_every_live_row_searchable() -> None:
    index = VectorIndex(DIM)
    n = 6000
    for i in range(n):
        index.upsert(f"m{i}", unit(i), attrs("alice" if i % 2 else "bob"), f"word{i} common")
    for i in range(0, n, 3):  # a third dies: more than a quarter, so it compacts
        index.remove(f"m{i}")
    assert len(index.ids) < n  # compacted
    live = {f"m{i}" for i in range(n) if i % 3}
    assert index.live_ids() == live and len(index) == len(live)
    for i in (1, 2, 3000, 5999):
        hits = index.keyword_search(f"word{i}", None, 5)
        assert [h for h, _ in hits] == ([] if i % 3 == 0 else [f"m{i}"])
    alice = index.mask(Filters(user_id="alice"))
    found = {h for h, _ in index.keyword_search("common", alice, n)}
    assert found == {f"m{i}" for i in range(n) if i % 3 and i % 2}
    # document frequency counts live rows only: "common" is in every one of them
    s = index.keywords.scores("common", len(index.ids))
    assert s is not None
    idf = math.log(1 + (len(live) - len(live) + 0.5) / (len(live) + 0.5))
    assert float(s.max()) == pytest.approx(idf * (K1 + 1) / (1 + K1), rel=1e-4)


def test_keyword_only_rows_are_found_by_bm25_not_by_vectors() -> None:
    index = VectorIndex(DIM)
    index.upsert("v", unit(0), attrs(), "alpha")
    index.upsert("k", None, attrs(), "alpha beta")
    assert [i for i, _ in index.search(unit(0), None, 10)] == ["v"]
    assert {i for i, _ in index.keyword_search("alpha", None, 10)} == {"v", "k"}
    assert index.scores(unit(0), ["k", "v"]) == {"v": 1.0}


def rec(i: int, text: str) -> MemoryRecord:
    return MemoryRecord(
        id=f"m{i}", text=text, user_id="alice", origin=Origin.API, embedding=unit(i)
    )


def test_old_file_with_fts5_is_upgraded_and_searchable(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA application_id={APP_ID}")
    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("BEGIN")
    for name, migration in MIGRATIONS[:2]:  # what the previous release created
        migration(db)
        db.execute("INSERT INTO migrations VALUES (?, 0)", (name,))
    db.execute(  # a row written through the old FTS5 triggers
        "INSERT INTO memories (id, text, index_text, user_id, origin, created_at, updated_at,"
        " hash, embedding) VALUES ('m1', 'the canary deploy', 'the canary deploy', 'alice',"
        " 'api', 0, 0, 'h1', ?)",
        (unit(1).tobytes(),),
    )
    db.execute("COMMIT")
    db.close()
    store = SQLiteStore(f"sqlite:///{path}")
    tables = {r[0] for r in store._db.execute("SELECT name FROM sqlite_master")}
    assert not any(t.startswith("memories_fts") for t in tables)
    store.add([rec(2, "bob likes tea, not canary yellow")])
    assert [i for i, _ in store.keyword_search("canary deploy", Filters(), 5)] == ["m1", "m2"]
    assert store.vector_search(unit(1), Filters(), 1)[0][0] == "m1"
    store.set_state("m1", State.ARCHIVED, event=Event.ARCHIVE)
    assert [i for i, _ in store.keyword_search("canary", Filters(), 5)] == ["m2"]
    assert store.integrity_check() == []
    store.close()


def test_two_stage_search_agrees_with_exact_search() -> None:
    """Above COARSE_MIN_ROWS the vector side shortlists by a projection, then re-scores."""
    rng = np.random.default_rng(7)
    n, dim = COARSE_MIN_ROWS + 5000, 384
    topics = rng.normal(size=(48, dim)).astype(np.float32)  # embeddings have structure
    vecs = rng.normal(size=(n, 48)).astype(np.float32) @ topics
    vecs += 0.3 * rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = VectorIndex(dim)
    users = ["alice" if i % 5 else "bob" for i in range(n)]
    index.load_block(
        [f"m{i}" for i in range(n)],
        vecs,
        np.ones(n, dtype=bool),
        {"user_id": users, "state": ["active"] * n},
        np.zeros(n),
        [""] * n,
    )
    agree = []
    for q in rng.choice(n, size=30, replace=False):
        query = vecs[q] + 0.2 * rng.normal(size=dim).astype(np.float32) / np.sqrt(dim)
        query /= np.linalg.norm(query)
        exact = np.argsort(-(vecs @ query))[:10]
        got = index.search(query, None, 10)
        assert got[0][0] == f"m{exact[0]}"
        agree.append(len({f"m{i}" for i in exact} & {i for i, _ in got}) / 10)
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    assert index._proj is not None  # the two-stage path ran
    assert float(np.mean(agree)) >= 0.95
    # a small scope is searched exactly: every hit is bob's, the best is the true best
    bob = index.mask(Filters(user_id="bob"))
    hits = index.search(vecs[5], bob, 10)
    # two-stage indexes keep float16 vectors: scores are exact to ~1e-3
    assert hits[0] == ("m5", pytest.approx(1.0, abs=1e-3)) and all(
        int(i[1:]) % 5 == 0 for i, _ in hits
    )
    # rows added after the fit are projected too
    index.upsert("new", vecs[3], attrs(), "")
    assert {i for i, _ in index.search(vecs[3], None, 2)} == {"m3", "new"}


def test_a_small_scope_is_searched_on_its_own_rows_with_the_same_answers() -> None:
    """One user among many: the vector side scores only that user's rows (gathered),
    exactly below COARSE_MIN_ROWS and two-stage above it, and finds what a full
    exact scan restricted to the user finds."""
    rng = np.random.default_rng(5)
    n, dim = 90_000, 128
    topics = rng.normal(size=(32, dim)).astype(np.float32)
    vecs = rng.normal(size=(n, 32)).astype(np.float32) @ topics
    vecs += 0.3 * rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    i = np.arange(n)
    users = np.where((i % 4 == 0) & (i < 84_000), "big", "other").astype(object)  # 21,000
    users[np.arange(1, n, 180)] = "small"  # 500 rows
    index = VectorIndex(dim)
    index.load_block(
        [f"m{i}" for i in range(n)],
        vecs,
        np.ones(n, dtype=bool),
        {"user_id": list(users), "state": ["active"] * n},
        np.zeros(n),
        [""] * n,
    )
    for user, regime in (("small", "exact"), ("big", "two-stage")):
        rows = np.flatnonzero(users == user)
        assert rows.size * 4 < n  # under a quarter of the index: gathered
        assert (rows.size >= COARSE_MIN_ROWS) == (regime == "two-stage")
        mask = index.mask(Filters(user_id=user))
        agree = []
        for q in rng.choice(rows, size=20, replace=False):
            query = vecs[q] + 0.1 * rng.normal(size=dim).astype(np.float32) / np.sqrt(dim)
            query /= np.linalg.norm(query)
            exact = rows[np.argsort(-(vecs[rows] @ query))[:10]]
            got = index.search(query, mask, 10)
            assert {int(i[1:]) for i, _ in got} <= set(rows.tolist())
            assert got[0][0] == f"m{exact[0]}"
            agree.append(len({f"m{i}" for i in exact} & {i for i, _ in got}) / 10)
        assert float(np.mean(agree)) == 1.0 if regime == "exact" else np.mean(agree) >= 0.95
