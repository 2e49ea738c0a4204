"""Concurrency on one SQLite store: several processes adding and searching at
once (no "database is locked" reaches a caller, every write is there), and
the same through the HTTP server with concurrent httpx clients.

Default: 4 processes x 100 adds (+ searches); MEMORYD_FULL=1: 8 x 1,000.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.models import Filters
from memoryd.settings import Settings
from tests.conftest import FULL

PROCS, ADDS = (8, 1000) if FULL else (4, 100)

_ctx = multiprocessing.get_context("forkserver")
_ctx.set_forkserver_preload(["memoryd.core"])


def _settings(home: Path) -> Settings:
    s = Settings(home=home)
    s.workspace.watch = False
    s.pipelines.scheduler = False
    return s


def _worker(home: str, n: int, adds: int, start: Any, out: Any) -> None:
    """Child: add ``adds`` memories and search after each; report errors, never raise."""
    errors: list[str] = []
    mem = Memory(_settings(Path(home)))
    mem.embed_texts(["warm up"])
    start.wait(120)
    for i in range(adds):
        try:
            mem.add(f"worker {n} fact {i} about service s{i % 7}", user_id="conc", infer=False)
            if i % 4 == 0:
                mem.search(f"service s{i % 7}", user_id="conc", top_k=3)
        except Exception as exc:  # report everything to the parent, which fails the test
            errors.append(f"{type(exc).__name__}: {exc}")
    mem.close()
    out.put((n, errors))


def test_processes_adding_and_searching_on_one_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    Memory(_settings(home)).close()  # create the store once
    start = _ctx.Event()
    out = _ctx.Queue()
    procs = [
        _ctx.Process(target=_worker, args=(str(home), n, ADDS, start, out)) for n in range(PROCS)
    ]
    for p in procs:
        p.start()
    start.set()
    results = [out.get(timeout=900) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    errors = [e for _, errs in results for e in errs]
    assert not errors, errors[:5]  # in particular no "database is locked"
    with Memory(_settings(home)) as mem:
        texts = [r.text for r in mem.list(filters=Filters(user_id="conc"), limit=100_000)]
        assert len(texts) == PROCS * ADDS == len(set(texts))
        assert mem.store.integrity_check() == []  # type: ignore[attr-defined]


def test_concurrent_http_clients(memory: Memory, live_server) -> None:  # type: ignore[no-untyped-def]
    clients, per_client = (16, 200) if FULL else (8, 25)
    with live_server(create_app(memory=memory)) as srv:

        def work(n: int) -> list[int]:
            bad: list[int] = []
            with httpx.Client(base_url=srv.url, timeout=120) as c:
                for i in range(per_client):
                    body = {"text": f"client {n} note {i}", "user_id": "web", "infer": False}
                    r = c.post("/memory/add", json=body)
                    if r.status_code != 200:
                        bad.append(r.status_code)
                    r = c.post("/memory/search", json={"query": f"note {i}", "user_id": "web"})
                    if r.status_code != 200:
                        bad.append(r.status_code)
                    if i % 5 == 0 and c.get("/memory/list?user_id=web").status_code != 200:
                        bad.append(-1)
            return bad

        with ThreadPoolExecutor(clients) as pool:
            failures = [s for bad in pool.map(work, range(clients)) for s in bad]
    assert failures == []
    texts = [r.text for r in memory.list(filters=Filters(user_id="web"), limit=100_000)]
    assert len(texts) == clients * per_client == len(set(texts))
