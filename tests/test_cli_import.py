"""``memoryd import-transcript``: a transcript reaches memory turn by turn, with context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.cli import app
from memoryd.core import Memory
from memoryd.models import Filters, Origin
from memoryd.settings import Settings


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _turns(home: Path, user: str) -> list[object]:
    with Memory(Settings(home=home)) as mem:
        rows = list(mem.store.iter_all(Filters(user_id=user, origins=[Origin.TURN])))
    return sorted(rows, key=lambda r: r.metadata["message"])  # type: ignore[attr-defined]


def test_import_openclaw_session_file(home: Path, tmp_path: Path) -> None:
    lines = [
        {"type": "session", "version": 3, "id": "sess-42"},
        {
            "type": "message",
            "timestamp": "2026-03-27T09:00:00Z",
            "message": {"role": "user", "content": "Which port does staging use now?"},
        },
        {
            "type": "message",
            "timestamp": "2026-03-27T09:00:05Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "look it up"},
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {}},
                ],
            },
        },
        {"type": "message", "message": {"role": "toolResult", "content": "port=5434"}},
        {
            "type": "message",
            "timestamp": "2026-03-27T09:00:09Z",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Port 5434."}]},
        },
        {"type": "model_change", "model": "x"},
    ]
    path = tmp_path / "sess-42.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    result = CliRunner().invoke(app, ["import-transcript", str(path), "--user", "boss", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["added"] == 2 and summary["session"] == "sess-42"
    assert summary["skipped_entries"] == 3  # tool-only message, tool result, model change
    _question, answer = _turns(home, "boss")
    assert answer.text == "Port 5434."  # type: ignore[attr-defined]
    assert "user: Which port does staging use now?" in answer.context  # type: ignore[attr-defined]
    assert answer.metadata["session"] == "sess-42"  # type: ignore[attr-defined]
    # importing the same file again stores nothing twice
    again = CliRunner().invoke(app, ["import-transcript", str(path), "--user", "boss", "--json"])
    assert json.loads(again.output)["already_stored"] == 2


def test_import_plain_json_lines_from_stdin(home: Path) -> None:
    lines = [
        {"role": "user", "name": "Jon", "content": "I lost my job as a banker."},
        {"role": "user", "name": "Gina", "content": "Oh no! What will you do?"},
    ]
    text = "\n".join(json.dumps(x) for x in lines)
    result = CliRunner().invoke(
        app, ["import-transcript", "-", "--user", "jon", "--session", "D1"], input=text
    )
    assert result.exit_code == 0, result.output
    assert "as 2 turns" in result.output
    first, second = _turns(home, "jon")
    assert first.metadata["speaker"] == "Jon"  # type: ignore[attr-defined]
    assert second.context == "Gina\nJon: I lost my job as a banker."  # type: ignore[attr-defined]


def test_import_refuses_a_broken_file_and_stores_nothing(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    path.write_text('{"role": "user", "content": "fine"}\n{not json\n')
    result = CliRunner().invoke(app, ["import-transcript", str(path), "--user", "x"])
    assert result.exit_code == 2
    assert "line 2 is not JSON" in " ".join(result.output.split())
    assert _turns(home, "x") == []
    missing = CliRunner().invoke(app, ["import-transcript", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "cannot read" in " ".join(missing.output.split())


def test_errors_are_never_wrapped_for_scripts(home: Path, tmp_path: Path) -> None:
    deep = tmp_path / ("a-rather-long-directory-name-" * 6) / "missing-transcript.jsonl"
    result = CliRunner().invoke(app, ["import-transcript", str(deep)])
    assert result.exit_code == 2
    # one line per message, whatever the path's length (Rich wrapped at 80 columns)
    assert f"cannot read {deep}" in result.output.splitlines()[0]
