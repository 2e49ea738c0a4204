"""Grounded backfill (pipelines/backfill.py): old daily files replayed as standalone
days into DREAMS.md, optionally staged as short-term memory, and rolled back to
the byte. Real files, the real SQLite store, the real model; CLI, HTTP and MCP."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from memoryd.api.app import create_app
from memoryd.cli import app as cli_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import InvalidInputError, PermissionDeniedError
from memoryd.models import Origin
from memoryd.pipelines import backfill
from memoryd.workspace import Workspace, resolve_workspace
from tests.mcp_client import McpSession
from tests.pipelines_kit import pipeline_settings, workspace, write_section

AGENT = "dev"
DAY1 = [
    "**user**: We decided to deploy billing with canary releases every Friday.",
    "**assistant**: Noted. The staging database runs PostgreSQL 16 on port 5433.",
]
DAY2 = ["**user**: Mira prefers tea over coffee in the afternoon.", "**assistant**: ok"]


@pytest.fixture
def setup(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Memory, Workspace, Path]]:
    settings = pipeline_settings(tmp_path)
    root = workspace(settings, AGENT)
    write_section(root, "2026-03-01", "09:00", DAY1)
    write_section(root, "2026-03-02", "10:15", DAY2)
    (root / "memory" / "notes.md").write_text("# not a day\n- whatever\n")
    (root / "DREAMS.md").write_bytes(b"# Dream Diary\n\nan entry without a final newline")
    mem = Memory(settings, embedder=embedder)
    mem.add("an unrelated memory", user_id=settings.workspace.user_id, agent_id=AGENT)
    yield mem, resolve_workspace(settings, AGENT, mem.store), root
    mem.close()


def dump(mem: Memory) -> dict[str, list[Any]]:
    """The store's user-visible state: every memory (any state), its history, and kv."""
    db = sqlite3.connect(mem.settings.store_url.removeprefix("sqlite:///"))
    try:
        tables = {}
        for table, order in (("memories", "id"), ("history", "memory_id, id"), ("kv", "key")):
            rows = db.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            tables[table] = [tuple(r) for r in rows]
        return tables
    finally:
        db.close()


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_backfill_writes_grounded_review_entries_and_rollback_restores_every_byte(
    setup: tuple[Memory, Workspace, Path],
) -> None:
    mem, ws, root = setup
    before_files, before_store = files(root), dump(mem)
    report = backfill.backfill(mem, ws, path="memory/", stage_short_term=True)
    assert set(report.days) == {"2026-03-01", "2026-03-02"}
    assert "notes.md: not a daily file (YYYY-MM-DD.md)" in report.skipped
    day1 = report.days["2026-03-01"]
    assert [c.text for c in day1] == [
        "We decided to deploy billing with canary releases every Friday.",
        "The staging database runs PostgreSQL 16 on port 5433.",
    ]
    # grounded: each candidate cites lines of its day file that really hold it
    lines = (root / "memory" / "2026-03-01.md").read_text().splitlines()
    for c in day1:
        assert c.path == "memory/2026-03-01.md"
        cited = "\n".join(lines[c.start_line - 1 : c.end_line])
        assert c.text.split(".")[0].split()[-1] in cited
    dreams = (root / "DREAMS.md").read_text()
    assert dreams.startswith("# Dream Diary\n\nan entry without a final newline\n")
    assert "## REM backfill · 2026-03-01 · grounded replay" in dreams
    assert f"`{day1[0].citation}`" in dreams
    # staged into the short-term store of their day, never into MEMORY.md
    staged = mem.list(user_id=mem.settings.workspace.user_id, agent_id=AGENT, run_id="2026-03-01")
    assert {r.text for r in staged} == {c.text for c in day1}
    assert all(r.origin == Origin.FACT and r.source is not None for r in staged)
    assert len(report.staged) == 3
    assert not (root / "MEMORY.md").exists() or "canary" not in (root / "MEMORY.md").read_text()
    # the same days again add nothing
    again = backfill.backfill(mem, ws, path="memory", stage_short_term=True)
    assert again.days == {} and len([s for s in again.skipped if "already replayed" in s]) == 2

    undone = backfill.rollback(mem, ws, dreams=True, short_term=True)
    assert undone.memories_removed == 3 and undone.notes == []
    assert files(root) == before_files
    assert dump(mem) == before_store


