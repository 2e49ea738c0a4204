"""Running pipelines: the lock, the run registry, catch-up, the CLI and GET /v1/pipelines."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memoryd.api.app import create_app
from memoryd.cli import app as cli_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import NotFoundError
from memoryd.pipelines import registry
from memoryd.pipelines.registry import PipelineContext, PipelineSpec, RunResult
from memoryd.pipelines.runs import RUNS_KEY, get_run, list_runs, run_pipeline
from memoryd.pipelines.scheduler import SINCE_KEY, PipelineScheduler, missed
from memoryd.settings import ApiKey, Settings
from tests.pipelines_kit import FixedClock, fill_diary, pipeline_settings, workspace


def _counting(ctx: PipelineContext) -> RunResult:
    result = RunResult()
    result.count("agents", len(ctx.agents()))
    result.note(f"dry run: {ctx.dry_run}")
    return result


def _failing(ctx: PipelineContext) -> RunResult:
    raise RuntimeError("the diary disk is gone")


@pytest.fixture(autouse=True)
def test_pipelines() -> Iterator[None]:
    """Two pipelines of this module's own, registered only while its tests run."""
    registry.register(PipelineSpec("test-count", _counting, "0 4 * * *", "counts agents"))
    registry.register(PipelineSpec("test-fail", _failing, "0 5 * * *", "always fails"))
    yield
    registry.unregister("test-count")
    registry.unregister("test-fail")


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock("2026-03-27T09:00:00+00:00")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return pipeline_settings(tmp_path / "home")


@pytest.fixture
def mem(settings: Settings, embedder: Embedder, clock: FixedClock) -> Iterator[Memory]:
    m = Memory(settings, embedder=embedder, clock=clock)
    yield m
    m.close()


def test_a_run_is_recorded_from_start_to_end(mem: Memory, settings: Settings) -> None:
    workspace(settings, "alpha")
    workspace(settings, "beta")
    record = run_pipeline(mem, "test-count")
    assert record.status == "ok" and record.counts == {"agents": 2}
    assert record.started_at == "2026-03-27T09:00:00+00:00" and record.finished_at
    stored = mem.store.kv_get(RUNS_KEY)
    assert stored[-1]["run_id"] == record.run_id and stored[-1]["status"] == "ok"
    only = run_pipeline(mem, "test-count", agent="beta", dry_run=True)
    assert only.counts == {"agents": 1} and only.dry_run and only.notes == ["dry run: True"]
    assert [r.run_id for r in list_runs(mem, name="test-count")] == [only.run_id, record.run_id]


def test_a_failing_run_is_recorded_and_raised(mem: Memory) -> None:
    with pytest.raises(RuntimeError, match="disk is gone"):
        run_pipeline(mem, "test-fail")
    (record,) = list_runs(mem, name="test-fail")
    assert record.status == "error" and "disk is gone" in (record.error or "")


def test_a_second_process_skips_while_the_lock_is_held(
    tmp_path: Path, embedder: Embedder, clock: FixedClock
) -> None:
    settings = pipeline_settings(tmp_path / "home")
    settings.pipelines.lock_ttl_s = 600
    with (
        Memory(settings, embedder=embedder, clock=clock) as one,
        Memory(settings, embedder=embedder, clock=clock) as two,
        one.store.run_lock("pipeline:test-count", 600) as got,
    ):
        assert got
        record = run_pipeline(two, "test-count")
        assert record.status == "skipped" and "another process" in (record.error or "")
        assert record.counts == {}


def test_a_run_left_running_by_a_dead_process_is_marked_interrupted(mem: Memory) -> None:
    stale = {"name": "test-count", "run_id": "test-count-dead", "agent": None,
             "started_at": "2026-03-26T09:00:00+00:00", "status": "running"}  # fmt: skip
    mem.store.kv_set(RUNS_KEY, [stale])
    run_pipeline(mem, "test-count")
    dead = get_run(mem, "test-count-dead")
    assert dead is not None and dead.status == "interrupted"


