"""HTTP ingest: memories per second through ``POST /memory/add``, one memory per request.

An agent (or a fleet of them) stores memories one at a time, so what a user
sees is the rate of single-text requests, alone and concurrent, not the
model's bulk throughput. A real ``memoryd serve`` (temporary home, shipped
defaults) answers ``--clients`` concurrent clients, each posting its share of
distinct synthetic facts (``infer: false``); the same texts are never sent
twice (the embedding cache would skip the model).

    python bench/ingest.py --memories 2000 --clients 1,8,32 --out bench/results/ingest.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from _common import loadavg, machine_info, percentile_ms
from paths import Server
from scale import TextGen, batches

#: short facts, 5-8 words, what an agent stores one at a time ("Ana likes sushi.")
SHORT = [
    "{name} likes {food}.",
    "{name} works as a {prof}.",
    "{name}'s dog is called {pet}.",
    "{name} lives on {street} Street.",
    "{name} enjoys {act} in {place}.",
    "{name} is on project {code}.",
    "{name} joined {org}.",
]


def facts(n: int, seed: int, kind: str = "sentence") -> list[str]:
    """``n`` distinct synthetic facts: scale.py's 18-30 word sentences, or short ones."""
    if kind == "sentence":
        return next(batches(n, n, seed))[1]
    gen, out, seen = TextGen(seed), [], set()
    while len(out) < n:
        text = gen._fill(gen.rng.choice(SHORT))
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def run(server: Server, texts: list[str], clients: int) -> dict[str, Any]:
    latencies: list[float] = []

    def post_all(share: list[str]) -> None:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            for text in share:
                t0 = time.perf_counter()
                r = http.post("/memory/add", json={"text": text, "user_id": "u", "infer": False})
                latencies.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    raise SystemExit(f"/memory/add answered {r.status_code}: {r.text[:300]}")

    shares = [texts[i::clients] for i in range(clients)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(post_all, shares))
    wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "memories": len(texts),
        "per_s": round(len(texts) / wall, 1),
        "request_p50_ms": percentile_ms(latencies, 50),
        "request_p95_ms": percentile_ms(latencies, 95),
        "loadavg_after": loadavg(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int, default=2000, help="memories per client setting")
    p.add_argument("--clients", default="1,8,32", help="comma list of concurrent clients")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--kind", choices=("sentence", "short"), default="sentence")
    p.add_argument("--out", help="write the JSON results here")
    args = p.parse_args()
    info = machine_info()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memoryd-ingest-") as tmp:
        server = Server(Path(tmp))
        try:
            server.post("/memory/add", {"text": "warm up the model", "user_id": "u"})
            for n, clients in enumerate(int(c) for c in args.clients.split(",")):
                texts = facts(args.memories, args.seed + n, args.kind)
                results.append(run(server, texts, clients))
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        finally:
            server.close()
    out = {"meta": {**info, "kind": args.kind, "loadavg_end": loadavg()}, "runs": results}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print("| clients | memories/s | request p50 / p95 ms |")
    print("|---|---|---|")
    for r in results:
        print(f"| {r['clients']} | {r['per_s']} | {r['request_p50_ms']} / {r['request_p95_ms']} |")


if __name__ == "__main__":
    main()
