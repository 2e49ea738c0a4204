"""The search index saved beside an SQLite store (store/snapshot.py): a process that
opens the store starts from it, replays only what was written since, and falls back
to a full build whenever the snapshot cannot be trusted."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from memoryd.models import Event, Filters, MemoryRecord, Origin, State
from memoryd.settings import StoreSettings
from memoryd.store import snapshot
from memoryd.store.sqlite import SNAPSHOT_AFTER, SQLiteStore
from memoryd.store.vectors import COARSE_MIN_ROWS, VectorIndex

DIM = 16
WORDS = [
    "river",
    "lantern",
    "copper",
    "orchard",
    "violin",
    "harbor",
    "meadow",
    "glacier",
    "falcon",
    "ember",
]


def vec(i: int) -> np.ndarray:
    v = np.random.default_rng(i).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def text(i: int) -> str:
    return f"note {i}: {WORDS[i % 10]} {WORDS[(i * 3) % 10]} and {WORDS[(i * 7) % 10]} item{i}"


def rec(i: int, user: str | None = None, txt: str | None = None) -> MemoryRecord:
    return MemoryRecord(
        id=f"m{i}",
        text=txt or text(i),
        user_id=user or ("alice" if i % 3 else "bob"),
        category="work" if i % 2 else None,
        origin=Origin.API,
        embedding=vec(i),
    )


QUERIES = ["river lantern", "copper item7", "falcon ember meadow", "item12 harbor"]
SCOPES = [Filters(), Filters(user_id="alice"), Filters(user_id="bob", categories=["work"])]


def results(store: SQLiteStore) -> list[object]:
    out: list[object] = []
    for scope in SCOPES:
        for q in QUERIES:
            out.append(store.keyword_search(q, scope, 8))
        for i in (1, 5, 9):
            out.append(store.vector_search(vec(i), scope, 5))
    return out


def open_store(path: Path, min_rows: int = 10) -> SQLiteStore:
    return SQLiteStore(f"sqlite:///{path}", StoreSettings(index_snapshot_min_rows=min_rows))


def test_index_state_round_trip_searches_and_grows_the_same() -> None:
    index = VectorIndex(DIM)
    for i in range(300):
        attrs: dict[str, object] = {"user_id": f"u{i % 4}", "speaker": "Ann" if i % 2 else None}
        if i % 3 == 0:  # a conversation turn (search.turns.facts)
            attrs |= {"turn": (f"thread {i % 5}", i), "words": i, "asks": i % 2 == 0}
            attrs |= {"dated": i % 2 == 1, "directs": i % 4 == 0}
        index.upsert(f"m{i}", vec(i) if i % 7 else None, attrs, text(i))
    for i in range(0, 300, 10):
        index.remove(f"m{i}")  # dead rows: compacted away by state()
    meta, arrays = index.state()
    copy = VectorIndex.from_state(meta, arrays)
    assert copy.live_ids() == index.live_ids()
    ids = sorted(index.live_ids())
    assert copy.rank_facts(ids) == index.rank_facts(ids)  # ranking columns travel too
    assert copy.rank_facts(["m33"])["m33"].turn == ("thread 3", 33)
    assert (copy.rank_facts(["m33"])["m33"].words, copy.rank_facts(["m1"])["m1"].turn) == (33, None)
    assert (copy.rank_facts(["m33"])["m33"].dated, copy.rank_facts(["m36"])["m36"].dated) == (
        True,
        False,
    )
    assert (copy.rank_facts(["m33"])["m33"].directs, copy.rank_facts(["m36"])["m36"].directs) == (
        False,
        True,
    )
    for q in QUERIES:
        for user in (None, "u1"):
            scope = Filters(user_id=user)
            assert copy.keyword_search(q, copy.mask(scope), 10) == index.keyword_search(
                q, index.mask(scope), 10
            )
    for i in (3, 44, 299):
        assert copy.search(vec(i), None, 5) == index.search(vec(i), None, 5)
    for target in (index, copy):  # both keep working the same after writes
        target.upsert("new", vec(1000), {"user_id": "u1"}, "a brand new lantern")
        target.upsert("m3", vec(3), {"user_id": "u1"}, "rewritten entirely")
        target.remove("m5")
    assert copy.keyword_search("lantern", None, 50) == index.keyword_search("lantern", None, 50)
    assert copy.keyword_search("rewritten", None, 5) == [("m3", 1.0)]
    assert copy.search(vec(1000), None, 1)[0][0] == "new"


def test_the_coarse_projection_travels_with_the_snapshot() -> None:
    rng = np.random.default_rng(3)
    n, dim = COARSE_MIN_ROWS + 10, 128
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    index = VectorIndex(dim)
    index.load_block([f"m{i}" for i in range(n)], vecs, np.ones(n, bool), {}, np.zeros(n), [""] * n)
    assert index.search(vecs[0], None, 3)[0][0] == "m0" and index._proj is not None
    copy = VectorIndex.from_state(*index.state())
    assert copy._proj is not None and np.array_equal(copy._proj, index._proj)
    # two-stage: full vectors in half precision, in memory and on disk
    assert index._vecs.dtype == copy._vecs.dtype == np.float16
    assert np.array_equal(copy._coarse[:n], index._coarse[:n])
    for i in (0, 17, n - 1):
        assert copy.search(vecs[i], None, 10) == index.search(vecs[i], None, 10)


def test_a_new_process_starts_from_the_snapshot_and_replays_what_came_after(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    first = open_store(path)
    first.add([rec(i) for i in range(200)])
    first.keyword_search("river", Filters(), 1)  # the first search builds the index ...
    snap = snapshot.path_for(path)
    assert snap.is_file()  # ... and saves it
    saved = snap.stat().st_mtime_ns
    # after the snapshot: adds, a text change, a scope change and a delete
    first.add([rec(i) for i in range(200, 230)])
    first.update(rec(7, txt="completely different words: zeppelin"))
    first.update(rec(8, user="carol"))
    first.set_state("m9", State.DELETED, event=Event.DELETE)
    first.close()  # fewer than SNAPSHOT_AFTER changes: the old snapshot stays
    assert snap.stat().st_mtime_ns == saved

    again = open_store(path)
    got = results(again)
    assert again._snapshot_seq > 0  # it started from the snapshot, not from the rows
    assert again.keyword_search("zeppelin", Filters(), 3) == [("m7", 1.0)]
    assert again.keyword_search("item7", Filters(), 3) == []
    assert [i for i, _ in again.keyword_search("item8", Filters(user_id="carol"), 3)] == ["m8"]
    assert "m9" not in again._sync_index().live_ids()
    fresh = open_store(path, min_rows=0)  # snapshots off: built from the rows
    assert fresh._snapshot_seq == 0
    assert got == results(fresh)
    assert again.integrity_check() == []
    again.close()
    fresh.close()


def test_close_saves_a_new_snapshot_after_many_changes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = open_store(path)
    store.add([rec(i) for i in range(20)])
    store.keyword_search("river", Filters(), 1)
    before = store._snapshot_seq
    store.add([rec(i) for i in range(20, 20 + SNAPSHOT_AFTER)])
    store.keyword_search("river", Filters(), 1)
    store.close()
    assert store._snapshot_seq >= before + SNAPSHOT_AFTER
    again = open_store(path)
    assert again.keyword_search(f"item{SNAPSHOT_AFTER + 19}", Filters(), 1)[0][0] == (
        f"m{SNAPSHOT_AFTER + 19}"
    )
    assert again._snapshot_seq == store._snapshot_seq
    again.close()


def test_a_snapshot_of_another_history_is_ignored(tmp_path: Path) -> None:
    """A store restored from an older copy reaches the snapshot's log position again
    with other writes: the position's memory id differs, so the index is rebuilt."""
    path = tmp_path / "m.db"
    store = open_store(path)
    store.add([rec(i) for i in range(50)])
    store.close()
    backup = tmp_path / "backup.db"
    shutil.copy(path, backup)
    store = open_store(path)
    store.add([rec(i) for i in range(50, 80)])
    store.keyword_search("river", Filters(), 1)  # snapshot at this history's position
    store.close()
    shutil.copy(backup, path)  # restore the older copy ...
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    store = open_store(path)
    store.add([rec(i, txt=f"restored timeline {i}") for i in range(500, 540)])  # ... write on
    assert store.keyword_search("item60", Filters(), 3) == []  # not the snapshot's rows
    assert len(store.keyword_search("restored timeline", Filters(), 100)) == 40
    assert store.integrity_check() == []
    store.close()


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(b"not a zip file at all"),
        lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
        lambda p: p.write_bytes(b"\x00" * 4096),
    ],
    ids=["garbage", "truncated", "zeros"],
)
def test_a_damaged_snapshot_is_rebuilt_not_trusted(
    tmp_path: Path, damage: object, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    store = open_store(path)
    store.add([rec(i) for i in range(60)])
    expected = results(store)
    store.close()
    snap = snapshot.path_for(path)
    assert snap.is_file()
    damage(snap)  # type: ignore[operator]
    with caplog.at_level(logging.WARNING, logger="memoryd.store.snapshot"):
        store = open_store(path)
        assert results(store) == expected
    assert store._snapshot_seq > 0  # rebuilt from the rows and saved again
    assert snapshot.load(snap) is not None
    store.close()


def test_small_and_in_memory_stores_write_no_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = SQLiteStore(f"sqlite:///{path}")  # default: 10,000 memories and up
    store.add([rec(i) for i in range(30)])
    store.keyword_search("river", Filters(), 1)
    store.close()
    assert not snapshot.path_for(path).exists()
    memory = SQLiteStore(":memory:", StoreSettings(index_snapshot_min_rows=1))
    memory.add([rec(i) for i in range(30)])
    assert memory.keyword_search("item3", Filters(), 1)[0][0] == "m3"
    memory.close()


def test_row_text_digests_mean_the_same_in_every_process(tmp_path: Path) -> None:
    """A loaded snapshot compares each row's text with the store's by digest: the
    digest must not depend on the process (Python's ``hash`` of a str does)."""
    index = VectorIndex(DIM)
    index.upsert("a", vec(1), {"user_id": "u"}, "the same text, twice")
    snapshot.save(tmp_path / "s.index", index, snapshot.Position(1, "a"))
    code = (
        "import sys; from pathlib import Path; from memoryd.store import snapshot;"
        "index, _ = snapshot.load(Path(sys.argv[1]));"
        "index.upsert('a', None, {'user_id': 'u'}, 'the same text, twice');"
        "print(len(index.ids))"  # a changed text would append a new row
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / "s.index")],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == "1"


def test_the_coarse_projection_is_fitted_before_the_snapshot_is_saved(tmp_path: Path) -> None:
    """A big store's first full build fits the two-stage projection before saving, so
    no later process pays for the fit (nor for re-projecting every row)."""
    path = tmp_path / "m.db"
    dim, n = 128, COARSE_MIN_ROWS + 500
    rng = np.random.default_rng(9)
    vecs = rng.normal(size=(n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store = open_store(path)
    store.add(
        [
            MemoryRecord(id=f"m{i}", text=f"row {i}", user_id="u", embedding=vecs[i])
            for i in range(n)
        ]
    )
    store.close()
    store = open_store(path)
    assert store.vector_search(vecs[3], Filters(), 1)[0][0] == "m3"
    store.close()
    loaded = snapshot.load(snapshot.path_for(path))
    assert loaded is not None and loaded[0].prepared
    assert loaded[0]._vecs.dtype == np.float16
