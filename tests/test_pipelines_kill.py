"""Kill tests: digest and dream SIGKILLed at random points, re-run, and compared with an
uninterrupted run: the exact same memories (text, scope, category, state), nothing lost,
nothing twice.

Each trial runs the pipeline in a child process (forked from a forkserver that has
memoryd imported, so a trial costs a model load, not an interpreter start), waits
until the child has opened the store and loaded the model, lets it work for a random
(seeded) time within one uninterrupted run's duration, and kills it with SIGKILL.
The re-run happens here, on the same files and store. 6 trials per pipeline by
default, 20 with MEMORYD_FULL=1; MEMORYD_KILL_SEED=N picks other kill points.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.pipelines.runs import list_runs, run_pipeline
from tests.conftest import FULL
from tests.pipelines_kit import (
    FixedClock,
    drive,
    fill_diary,
    pipeline_settings,
    snapshot,
    workspace,
)

TRIALS = 20 if FULL else 6
AGENTS = ("alpha", "beta")
SECTIONS: dict[str, Any] = {"digest": {"max_batch_bytes": 1_500}}

_ctx = multiprocessing.get_context("forkserver")
_ctx.set_forkserver_preload(["memoryd.core", "memoryd.pipelines.runs", "tests.pipelines_kit"])


def _open(home: Path, now: str, embedder: Embedder) -> Memory:
    return Memory(pipeline_settings(home, **SECTIONS), embedder=embedder, clock=FixedClock(now))


def _child(home: Path, pipeline: str, now: str) -> tuple[Any, Any]:
    ready = _ctx.Event()
    proc = _ctx.Process(target=drive, args=(str(home), pipeline, now, ready, SECTIONS))
    proc.start()
    assert ready.wait(180), "the child did not get ready"
    return proc, ready


def _kill_trials(
    template: Path, tmp_path: Path, pipeline: str, now: str, embedder: Embedder, seed: int
) -> None:
    baseline = tmp_path / "baseline"
    shutil.copytree(template, baseline)
    with _open(baseline / "home", now, embedder) as mem:
        assert run_pipeline(mem, pipeline).status == "ok"
        expected = snapshot(mem)
    # one uninterrupted child run: how long a run takes there, and the same result
    timed = tmp_path / "timed"
    shutil.copytree(template, timed)
    proc, _ = _child(timed / "home", pipeline, now)
    started = time.monotonic()
    proc.join(300)
    duration = time.monotonic() - started
    assert proc.exitcode == 0
    with _open(timed / "home", now, embedder) as mem:
        assert snapshot(mem) == expected

    seed = int(os.environ.get("MEMORYD_KILL_SEED", seed))  # to explore other kill points
    rng = random.Random(seed)
    killed_mid_run = 0
    for trial in range(TRIALS):
        root = tmp_path / f"trial{trial}"
        shutil.copytree(template, root)
        proc, _ = _child(root / "home", pipeline, now)
        # within the first 70% of an undisturbed run: a load spike during the timed run
        # must not make most kills land after the child is done
        time.sleep(rng.uniform(0, 0.7 * duration))
        with contextlib.suppress(ProcessLookupError):  # finished first: tests nothing
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        if proc.exitcode == -signal.SIGKILL:
            killed_mid_run += 1
        with _open(root / "home", now, embedder) as mem:
            rerun = run_pipeline(mem, pipeline)
            assert rerun.status == "ok", rerun.error
            assert snapshot(mem) == expected, f"trial {trial} differs after a kill"
            if proc.exitcode == -signal.SIGKILL:
                statuses = [r.status for r in list_runs(mem, name=pipeline)]
                # the killed run is marked interrupted (or was already done when killed)
                assert statuses[0] == "ok" and set(statuses[1:]) <= {"interrupted", "ok"}
        shutil.rmtree(root)
    print(f"{pipeline}: {killed_mid_run}/{TRIALS} kills mid-run, run time {duration:.1f}s")
    assert killed_mid_run >= TRIALS // 2, "most kills should land while the pipeline runs"


def test_digest_killed_anywhere_then_rerun_equals_an_uninterrupted_run(
    tmp_path: Path, embedder: Embedder
) -> None:
    template = tmp_path / "template"
    settings = pipeline_settings(template / "home", **SECTIONS)
    for n, agent in enumerate(AGENTS):
        fill_diary(workspace(settings, agent), "2026-03-27", 24 + 6 * n)
    _kill_trials(template, tmp_path, "digest", "2026-03-27T23:00:00+00:00", embedder, seed=6)


@pytest.mark.parametrize("seed", [11])
def test_dream_killed_anywhere_then_rerun_equals_an_uninterrupted_run(
    tmp_path: Path, embedder: Embedder, seed: int
) -> None:
    template = tmp_path / "template"
    settings = pipeline_settings(template / "home", **SECTIONS)
    for n, agent in enumerate(AGENTS):
        root = workspace(settings, agent)
        fill_diary(root, "2026-03-20", 18 + 6 * n)
        fill_diary(root, "2026-03-27", 12, start_hour=10)
    with Memory(settings, embedder=embedder, clock=FixedClock("2026-03-20T23:00:00+00:00")) as m:
        for agent in AGENTS:  # long-term memory to reconcile against
            m.add("The billing service ran on port 7000 last year", user_id="default",
                  agent_id=agent)  # fmt: skip
        assert run_pipeline(m, "digest").status == "ok"
    _kill_trials(template, tmp_path, "dream", "2026-03-28T02:00:00+00:00", embedder, seed=seed)


# -- a killed run's lock dies with it -----------------------------------------------------------

_HANG_CHILD = """
import sys, time
from pathlib import Path
from memoryd.core import Memory
from memoryd.pipelines import registry
from memoryd.pipelines.registry import PipelineSpec, RunResult
from memoryd.pipelines.runs import run_pipeline
from tests.pipelines_kit import FixedClock, pipeline_settings

