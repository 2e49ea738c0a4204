"""Search latency over HTTP by ``top_k``, query embedding included.

```
python bench/search_latency.py [--dataset locomo] [--top-k 5,10,25] [--set MEMORYD_X=V] [--out FILE]
```

One ``memoryd serve`` with shipped defaults gets the dataset's conversations the
way ``paths.py``'s ``api-messages`` path sends them (``POST /memory/add`` with
``messages``); then the questions are asked through ``POST /memory/search``, the
``top_k`` sizes (default 5, memoryd's own, 10, and 25, what ``paths.py`` asks for)
taking turns question by question, so a slow or fast spell of the machine falls
on all of them alike. Each question is asked once, so every search embeds its
query (the server's query cache never answers). Reports the client-side p50/p95
per ``top_k`` and the machine's load.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from pathlib import Path

from _common import loadavg, machine_info, percentile_ms
from datasets import load
from paths import ADVERSARIAL, Server, add_set_option, api_messages, server_settings


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="locomo")
    ap.add_argument("--top-k", default="5,10,25")
    add_set_option(ap)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    server_env = server_settings(args.set)
    for module in sorted(Path(__file__).parent.glob("dataset_*.py")):
        importlib.import_module(module.stem)
    convs = load(args.dataset)
    sizes = [int(k) for k in args.top_k.split(",")]
    info = machine_info()
    asked = [(c.id, q.text) for c in convs for q in c.questions if q.category != ADVERSARIAL]
    latencies: dict[int, list[float]] = {k: [] for k in sizes}
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-latency-") as tmp:
        srv = Server(Path(tmp), server_env)
        try:
            api_messages(srv, convs)
            srv.post("/memory/search", {"query": "warm up", "user_id": convs[0].id})
            for n, (user, query) in enumerate(asked):
                k = sizes[n % len(sizes)]
                body = {"query": query, "user_id": user, "top_k": k, "time_decay": False}
                t0 = time.perf_counter()
                srv.post("/memory/search", body)
                latencies[k].append(time.perf_counter() - t0)
        finally:
            srv.close()
    rows = {
        str(k): {
            "searches": len(v),
            "p50_ms": percentile_ms(v, 50),
            "p95_ms": percentile_ms(v, 95),
        }
        for k, v in latencies.items()
    }
    meta = {**info, "dataset": args.dataset, "server_settings": server_env}
    out = {"meta": {**meta, "loadavg_end": loadavg()}, "top_k": rows}
    for k, r in rows.items():
        print(
            f"top_k {k:>3}: p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms ({r['searches']} searches)"
        )
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
