"""Kill decay with SIGKILL at seeded random instants, run it again, and compare with a run
that was never interrupted: the same memories in the same states (nothing archived twice,
no lesson duplicated), the same lessons.md and INDEX.md, byte for byte.

Each trial is a real subprocess on a copy of one seeded store. 3 trials by default,
20 with MEMORYD_FULL=1.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.models import Event, Filters
from memoryd.settings import Settings
from tests.conftest import FULL, FakeClock

NOW = "2026-04-20T03:30:00+00:00"
TRIALS = 20 if FULL else 3
AGENTS = ("dev", "ops", "qa")

DRIVER = """
import json, os, sys
from datetime import datetime
from memoryd.core import Memory
from memoryd.pipelines.decay import decay
from memoryd.pipelines.registry import PipelineContext
from memoryd.settings import Settings

now = datetime.fromisoformat(os.environ["F2_NOW"])
clock = lambda: now
with Memory(Settings(), clock=clock) as memory:
    memory.embed_texts(["warm up"])
    print("ready", flush=True)
    result = decay(PipelineContext(memory=memory, name="decay", run_id=sys.argv[1], clock=clock))
    print(json.dumps({**result.counts, "errors": result.errors}), flush=True)
"""


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORYD_")}
    env.update(
        MEMORYD_HOME=str(root / "home"),
        MEMORYD_STORE__URL=str(root / "memoryd.db"),
        MEMORYD_WORKSPACE__OPENCLAW_DIR=str(root / "openclaw"),
        MEMORYD_DECAY__MAX_GROUP="3",  # many small groups: many places to be killed
        MEMORYD_WORKSPACE__USER_ID="ada",  # ada owns the workspaces: lessons.md gets her lessons
        MEMORYD_AUDIT__ENABLED="false",
        F2_NOW=NOW,
    )
    return env


def _start(root: Path, run_id: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, run_id],
        cwd=root,
        env=_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    return proc


def _finish(root: Path, run_id: str) -> tuple[dict[str, Any], float]:
    proc = _start(root, run_id)
    start = time.monotonic()  # from "ready": the decay run itself
    # read through the same buffered file that read "ready": it may already hold the
    # result line (communicate() reads the pipe underneath and would miss it)
    assert proc.stdout is not None and proc.stderr is not None
    out, errors = proc.stdout.read(), proc.stderr.read()
    assert proc.wait(timeout=120) == 0, errors
    return json.loads(out.strip().splitlines()[-1]), time.monotonic() - start


def _snapshot(root: Path, embedder: Embedder) -> dict[str, Any]:
    settings = Settings(home=root / "home")
    settings.store.url = str(root / "memoryd.db")
    with Memory(settings, embedder=embedder) as memory:
        records = {
            r.id: (r.text, str(r.state), r.category, r.agent_id, r.user_id, r.metadata)
            for r in memory.store.iter_all(Filters(states=[]))
        }
        archive_events = {
            mid: sum(1 for h in memory.history(mid) if h.event == Event.ARCHIVE) for mid in records
        }
        pending = memory.store.kv_get("decay:lessons_md")
    files = {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "home" / "workspaces").rglob("*.md"))
    }
    return {"records": records, "archives": archive_events, "files": files, "pending": pending}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    """A store with 3 agents' worth of memories, a month old, and one fresh agent."""
    root = tmp_path_factory.mktemp("decay-kill-template")
    settings = Settings(home=root / "home")
    settings.store.url = str(root / "memoryd.db")
    settings.workspace.openclaw_dir = root / "openclaw"
    settings.audit.enabled = False
    clock = FakeClock("2026-03-10T09:00:00+00:00")
    with Memory(settings, embedder=embedder, clock=clock) as memory:
        for a, agent in enumerate(AGENTS):
            for n in range(10):
                memory.add(
                    f"{agent} task {n}: fixed build step {n * 3 + a} because the cache key "
                    f"ignored the lockfile; use the lockfile hash instead.",
                    user_id="ada",
                    agent_id=agent,
                    category="task",
                )
                clock.advance(minutes=7)
            for n in range(4):
                memory.add(
                    f"{agent} project note {n}: service {agent}-{n} listens on port {8000 + n}.",
                    user_id="ada",
                    agent_id=agent,
                    category="project",
                )
            memory.add(
                f"{agent} prefers terse answers.",
                user_id="ada",
                agent_id=agent,
                category="preference",
            )
        memory.add("Renew the docs.example.org certificate.", user_id="ada", category="task")
    return root


def _copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest)
    return dest


def test_decay_killed_at_random_points_ends_like_an_uninterrupted_run(
    template: Path, tmp_path: Path, embedder: Embedder
) -> None:
    baseline = _copy(template, tmp_path / "baseline")
    counts, elapsed = _finish(baseline, "base")
    assert counts["archived"] == 43 and counts["groups"] >= 15  # 31 tasks + 12 project notes
    expected = _snapshot(baseline, embedder)
    assert not expected["pending"]  # nothing left to write to lessons.md (None: never needed)
    assert set(expected["archives"].values()) <= {0, 1}

    rng = random.Random(6)
    killed_mid_run = 0
    for trial in range(TRIALS):
        root = _copy(template, tmp_path / f"trial{trial}")
        kills = 1 if trial % 3 else 2  # every third trial is killed twice before it completes
        for k in range(kills):
            proc = _start(root, f"t{trial}k{k}")
            # the first kill lands a third of the way in; the others anywhere in the run
            time.sleep(elapsed / 3 if trial == k == 0 else rng.uniform(0.0, elapsed * 0.8))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed_mid_run += 1
            proc.wait(timeout=60)
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()
            proc.stderr.close()
        final, _ = _finish(root, f"t{trial}final")
        # a problem the run isolated (an agent's INDEX.md not written) is named, not hidden
        assert final["errors"] == [], f"trial {trial}: the run after the kills"
        got = _snapshot(root, embedder)
        assert got["records"] == expected["records"], f"trial {trial}"
        assert got["archives"] == expected["archives"], f"trial {trial}: archived twice?"
        assert got["files"] == expected["files"], f"trial {trial}"
        assert not got["pending"]
    assert killed_mid_run >= 1  # the kills did land while decay was working