def test_the_two_rollbacks_are_independent_and_edits_around_the_block_survive(
    setup: tuple[Memory, Workspace, Path],
) -> None:
    mem, ws, root = setup
    before_store = dump(mem)
    backfill.backfill(mem, ws, path="memory/2026-03-02.md", stage_short_term=True)
    dreams = root / "DREAMS.md"
    edited = b"# Dream Diary (edited above)\n" + dreams.read_bytes()[len(b"# Dream Diary\n") :]
    dreams.write_bytes(edited + b"\n## A later dream\n- kept\n")
    backfill.rollback(mem, ws, dreams=False, short_term=True)  # memories only
    after = dump(mem)
    assert (after["memories"], after["history"]) == (
        before_store["memories"],
        before_store["history"],
    )
    assert b"REM backfill" in dreams.read_bytes()  # the review block is still tracked
    backfill.rollback(mem, ws, dreams=True)
    assert dreams.read_bytes() == (
        b"# Dream Diary (edited above)\n\nan entry without a final newline"
        b"\n## A later dream\n- kept\n"
    )
    assert dump(mem) == before_store


def test_a_dreams_file_the_backfill_created_is_removed_by_its_rollback(
    setup: tuple[Memory, Workspace, Path],
) -> None:
    mem, ws, root = setup
    (root / "DREAMS.md").unlink()
    backfill.backfill(mem, ws)
    assert (root / "DREAMS.md").read_text().startswith("# ")
    backfill.rollback(mem, ws)
    assert not (root / "DREAMS.md").exists()


def test_dry_run_writes_nothing_and_bad_paths_are_refused(
    setup: tuple[Memory, Workspace, Path], tmp_path: Path
) -> None:
    mem, ws, root = setup
    before_files, before_store = files(root), dump(mem)
    report = backfill.backfill(mem, ws, stage_short_term=True, dry_run=True)
    assert sum(len(c) for c in report.days.values()) == 3 and report.staged == []
    assert files(root) == before_files and dump(mem) == before_store
    (tmp_path / "outside").mkdir()
    (root / "memory" / "escape").symlink_to(tmp_path / "outside")
    for bad, error in (
        ("../../outside", InvalidInputError),
        ("/etc", InvalidInputError),
        ("memory/escape", PermissionDeniedError),
        ("nowhere", InvalidInputError),
        ("", InvalidInputError),
    ):
        with pytest.raises(error):
            backfill.backfill(mem, ws, path=bad)
    (root / "memory" / "2026-03-03.md").write_bytes(b"\xff\xfe binary \x00 junk")
    report = backfill.backfill(mem, ws, path="memory/2026-03-03.md")
    assert report.days == {} and "2026-03-03.md: binary file" in report.skipped[0]


def test_cli_http_and_mcp_run_the_same_backfill(
    tmp_path: Path, embedder: Embedder, live_server: Any
) -> None:
    settings = pipeline_settings(tmp_path)
    root = workspace(settings, AGENT)
    write_section(root, "2026-03-01", "09:00", DAY1)
    write_section(root, "2026-03-02", "10:15", DAY2)
    env = {
        "MEMORYD_HOME": str(tmp_path),
        "MEMORYD_WORKSPACE__OPENCLAW_DIR": str(tmp_path / "no-openclaw"),
        "MEMORYD_WORKSPACE__WATCH": "false",
        "MEMORYD_PIPELINES__SCHEDULER": "false",
        "MEMORYD_MCP__AGENT_ID": AGENT,
        "MEMORYD_CONFIG": "",
        "HOME": str(tmp_path / "userhome"),
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
    }
    runner = CliRunner()
    out = runner.invoke(
        cli_app,
        ["rem-backfill", "-a", AGENT, "--path", "memory/2026-03-01.md", "--json"],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["candidates"] == 2
    mem = Memory(settings, embedder=embedder)
    try:
        with live_server(create_app(memory=mem)) as server:
            r = httpx.post(
                f"{server.url}/v1/rem-backfill",
                json={"agent_id": AGENT, "path": "memory/2026-03-02.md", "stage_short_term": True},
            )
            assert r.status_code == 200, r.text
            assert r.json()["staged"] == 1
            bad = httpx.post(
                f"{server.url}/v1/rem-backfill", json={"agent_id": AGENT, "path": "../x"}
            )
            assert bad.status_code == 422 and "inside the workspace" in bad.text
    finally:
        mem.close()
    memoryd = str(Path(sys.executable).with_name("memoryd"))
    with McpSession.stdio(memoryd, ["mcp"], env) as mcp:
        undone = mcp.call("memory_rem_backfill", rollback=True, rollback_short_term=True)
    assert undone["runs"] == 2 and undone["memories_removed"] == 1
    assert not (root / "DREAMS.md").exists()
