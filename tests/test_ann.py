"""The nearest-neighbour graph (store/ann.py) inside the search index: the real
usearch HNSW, checked against the exact scan of the same rows, through writes,
removals, compaction, a build that races writers, and the snapshot."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import httpx
import numpy as np
import pytest

from memoryd.core import Memory
from memoryd.models import Filters
from memoryd.store import ann
from memoryd.store.vectors import VectorIndex

# never ``importorskip("usearch")``: importing usearch before onnxruntime crashes
pytestmark = pytest.mark.skipif(not ann.available(), reason="usearch is not installed")

DIM = 64
ROWS = 6000


def vectors(n: int, seed: int) -> np.ndarray:
    """Clustered unit vectors (50 topics), like embeddings of notes on a few subjects."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((50, DIM))
    x = centers[rng.integers(0, 50, n)] + 0.6 * rng.standard_normal((n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def attrs(user: str = "alice") -> dict[str, object]:
    return {"user_id": user, "state": "active", "created_at": 0.0}


def build(n: int = ROWS, seed: int = 1) -> tuple[VectorIndex, np.ndarray]:
    index = VectorIndex(DIM)
    index.ann_min_rows = 2000
    vecs = vectors(n, seed)
    for i, v in enumerate(vecs):
        index.upsert(f"m{i}", v, attrs("alice" if i % 2 else "bob"), text=f"note {i}")
    return index, vecs


def exact_top(index: VectorIndex, live: dict[str, np.ndarray], q: np.ndarray, k: int) -> list[str]:
    ids = list(live)
    scores = np.stack([live[i] for i in ids]) @ q
    return [ids[j] for j in np.argsort(-scores, kind="stable")[:k]]


def agreement(index: VectorIndex, live: dict[str, np.ndarray], queries: np.ndarray) -> float:
    hits = 0
    for q in queries:
        got = [i for i, _ in index.search(q, None, 10)]
        hits += len(set(got) & set(exact_top(index, live, q, 10)))
    return hits / (10 * len(queries))


def test_the_graph_answers_like_the_exact_scan_with_exact_scores() -> None:
    index, vecs = build()
    assert index.graph_size == 0  # below nothing yet: the first search or prepare builds it
    index.prepare(wait=True)
    assert index.graph_size == ROWS
    live = {f"m{i}": v for i, v in enumerate(vecs)}
    queries = vectors(60, seed=9)
    assert agreement(index, live, queries) >= 0.97
    for q in queries[:5]:
        for memory_id, score in index.search(q, None, 10):
            assert score == pytest.approx(max(0.0, float(live[memory_id] @ q)), abs=1e-6)


def test_writes_after_the_graph_is_built_are_searched() -> None:
    index, vecs = build()
    index.prepare(wait=True)
    fresh = vectors(3, seed=42)
    for i, v in enumerate(fresh):
        index.upsert(f"new{i}", v, attrs(), text=f"new note {i}")
    assert index.graph_size == ROWS + 3
    for i, v in enumerate(fresh):
        assert index.search(v, None, 1)[0][0] == f"new{i}"
    # a changed vector (same text) is found by its new vector, not its old one
    index.upsert("m7", fresh[0] * -1.0, attrs("alice"), text="note 7")
    assert index.search(fresh[0] * -1.0, None, 1)[0][0] == "m7"
    assert "m7" not in [i for i, _ in index.search(vecs[7], None, 10)]
    index.remove("m11")
    assert "m11" not in [i for i, _ in index.search(vecs[11], None, 50)]


def test_compaction_renumbers_the_graph() -> None:
    index, vecs = build()
    index.prepare(wait=True)
    gone = set(range(0, ROWS, 3))  # a third: past the compaction threshold
    for i in sorted(gone):
        index.remove(f"m{i}")
    assert len(index.ids) < ROWS  # compacted on the way: rows were renumbered
    live = {f"m{i}": v for i, v in enumerate(vecs) if i not in gone}
    assert index.graph_size == len(live)
    queries = vectors(40, seed=10)
    assert agreement(index, live, queries) >= 0.97
    for i in (1, 2, 4, 5, ROWS - 1):
        assert index.search(vecs[i], None, 1)[0][0] == f"m{i}"


@pytest.fixture
def background() -> Iterator[None]:
    ann.build_in_background()
    yield
    ann.build_in_background(False)


def test_only_a_long_lived_process_builds_the_graph_on_its_own(background: None) -> None:
    ann.build_in_background(False)  # a CLI command: it would not live to finish a build
    index, vecs = build()
    index.search(vecs[0], None, 5)
    index.prepare()
    assert index.graph_size == 0
    ann.build_in_background()  # the server (Memory.stay_ready)
    first = index.search(vecs[0], None, 5)  # starts the build; answered by the scan
    assert first[0][0] == "m0"
    for _ in range(600):
        if index.graph_size:
            break
        time.sleep(0.05)
        index.search(vecs[1], None, 5)  # a later search adopts the finished graph
    assert index.graph_size == ROWS


def test_rows_written_while_the_graph_is_built_are_not_lost(background: None) -> None:
    index, vecs = build()
    index.prepare()  # in the background
    extra = vectors(500, seed=5)
    for i, v in enumerate(extra):
        index.upsert(f"x{i}", v, attrs(), text=f"extra {i}")
    for i in range(0, 300, 7):
        index.remove(f"m{i}")
    index.prepare(wait=True)
    live = {f"m{i}": v for i, v in enumerate(vecs) if i >= 300 or i % 7}
    live |= {f"x{i}": v for i, v in enumerate(extra)}
    assert index.graph_size == len(live)
    for memory_id in ("x0", "x250", "x499", "m1", "m5999"):
        assert index.search(live[memory_id], None, 1)[0][0] == memory_id
    assert agreement(index, live, vectors(30, seed=11)) >= 0.97


def test_a_scope_searched_through_the_graph_stays_in_scope() -> None:
    index, vecs = build()
    index.prepare(wait=True)
    mask = index.mask(Filters(user_id="alice"))
    alice = {f"m{i}": v for i, v in enumerate(vecs) if i % 2}
    queries = vectors(30, seed=12)
    for q in queries:
        got = [i for i, _ in index.search(q, mask, 10)]
        assert len(got) == 10 and set(got) <= set(alice)
    assert agreement_in(index, alice, queries, mask) >= 0.95


def agreement_in(
    index: VectorIndex, live: dict[str, np.ndarray], queries: np.ndarray, mask: np.ndarray
) -> float:
    hits = 0
    for q in queries:
        got = {i for i, _ in index.search(q, mask, 10)}
        hits += len(got & set(exact_top(index, live, q, 10)))
    return hits / (10 * len(queries))


def test_the_graph_travels_with_the_snapshot() -> None:
    index, vecs = build()
    index.prepare(wait=True)
    meta, arrays = index.state()
    assert "ann" in arrays
    again = VectorIndex.from_state(meta, arrays)
    assert again.graph_size == index.graph_size
    for q in vectors(20, seed=13):
        assert again.search(q, None, 10) == index.search(q, None, 10)
    again.upsert("late", vecs[3] * -1.0, attrs(), text="late note")  # and it keeps growing
    assert again.search(vecs[3] * -1.0, None, 1)[0][0] == "late"


def test_the_graph_replaces_the_coarse_pass_and_a_scope_it_misses_is_scanned() -> None:
    dim, n = 128, 21_000  # past COARSE_MIN_ROWS and COARSE_DIMS: a two-stage index
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((2, dim)) * 3
    topic = (np.arange(n) % 10 < 3).astype(int)  # 30% on topic 1 (alice), the rest topic 0
    x = centers[topic] + rng.standard_normal((n, dim))
    vecs = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    index = VectorIndex(dim)
    index.ann_min_rows = 2000
    index.load_block(
        [f"m{i}" for i in range(n)],
        vecs,
        np.ones(n, dtype=bool),
        {"user_id": ["alice" if t else "bob" for t in topic], "state": ["active"] * n},
        np.zeros(n),
        [f"note {i}" for i in range(n)],
    )
    index.prepare()  # fits the projection; no graph: this process does not build in the background
    assert "coarse" in index.state()[1]
    index.prepare(wait=True)
    meta, arrays = index.state()
    assert "ann" in arrays and "coarse" not in arrays  # the graph took the pass's place
    again = VectorIndex.from_state(meta, arrays)
    alice = Filters(user_id="alice")
    query = centers[0] / np.linalg.norm(centers[0])  # bob's topic: the graph finds bob's rows
    rows = np.flatnonzero(topic == 1)
    held = vecs.astype(np.float16).astype(np.float32)  # what a two-stage index keeps
    exact = rows[np.argsort(-(held[rows] @ query.astype(np.float32)), kind="stable")[:10]]
    # a process that cannot load the graph (usearch missing) projects the rows again
    scan = VectorIndex.from_state(meta, {k: v for k, v in arrays.items() if k != "ann"})
    assert scan.graph_size == 0 and "coarse" in scan.state()[1]
    for ix in (index, again, scan):
        got = ix.search(query.astype(np.float32), ix.mask(alice), 10)
        assert [i for i, _ in got] == [f"m{r}" for r in exact]
        everyone = [i for i, _ in ix.search(query.astype(np.float32), None, 10)]
        top = np.argsort(-(vecs @ query))[:10]
        assert len(set(everyone) & {f"m{r}" for r in top}) >= 9


def test_a_running_server_builds_graphs_in_the_background(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    from memoryd.api import create_app

    ann.build_in_background(False)
    try:
        with live_server(create_app(memory=memory)) as server:
            assert httpx.get(f"{server.url}/health").status_code == 200
            assert ann.builds_in_background()  # Memory.stay_ready, from the app's start-up
    finally:
        ann.build_in_background(False)


def test_a_compaction_during_the_build_restarts_it_on_the_new_rows(background: None) -> None:
    index, vecs = build()
    index.prepare()  # building in the background over the rows as they are
    gone = set(range(0, ROWS, 3))
    for i in sorted(gone):
        index.remove(f"m{i}")  # compacts on the way: the build's row numbers are stale
    live = {f"m{i}": v for i, v in enumerate(vecs) if i not in gone}
    for _ in range(600):
        index.search(vecs[1], None, 5)  # adopts a finished build, or starts a new one
        if index.graph_size:
            break
        time.sleep(0.05)
    assert index.graph_size == len(live)
    for i in (1, 2, 4, ROWS - 1):
        assert index.search(vecs[i], None, 1)[0][0] == f"m{i}"
    assert agreement(index, live, vectors(30, seed=14)) >= 0.97


def test_searches_and_writes_at_once_keep_the_graph_whole() -> None:
    index, vecs = build()
    index.prepare(wait=True)
    extra = vectors(400, seed=21)
    errors: list[BaseException] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                for q in extra[:50]:
                    for memory_id, _ in index.search(q, None, 10):
                        assert memory_id.startswith(("m", "x"))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    readers = [threading.Thread(target=search) for _ in range(3)]
    for t in readers:
        t.start()
    for i, v in enumerate(extra):  # the store writes one thread at a time (its lock)
        index.upsert(f"x{i}", v, attrs(), text=f"extra {i}")
        if i % 4 == 0:
            index.remove(f"m{i}")
    stop.set()
    for t in readers:
        t.join()
    assert not errors
    live = {f"m{i}": v for i, v in enumerate(vecs) if i % 4 or i >= 400}
    live |= {f"x{i}": v for i, v in enumerate(extra)}
    assert index.graph_size == len(live)
    for memory_id in ("x0", "x399", "m1"):
        assert index.search(live[memory_id], None, 1)[0][0] == memory_id


def test_a_damaged_graph_in_a_snapshot_is_refused_not_trusted() -> None:
    index, _ = build()
    index.prepare(wait=True)
    meta, arrays = index.state()
    arrays["ann"] = arrays["ann"][: arrays["ann"].size // 2]  # cut short
    with pytest.raises(ValueError):
        VectorIndex.from_state(meta, arrays)  # snapshot.load then rebuilds from the rows


_EXIT_MID_BUILD = """
import time
import numpy as np
from memoryd.store import ann
from memoryd.store.vectors import VectorIndex
ann.build_in_background()
x = np.random.default_rng(0).standard_normal((40_000, 64)).astype(np.float32)
x /= np.linalg.norm(x, axis=1, keepdims=True)
index = VectorIndex(64)
index.ann_min_rows = 1000
n = len(x)
index.load_block([f"m{i}" for i in range(n)], x, np.ones(n, bool), {}, np.zeros(n), [""] * n)
index.search(x[0], None, 5)  # starts the build
time.sleep(0.3)
assert index.graph_size == 0, "the build finished before the process left: nothing tested"
print("leaving mid-build", flush=True)
"""


def test_a_process_leaving_mid_build_exits_cleanly() -> None:
    # without stopping the build at exit the process aborted inside usearch (exit 134)
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_MID_BUILD], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "leaving mid-build" in done.stdout
