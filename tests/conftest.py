"""Shared fixtures: the real local embedding model, real stores, a real server."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder, create_embedder
from memoryd.settings import EmbedSettings, Settings
from memoryd.store import Store, open_store

FULL = os.environ.get("MEMORYD_FULL") == "1"
# One cache of the optimised ONNX graph (embed/onnx.py) for the whole run, also for the
# subprocesses tests start with a HOME of their own (they pass this variable on).
os.environ.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The real bundled ONNX model, loaded once per test session."""
    return create_embedder(EmbedSettings())


def _store_params() -> list[str]:
    params = ["sqlite"]
    if os.environ.get("MEMORYD_TEST_PG_URL") or os.environ.get("MEMORYD_TEST_PG") in ("1", "all"):
        params.append("postgres")
    return params


#: With MEMORYD_TEST_PG=1 (CI) the store-backed tests of these modules also run on
#: PostgreSQL: the store contract and the code that leans on the store hardest.
#: MEMORYD_TEST_PG=all runs every store-backed test on both stores (about 2x longer).
PG_MODULES = (
    "test_store_contract",
    "test_filters",  # mem0's filter language, compiled per SQL dialect
    "test_memory",
    "test_api",
    "test_service_",
    "test_extract_",
    "test_pipelines_",
    "test_backfill",  # backfill then rollback leaves the store as it was
    "test_postgres_",
    "test_workspace_index",  # file replacement in one transaction, two indexers
    "test_workspace_rebuild",  # the model-change swap
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("MEMORYD_TEST_PG") == "all":
        return
    keep: list[pytest.Item] = []
    skip: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_pg = callspec is not None and callspec.params.get("store_url") == "postgres"
        module = item.nodeid.split("::")[0].rsplit("/", 1)[-1]
        (skip if on_pg and not module.startswith(PG_MODULES) else keep).append(item)
    if skip:
        config.hook.pytest_deselected(items=skip)
        items[:] = keep


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = os.environ.get("MEMORYD_TEST_PG_URL")
    if url:
        yield url
        return
    from tests.pgserver import start_pg

    url, stop = start_pg(tmp_path_factory.mktemp("pg"))
    yield url
    stop()


@pytest.fixture(params=_store_params())
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "memoryd.db")
        return
    base = request.getfixturevalue("pg_url")
    from tests.pgserver import drop_database, fresh_database

    url = fresh_database(base)
    yield url
    drop_database(url)  # ~8 MB each: do not keep hundreds


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    s = open_store(store_url)
    yield s
    s.close()


@pytest.fixture
def settings(tmp_path: Path, store_url: str) -> Settings:
    s = Settings(home=tmp_path / "home")
    s.store.url = store_url
    s.workspace.openclaw_dir = tmp_path / "openclaw"  # never the real ~/.openclaw
    s.workspace.watch = False  # tests that want the workspace watcher turn it on
    s.pipelines.scheduler = False  # tests that want the pipeline scheduler turn it on
    return s


class FakeClock:
    """A clock tests move by hand."""

    def __init__(self, start: str = "2026-03-27T09:00:00+00:00") -> None:
        from datetime import datetime

        self.now = datetime.fromisoformat(start)

    def __call__(self):  # type: ignore[no-untyped-def]
        return self.now

    def advance(self, **kwargs: float) -> None:
        from datetime import timedelta

        self.now = self.now + timedelta(**kwargs)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def memory(settings: Settings, embedder: Embedder, clock: FakeClock) -> Iterator[Memory]:
    mem = Memory(settings, embedder=embedder, clock=clock)
    yield mem
    mem.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LiveServer:
    """uvicorn serving an app on a free loopback port, in a thread."""

    def __init__(self, app: object) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture
def live_server() -> Callable[[object], LiveServer]:
    return LiveServer
