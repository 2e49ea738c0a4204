"""Grounded backfill (pipelines/backfill.py): old daily files replayed as standalone
days into DREAMS.md, optionally staged as short-term memory, and rolled back to
the byte. Real files, the real SQLite store, the real model; CLI, HTTP and MCP."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from memoryd.api.app import create_app
from memoryd.cli import app as cli_app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import BusyError, InvalidInputError, PermissionDeniedError
from memoryd.models import Filters, Origin
from memoryd.pipelines import backfill
from memoryd.pipelines.dreams_md import HEADER
from memoryd.settings import ApiKey
from memoryd.workspace import Workspace, resolve_workspace
from tests.mcp_client import McpSession
from tests.pipelines_kit import face_env, pipeline_settings, workspace, write_section

AGENT = "dev"
DAY1 = [
    "**user**: We decided to deploy billing with canary releases every Friday.",
    "**assistant**: Noted. The staging database runs PostgreSQL 16 on port 5433.",
]
DAY2 = ["**user**: Mira prefers tea over coffee in the afternoon.", "**assistant**: ok"]


@pytest.fixture
def setup(
    tmp_path: Path, embedder: Embedder, store_url: str
) -> Iterator[tuple[Memory, Workspace, Path]]:
    """Two diary days, a note, a DREAMS.md without a final newline and one memory, on
    every store (PostgreSQL too with MEMORYD_TEST_PG=1)."""
    settings = pipeline_settings(tmp_path)
    settings.store.url = store_url
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
    """The store's state: every memory (any state), its history, and kv; on SQLite every
    column of those tables, on another store what the Store protocol returns."""
    if not mem.settings.store_url.startswith("sqlite:///"):
        store = mem.store
        records = sorted(store.iter_all(Filters(states=[])), key=lambda r: r.id)
        return {
            "memories": [r.model_dump_json() for r in records],
            "history": [h.model_dump_json() for r in records for h in store.history(r.id)],
            "kv": sorted(json.dumps(kv, sort_keys=True) for kv in store.kv_items().items()),
        }
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
    # what the digest made of the same day, and a search's recall statistics: both stay
    known = "The staging database runs PostgreSQL 16 on port 5433."
    mem.add(known, user_id="default", agent_id=AGENT, run_id="2026-03-01", category="short_term")
    mem.search("staging database port", user_id="default", agent_id=AGENT)
    mem.recalls.flush()
    before_files, before_store = files(root), dump(mem)
    report = backfill.backfill(mem, ws, path="memory/", stage_short_term=True)
    assert set(report.days) == {"2026-03-01", "2026-03-02"}
    assert "memory/notes.md: not a daily file (YYYY-MM-DD.md)" in report.skipped
    day1 = report.days["2026-03-01"]
    assert [c.text for c in day1] == [
        "We decided to deploy billing with canary releases every Friday.",
        "The staging database runs PostgreSQL 16 on port 5433.",
    ]
    # grounded: each candidate cites lines of its day file that really hold it
    lines = (root / "memory" / "2026-03-01.md").read_text().splitlines()
    for c in day1:  # the one line that holds it, word for word
        assert c.path == "memory/2026-03-01.md" and c.start_line == c.end_line
        assert c.text in lines[c.start_line - 1]
        assert c.citation == f"memory/2026-03-01.md#L{c.start_line}"
    dreams = (root / "DREAMS.md").read_text()
    assert dreams.startswith("# Dream Diary\n\nan entry without a final newline\n")
    assert "## REM backfill · 2026-03-01 · grounded replay" in dreams
    assert f"`{day1[0].citation}`" in dreams
    # staged into the short-term store of their day, never into MEMORY.md
    staged = mem.list(user_id=mem.settings.workspace.user_id, agent_id=AGENT, run_id="2026-03-01")
    assert {r.text for r in staged} == {c.text for c in day1}  # the known one is not doubled
    assert len(staged) == 2 and len(report.staged) == 2
    for r in staged:
        if r.id in report.staged:
            assert r.origin == Origin.FACT and r.category == "short_term"
            assert r.metadata["rem_backfill"] == report.run_id and r.source is not None
            assert [h.actor for h in mem.history(r.id)] == [f"rem-backfill:{report.run_id}"]
    assert not (root / "MEMORY.md").exists() or "canary" not in (root / "MEMORY.md").read_text()
    # the same days again add nothing
    again = backfill.backfill(mem, ws, path="memory", stage_short_term=True)
    assert again.days == {} and len([s for s in again.skipped if "already replayed" in s]) == 2

    undone = backfill.undo(mem, ws, dreams=True, short_term=True)
    assert undone.memories_removed == 2 and undone.notes == []
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
    backfill.undo(mem, ws, dreams=False, short_term=True)  # memories only
    after = dump(mem)
    assert (after["memories"], after["history"]) == (
        before_store["memories"],
        before_store["history"],
    )
    assert b"REM backfill" in dreams.read_bytes()  # the review block is still tracked
    backfill.undo(mem, ws, dreams=True)
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
    backfill.undo(mem, ws)
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
    (root / "memory" / "loop.md").symlink_to(root / "memory" / "loop.md")
    for bad, error in (
        ("../../outside", InvalidInputError),
        ("/etc", InvalidInputError),
        ("memory/escape", PermissionDeniedError),
        ("nowhere", InvalidInputError),
        ("memory/" + "a" * 300, InvalidInputError),
        ("memory/loop.md", InvalidInputError),
        ("", InvalidInputError),
    ):
        with pytest.raises(error):
            backfill.backfill(mem, ws, path=bad)
    (root / "memory" / "2026-03-03.md").write_bytes(b"\xff\xfe binary \x00 junk")
    report = backfill.backfill(mem, ws, path="memory/2026-03-03.md")
    assert report.days == {} and "memory/2026-03-03.md: binary file" in report.skipped[0]


def test_cli_http_and_mcp_run_the_same_backfill(
    tmp_path: Path, embedder: Embedder, live_server: Any
) -> None:
    settings = pipeline_settings(tmp_path)
    root = workspace(settings, AGENT)
    write_section(root, "2026-03-01", "09:00", DAY1)
    write_section(root, "2026-03-02", "10:15", DAY2)
    env = face_env(tmp_path, AGENT)
    runner = CliRunner()
    out = runner.invoke(
        cli_app,
        ["rem-backfill", "-a", AGENT, "--path", "memory/2026-03-01.md", "--json"],
        env=env,
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["candidates"] == 2
    mem = Memory(settings, embedder=embedder)
    mem.settings.auth.keys = [ApiKey(name="dev", key="k-dev", users=["default"], agents=[AGENT])]
    try:
        with live_server(create_app(memory=mem)) as server:
            url, key = f"{server.url}/v1/rem-backfill", {"X-API-Key": "k-dev"}
            body = {"agent_id": AGENT, "path": "memory/2026-03-02.md", "stage_short_term": True}
            assert httpx.post(url, json=body).status_code == 401
            other = httpx.post(url, json={**body, "agent_id": "ops"}, headers=key)
            assert other.status_code == 403
            r = httpx.post(url, json=body, headers=key)
            assert r.status_code == 200, r.text
            assert r.json()["staged"] == 1
            bad = httpx.post(url, json={"agent_id": AGENT, "path": "../x"}, headers=key)
            assert bad.status_code == 422 and "inside the workspace" in bad.text
            both = httpx.post(url, json={**body, "rollback": True}, headers=key)
            assert both.status_code == 422 and "cannot go with a rollback" in both.text
    finally:
        mem.close()
    memoryd = str(Path(sys.executable).with_name("memoryd"))
    with McpSession.stdio(memoryd, ["mcp"], env) as mcp:
        undone = mcp.call("memory_rem_backfill", rollback=True, rollback_short_term=True)
    assert undone["runs"] == 2 and undone["memories_removed"] == 1 and undone["dry_run"] is False
    assert not (root / "DREAMS.md").exists()


QUERIES = [
    "staging database port",
    "which port does the staging database use",
    "postgresql version on staging",
    "where does the staging PostgreSQL listen",
]


def test_staged_candidates_are_recalled_and_promoted_the_normal_way(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Staged memories are ordinary short-term memories: searches recall them and the
    promote pipeline ranks them into MEMORY.md. The rollback removes them and their
    recall statistics, its DREAMS.md block and nothing else (the promotion's line and
    review are the promotion's)."""
    from memoryd.pipelines.runs import run_pipeline
    from memoryd.recall import PREFIX, summaries
    from tests.pipelines_kit import FixedClock

    settings = pipeline_settings(tmp_path)
    root = workspace(settings, AGENT)
    write_section(root, "2026-03-01", "09:00", DAY1)
    (root / "MEMORY.md").write_text("# MEMORY\n\n- Answer briefly\n")
    clock = FixedClock("2026-03-20T09:00:00+00:00")
    mem = Memory(settings, embedder=embedder, clock=clock)
    try:
        ws = resolve_workspace(settings, AGENT, mem.store)
        before = (root / "DREAMS.md").exists()
        report = backfill.backfill(mem, ws, stage_short_term=True)
        port = next(c for c in report.days["2026-03-01"] if "5433" in c.text)
        for _ in range(3):
            for q in QUERIES:
                mem.search(q, user_id="default", agent_id=AGENT)
            clock.now += timedelta(days=1)
        mem.recalls.flush()
        recalled = {s.memory_id for s in summaries(mem.store, AGENT)}
        assert recalled and recalled <= set(report.staged)
        run = run_pipeline(mem, "promote", agent=AGENT, clock=clock)
        assert run.counts.get("promoted") == 1, run
        promoted = (root / "MEMORY.md").read_text()
        assert f"- {port.text}" in promoted.splitlines()
        dreams = (root / "DREAMS.md").read_text()
        assert "## REM backfill · 2026-03-01" in dreams and "- Deep · promoted" in dreams

        undone = backfill.undo(mem, ws, dreams=True, short_term=True)
        assert undone.memories_removed == 2 and undone.runs == 1 and not before
        assert mem.store.existing_ids(report.staged) == set()
        assert not any(k.startswith(PREFIX) for k in mem.store.kv_items())
        assert "rem-backfill:dev" not in mem.store.kv_items()
        assert (root / "MEMORY.md").read_text() == promoted  # promotion's, not ours
        left = (root / "DREAMS.md").read_text()
        assert "REM backfill" not in left and "rem-backfill" not in left
        assert left.startswith(f"{HEADER}\n\n## Dreaming · ")  # as if promotion wrote it first
        assert "- Deep · promoted" in left
    finally:
        mem.close()


