"""HTTP ingest: memories per second through ``POST /memory/add``.

An agent (or a fleet of them) mostly stores memories one at a time, so the
first figure is the rate of single-text requests, alone and concurrent, not the
model's bulk throughput. A real ``memoryd serve`` (temporary home, shipped
defaults) answers ``--clients`` concurrent clients, each posting its share of
distinct synthetic facts (``infer: false``); the same texts are never sent
twice (the embedding cache would skip the model). ``--batch N`` sends ``N``
facts per request as ``texts`` (an import, or an agent saving several facts at
once): the rate of the bulk path through HTTP.

    python bench/ingest.py --memories 2000 --clients 1,8,32 --out bench/results/ingest.json
    python bench/ingest.py --kind short --batch 1,16,64 --clients 1,4 --out FILE
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


def run(server: Server, texts: list[str], clients: int, batch: int = 1) -> dict[str, Any]:
    latencies: list[float] = []

    def post_all(share: list[str]) -> None:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            for i in range(0, len(share), batch):
                chunk = share[i : i + batch]
                body: dict[str, Any] = {"user_id": "u", "infer": False}
                body.update({"text": chunk[0]} if batch == 1 else {"texts": chunk})
                t0 = time.perf_counter()
                r = http.post("/memory/add", json=body)
                latencies.append(time.perf_counter() - t0)
                if r.status_code != 200:
                    raise SystemExit(f"/memory/add answered {r.status_code}: {r.text[:300]}")
                if sum(e["event"] == "ADD" for e in r.json()["results"]) != len(chunk):
                    raise SystemExit(f"/memory/add did not store all of {chunk}")

    shares = [texts[i::clients] for i in range(clients)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(post_all, shares))
    wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "batch": batch,
        "memories": len(texts),
        "per_s": round(len(texts) / wall, 1),
        "request_p50_ms": percentile_ms(latencies, 50),
        "request_p95_ms": percentile_ms(latencies, 95),
        "loadavg_after": loadavg(),
    }


def measure(
    settings: list[tuple[int, int]], memories: int, kind: str = "short", seed: int = 7
) -> list[dict[str, Any]]:
    """One fresh server; for each (memories per request, clients) ``memories`` distinct
    facts (distinct across settings too: the cache would skip the model for a repeat)."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="memoryd-ingest-") as tmp:
        server = Server(Path(tmp))
        try:
            server.post("/memory/add", {"text": "warm up the model", "user_id": "u"})
            every = facts(memories * len(settings), seed, kind)
            for n, (batch, clients) in enumerate(settings):
                texts = every[n * memories : (n + 1) * memories]
                results.append(run(server, texts, clients, batch))
                print(json.dumps(results[-1]), file=sys.stderr, flush=True)
        finally:
            server.close()
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int, default=2000, help="memories per client setting")
    p.add_argument("--clients", default="1,8,32", help="comma list of concurrent clients")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--kind", choices=("sentence", "short"), default="sentence")
    p.add_argument("--batch", default="1", help="comma list of memories per request")
    p.add_argument("--out", help="write the JSON results here")
    args = p.parse_args()
    info = machine_info()
    settings = [(int(b), int(c)) for b in args.batch.split(",") for c in args.clients.split(",")]
    results = measure(settings, args.memories, args.kind, args.seed)
    out = {"meta": {**info, "kind": args.kind, "loadavg_end": loadavg()}, "runs": results}
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print("| memories per request | clients | memories/s | request p50 / p95 ms |")
    print("|---|---|---|---|")
    for r in results:
        print(
            f"| {r['batch']} | {r['clients']} | {r['per_s']} | "
            f"{r['request_p50_ms']} / {r['request_p95_ms']} |"
        )


if __name__ == "__main__":
    main()
