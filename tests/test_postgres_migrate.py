"""``memoryd store migrate``: SQLite → PostgreSQL and back, resumable, counted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError, StoreError
from memoryd.models import Filters
from memoryd.settings import Settings
from memoryd.store import Store, open_store
from memoryd.store.migrate import PROGRESS_KEY, migrate
from tests import pgserver

pytestmark = pytest.mark.skipif(
    not pgserver.enabled(), reason="PostgreSQL tests run with MEMORYD_TEST_PG=1"
)

FACTS = [
    ("alice", "dev", "I prefer dark mode in every editor", "preference"),
    ("alice", "dev", "Deploys go through ArgoCD on cluster prod-eu-1", "environment"),
    ("alice", "dev", "Chose pgvector over OpenSearch for local dev: lower cost", "decision"),
    ("alice", "dev", "The staging database runs PostgreSQL 16 on port 5433", "environment"),
    ("alice", "ops", "kiro-cli needs pty true and background true, never add &", "procedural"),
    ("alice", "ops", "Incident 2026-03-02: disk full on the build runner, pruned images", None),
    ("alice", "ops", "Backups run nightly at 02:00 UTC to the eu-west bucket", "environment"),
    ("alice", None, "Alice lives in Lisbon and works remotely", None),
    ("alice", None, "Alice enjoys hiking in the mountains on weekends", "preference"),
    ("alice", None, "Communicate in Chinese, concise and direct", "preference"),
    ("alice", None, "Team standup moved to 10:00 on weekdays", "project"),
    ("alice", None, "Ticket OPS-4471 is blocked on the firewall change", "project"),
    ("bob", None, "Bob runs marathons and trains every morning", None),
    ("bob", None, "Bob's cat is called Miso and hates the vacuum", None),
    ("bob", "dev", "The billing service is written in Go 1.22", "environment"),
    ("bob", "dev", "Use uv for Python packaging, never pip install globally", "procedural"),
    ("bob", "dev", "Kubernetes cluster prod-eu-1 runs version 1.29", "environment"),
    ("bob", None, "Lunch is usually at noon with the platform team", None),
]
QUERIES = [
    ("alice", "theme preference for editors"),
    ("alice", "how do we deploy?"),
    ("alice", "which database does staging use"),
    ("alice", "OPS-4471"),
    ("alice", "outdoor activities"),
    ("alice", "when are backups taken"),
    ("bob", "what pet does bob have"),
    ("bob", "which kubernetes version is prod-eu-1 on"),
    ("bob", "python packaging tool"),
    ("bob", "exercise habits"),
]


@pytest.fixture
def pg_db(pg_url: str) -> Iterator[str]:
    url = pgserver.fresh_database(pg_url)
    yield url
    pgserver.drop_database(url)


def _memory(url: str, tmp_path: Path, embedder: Embedder) -> Memory:
    settings = Settings(home=tmp_path / "home")
    settings.store.url = url
    settings.search.time_decay = False  # compare retrieval, not the clock
    return Memory(settings, embedder=embedder)


def _fill(mem: Memory) -> None:
    """A store with every kind of row: states, history, metadata, cache, kv."""
    ids = []
    for n, (user, agent, text, category) in enumerate(FACTS):
        run = "2026-03-27" if n % 5 == 4 else None
        event = mem.add(text, user_id=user, agent_id=agent, run_id=run, category=category)[0]
        ids.append(event.id)
    mem.update(ids[10], "Team standup moved to 10:30 on weekdays", reason="moved again")
    mem.update(ids[13], metadata={"vet": "Dr. Ferreira", "tags": ["cat", "é"]})
    mem.delete(ids[11], reason="ticket closed")
    mem.delete(ids[12])
    mem.restore(ids[12])
    mem.store.kv_set("digest:offset", {"file": "memory/2026-03-27.md", "bytes": 1234})
    mem.store.kv_set("dream:last_run", "2026-03-27T02:00:00+00:00")


def _snapshot(store: Store) -> dict[str, object]:
    """Everything a store holds, in a comparable form (history ids are store-local)."""
    records = {}
    for r in store.iter_all(Filters(states=[])):
        records[r.id] = r.model_dump(mode="json")
    vectors = {}
    after = 0
    while True:
        batch, history, after = store.export_memories(after, 100)
        if not batch:
            break
        for r in batch:
            vectors[r.id] = np.asarray(r.embedding).tobytes()
    history = {
        mid: [e.model_dump(mode="json", exclude={"id"}) for e in store.history(mid)]
        for mid in records
    }
    cache = {(m, h): v.tobytes() for m, h, v in store.export_cache(None, 10_000)}
    kv = {k: v for k, v in store.kv_items().items() if not k.startswith("migrate:")}
    return {
        "records": records,
        "vectors": vectors,
        "history": history,
        "cache": cache,
        "kv": kv,
        "meta": store.meta_items(),
    }


def _top(mem: Memory, mode: str, k: int = 5) -> list[list[str]]:
    # no relevance floor: the two stores' keyword scores differ, so a floor would cut
    # their tails differently; what is compared here is the ranking the copy keeps
    return [
        [h.id for h in mem.search(q, user_id=u, top_k=k, mode=mode, min_score=0)]
        for u, q in QUERIES
    ]


def test_sqlite_to_postgres_and_back_keeps_everything_and_the_same_top_hits(
    tmp_path: Path, pg_db: str, embedder: Embedder
) -> None:
    sqlite_url = str(tmp_path / "source.db")
    with _memory(sqlite_url, tmp_path, embedder) as src:
        _fill(src)
        vector_top = _top(src, "vector")
        hybrid_top = _top(src, "hybrid")

    source, target = open_store(sqlite_url), open_store(pg_db)
    try:
        before = _snapshot(source)  # searches write state too (recall counts): take it now
        report = migrate(source, target, batch=4)
        # records, exact vectors, history, cache, kv and meta, before anything else runs
        assert _snapshot(target) == before
    finally:
        source.close()
        target.close()
    assert report.copied == len(FACTS) and report.skipped == 0 and not report.resumed
    assert report.source_totals["history"] == report.target_totals["history"] == len(FACTS) + 5
    assert report.kv == len(before["kv"]) >= 2  # type: ignore[arg-type]

    with _memory(pg_db, tmp_path, embedder) as pg:
        assert _top(pg, "vector") == vector_top  # the same hits in the same order
        pg_hybrid = _top(pg, "hybrid")
        # BM25 (SQLite) and ts_rank_cd (PostgreSQL, which also drops stop words) weigh
        # words differently, so the fused tail may reorder: the same best hit and the
        # same top five for every query
        assert [ids[0] for ids in pg_hybrid] == [ids[0] for ids in hybrid_top]
        assert [set(ids) for ids in pg_hybrid] == [set(ids) for ids in hybrid_top]
        assert pg.search("standup", user_id="alice")[0].text.endswith("10:30 on weekdays")
        assert pg.search("firewall ticket", user_id="alice", mode="keyword") == []  # deleted

    back_url = str(tmp_path / "back.db")
    source, target = open_store(pg_db), open_store(back_url)
    try:
        now = _snapshot(source)
        migrate(source, target, batch=5)
        assert _snapshot(target) == now
    finally:
        source.close()
        target.close()
    unchanged = ("records", "vectors", "history", "cache", "meta")
    assert {k: now[k] for k in unchanged} == {k: before[k] for k in unchanged}
    with _memory(back_url, tmp_path, embedder) as back:
        assert _top(back, "hybrid") == hybrid_top  # SQLite again: identical rankings


def test_an_interrupted_copy_resumes_where_it_stopped(
    tmp_path: Path, pg_db: str, embedder: Embedder
) -> None:
    sqlite_url = str(tmp_path / "source.db")
    with _memory(sqlite_url, tmp_path, embedder) as src:
        _fill(src)
    source, target = open_store(sqlite_url), open_store(pg_db)
    try:

        def stop_after_two_batches(phase: str, done: int, total: int) -> None:
            if phase == "memories" and done >= 8:
                raise KeyboardInterrupt  # what ^C does in the middle of a copy

        with pytest.raises(KeyboardInterrupt):
            migrate(source, target, batch=4, progress=stop_after_two_batches)
        assert target.totals()["memories"] == 8  # two whole batches, nothing half-done
        assert target.kv_get(PROGRESS_KEY)["done"] is False

        report = migrate(source, target, batch=4)
        assert report.resumed and report.copied == len(FACTS) - 8 and report.skipped == 0
        kv = report.source_totals["kv"] + 1  # + the progress record
        assert report.target_totals == {**report.source_totals, "kv": kv}
        assert target.kv_get(PROGRESS_KEY)["done"] is True

        again = migrate(source, target)  # finished: only what the source gained since
        assert (again.copied, again.skipped) == (0, 0)
    finally:
        source.close()
        target.close()


def test_refuses_a_target_that_holds_other_data(
    tmp_path: Path, pg_db: str, embedder: Embedder
) -> None:
    with _memory(pg_db, tmp_path, embedder) as pg:
        pg.add("already here", user_id="carol")
    with _memory(str(tmp_path / "a.db"), tmp_path, embedder) as src:
        src.add("from sqlite", user_id="alice")
    source, target = open_store(str(tmp_path / "a.db")), open_store(pg_db)
    try:
        with pytest.raises(StoreError, match="already holds 1 memories") as info:
            migrate(source, target)
        assert "empty store" in (info.value.hint or "")
        with pytest.raises(InvalidInputError, match="same store"):
            migrate(source, source)
        assert target.totals()["memories"] == 1  # nothing was written
    finally:
        source.close()
        target.close()
    other = open_store(str(tmp_path / "b.db"))
    half = open_store(str(tmp_path / "c.db"))
    try:
        half.kv_set(PROGRESS_KEY, {"source": "somewhere-else.db", "memories_after": 3})
        with pytest.raises(StoreError, match=r"holds a copy from somewhere-else\.db"):
            migrate(other, half)
    finally:
        other.close()
        half.close()


def test_cli_migrate_prints_counts_and_fails_clearly(
    tmp_path: Path, pg_db: str, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    with _memory(str(home / "memoryd.db"), tmp_path, embedder) as src:
        _fill(src)
    monkeypatch.setenv("MEMORYD_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["store", "migrate", "--to", pg_db, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["copied"] == len(FACTS) and report["target_totals"]["memories"] == len(FACTS)

    result = runner.invoke(app, ["store", "migrate", "--to", pg_db])  # again: nothing new
    assert result.exit_code == 0 and "counts match" in result.output

    bad = runner.invoke(
        app, ["store", "migrate", "--to", "postgresql://nobody:s3cret@127.0.0.1:1/none"]
    )
    assert bad.exit_code == 2
    assert "cannot connect" in bad.output and "hint" in bad.output
    assert "s3cret" not in bad.output  # the password never reaches the terminal