def test_a_rollback_dry_run_says_what_would_go_and_changes_nothing(
    setup: tuple[Memory, Workspace, Path],
) -> None:
    mem, ws, root = setup
    backfill.backfill(mem, ws, stage_short_term=True)
    before_files, before_store = files(root), dump(mem)
    would = backfill.rem_backfill(mem, ws, rollback=True, rollback_short_term=True, dry_run=True)
    assert isinstance(would, backfill.RollbackReport) and would.dry_run
    assert would.memories_removed == 3 and would.dreams_bytes_removed > 0 and would.runs == 1
    assert files(root) == before_files and dump(mem) == before_store
    with pytest.raises(InvalidInputError, match="cannot go with a rollback"):
        backfill.rem_backfill(mem, ws, rollback=True, stage_short_term=True)


def test_files_that_are_not_replayed_say_why(
    setup: tuple[Memory, Workspace, Path], tmp_path: Path
) -> None:
    mem, ws, root = setup
    secret = tmp_path / "secret.md"
    secret.write_text("- **user**: The vault password is hunter2.\n")
    (root / "memory" / "2026-02-01.md").symlink_to(secret)
    (root / "memory" / "archive").mkdir()
    (root / "memory" / "archive" / "2026-03-01.md").write_text("- **user**: A copy.\n")
    (root / "memory" / "2026-02-30.md").write_text("- **user**: No such day.\n")
    today = mem.clock().date().isoformat()
    (root / "memory" / f"{today}.md").write_text("- **user**: Still being written.\n")
    report = backfill.backfill(mem, ws, dry_run=True)
    assert set(report.days) == {"2026-03-01", "2026-03-02"}
    assert sorted(report.skipped) == [
        "memory/2026-02-01.md: a symlink leading outside the workspace; not read",
        "memory/2026-02-30.md: not a daily file (YYYY-MM-DD.md)",
        f"memory/{today}.md: today's or a later day; the digest and dream read it",
        "memory/archive/2026-03-01.md: day 2026-03-01 was read from memory/2026-03-01.md",
        "memory/notes.md: not a daily file (YYYY-MM-DD.md)",
    ]
    assert "hunter2" not in json.dumps(report.to_json())


