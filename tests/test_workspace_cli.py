"""The workspace commands, driven in-process with Typer's runner against real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.cli import app


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_WORKSPACE__OPENCLAW_DIR", str(tmp_path / "openclaw"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str, stdin: str | None = None) -> tuple[int, str]:
        result = runner.invoke(app, list(args), input=stdin)
        return result.exit_code, result.output

    return invoke


def test_init_creates_templates_and_never_overwrites(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    code, out = run("init", "--agent", "dev", "--json")
    assert code == 0, out
    info = json.loads(out)
    root = Path(info["workspace"])
    assert root == tmp_path / "home" / "workspaces" / "dev"
    assert set(info["created"]) == {
        "SOUL.md", "IDENTITY.md", "USER.md", "AGENTS.md", "TOOLS.md", "HEARTBEAT.md",
        "MEMORY.md", "DREAMS.md", "BOOTSTRAP.md", "memory/",
    }  # fmt: skip
    (root / "SOUL.md").write_text("# my own soul\n")
    (root / "BOOTSTRAP.md").unlink()  # the ritual is done
    code, out = run("init", "--agent", "dev", "--json")
    again = json.loads(out)
    assert again["created"] == [] and (root / "SOUL.md").read_text() == "# my own soul\n"
    assert not (root / "BOOTSTRAP.md").exists()  # never comes back


def test_an_existing_openclaw_workspace_is_used(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    existing = tmp_path / "openclaw" / "workspace-main"
    (existing / "memory").mkdir(parents=True)
    (existing / "MEMORY.md").write_text("# MEMORY\n- prefers tea over coffee\n")
    code, out = run("index", "--agent", "main", "--json")
    assert code == 0, out
    assert json.loads(out)["results"][0]["indexed"] == 1
    code, out = run("memory-search", "does the user prefer tea", "--agent", "main", "--json")
    assert json.loads(out)["results"][0]["citation"] == "MEMORY.md#L1-L2"


def test_index_search_get_context_status(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "elsewhere" / "ws"
    assert run("init", "--agent", "dev", "--path", str(ws))[0] == 0
    (ws / "memory" / "2026-03-27.md").write_text(
        "# 2026-03-27\n\n## 10:00\n- Rotated the TLS certificates on the edge proxies\n"
    )
    code, out = run("index", "--json")  # every known workspace, the registered one included
    assert code == 0, out
    (report,) = json.loads(out)["results"]
    assert report["agent_id"] == "dev" and report["indexed"] == 1 and report["embedded"] == 1
    code, out = run("index", "--agent", "dev", "--json")
    assert json.loads(out)["results"][0]["embedded"] == 0

    code, out = run("memory-search", "certificate rotation", "--agent", "dev", "--json")
    (hit,) = json.loads(out)["results"]
    assert hit["citation"] == "memory/2026-03-27.md#L1-L4"
    code, out = run("memory-get", hit["path"], "--agent", "dev", "--from", "4", "--lines", "1")
    assert out == "- Rotated the TLS certificates on the edge proxies\n"
    code, out = run("memory-get", "../../etc/passwd", "--agent", "dev")
    assert code == 2 and "'..'" in out

    code, out = run("context", "--agent", "dev", "--query", "TLS")
    assert code == 0 and "## SOUL.md" in out and "# Session context: agent dev" in out

    code, out = run("status", "--json")
    (status,) = json.loads(out)["workspaces"]
    assert status["agent_id"] == "dev" and status["workspace"] == str(ws)
    assert status["pending"] == [] and status["chunks"] >= 1 and status["last_index"]
    (ws / "memory" / "new.md").write_text("# New\n- not indexed yet\n")
    code, out = run("status")
    assert code == 0 and "dev" in out
    code, out = run("status", "--json")
    assert json.loads(out)["workspaces"][0]["pending"] == ["memory/new.md"]


def test_session_end_and_flush(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run("init", "--agent", "dev")
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        "\n".join(
            json.dumps(line)
            for line in [
                {"type": "session", "id": "s1"},
                {"type": "message", "message": {"role": "user", "content": "Benchmark the parser"}},
                {
                    "type": "message",
                    "message": {"role": "assistant", "content": "Parser bench: 3x faster"},
                },
            ]
        )
    )
    code, out = run("session-end", "--agent", "dev", "--transcript", str(transcript), "--json")
    assert code == 0, out
    note = json.loads(out)
    assert note["path"].endswith("-parser-benchmark.md") and note["messages"] == 2
    code, out = run(
        "session-end",
        "--agent",
        "dev",
        "--json",
        stdin='[{"role": "user", "content": "Tune kafka"}]',
    )
    assert code == 0 and json.loads(out)["path"].endswith("-tune-kafka.md")
    code, out = run("flush", "--agent", "dev", "Parser is 3x faster after the rewrite")
    assert code == 0 and "appended 1" in out
    code, out = run("flush", "--agent", "dev", "  ")
    assert code == 2 and "no notes" in out
