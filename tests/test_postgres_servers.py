"""Two ``memoryd serve`` processes on one PostgreSQL database: each serves reads
and writes, each sees what the other wrote at once, and a pipeline that is due
runs on exactly one of them (the other's attempt finds the run lock taken)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from memoryd.pipelines.registry import all_specs
from memoryd.pipelines.runs import RUNS_KEY
from memoryd.pipelines.scheduler import SINCE_KEY
from memoryd.store import open_store
from tests import pgserver
from tests.conftest import free_port

pytestmark = pytest.mark.skipif(
    not pgserver.enabled(), reason="PostgreSQL tests run with MEMORYD_TEST_PG=1"
)


class Server:
    """``memoryd serve`` in a subprocess on a free port."""

    def __init__(self, name: str, store_url: str, tmp_path: Path) -> None:
        self.store_url = store_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp_path / f"{name}.log"
        env = {
            **os.environ,
            "MEMORYD_HOME": str(tmp_path / name),
            "MEMORYD_STORE__URL": store_url,
            "MEMORYD_WORKSPACE__OPENCLAW_DIR": str(tmp_path / "openclaw"),
            "MEMORYD_WORKSPACE__WATCH": "false",
        }
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memoryd.cli", "serve", "--port", str(self.port)],
                env=env,
                cwd=tmp_path,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"server did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def add(self, text: str, user: str = "alice") -> str:
        r = httpx.post(
            f"{self.url}/memory/add",
            json={"text": text, "user_id": user, "infer": False},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        (event,) = r.json()["results"]
        assert event["event"] == "ADD"
        return str(event["id"])

    def search(self, query: str, user: str = "alice") -> list[str]:
        r = httpx.post(
            f"{self.url}/memory/search", json={"query": query, "user_id": user}, timeout=30
        )
        assert r.status_code == 200, r.text
        return [hit["memory"] for hit in r.json()["results"]]


@pytest.fixture(scope="module")
def servers(
    pg_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, Server]]:
    """One pair for the module: starting two servers (two models) is the slow part."""
    tmp_path = tmp_path_factory.mktemp("servers")
    db = pgserver.fresh_database(pg_url)
    store = open_store(db)
    try:  # as if the servers had been down for three days: every pipeline is due
        store.kv_set(SINCE_KEY, (datetime.now(UTC) - timedelta(days=3)).isoformat())
    finally:
        store.close()
    a = Server("a", db, tmp_path)
    b = Server("b", db, tmp_path)  # both start at once: migrations must not collide
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:
        a.stop()
        b.stop()
        pgserver.drop_database(db)


def _runs(store_url: str) -> list[dict[str, object]]:
    store = open_store(store_url)
    try:
        return list(store.kv_get(RUNS_KEY) or [])
    finally:
        store.close()


def test_two_servers_share_one_database(servers: tuple[Server, Server]) -> None:
    a, b = servers
    assert httpx.get(f"{a.url}/health").json()["store"] == "postgresql"

    from_a = a.add("Deploys go through ArgoCD on cluster prod-eu-1")
    b.add("The staging database runs PostgreSQL 16 on port 5433")
    assert b.search("how do we deploy?")[0].startswith("Deploys go through ArgoCD")
    assert a.search("which port does the staging database use")[0].startswith("The staging")

    r = httpx.put(
        f"{b.url}/memory/update",
        json={"memory_id": from_a, "text": "Deploys go through Flux on cluster prod-eu-2"},
        timeout=30,
    )
    assert r.status_code == 200, r.text
    history = httpx.get(f"{a.url}/memory/history/{from_a}", timeout=30).json()["results"]
    assert [e["event"] for e in history] == ["ADD", "UPDATE"]
    got = httpx.get(f"{a.url}/memory/{from_a}", timeout=30).json()["result"]
    assert got["memory"].startswith("Deploys go through Flux")

    def write(n: int) -> str:
        return (a, b)[n % 2].add(f"parallel note {n} about topic {n * 7}", user="bob")

    with ThreadPoolExecutor(8) as pool:  # writes through both servers at the same time
        ids = list(pool.map(write, range(24)))
    assert len(set(ids)) == 24
    for server in (a, b):
        listed = httpx.get(
            f"{server.url}/memory/list", params={"user_id": "bob", "limit": 100}, timeout=30
        ).json()
        assert len(listed["results"]) == 24


def test_a_due_pipeline_runs_once_across_both_servers(servers: tuple[Server, Server]) -> None:
    a, _ = servers
    # Opt-in pipelines (commitments) are off on these servers' default settings: never run.
    names = {spec.name for spec in all_specs() if spec.opt_in is None}
    deadline = time.monotonic() + 60
    while True:  # both schedulers catch up at start; wait until every attempt has ended
        runs = [r for r in _runs(a.store_url) if r.get("trigger") == "catch-up"]
        settled = {str(r["name"]) for r in runs if r["status"] != "running"}
        if settled >= names and all(r["status"] != "running" for r in runs):
            break
        assert time.monotonic() < deadline, f"catch-up runs did not finish: {runs}"
        time.sleep(0.2)
    time.sleep(2)  # a slower server's scheduler may still be starting its attempts
    runs = [r for r in _runs(a.store_url) if r.get("trigger") == "catch-up"]
    twice = []
    for name in names:
        ran = sorted(
            (r for r in runs if r["name"] == name and r["status"] != "skipped"),
            key=lambda r: str(r["started_at"]),
        )
        assert ran, f"{name} never ran"
        for first, second in itertools.pairwise(ran):  # the run lock: never at the same time
            assert str(second["started_at"]) >= str(first["finished_at"]), (first, second)
        if len(ran) > 1:
            twice.append(name)
    # the lock makes the runs take turns, and the run's slot, checked under the lock,
    # makes the second server's run of it a skip (pipelines/runs.py)
    assert not twice, f"ran again after the other server had finished: {sorted(twice)}"


def test_a_write_on_one_server_is_found_on_the_other_within_a_second(
    servers: tuple[Server, Server],
) -> None:
    a, b = servers
    for n, (writer, reader) in enumerate([(a, b), (b, a), (a, b)]):
        token = f"xylophone{n}quartz"
        writer.add(f"The {token} shipment arrives on Tuesday", user="carol")
        written = time.monotonic()
        while token not in " ".join(reader.search(f"{token} shipment", user="carol")):
            assert time.monotonic() - written < 1.0, f"{token} not found on the other server"
            time.sleep(0.02)


def test_killing_a_server_loses_no_acknowledged_write(servers: tuple[Server, Server]) -> None:
    """SIGKILL one server while clients write through it: every write it answered is
    in the database and found through the other server. (Last in the module: it kills
    server a.)"""
    a, b = servers
    acknowledged: list[str] = []
    stop = time.monotonic() + 60

    def write(n: int) -> None:
        while time.monotonic() < stop:
            try:
                r = httpx.post(
                    f"{a.url}/memory/add",
                    json={
                        "text": f"durable note {n} number {len(acknowledged)}",
                        "user_id": "dan",
                        "infer": False,
                    },
                    timeout=30,
                )
            except httpx.TransportError:
                return  # the server died mid-request: not acknowledged
            if r.status_code == 200:
                acknowledged.append(r.json()["results"][0]["id"])

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(write, n) for n in range(4)]
        while len(acknowledged) < 20:
            assert time.monotonic() < stop, "writes through server a did not go through"
            time.sleep(0.05)
        a.proc.kill()  # SIGKILL: no shutdown, no flush
        a.proc.wait()
        for f in futures:
            f.result()
    assert len(acknowledged) >= 20
    for memory_id in acknowledged:
        r = httpx.get(f"{b.url}/memory/{memory_id}", timeout=30)
        assert r.status_code == 200, (memory_id, r.text)
    listed = httpx.get(
        f"{b.url}/memory/list", params={"user_id": "dan", "limit": 1000}, timeout=30
    ).json()["results"]
    assert {m["id"] for m in listed} >= set(acknowledged)