def test_a_run_that_failed_half_way_is_rolled_back_from_its_journal(
    setup: tuple[Memory, Workspace, Path],
) -> None:
    """DREAMS.md cannot be written (it is a folder): the run fails after staging. The
    journal it wrote first lets the rollback remove what it staged, and the memories'
    marker finds them even when the run died before recording their ids."""
    mem, ws, root = setup
    (root / "DREAMS.md").unlink()
    (root / "DREAMS.md").mkdir()
    before_files, before_store = files(root), dump(mem)
    with pytest.raises(InvalidInputError, match=r"DREAMS\.md is a folder"):
        backfill.backfill(mem, ws, stage_short_term=True)
    again = backfill.backfill(mem, ws, dry_run=True)
    assert again.days == {}  # the failed run's days count as replayed until rolled back
    record = mem.store.kv_get("rem-backfill:dev")
    assert len(record["runs"][0]["memories"]) == 3
    record["runs"][0].update(memories=[], staging=True)  # as if killed before recording them
    mem.store.kv_set("rem-backfill:dev", record)
    undone = backfill.undo(mem, ws, dreams=True, short_term=True)
    assert (undone.memories_removed, undone.runs) == (3, 1)
    assert files(root) == before_files and dump(mem) == before_store


def test_an_edited_block_is_left_in_place_until_removed_by_hand(
    setup: tuple[Memory, Workspace, Path],
) -> None:
    mem, ws, root = setup
    original = (root / "DREAMS.md").read_bytes()
    backfill.backfill(mem, ws)
    dreams = root / "DREAMS.md"
    dreams.write_bytes(dreams.read_bytes().replace(b"canary releases", b"canary deploys"))
    edited = dreams.read_bytes()
    undone = backfill.undo(mem, ws)
    assert "left in place" in undone.notes[0] and undone.runs == 0
    assert dreams.read_bytes() == edited
    assert backfill.backfill(mem, ws, dry_run=True).days == {}  # still listed as replayed
    start = edited.index(b"\n\n<!-- memoryd:rem-backfill")
    dreams.write_bytes(edited[:start])  # the person deletes the block
    undone = backfill.undo(mem, ws)
    assert "no longer in DREAMS.md" in undone.notes[0] and undone.runs == 1
    assert dreams.read_bytes() == original
    assert mem.store.kv_get("rem-backfill:dev") is None