def test_only_the_newest_runs_are_kept(mem: Memory) -> None:
    mem.settings.pipelines.keep_runs = 10
    for _ in range(14):
        run_pipeline(mem, "test-count")
    assert len(mem.store.kv_get(RUNS_KEY)) == 10


def test_unknown_pipeline_is_a_named_error(mem: Memory) -> None:
    with pytest.raises(NotFoundError) as err:
        run_pipeline(mem, "nope")
    assert "digest" in (err.value.hint or "")


def test_builtin_pipelines_are_registered() -> None:
    names = [s.name for s in registry.all_specs()]
    for name in ("digest", "sync", "dream", "promote"):
        assert name in names
    assert registry.get("digest").schedule == "*/15 * * * *"
    assert registry.get("dream").schedule == "0 2 * * *"
    assert registry.get("sync").schedule == "0 1 * * *"


def test_missed_runs_are_caught_up_once(mem: Memory, clock: FixedClock) -> None:
    mem.settings.pipelines.disabled = ["test-count", "test-fail", "decay", "lessons"]
    mem.store.kv_set(SINCE_KEY, "2026-03-27T09:00:00+00:00")
    assert missed(mem, clock()) == []  # nothing was due since the scheduler first started
    clock.now = datetime.fromisoformat("2026-03-28T02:30:00+00:00")  # asleep through the night
    assert set(missed(mem, clock())) == {"digest", "sync", "dream"}
    run_pipeline(mem, "dream")
    run_pipeline(mem, "sync")
    assert set(missed(mem, clock())) == {"digest"}
    clock.now = datetime.fromisoformat("2026-03-28T02:40:00+00:00")
    run_pipeline(mem, "digest")
    assert missed(mem, clock()) == []
    mem.settings.pipelines.schedules = {"dream": "35 2 * * *"}
    assert missed(mem, clock()) == ["dream"]  # 02:35 passed since the 02:30 run


def test_scheduler_catches_up_in_the_background(mem: Memory, clock: FixedClock) -> None:
    mem.settings.pipelines.disabled = ["test-fail", "decay", "lessons", "promote", "digest"]
    mem.settings.pipelines.disabled += ["structure"]
    mem.store.kv_set(SINCE_KEY, "2026-03-20T00:00:00+00:00")
    scheduler = PipelineScheduler(mem, clock=clock)
    scheduler.start()
    try:
        assert set(scheduler.caught_up) == {"sync", "dream", "test-count"}
        assert set(scheduler.next_runs()) == {"sync", "dream", "test-count"}
        import time

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = {r.name for r in list_runs(mem) if r.status in ("ok", "error")}
            if {"sync", "dream", "test-count"} <= done:
                break
            time.sleep(0.05)
        triggers = {r.name: r.trigger for r in list_runs(mem)}
        assert triggers == {"sync": "catch-up", "dream": "catch-up", "test-count": "catch-up"}
    finally:
        scheduler.shutdown()


