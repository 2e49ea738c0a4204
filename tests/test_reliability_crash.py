"""Crash safety: add, update, delete and workspace indexing SIGKILLed at seeded
random moments, plus digest and dream killed mid-run.

After each kill the store must open, ``integrity_check()`` must pass (SQLite's
own check and the in-memory search index agreeing with the rows), and every
acknowledged write (tests/crash_driver.py fsyncs an ack line after each call
returns) must be there exactly once, in its last acknowledged state; the one
call in flight at the kill may have landed or not, but not half.

Digest and dream are compared with uninterrupted runs in test_pipelines_kill.py;
here they are killed too, and the store is checked *before* anything re-runs.

Default: 12 write trials + 3 pipeline trials; MEMORYD_FULL=1: 100 + 20.
MEMORYD_CRASH_SEED=N explores other kill points.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memoryd.models import Filters, State
from memoryd.store import open_store
from tests import crash_driver
from tests.conftest import FULL
from tests.pipelines_kit import drive, fill_diary, pipeline_settings, workspace

WRITE_TRIALS = 100 if FULL else 12
PIPELINE_TRIALS = 20 if FULL else 3
SEED = int(os.environ.get("MEMORYD_CRASH_SEED", 20260327))

_ctx = multiprocessing.get_context("forkserver")
_ctx.set_forkserver_preload(["memoryd.core", "tests.crash_driver", "tests.pipelines_kit"])


@dataclass
class Expected:
    """What the acks say about one memory."""

    text: str
    alt_texts: set[str] = field(default_factory=set)  # an update in flight at the kill
    deleted: bool = False
    maybe_deleted: bool = False  # a delete in flight at the kill


def _read_acks(path: Path) -> tuple[dict[str, Expected], list[str], str | None, list[str]]:
    """Acked memories, acked index markers, the text of an add in flight, markers in flight."""
    memories: dict[str, Expected] = {}
    markers: list[str] = []
    pending: tuple[str, str, str] | None = None
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    for line in lines:
        kind, op, mid, raw = line.split(" ", 3)
        text = json.loads(raw)
        if kind == "begin":
            pending = (op, mid, text)
            continue
        pending = None
        if op == "add":
            memories[mid] = Expected(text)
        elif op == "update":
            memories[mid].text = text
        elif op == "delete":
            memories[mid].deleted = True
        else:
            markers.append(text)
    in_flight_add: str | None = None
    in_flight_markers: list[str] = []
    if pending is not None:
        op, mid, text = pending
        if op == "add":
            in_flight_add = text
        elif op == "update":
            memories[mid].alt_texts.add(text)
        elif op == "delete":
            memories[mid].maybe_deleted = True
        else:
            in_flight_markers.append(text)
    return memories, markers, in_flight_add, in_flight_markers


def _check_store(home: Path, acks: Path) -> tuple[int, int]:
    """Integrity and every acked write exactly once. Returns (writes checked, index markers)."""
    settings = crash_driver.settings_for(home)
    store = open_store(settings.store_url, settings.store)
    try:
        problems = store.integrity_check()
        assert problems == [], problems
        memories, markers, in_flight_add, _ = _read_acks(acks)
        facts = store.list(Filters(user_id=crash_driver.USER, states=list(State)), limit=10**6)
        chunks = [
            r
            for r in store.list(
                Filters(user_id=settings.workspace.user_id, states=list(State)), limit=10**6
            )
            if r.source is not None
        ]
        by_id = {r.id: r for r in facts}
        for mid, exp in memories.items():
            record = by_id.get(mid)
            assert record is not None, f"acknowledged add {mid} ({exp.text!r}) is missing"
            assert record.text in {exp.text, *exp.alt_texts}, (record.text, exp)
            if exp.deleted:
                assert record.state == State.DELETED, (mid, record.state)
            elif not exp.maybe_deleted:
                assert record.state == State.ACTIVE, (mid, record.state)
        # exactly once: no acked fact stored twice, nothing stored that was never asked for
        texts = [r.text for r in facts]
        assert len(texts) == len(set(texts)), "a write landed twice"
        extra = set(by_id) - set(memories)
        assert len(extra) <= (1 if in_flight_add else 0), f"unacknowledged rows {extra}"
        if extra:
            assert by_id[next(iter(extra))].text == in_flight_add
        # every acked index run: its line is searchable, and no chunk is there twice
        live_chunks = [c for c in chunks if c.state == State.ACTIVE]
        for marker in markers:
            assert any(marker in c.text for c in live_chunks), f"indexed {marker} missing"
        spans = [(c.source, c.text) for c in live_chunks if c.source is not None]
        keys = [(s.path, s.start_line, s.end_line, text) for s, text in spans]
        assert len(keys) == len(set(keys)), "a chunk was indexed twice"
        return len(memories) + sum(1 for e in memories.values() if e.deleted), len(markers)
    finally:
        store.close()


def test_writes_killed_at_random_moments_keep_every_acknowledged_write(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    mixes = [
        ("add", "add", "update", "delete"),
        ("add", "update", "delete", "index"),
        ("add", "index", "index"),
    ]
    checked = markers = killed = 0
    started = time.monotonic()
    for trial in range(WRITE_TRIALS):
        home = tmp_path / f"t{trial}"
        acks = home / "acks.log"
        home.mkdir()
        ops = mixes[trial % len(mixes)]
        # some trials start from a store an earlier kill left behind
        if trial and rng.random() < 0.3:
            shutil.rmtree(home)
            shutil.copytree(tmp_path / f"t{trial - 1}", home)
        ready = _ctx.Event()
        proc = _ctx.Process(
            target=crash_driver.run, args=(str(home), rng.randrange(10**6), str(acks), ready, ops)
        )
        proc.start()
        assert ready.wait(180), "the child did not get ready"
        time.sleep(rng.uniform(0.05, 1.5))
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        killed += proc.exitcode == -signal.SIGKILL
        c, m = _check_store(home, acks)
        checked += c
        markers += m
        if trial >= 2:
            shutil.rmtree(tmp_path / f"t{trial - 2}", ignore_errors=True)
    elapsed = time.monotonic() - started
    print(
        f"crash: {WRITE_TRIALS} trials ({killed} killed mid-stream), {checked} acknowledged "
        f"writes and {markers} index runs checked in {elapsed:.0f}s"
    )
    assert killed == WRITE_TRIALS, "every child should still be writing when killed"
    assert checked >= WRITE_TRIALS  # the kills landed after real work


def test_pipelines_killed_mid_run_leave_a_consistent_store(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    template = tmp_path / "template"
    settings = pipeline_settings(template / "home")
    for n, agent in enumerate(("alpha", "beta")):
        fill_diary(workspace(settings, agent), "2026-03-27", 16 + 4 * n)
    sections: dict[str, Any] = {"digest": {"max_batch_bytes": 1_500}}
    for trial in range(PIPELINE_TRIALS):
        pipeline = ("digest", "dream")[trial % 2]
        root = tmp_path / f"p{trial}"
        shutil.copytree(template, root)
        ready = _ctx.Event()
        now = "2026-03-27T23:00:00+00:00" if pipeline == "digest" else "2026-03-28T02:00:00+00:00"
        proc = _ctx.Process(target=drive, args=(str(root / "home"), pipeline, now, ready, sections))
        proc.start()
        assert ready.wait(180)
        time.sleep(rng.uniform(0.1, 2.0))
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.join(60)
        s = pipeline_settings(root / "home", **sections)
        store = open_store(s.store_url, s.store)
        try:
            assert store.integrity_check() == [], (pipeline, trial)
        finally:
            store.close()
        shutil.rmtree(root)