def test_one_backfill_per_agent_at_a_time(setup: tuple[Memory, Workspace, Path]) -> None:
    mem, ws, _root = setup
    with mem.store.run_lock("rem-backfill:dev", 60) as got:
        assert got
        with pytest.raises(BusyError, match="running"):
            backfill.backfill(mem, ws)
        with pytest.raises(BusyError):
            backfill.undo(mem, ws)
        assert backfill.backfill(mem, ws, dry_run=True).days  # a dry run reads only
    assert backfill.backfill(mem, ws).days


README = Path(__file__).resolve().parents[1] / "README.md"


def readme_examples() -> tuple[list[list[str]], str]:
    """The commands of the README's backfill section, and the output it shows."""
    text = README.read_text()
    start = text.index("### Grounded backfill")
    section = text[start : text.index("\n## ", start)]
    commands, shown = [], ""
    for block in re.findall(r"```(\w*)\n(.*?)```", section, re.DOTALL):
        if block[0] != "bash":
            shown = block[1]
            continue
        for line in block[1].replace("\\\n", " ").splitlines():
            if line.strip():
                commands.append(shlex.split(line, comments=True))
    return commands, shown


def test_the_readme_examples_run_as_written(
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
        "MEMORYD_CONFIG": "",
    }
    commands, shown = readme_examples()
    assert [c[0] for c in commands] == ["memoryd"] * 4 + ["curl"]
    mem = Memory(settings, embedder=embedder)
    mem.add("an unrelated memory", user_id="default", agent_id=AGENT)
    mem.close()
    before_files = files(root)
    with Memory(settings, embedder=embedder) as mem:
        before_store = dump(mem)
    outputs = []
    for argv in commands[:4]:
        out = CliRunner().invoke(cli_app, argv[1:], env=env)
        assert out.exit_code == 0, (argv, out.output)
        outputs.append(out.output)
    assert outputs[0] == shown  # the README shows the dry run's output as it is
    assert "staged 3 short-term memories" in outputs[1]
    assert outputs[2].startswith("would roll back 1 backfill run: ")
    assert outputs[3].startswith("rolled back 1 backfill run: ")
    assert files(root) == before_files
    with Memory(settings, embedder=embedder) as mem:
        assert dump(mem) == before_store
        with live_server(create_app(memory=mem)) as server:
            argv = commands[4]
            headers = dict([argv[argv.index("-H") + 1].split(": ", 1)])
            url = argv[argv.index("-X") + 2].replace("localhost:8230", server.url)
            r = httpx.post(url, headers=headers, content=argv[argv.index("-d") + 1])
            assert r.status_code == 200, r.text
            assert r.json()["candidates"] == 2 and r.json()["staged"] == 0