def hang(ctx):
    print("running", flush=True)
    time.sleep(600)
    return RunResult()

registry.register(PipelineSpec("test-hang", hang, "0 4 * * *", "hangs until killed"))
settings = pipeline_settings(Path(sys.argv[1]))
settings.pipelines.lock_ttl_s = 3600.0  # the default: a lease would hold for an hour
with Memory(settings, clock=FixedClock("2026-03-27T23:00:00+00:00")) as mem:
    run_pipeline(mem, "test-hang")
"""


def _quick(ctx: Any) -> Any:
    from memoryd.pipelines.registry import RunResult

    return RunResult()


def test_a_run_killed_with_sigkill_holds_no_lock_and_is_marked_interrupted(
    tmp_path: Path, embedder: Embedder
) -> None:
    import subprocess
    import sys

    from memoryd.pipelines import registry
    from memoryd.pipelines.registry import PipelineSpec

    home = tmp_path / "home"
    settings = pipeline_settings(home)
    settings.pipelines.lock_ttl_s = 3600.0
    assert settings.pipelines.lock_ttl_s == type(settings.pipelines)().lock_ttl_s
    registry.register(PipelineSpec("test-hang", _quick, "0 4 * * *", "returns at once"))
    root = Path(__file__).resolve().parent.parent
    child = subprocess.Popen(
        [sys.executable, "-c", _HANG_CHILD, str(home)], stdout=subprocess.PIPE, text=True,
        cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "running"
        with Memory(
            settings, embedder=embedder, clock=FixedClock("2026-03-27T23:30:00+00:00")
        ) as m:
            (held,) = list_runs(m, name="test-hang")
            assert held.status == "running" and held.pid == child.pid and held.host
            busy = run_pipeline(m, "test-hang")  # the live child holds the lock
            assert busy.status == "skipped", busy
            child.kill()  # SIGKILL: no cleanup runs in the child
            child.wait()
            # seen as dead at once, before any new run; and the next run is not skipped
            killed = [r for r in list_runs(m, name="test-hang") if r.run_id == held.run_id]
            assert killed[0].status == "interrupted", killed
            rerun = run_pipeline(m, "test-hang")
            assert rerun.status == "ok", rerun.error
    finally:
        registry.unregister("test-hang")
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_zombie_owner_counts_as_dead(tmp_path: Path, embedder: Embedder) -> None:
    """Killed but not yet reaped by its parent: its lock is gone, its run is over."""
    import subprocess
    import sys

    home = tmp_path / "home"
    settings = pipeline_settings(home)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        with Memory(
            settings, embedder=embedder, clock=FixedClock("2026-03-27T23:30:00+00:00")
        ) as m:
            import socket

            from memoryd.pipelines.runs import RUNS_KEY

            stale = {"name": "digest", "run_id": "digest-zombie", "agent": None,
                     "started_at": "2026-03-27T23:00:00+00:00", "status": "running",
                     "host": socket.gethostname(), "pid": child.pid}  # fmt: skip
            m.store.kv_set(RUNS_KEY, [stale])
            assert list_runs(m)[0].status == "running"  # alive
            os.kill(child.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while list_runs(m)[0].status == "running":  # a zombie until we wait() below
                assert time.monotonic() < deadline
                time.sleep(0.02)
            assert list_runs(m)[0].status == "interrupted"
    finally:
        child.kill()
        child.wait()
