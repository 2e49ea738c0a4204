"""Soak test: a real ``memoryd serve`` under mixed traffic for a bounded time.

Starts the server as a subprocess on a free loopback port with a temporary
``MEMORYD_HOME``, waits for ``/health``, then runs ``--clients`` threads for
``--seconds``: each picks add / search / list / get at random (weights 3:4:2:2)
with ``httpx``. Reports per-operation count, p50/p95 latency and errors, total
throughput, and the server's resident memory (``VmRSS`` of its process, from
``/proc``) at start, at the end and its growth, sampled once a second.

    python bench/soak.py --seconds 60 --clients 4 --out bench/results/soak.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np

OPS = ("add", "search", "list", "get")
WEIGHTS = (3, 4, 2, 2)
USERS = ("alice", "bob", "carol", "dave")
SUBJECTS = ("the deploy", "Alice", "the budget", "our API", "the cat", "Bob", "the release")
VERBS = ("prefers", "moved", "broke", "approved", "renamed", "fixed", "scheduled")
OBJECTS = (
    "dark mode",
    "the Friday meeting",
    "pgvector",
    "peanut-free snacks",
    "the staging cluster",
    "version 2.3",
    "the onboarding guide",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float | None:
    """Resident memory of process ``pid`` in MiB (``VmRSS``), None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def pct(seconds: list[float], q: float) -> float | None:
    if not seconds:
        return None
    return round(float(np.percentile(np.asarray(seconds) * 1000.0, q)), 2)


@dataclass
class Stats:
    """One client's tallies; merged at the end, so no lock on the hot path."""

    times: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPS})
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPS, 0))
    samples: list[str] = field(default_factory=list)  # first few error descriptions


def sentence(rng: random.Random, n: int) -> str:
    return (
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}"
        f" (note {n}, {rng.randrange(10**6)})"
    )


def client(base: str, seed: int, deadline: float, stats: Stats, ids: list[str]) -> None:
    """Mixed traffic until ``deadline``; ``ids`` is shared (list append is atomic)."""
    rng = random.Random(seed)
    n = 0
    with httpx.Client(base_url=base, timeout=60) as http:
        while time.monotonic() < deadline:
            op = rng.choices(OPS, WEIGHTS)[0]
            if op == "get" and not ids:
                op = "add"
            user = rng.choice(USERS)
            started = time.perf_counter()
            try:
                if op == "add":
                    n += 1
                    r = http.post(
                        "/memory/add",
                        json={"text": sentence(rng, n), "user_id": user, "infer": False},
                    )
                    if r.status_code == 200:
                        ids.extend(e["id"] for e in r.json()["results"] if e.get("id"))
                elif op == "search":
                    r = http.post(
                        "/memory/search",
                        json={"query": sentence(rng, 0), "user_id": user, "top_k": 10},
                    )
                elif op == "list":
                    r = http.get("/memory/list", params={"user_id": user, "limit": 20})
                else:
                    r = http.get(f"/memory/{rng.choice(ids)}")
                ok = r.status_code == 200
                why = f"{op}: HTTP {r.status_code} {r.text[:200]}"
            except httpx.HTTPError as exc:
                ok, why = False, f"{op}: {type(exc).__name__}: {exc}"
            stats.times[op].append(time.perf_counter() - started)
            if not ok:
                stats.errors[op] += 1
                if len(stats.samples) < 5:
                    stats.samples.append(why)


def start_server(home: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MEMORYD_HOME": str(home),
        "MEMORYD_SERVER__PORT": str(port),
        "MEMORYD_WORKSPACE__OPENCLAW_DIR": str(home / "openclaw"),  # never the real one
    }
    env.pop("MEMORYD_STORE__URL", None)
    log = (home / "server.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "memoryd.cli", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_healthy(base: str, proc: subprocess.Popen[bytes], timeout: float = 120) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise SystemExit(f"memoryd serve exited with {proc.returncode} before /health")
        try:
            if httpx.get(f"{base}/health", timeout=2).status_code == 200:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"memoryd serve did not answer /health within {timeout:.0f} s")


def run(seconds: float, clients: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memoryd-soak-") as tmp:
        home = Path(tmp)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        proc = start_server(home, port)
        try:
            startup_s = wait_healthy(base, proc)
            # one add and search so the model and indexes are warm before RSS "start"
            httpx.post(
                f"{base}/memory/add",
                json={"text": "warm-up", "user_id": "warm", "infer": False},
                timeout=60,
            )
            httpx.post(f"{base}/memory/search", json={"query": "warm", "user_id": "warm"})
            rss_start = rss_mb(proc.pid)
            rss_samples: list[float] = []
            all_stats = [Stats() for _ in range(clients)]
            ids: list[str] = []
            deadline = time.monotonic() + seconds
            threads = [
                threading.Thread(target=client, args=(base, seed + i, deadline, all_stats[i], ids))
                for i in range(clients)
            ]
            began = time.perf_counter()
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):
                sample = rss_mb(proc.pid)
                if sample is not None:
                    rss_samples.append(sample)
                time.sleep(1)
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - began
            rss_end = rss_mb(proc.pid)
            health = httpx.get(f"{base}/health", timeout=10).json()
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        alive_at_end = proc.returncode in (0, -15)
    ops: dict[str, Any] = {}
    total = 0
    for op in OPS:
        times = [t for s in all_stats for t in s.times[op]]
        errors = sum(s.errors[op] for s in all_stats)
        total += len(times)
        ops[op] = {
            "count": len(times),
            "errors": errors,
            "p50_ms": pct(times, 50),
            "p95_ms": pct(times, 95),
            "per_s": round(len(times) / elapsed, 1),
        }
    return {
        "meta": {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": seconds,
            "clients": clients,
            "seed": seed,
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "server_startup_s": round(startup_s, 2),
            "weights": dict(zip(OPS, WEIGHTS, strict=True)),
        },
        "elapsed_s": round(elapsed, 2),
        "requests": total,
        "throughput_rps": round(total / elapsed, 1),
        "errors": sum(o["errors"] for o in ops.values()),
        "error_samples": [x for s in all_stats for x in s.samples][:5],
        "ops": ops,
        "memories_at_end": sum(health.get("counts", {}).values()),
        "server_exit_clean": alive_at_end,
        "rss_mb": {
            "start": rss_start,
            "end": rss_end,
            "peak": max(rss_samples, default=None),
            "growth": None
            if rss_start is None or rss_end is None
            else round(rss_end - rss_start, 1),
        },
    }


def table(result: dict[str, Any]) -> str:
    lines = ["| op | count | errors | p50 ms | p95 ms | per s |", "|---|---|---|---|---|---|"]
    for op, o in result["ops"].items():
        lines.append(
            f"| {op} | {o['count']} | {o['errors']} | {o['p50_ms']} | {o['p95_ms']} "
            f"| {o['per_s']} |"
        )
    rss = result["rss_mb"]
    lines.append("")
    lines.append(
        f"{result['requests']} requests in {result['elapsed_s']} s: "
        f"{result['throughput_rps']} req/s, {result['errors']} errors; server RSS "
        f"{rss['start']} → {rss['end']} MiB (growth {rss['growth']}, peak {rss['peak']})"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write the JSON result here")
    args = parser.parse_args()
    if args.seconds <= 0 or args.clients < 1:
        parser.error("--seconds must be > 0 and --clients at least 1")
    result = run(args.seconds, args.clients, args.seed)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    if result["errors"]:
        print("errors:", *result["error_samples"], sep="\n  ", file=sys.stderr)


if __name__ == "__main__":
    main()
