"""OpenClaw 2026.9's SQLite session store, read by lessons-from-session-logs and
``import-transcript``: the fixture transcripts (tests/data/sessions, OpenClaw's older
JSONL format) are written into a store with the columns the real gateway's store has
(some events zstd-compressed, as the gateway stores large ones), and must give the same
lessons as the JSONL files. The end-to-end test (test_openclaw_e2e.py) reads a store the
real gateway wrote."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.pipelines.lessons import lessons
from memoryd.pipelines.registry import PipelineContext
from memoryd.settings import openclaw_state_dir
from memoryd.workspace import openclaw_store

DATA = Path(__file__).parent / "data" / "sessions"

#: the columns of OpenClaw 2026.9.6's tables that memoryd reads (its CHECK constraints
#: left out: they need a newer SQLite than Python 3.11 may bring)
SCHEMA = """
CREATE TABLE schema_meta (meta_key TEXT NOT NULL PRIMARY KEY, role TEXT NOT NULL,
  schema_version INTEGER NOT NULL, agent_id TEXT, app_version TEXT,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE session_windows (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL,
  previous_session_id TEXT, reason TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);
CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT,
  created_at INTEGER NOT NULL, event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT,
  PRIMARY KEY (session_id, seq));
"""


def write_store(path: Path, transcripts: list[Path], *, compress_over: int = 300) -> None:
    """A store holding each transcript as one session, events as OpenClaw writes them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(SCHEMA)
    conn.execute("INSERT INTO schema_meta VALUES ('primary', 'agent', 23, 'dev', '2026.9.6', 0, 0)")
    for t in transcripts:
        sid = t.stem
        conn.execute(
            "INSERT INTO session_windows VALUES (?, ?, NULL, 'initial', 0, 0)",
            (sid, f"agent:dev:{sid[:4]}"),
        )
        for seq, line in enumerate(t.read_text().splitlines()):
            raw = line.encode()
            if len(raw) > compress_over:
                blob = zstandard.ZstdCompressor().compress(raw)
                conn.execute(
                    "INSERT INTO transcript_events VALUES (?, ?, NULL, 0, ?, ?, '{}')",
                    (sid, seq, blob, len(raw)),
                )
            else:
                conn.execute(
                    "INSERT INTO transcript_events VALUES (?, ?, ?, 0, NULL, NULL, NULL)",
                    (sid, seq, line),
                )
    conn.commit()
    conn.close()


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return not line.strip()
    return True


def run(memory: Memory, clock: Any, run_id: str = "r1") -> Any:
    return lessons(PipelineContext(memory=memory, name="lessons", run_id=run_id, clock=clock))


def test_the_store_gives_back_the_sessions_as_json_lines(tmp_path: Path) -> None:
    files = sorted(DATA.glob("*.jsonl"))
    store = tmp_path / "openclaw-agent.sqlite"
    write_store(store, files)
    assert openclaw_store.is_store(store) and not openclaw_store.is_store(files[0])
    with openclaw_store.open_store(store) as conn:
        sessions = openclaw_store.sessions(conn)
        assert [s.session_id for s in sessions] == [f.stem for f in files]
        assert sessions[0].session_key == f"agent:dev:{files[0].stem[:4]}"
        compressed = conn.execute(
            "SELECT count(*) FROM transcript_events WHERE event_zstd IS NOT NULL"
        ).fetchone()[0]
        assert compressed > 0
        for f in files:
            lines = [line for line in f.read_text().splitlines()]
            assert list(openclaw_store.session_lines(conn, f.stem)) == lines
    # read-only: the store's file is never written
    before = store.stat().st_mtime_ns
    with openclaw_store.open_store(store) as conn, pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM transcript_events")
    assert store.stat().st_mtime_ns == before