def test_cli_run_and_pipelines(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMORYD_HOME", str(settings.home))
    monkeypatch.setenv("MEMORYD_WORKSPACE__OPENCLAW_DIR", str(tmp_path / "none"))
    root = workspace(settings, "alpha")
    fill_diary(root, datetime.now(UTC).date().isoformat(), 4, start_hour=0)
    runner = CliRunner()
    dry = runner.invoke(cli_app, ["run", "digest", "--agent", "alpha", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout)["dry_run"] is True
    real = runner.invoke(cli_app, ["run", "digest", "--agent", "alpha"])
    assert real.exit_code == 0, real.output
    assert "digest" in real.stdout and "ok" in real.stdout
    listing = runner.invoke(cli_app, ["pipelines", "--json"])
    data = json.loads(listing.stdout)
    assert {p["name"] for p in data["pipelines"]} >= {"digest", "sync", "dream", "promote"}
    assert [r["dry_run"] for r in data["runs"] if r["name"] == "digest"] == [False, True]
    table = runner.invoke(cli_app, ["pipelines"])
    assert "digest" in table.stdout and "recent runs" in table.stdout
    bad = runner.invoke(cli_app, ["run", "no-such"])
    assert bad.exit_code == 2 and "memoryd pipelines" in bad.stderr
    failing = runner.invoke(cli_app, ["run", "test-fail"])
    assert failing.exit_code != 0


def test_get_v1_pipelines(
    mem: Memory, live_server: Callable[[object], object], settings: Settings
) -> None:
    run_pipeline(mem, "test-count", agent="alpha")
    run_pipeline(mem, "test-count", agent="beta")
    settings.auth.keys = [
        ApiKey(name="admin", key="k-admin", admin=True),
        ApiKey(name="alpha-only", key="k-alpha", agents=["alpha"]),
    ]
    with live_server(create_app(memory=mem)) as server:  # type: ignore[attr-defined]
        url = f"{server.url}/v1/pipelines"  # type: ignore[attr-defined]
        admin = httpx.get(url, headers={"Authorization": "Bearer k-admin"}).json()
        names = {p["name"]: p for p in admin["pipelines"]}
        assert names["dream"]["schedule"] == "0 2 * * *" and names["dream"]["timezone"] == "UTC"
        assert names["test-count"]["last_run"]["agent"] == "beta"
        assert [r["agent"] for r in admin["runs"]] == ["beta", "alpha"]
        assert admin["runs"][0]["notes"] == ["dry run: False"]
        scoped = httpx.get(url, headers={"X-API-Key": "k-alpha"}).json()
        assert [r["agent"] for r in scoped["runs"]] == ["alpha"]
        assert scoped["runs"][0]["notes"] == []
        only = httpx.get(url, params={"name": "test-count", "limit": 1},
                         headers={"X-API-Key": "k-admin"}).json()  # fmt: skip
        assert len(only["runs"]) == 1
        missing = httpx.get(url, params={"name": "nope"}, headers={"X-API-Key": "k-admin"})
        assert missing.status_code == 404 and missing.json()["hint"]
        assert httpx.get(url).status_code == 401


def test_serve_runs_the_scheduler(
    tmp_path: Path, embedder: Embedder, live_server: Callable[[object], object]
) -> None:
    settings = pipeline_settings(tmp_path / "home")
    settings.pipelines.scheduler = True
    settings.pipelines.catch_up = False
    with Memory(settings, embedder=embedder) as mem:
        with live_server(create_app(memory=mem)) as server:  # type: ignore[attr-defined]
            data = httpx.get(f"{server.url}/v1/pipelines").json()  # type: ignore[attr-defined]
            assert data["scheduler"] is True
            nxt = {p["name"]: p["next_run"] for p in data["pipelines"]}
            assert nxt["dream"] is not None and nxt["dream"].endswith("02:00:00+00:00")
        assert mem.store.kv_get(SINCE_KEY) is not None


def test_schedules_are_local_to_the_configured_time_zone(mem: Memory) -> None:
    mem.settings.pipelines.timezone = "Asia/Tokyo"  # 02:00 in Tokyo is 17:00 UTC
    mem.settings.pipelines.disabled = ["digest", "sync", "promote", "decay", "lessons"]
    mem.store.kv_set(SINCE_KEY, "2026-03-27T16:00:00+00:00")
    assert missed(mem, datetime.fromisoformat("2026-03-27T16:59:00+00:00")) == []
    assert missed(mem, datetime.fromisoformat("2026-03-27T17:01:00+00:00")) == ["dream"]


def test_a_bad_schedule_override_is_a_named_error(mem: Memory) -> None:
    from memoryd.errors import InvalidInputError

    mem.settings.pipelines.schedules = {"dream": "61 2 * * *"}
    mem.store.kv_set(SINCE_KEY, "2026-03-27T16:00:00+00:00")
    with pytest.raises(InvalidInputError) as err:
        missed(mem, datetime.fromisoformat("2026-03-28T00:00:00+00:00"))
    assert "pipelines.schedules" in (err.value.hint or "")
