"""A team on one PostgreSQL: many users of very different sizes, two memoryd servers.

One database holds ``--memories`` memories over ``--users`` users: one user of
``--big`` memories and the rest long-tailed (log-normal sizes: most users hold a
few dozen, a few hold thousands). The same memories go into the embedded store
(SQLite) for its figures beside PostgreSQL's. Text is the scale benchmark's
synthetic sentences (BM25 sees real words); vectors are synthetic blends of real
embeddings (``scale.synthetic_vectors``), and every query is embedded by the
model, so latencies include the query's embedding.

Measured in one run:

* **load**: rows/s of the bulk load into each store (PostgreSQL: postings and
  statistics by trigger, the HNSW index built once at the end).
* **in-process search** per user-size class, on both stores, one query at a time:
  hybrid and keyword p50 / p95 through ``Memory.search``.
* **quality**: vector top-10 agreement of PostgreSQL's search with an exact scan
  of the same scope (per class), and the largest difference between the two
  stores' keyword scores on the same queries.
* **over HTTP**: two ``memoryd serve`` processes on the database; one client per
  class in turn (latency), then ``--clients`` concurrent clients spread over both
  servers and all classes (searches/s), then concurrent writes (ingest/s, the
  model embedding each one), and a write on one server searched for on the other
  (visibility delay).

``--scale`` multiplies the full size (1M memories, 10,000 users, one of 100k), so
``--scale 0.01`` runs in a few minutes. Results go to ``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from _common import REPO_ROOT, CpuWatch, loadavg, machine_info, percentile_ms
from memoryd.core import Memory
from memoryd.models import Filters, MemoryRecord, Origin
from memoryd.settings import Settings, StoreSettings
from memoryd.store import open_store
from scale import TextGen, batches, synthetic_vectors
from scale_pg import server, server_info

SEED = 34
BIG = "big"
#: user-size classes: (name, smallest, largest) memories
CLASSES = (("under_100", 1, 99), ("100_to_999", 100, 999), ("1k_to_99k", 1000, 99_999))
LOAD_BATCH = 5_000

if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


def user_sizes(memories: int, users: int, big: int, seed: int) -> dict[str, int]:
    """One user of ``big`` memories, the rest log-normal (a long tail) summing to the total."""
    rng = np.random.default_rng(seed)
    rest = memories - big
    raw = rng.lognormal(mean=0.0, sigma=1.6, size=users - 1)
    sizes = np.maximum(1, np.floor(raw / raw.sum() * rest)).astype(np.int64)
    sizes[np.argmax(sizes)] += rest - int(sizes.sum())  # exact total
    return {BIG: big} | {f"u{i}": int(n) for i, n in enumerate(sizes)}


def classes_of(sizes: dict[str, int]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {f"big_user_{sizes[BIG]}": [BIG]}
    for name, lo, hi in CLASSES:
        found = [u for u, n in sizes.items() if u != BIG and lo <= n <= hi]
        if found:
            out[name] = found
    return out


def load(mem: Memory, pg: Any, sizes: dict[str, int], seed: int) -> dict[str, Any]:
    """The same records into SQLite (``mem``) and PostgreSQL (``pg``), timed apart."""
    owners = np.repeat(np.array(list(sizes)), np.array(list(sizes.values())))
    np.random.default_rng(seed).shuffle(owners)  # users write interleaved, as in life
    make = synthetic_vectors(mem, seed)
    total = len(owners)
    t_sqlite = t_pg = 0.0
    with pg.bulk_load():
        for start, texts in batches(total, LOAD_BATCH, seed):
            records = [
                MemoryRecord(
                    id=f"m{start + i}", text=t, user_id=str(owners[start + i]), origin=Origin.API
                )
                for i, t in enumerate(texts)
            ]
            for record, vector in zip(records, make(len(records)), strict=True):
                record.embedding = vector
            t0 = time.perf_counter()
            mem.write_records(records)
            t1 = time.perf_counter()
            pg.add(records)
            t2 = time.perf_counter()
            t_sqlite, t_pg = t_sqlite + t1 - t0, t_pg + t2 - t1
            print(f"  loaded {start + len(texts)}/{total}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
    t_index = time.perf_counter() - t0  # HNSW build and VACUUM ANALYZE at the block's end
    return {
        "memories": total,
        "sqlite_rows_per_s": round(total / t_sqlite, 1),
        "postgres_rows_per_s": round(total / (t_pg + t_index), 1),
        "postgres_index_build_s": round(t_index, 1),
    }


def _lat(times: list[float]) -> dict[str, Any]:
    return {"n": len(times), "p50_ms": percentile_ms(times, 50), "p95_ms": percentile_ms(times, 95)}


def in_process(
    stores: dict[str, Memory], classes: dict[str, list[str]], queries: list[str], seed: int
) -> dict[str, Any]:
    """Hybrid and keyword latency per class and store, interleaved query by query."""
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for cls, users in classes.items():
        times: dict[str, list[float]] = {}
        for q in queries:
            user = str(rng.choice(users))
            for store_name, mem in stores.items():
                for mode in ("hybrid", "keyword"):
                    mem._query_cache.clear()  # the query's embedding is part of the cost
                    t0 = time.perf_counter()
                    mem.search(q, user_id=user, top_k=10, mode=mode)
                    times.setdefault(f"{store_name}_{mode}", []).append(time.perf_counter() - t0)
        out[cls] = {k: _lat(v) for k, v in times.items()}
        print(f"  in-process {cls}: {json.dumps(out[cls])}", file=sys.stderr, flush=True)
    return out


def quality(
    mem: Memory, pg: Any, exact: Any, classes: dict[str, list[str]], queries: list[str], seed: int
) -> dict[str, Any]:
    """Vector top-10 agreement with an exact scan, and keyword score differences."""
    rng = np.random.default_rng(seed)
    vectors = mem.embed_texts(queries)
    out: dict[str, Any] = {}
    worst = 0.0
    for cls, users in classes.items():
        agree: list[float] = []
        for q, v in zip(queries, vectors, strict=True):
            scope = Filters(user_id=str(rng.choice(users)))
            ours = {i for i, _ in pg.vector_search(v, scope, 10)}
            truth = [i for i, _ in exact.vector_search(v, scope, 10)]
            if truth:
                agree.append(len(ours & set(truth)) / len(truth))
            want = sorted((s for _, s in mem.store.keyword_search(q, scope, 10)), reverse=True)
            got = sorted((s for _, s in pg.keyword_search(q, scope, 10)), reverse=True)
            if len(want) != len(got):
                worst = max(worst, 1.0)
            worst = max([worst, *(abs(a - b) for a, b in zip(want, got, strict=False))])
        out[cls] = {"vector_top10_agreement": round(float(np.mean(agree)), 4) if agree else None}
    out["keyword_max_abs_score_difference"] = worst
    return out


class Server:
    """``memoryd serve`` on the shared database, scheduler off (pipelines are not timed)."""

    def __init__(self, name: str, db: str, tmp: Path, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = tmp / f"{name}.log"
        env = {
            **os.environ,
            "MEMORYD_HOME": str(tmp / name),
            "MEMORYD_STORE__URL": db,
            "MEMORYD_WORKSPACE__OPENCLAW_DIR": str(tmp / "openclaw"),
            "MEMORYD_WORKSPACE__WATCH": "false",
            "MEMORYD_PIPELINES__SCHEDULER": "false",
            "PYTHONPATH": str(REPO_ROOT / "src"),
        }
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memoryd.cli", "serve", "--port", str(port)],
                env=env,
                cwd=tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited:\n{self.log.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"server did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def over_http(
    servers: list[Server],
    classes: dict[str, list[str]],
    queries: list[str],
    clients: int,
    writes: int,
    seed: int,
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    http = httpx.Client(timeout=60)

    def search(i: int, user: str, q: str) -> float:
        t0 = time.perf_counter()
        r = http.post(
            f"{servers[i % len(servers)].url}/memory/search",
            json={"query": q, "user_id": user, "top_k": 10},
        )
        elapsed = time.perf_counter() - t0
        if r.status_code != 200:
            raise SystemExit(f"search failed: {r.status_code} {r.text[:300]}")
        return elapsed

    out: dict[str, Any] = {"servers": len(servers), "clients": clients}
    sequential: dict[str, Any] = {}
    fresh = iter(TextGen(seed + 9).queries(len(queries) * (len(classes) + 1), set(queries)))
    for cls, users in classes.items():  # one client: latency without queueing
        # queries the servers have not seen: their embedding is part of the latency
        mine = [next(fresh) for _ in queries]
        times = [search(n, str(rng.choice(users)), q) for n, q in enumerate(mine)]
        sequential[cls] = _lat(times)
    out["hybrid_one_client"] = sequential
    print(f"  http one client: {json.dumps(sequential)}", file=sys.stderr, flush=True)

    names = list(classes)
    jobs = [
        (n, names[n % len(names)], str(rng.choice(classes[names[n % len(names)]])), q)
        for n, q in enumerate(list(fresh))
    ]
    lat: dict[str, list[float]] = {c: [] for c in names}
    lock = threading.Lock()

    def run(job: tuple[int, str, str, str]) -> None:
        n, cls, user, q = job
        elapsed = search(n, user, q)
        with lock:
            lat[cls].append(elapsed)

    watch = CpuWatch()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(run, jobs))
    wall = time.perf_counter() - t0
    out["concurrent"] = {
        "searches": len(jobs),
        "searches_per_s": round(len(jobs) / wall, 1),
        "per_class": {c: _lat(v) for c, v in lat.items()},
        "cpu": watch.report(),
    }
    print(f"  http concurrent: {json.dumps(out['concurrent'])}", file=sys.stderr, flush=True)

    gen = TextGen(seed + 5)
    texts = [gen.sentence() for _ in range(writes)]

    def add(n: int) -> None:
        r = http.post(
            f"{servers[n % len(servers)].url}/memory/add",
            json={"text": texts[n], "user_id": f"writer{n % 20}", "infer": False},
        )
        if r.status_code != 200:
            raise SystemExit(f"add failed: {r.status_code} {r.text[:300]}")

    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(add, range(writes)))
    wall = time.perf_counter() - t0
    out["ingest"] = {"writes": writes, "writes_per_s": round(writes / wall, 1)}

    delays = []
    for n in range(10):  # written on one server, searched for on the other until found
        token = f"zq{n}visibility{seed}"
        a, b = servers[n % 2], servers[(n + 1) % 2]
        r = http.post(
            f"{a.url}/memory/add",
            json={"text": f"The {token} note", "user_id": "visibility", "infer": False},
        )
        if r.status_code != 200:
            raise SystemExit(f"add failed: {r.status_code} {r.text[:300]}")
        written = time.perf_counter()
        while True:
            hits = http.post(
                f"{b.url}/memory/search",
                json={"query": token, "user_id": "visibility", "mode": "keyword"},
            ).json()["results"]
            if any(token in h["memory"] for h in hits):
                delays.append(time.perf_counter() - written)
                break
            if time.perf_counter() - written > 10:
                delays.append(float("inf"))
                break
    out["cross_server_visibility_max_ms"] = round(1000 * max(delays), 1)
    http.close()
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    memories = int(args.memories or 1_000_000 * args.scale)
    users = int(args.users or max(10, 10_000 * args.scale))
    big = int(args.big or 100_000 * args.scale)
    sizes = user_sizes(memories, users, big, args.seed)
    classes = classes_of(sizes)
    result: dict[str, Any] = {
        "machine": machine_info(),
        "scale": {"memories": memories, "users": users, "big_user": big},
        "users_per_class": {c: len(u) for c, u in classes.items()},
    }
    gen = TextGen(args.seed + 1)
    queries = gen.queries(args.queries)
    with (
        tempfile.TemporaryDirectory(prefix="memoryd-team-") as tmp,
        server(args.pg_url, tmp) as base,
    ):
        from tests.pgserver import fresh_database

        keep = Path(args.keep) if args.keep else None
        loaded = keep / "loaded.json" if keep else None
        home = keep if keep else Path(tmp)
        done = json.loads(loaded.read_text()) if loaded and loaded.is_file() else None
        if done and done["scale"] != result["scale"]:
            raise SystemExit(f"{keep} holds another scale: {done['scale']}; use a new --keep")
        db = done["db"] if done else fresh_database(base)
        result["postgres"] = server_info(db)
        mem = Memory(Settings(home=home / "sqlite"))
        mem.embed_texts(["warm up the model"])
        if done:  # measured again on the stores of an earlier run
            result["load"] = done["load"]
        else:
            pg = open_store(
                db, StoreSettings(postgres={"index_build_memory": args.index_build_memory})
            )
            result["load"] = load(mem, pg, sizes, args.seed)
            pg.close()
            if loaded:
                loaded.write_text(json.dumps({"scale": result["scale"], "db": db} | result))
        print(f"  load: {result['load']}", file=sys.stderr, flush=True)
        if args.load_only:
            mem.close()
            return result
        pg_settings = Settings(home=Path(tmp) / "pg")
        pg_settings.store.url = db
        pg_mem = Memory(pg_settings)
        # users past scope_index_above get their own HNSW graph; a search would start the
        # build in the background, so build them now, before anything is timed
        t0 = time.perf_counter()
        built = pg_mem.store.index_large_scopes()  # type: ignore[attr-defined]
        result["scope_indexes"] = {
            "users_over_threshold_built_now": len(built),
            "build_s": round(time.perf_counter() - t0, 1),
            "indexes": len(pg_mem.store._scope_indexes),  # type: ignore[attr-defined]
        }
        print(f"  own graphs: {result['scope_indexes']}", file=sys.stderr, flush=True)
        # and the big users' postings of common words, in blocks (bulk_load packs them; a
        # store loaded by older code, or kept, may have rows left): packed before timing
        t0 = time.perf_counter()
        blocks = pg_mem.store.pack_postings()  # type: ignore[attr-defined]
        result["packed_postings"] = {
            "blocks_written_now": blocks,
            "pack_s": round(time.perf_counter() - t0, 1),
        }
        stores = {"sqlite": mem, "postgres": pg_mem}
        for m in stores.values():  # warm: indexes loaded, caches filled
            for q in queries[:10]:
                m.search(q, user_id=BIG, top_k=10)
        result["in_process"] = in_process(stores, classes, queries, args.seed)
        exact = open_store(db, StoreSettings(postgres={"exact_scan_below": 10**9}))
        result["quality"] = quality(mem, pg_mem.store, exact, classes, queries, args.seed)
        exact.close()
        print(f"  quality: {result['quality']}", file=sys.stderr, flush=True)
        pg_mem.close()
        mem.close()
        servers = [Server(n, db, Path(tmp), _free_port()) for n in ("a", "b")]
        try:
            for s in servers:
                s.wait_ready()
            result["http"] = over_http(
                servers, classes, queries, args.clients, args.writes, args.seed
            )
        finally:
            for s in servers:
                s.stop()
    return result


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=float, default=0.01, help="share of 1M / 10k users / 100k")
    p.add_argument("--memories", type=int, help="override: memories in all")
    p.add_argument("--users", type=int, help="override: users in all")
    p.add_argument("--big", type=int, help="override: memories of the one big user")
    p.add_argument("--queries", type=int, default=100, help="queries per class")
    p.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients")
    p.add_argument("--writes", type=int, default=200, help="writes for ingest/s")
    p.add_argument("--pg-url", help="PostgreSQL to use (default: a throwaway server)")
    p.add_argument(
        "--keep",
        help="load the stores into this directory (and --pg-url's server) once; later runs"
        " with the same --keep and scale measure them again without loading",
    )
    p.add_argument(
        "--index-build-memory",
        default="512MB",
        help="maintenance_work_mem for the HNSW build (the graph of 1M 384-d vectors needs ~2GB)",
    )
    p.add_argument(
        "--load-only",
        action="store_true",
        help="with --keep: load the stores and stop (measure them in later runs)",
    )
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", help="write the JSON results here")
    args = p.parse_args(argv)
    if args.keep and not args.pg_url:
        p.error("--keep needs --pg-url: a throwaway server's database ends with the run")
    if args.load_only and not args.keep:
        p.error("--load-only needs --keep: what it loads is for later runs")
    t0 = time.perf_counter()
    result = run(args)
    result["seconds"] = round(time.perf_counter() - t0, 1)
    result["machine"]["loadavg_end"] = loadavg()  # other work on the machine, for reading
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