def test_an_unknown_store_layout_is_refused_with_what_is_missing(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE schema_meta (schema_version INTEGER)")
    conn.execute("INSERT INTO schema_meta VALUES (31)")
    conn.execute("CREATE TABLE transcript_rows (session TEXT, body TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(InvalidInputError) as caught, openclaw_store.open_store(other):
        pass
    assert "no transcript_events table" in caught.value.message
    assert "schema version 31" in caught.value.message
    assert "export the session as JSON lines" in (caught.value.hint or "")


def test_lessons_from_the_store_equal_lessons_from_the_files(memory: Memory, clock: Any) -> None:
    root = memory.settings.workspace.openclaw_dir
    write_store(openclaw_store.store_path(root, "dev"), sorted(DATA.glob("*.jsonl")))
    result = run(memory, clock)
    assert result.status == "ok", result.errors
    # the same as test_lessons.py's run over the JSONL files
    assert result.counts["sessions"] == 4 and result.counts["episodes"] == 4
    assert result.counts["lessons"] == 3 and result.counts["duplicates_overlap"] == 1
    md = (memory.settings.home / "workspaces" / "dev" / "memory" / "lessons.md").read_text()
    assert "- **Correct approach**: exec: npm test -- --runInBand" in md
    again = run(memory, clock, "r2")
    assert again.status == "ok" and again.counts.get("lessons", 0) == 0
    assert again.counts.get("episodes", 0) == 0  # every session read to its end last time


def test_a_broken_store_is_an_error_of_the_run_not_a_crash(memory: Memory, clock: Any) -> None:
    store = openclaw_store.store_path(memory.settings.workspace.openclaw_dir, "dev")
    store.parent.mkdir(parents=True)
    conn = sqlite3.connect(store)
    conn.execute("CREATE TABLE unrelated (x)")
    conn.commit()
    conn.close()
    result = run(memory, clock)
    assert any("not an OpenClaw session store" in e for e in result.errors), result.errors


def test_import_transcript_reads_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "memoryd"))
    monkeypatch.delenv("MEMORYD_CONFIG", raising=False)
    files = sorted(DATA.glob("*.jsonl"))
    store = tmp_path / "openclaw-agent.sqlite"
    write_store(store, files)
    runner = CliRunner()
    one = runner.invoke(
        app, ["import-transcript", str(store), "--session", files[0].stem, "--json"]
    )
    assert one.exit_code == 0, one.output
    summary = json.loads(one.output)
    assert summary["sessions"] == [files[0].stem] and summary["added"] > 0
    # one session has a line that is not JSON: nothing is imported, the error names it
    broken = runner.invoke(app, ["import-transcript", str(store), "--json"])
    assert broken.exit_code == 2 and "line 9 is not JSON" in broken.output
    clean = [f for f in files if all(_is_json(line) for line in f.read_text().splitlines())]
    assert 0 < len(clean) < len(files)
    write_store(tmp_path / "clean.sqlite", clean)
    every = runner.invoke(app, ["import-transcript", str(tmp_path / "clean.sqlite"), "--json"])
    assert every.exit_code == 0, every.output
    assert json.loads(every.output)["sessions"] == [f.stem for f in clean]
    missing = runner.invoke(app, ["import-transcript", str(store), "--session", "nope"])
    assert missing.exit_code == 2 and "has no session 'nope'" in missing.output


def test_openclaws_state_dir_is_found_as_openclaw_finds_it() -> None:
    assert openclaw_state_dir({}) == Path("~/.openclaw")
    assert openclaw_state_dir({"OPENCLAW_PROFILE": "work"}) == Path("~/.openclaw-work")
    assert openclaw_state_dir({"OPENCLAW_PROFILE": "default"}) == Path("~/.openclaw")
    assert openclaw_state_dir(
        {"OPENCLAW_STATE_DIR": "/srv/oc", "OPENCLAW_PROFILE": "work"}
    ) == Path("/srv/oc")


def test_a_tool_error_reported_as_json_is_read_from_its_details() -> None:
    """OpenClaw 2026.9's tools answer a failure with JSON text and ``details.error``."""
    from memoryd.pipelines.lessons_sessions import ScanState, scan

    def entry(message: dict[str, Any]) -> str:
        return json.dumps({"type": "message", "message": message})

    error = "Read requires a file path, but notes is a directory."
    lines = [
        json.dumps({"type": "session", "version": 4, "id": "s1"}),
        entry({"role": "user", "content": "Read the deploy notes."}),
        entry(
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "notes"}}
                ],
            }
        ),
        entry(
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "isError": True,
                "content": [
                    {"type": "text", "text": json.dumps({"status": "error", "error": error})}
                ],
                "details": {"status": "error", "error": error},
            }
        ),
        entry(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": "c2",
                        "name": "read",
                        "arguments": {"path": "notes/deploy.md"},
                    }
                ],
            }
        ),
        entry(
            {
                "role": "toolResult",
                "toolCallId": "c2",
                "isError": False,
                "content": [{"type": "text", "text": "rollback armed"}],
            }
        ),
    ]
    (episode,) = scan(
        ("\n".join(lines) + "\n").encode(), ScanState(), session_id="s1", retry_window=6
    ).episodes
    assert episode.failures[0].output == error
    assert episode.success.args == {"path": "notes/deploy.md"}
