"""Helpers for the pipeline tests (tests/test_pipelines_*.py): diaries, clocks, snapshots,
and the subprocess driver the kill tests SIGKILL."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from memoryd.core import Memory
from memoryd.models import Filters
from memoryd.settings import Settings, WorkspaceSettings
from memoryd.workspace.files import append_section
from memoryd.workspace.safefs import WorkspaceFS


class FixedClock:
    """A clock that moves only when told (the driver runs it in another process)."""

    def __init__(self, start: str) -> None:
        self.now = datetime.fromisoformat(start)

    def __call__(self) -> datetime:
        return self.now


def pipeline_settings(home: Path, **sections: dict[str, Any]) -> Settings:
    """Settings for a pipeline test under ``home``: no watcher, no scheduler, and run locks
    that lapse at once (a killed run's lock must not block the re-run)."""
    s = Settings(home=home)
    s.workspace.openclaw_dir = home / "no-openclaw"
    s.workspace.watch = False
    s.pipelines.scheduler = False
    s.pipelines.lock_ttl_s = 0.001
    s.audit.enabled = True
    s.digest.batch_pause_s = 0  # the rate-control pause has its own test
    for name, values in sections.items():
        section = getattr(s, name)
        for key, value in values.items():
            setattr(section, key, value)
    return s


def code_under_test() -> dict[str, str]:
    """The environment a ``memoryd`` subprocess needs to import the code under test: this
    run's ``PYTHONPATH`` (a worktree's ``src/``), not the copy the venv has installed."""
    return {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}


def face_env(home: Path, agent: str = "dev", **extra: str) -> dict[str, str]:
    """The environment of a CLI or ``memoryd mcp`` process on the store under ``home``
    (acting as ``agent``): no watcher, no scheduler, no stray config, the shared model cache,
    and the code under test."""
    return {
        **code_under_test(),
        "MEMORYD_HOME": str(home),
        "MEMORYD_WORKSPACE__OPENCLAW_DIR": str(home / "no-openclaw"),
        "MEMORYD_WORKSPACE__WATCH": "false",
        "MEMORYD_PIPELINES__SCHEDULER": "false",
        "MEMORYD_MCP__AGENT_ID": agent,
        "MEMORYD_CONFIG": "",
        "HOME": str(home / "userhome"),
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        **extra,
    }


def workspace(settings: Settings, agent: str) -> Path:
    root = settings.home / "workspaces" / agent
    (root / "memory").mkdir(parents=True, exist_ok=True)
    return root


def write_section(root: Path, day: str, hhmm: str, lines: list[str]) -> None:
    """Append a ``## HH:MM`` section to ``memory/<day>.md`` the way diary capture does."""
    body = "\n".join(f"- {line}" for line in lines)
    append_section(
        root / "memory" / f"{day}.md",
        f"## {hhmm}\n{body}\n",
        fs=WorkspaceFS.of(root, WorkspaceSettings()),
        header=f"# {day}",
    )


def snapshot(memory: Memory) -> set[tuple[Any, ...]]:
    """Every memory (any state) as (text, user, agent, run, category, state, origin)."""
    return {
        (r.text, r.user_id, r.agent_id, r.run_id, r.category, r.state.value, r.origin.value)
        for r in memory.store.iter_all(Filters(states=[]))
    }


# -- the kill-test driver (runs in a forkserver child; see test_pipelines_kill.py) -----------
TOPICS = [
    ("billing service", "port {n}", "the old port clashed with Grafana"),
    ("search cluster", "{n} shards", "queries were timing out at peak"),
    ("nightly backup", "{n}:30 UTC", "the earlier slot overlapped the ETL job"),
    ("CI runners", "{n} parallel jobs", "the queue was growing every afternoon"),
    ("auth tokens", "{n} minute expiry", "security review asked for shorter sessions"),
    ("image cache", "{n} GB limit", "the disk filled up twice last week"),
]


def fill_diary(root: Path, day: str, sections: int, start_hour: int = 8) -> None:
    """A realistic diary: ``sections`` turns about a rotating set of topics."""
    for n in range(sections):
        subject, value, why = TOPICS[n % len(TOPICS)]
        v = value.format(n=8000 + n if "port" in value else n + 2)
        hh, mm = start_hour + n // 60, n % 60
        write_section(
            root,
            day,
            f"{hh:02d}:{mm:02d}",
            [
                f"**user**: We changed the {subject} to {v} because {why}.",
                f"**assistant**: Done. The {subject} now uses {v} and the runbook notes why.",
            ],
        )


def drive(home: str, pipeline: str, now: str, ready: Any, sections: dict[str, Any]) -> None:
    """Child process body: open the store, say ready, run one pipeline (to be killed)."""
    from memoryd.pipelines.runs import run_pipeline

    settings = pipeline_settings(Path(home), **sections)
    mem = Memory(settings, clock=FixedClock(now))
    mem.embed_texts(["warm up the model before the clock starts"])
    ready.set()
    run_pipeline(mem, pipeline)
    mem.close()
    os._exit(0)


Runner = Callable[[Memory], object]
