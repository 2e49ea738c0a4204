"""The CLI says what happened and what to do: no silent successes, no silent no-ops."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memoryd.cli import app


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_WORKSPACE__OPENCLAW_DIR", str(tmp_path / "no-openclaw"))
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str, stdin: str | None = None) -> tuple[int, str]:
        result = CliRunner().invoke(app, list(args), input=stdin)
        return result.exit_code, " ".join(result.output.split())

    return invoke


def test_an_add_that_stores_nothing_says_so_and_how_to_store_it(run) -> None:  # type: ignore[no-untyped-def]
    code, out = run("add", "hello world")
    assert code == 1 and "nothing stored" in out and "--no-infer" in out
    code, out = run("add", "hello world", "--no-infer")
    assert code == 0 and "ADD" in out


def test_add_text_dash_reads_stdin(run) -> None:  # type: ignore[no-untyped-def]
    code, out = run("add", "--text", "-", "--no-infer", "--json", stdin="Deploys go via ArgoCD\n")
    assert code == 0, out
    assert json.loads(out)["results"][0]["memory"] == "Deploys go via ArgoCD"


def test_numbers_out_of_range_are_refused(run) -> None:  # type: ignore[no-untyped-def]
    code, out = run("list", "--limit", "-5")
    assert code == 2 and "--limit" in out
    code, out = run("list", "--offset", "-1")
    assert code == 2 and "--offset" in out


def test_a_workspace_command_for_an_unknown_agent_is_an_error(run) -> None:  # type: ignore[no-untyped-def]
    code, out = run("memory-get", "SOUL.md", "--agent", "nosuchagent")
    assert code == 2 and "no workspace" in out and "memoryd init --agent nosuchagent" in out
    code, out = run("memory-search", "anything", "--agent", "nosuchagent")
    assert code == 2 and "no workspace" in out


def test_tables_show_text_as_written_and_ids_whole(run, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "250")  # a wide terminal: no cell is wrapped
    code, out = run(
        "add", "[type] bracketed prefix stays [bold]as written[/bold]", "--no-infer", "--json"
    )
    assert code == 0
    mid = json.loads(out)["results"][0]["id"]
    code, listed = run("list")
    assert code == 0
    assert "[type] bracketed prefix stays [bold]as written[/bold]" in listed  # not eaten as markup
    assert mid in listed.replace(" ", "")  # the whole id, usable with get/history/delete
    code, found = run("search", "bracketed prefix")
    assert code == 0 and "[type] bracketed" in found