def test_with_an_llm_each_day_is_extracted_alone_and_cited_by_its_lines(
    tmp_path: Path, embedder: Embedder
) -> None:
    """With an LLM configured, it extracts; each request holds one day's text only, with
    that day as "today"; a fact it rephrased cites the lines of the batch it came from."""
    from tests.fake_llm import FakeLLM

    with FakeLLM() as fake:
        settings = pipeline_settings(tmp_path)
        settings.llm.provider = "openai"
        settings.llm.openai.base_url = fake.url
        root = workspace(settings, AGENT)
        write_section(root, "2026-03-01", "09:00", DAY1)
        write_section(root, "2026-03-02", "10:15", DAY2)
        fake.script(
            json.dumps({"facts": ["Billing ships by canary every Friday"]}),
            json.dumps({"facts": ["Mira likes tea in the afternoon"]}),
        )
        with Memory(settings, embedder=embedder) as mem:
            ws = resolve_workspace(settings, AGENT, mem.store)
            report = backfill.backfill(mem, ws, dry_run=True)
    assert [c.citation for c in report.days["2026-03-01"]] == ["memory/2026-03-01.md#L4-L5"]
    assert [c.citation for c in report.days["2026-03-02"]] == ["memory/2026-03-02.md#L4-L5"]
    first, second = (json.dumps(r) for r in fake.requests)
    assert "canary" in first and "Mira" not in first and "Today is 2026-03-01" in first
    assert "Mira" in second and "canary" not in second and "Today is 2026-03-02" in second
