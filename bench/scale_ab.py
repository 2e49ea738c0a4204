"""Before/after search latency of two source trees on one store, back to back.

The machine is shared, so two separate runs of ``scale.py`` can differ by 2x on
load alone. Here worker processes of the two trees take turns (A B, B A, ...)
on one store, each timing its share of the same 200 queries (``scale.py``'s
generator) round-robin over hybrid, vector, BM25, index KNN and embedding
alone, so load spikes hit both sides alike. Each worker reports its
``foreign_cpu_share``, its start-up (a new process to its first search) and the
index's bytes per memory.

    git archive <commit> src | tar -x -C /tmp/before
    python bench/scale_ab.py --home /tmp/s100k --build 100000      # once: a synthetic store
    python bench/scale_ab.py --home /tmp/s100k --before /tmp/before/src --after src \\
        --out bench/results/scale-ab-100k.json

``--build`` writes ``scale.py``'s synthetic memories with ``--synthetic-vectors``
(real text, blended real embeddings) through the current tree, and builds the
nearest-neighbour graph a server would (store/ann.py). Each tree works on its own copy
of the store (``<home>-before``, ``<home>-after``, made on first use).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import machine_info, percentile_ms

BENCH = Path(__file__).resolve().parent
QUERIES = 200

_WORKER = """
import json, os, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[4])
from _common import CpuWatch, rss_mb
from scale import QUERIES, TOP_K, USER, WARMUP, SEED, TextGen
from memoryd.core import Memory
from memoryd.models import Filters
from memoryd.settings import Settings
t1 = time.perf_counter()
home, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
mem = Memory(Settings(home=__import__("pathlib").Path(home)))
gen = TextGen(SEED + 1)
warm = gen.queries(WARMUP)
queries = gen.queries(QUERIES, avoid=set(warm))[lo:hi]
mem.search(warm[0], user_id=USER, top_k=TOP_K, record_recall=False)
t2 = time.perf_counter()
scope = Filters(user_id=USER)

def searcher(mode):
    def search(q):
        mem._query_cache.clear()
        hits = mem.search(q, user_id=USER, top_k=TOP_K, mode=mode, record_recall=False)
        return [h.id for h in hits]
    return search

def knn(q):
    return [i for i, _ in mem.store.vector_search(mem.embedder.embed([q])[0], scope, TOP_K)]

runs = {"hybrid": searcher("hybrid"), "vector": searcher("vector"), "bm25": searcher("keyword"),
        "vector_index_knn": knn, "embed_only": lambda q: mem.embedder.embed([q])[0]}
for q in warm:
    for fn in runs.values():
        fn(q)
watch = CpuWatch()
times = {name: [] for name in runs}
for n, q in enumerate(queries):
    names = list(runs)
    for name in names[n % len(names):] + names[: n % len(names)]:
        t = time.perf_counter()
        runs[name](q)
        times[name].append(time.perf_counter() - t)
index = mem.store._index
print(json.dumps({
    "times": times, "cpu": watch.report(), "loadavg": os.getloadavg(), "rss_mb": rss_mb(),
    "import_s": t1 - t0, "open_to_first_hit_s": t2 - t1,
    "index_bytes_per_memory": index.memory_bytes() / len(index),
    "graph_rows": getattr(index, "graph_size", 0),
}))
"""


def build(home: Path, size: int) -> None:
    from memoryd.core import Memory
    from memoryd.models import MemoryRecord, Origin
    from memoryd.settings import Settings
    from scale import SEED, SYNTHETIC_BATCH, USER, batches, synthetic_vectors

    home.mkdir(parents=True, exist_ok=True)
    mem = Memory(Settings(home=home))
    make = synthetic_vectors(mem, SEED)
    for start, texts in batches(size, SYNTHETIC_BATCH, SEED):
        records = [
            MemoryRecord(id=f"m{start + i}", text=t, user_id=USER, origin=Origin.API)
            for i, t in enumerate(texts)
        ]
        for record, vector in zip(records, make(len(records)), strict=True):
            record.embedding = vector
        mem.write_records(records)
    mem.search("build the index", user_id=USER, top_k=10)  # builds and saves the index
    started = time.perf_counter()
    mem.store._index.prepare(wait=True)  # type: ignore[attr-defined]  # what a server builds
    graph = mem.store._index.graph_size  # type: ignore[attr-defined]
    print(f"nearest-neighbour graph: {graph} rows in {time.perf_counter() - started:.0f} s")
    mem.close()  # saves the snapshot with the graph


def copies(home: Path, trees: dict[str, str]) -> dict[str, Path]:
    """A copy of the store for each tree (``<home>-<name>``, made once): a tree that cannot
    read the other's index snapshot rebuilds and saves its own, which would otherwise
    replace the other's between turns."""
    out: dict[str, Path] = {}
    for name in trees:
        copy = home.with_name(f"{home.name}-{name}")
        if not copy.exists():
            shutil.copytree(home, copy)
        out[name] = copy
    return out


def compare(home: Path, trees: dict[str, str], rounds: int) -> dict[str, Any]:
    raw: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
    per = QUERIES // rounds
    homes = copies(home, trees)
    for r in range(rounds):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for name in order:
            env = {**os.environ, "PYTHONPATH": str(Path(trees[name]).resolve())}
            args = [homes[name], r * per, (r + 1) * per, BENCH]
            done = subprocess.run(
                [sys.executable, "-c", _WORKER, *map(str, args)],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            part = json.loads(done.stdout.strip().splitlines()[-1])
            raw[name].append(part)
            print(f"{name} round {r}: {part['cpu']}", file=sys.stderr, flush=True)
    out: dict[str, Any] = {}
    for name, parts in raw.items():
        modes: dict[str, Any] = {}
        for mode in parts[0]["times"]:
            times = [t for p in parts for t in p["times"][mode]]
            modes[mode] = {"p50_ms": percentile_ms(times, 50), "p95_ms": percentile_ms(times, 95)}
        out[name] = {
            "tree": trees[name],
            "modes": modes,
            "foreign_cpu_share": [p["cpu"].get("foreign_cpu_share") for p in parts],
            "loadavg": [[round(x, 2) for x in p["loadavg"]] for p in parts],
            "open_to_first_hit_s": [round(p["open_to_first_hit_s"], 2) for p in parts],
            "import_s": [round(p["import_s"], 2) for p in parts],
            "index_bytes_per_memory": round(
                float(np.mean([p["index_bytes_per_memory"] for p in parts]))
            ),
            "rss_mb": [p["rss_mb"] for p in parts],
        }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", required=True, help="the store's home directory")
    p.add_argument("--build", type=int, help="first write this many synthetic memories there")
    p.add_argument("--before", help="the src/ directory of the tree measured first")
    p.add_argument("--after", help="the src/ directory of the tree measured second")
    p.add_argument("--rounds", type=int, default=4, help="turns each tree takes (even)")
    p.add_argument("--out", help="write the JSON results here")
    args = p.parse_args()
    home = Path(args.home)
    if args.build:
        build(home, args.build)
    if not (args.before and args.after):
        return
    info = machine_info()
    result = {"meta": info, "store": str(home)}
    result |= compare(home, {"before": args.before, "after": args.after}, args.rounds)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
