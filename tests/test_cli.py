"""The CLI, driven in-process with Typer's runner against a real store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.cli import app


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.output

    return invoke


def test_add_then_search_json_scoped_by_user(run) -> None:  # type: ignore[no-untyped-def]
    code, out = run("add", "I prefer dark mode in every editor", "--user", "alice")
    assert code == 0 and "ADD" in out
    code, out = run("search", "theme preference", "--user", "alice", "--json")
    assert code == 0
    hits = json.loads(out)["results"]
    assert hits[0]["memory"] == "I prefer dark mode in every editor"
    assert set(hits[0]["parts"]) >= {"vector", "keyword", "fused"}
    code, out = run("search", "theme preference", "--user", "bob", "--json")
    assert json.loads(out)["results"] == []


def test_list_get_history_delete(run) -> None:  # type: ignore[no-untyped-def]
    run(
        "add",
        "--text",
        "Chose pgvector for local dev",
        "--user",
        "boss",
        "--agent",
        "dev",
        "--metadata",
        '{"category":"decision"}',
    )
    code, out = run("list", "--user", "boss", "--json")
    (item,) = json.loads(out)["results"]
    assert item["category"] == "decision" and item["agent_id"] == "dev"
    code, out = run("get", item["id"], "--json")
    assert json.loads(out)["memory"] == "Chose pgvector for local dev"
    assert run("delete", item["id"])[0] == 0
    code, out = run("history", item["id"], "--json")
    assert [e["event"] for e in json.loads(out)["results"]] == ["ADD", "DELETE"]
    code, out = run("get", item["id"])  # the CLI's next step, not another face's
    assert code == 2 and f"memory {item['id']} was deleted" in out
    assert f"memoryd restore {item['id']}" in out and "MCP" not in out
    code, out = run("get", "no-such-id")
    assert code == 2 and "no memory with id no-such-id" in out and "memoryd list" in out


def test_errors_are_clear_and_exit_2(run) -> None:  # type: ignore[no-untyped-def]
    code, out = run("add", "   ", "--user", "alice")
    assert code == 2 and "empty" in out and "hint" in out
    code, out = run("add", "x", "--user", "a/b")
    assert code == 2 and "user_id" in out
    code, out = run("add", "x", "--metadata", "[1,2]")
    assert code == 2 and "JSON object" in out
    code, out = run("search", "x", "--top-k", "500")
    assert code == 2 and "top_k" in out


def test_status(run) -> None:  # type: ignore[no-untyped-def]
    run("add", "one", "--user", "a")
    code, out = run("status", "--json")
    info = json.loads(out)
    assert code == 0 and info["memories"] == 1 and info["model"] and info["dim"] == 384
