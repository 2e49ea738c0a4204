"""What a new user hits first on the command line (issue 33): tables that fit the
terminal with ids whole, one default-user rule, unknown agents refused, summaries
instead of thousands of lines, --version/-h, readable get/status, JSON errors under
--json, and next steps that fit the CLI. Driven in-process with Typer's runner against
a real store (and a real server for the HTTP side)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memoryd.api import create_app
from memoryd.cli import app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import Settings

LONG = (
    "The deployment of the payment service moved to Kubernetes last Tuesday after a long "
    "discussion about hosting costs and on-call load"
)


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MEMORYD_WORKSPACE__OPENCLAW_DIR", str(tmp_path / "openclaw"))
    for name in ("MEMORYD_URL", "MEMORYD_API_KEY", "MEMORYD_DEFAULT_USER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.output

    return invoke


def _added_id(run, *args: str) -> str:  # type: ignore[no-untyped-def]
    code, out = run("add", *args, "--no-infer", "--json")
    assert code == 0, out
    return str(json.loads(out)["results"][0]["id"])


@pytest.mark.parametrize("columns", [80, 120])
def test_tables_fit_the_terminal_with_ids_whole(  # type: ignore[no-untyped-def]
    run, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    first = _added_id(run, LONG)
    second = _added_id(run, "short note")
    code, out = run("list")
    assert code == 0
    lines = out.splitlines()
    assert all(len(line) <= columns for line in lines), out
    # each memory on one line, with its id whole (copyable into get/history/delete)
    rows = [line for line in lines if first in line or second in line]
    assert len(rows) == 2, out
    long_row = next(r for r in rows if first in r)
    assert "The deployment" in long_row and "costs" not in long_row and "…" in long_row
    assert len(lines) == 2 + 2 + 1  # header, rule, two rows, the count
    code, out = run("search", "payment service deployment")
    assert code == 0 and first in out  # whole, not 5e634a4a-9c8…
    assert all(len(line) <= columns for line in out.splitlines()), out
    # the text wraps in a column wide enough for words, not one word per line
    text_lines = [line for line in out.splitlines() if line.strip()][2:]
    assert len(text_lines) <= len(LONG) // 20, out  # not ~22 lines of one word
    assert run("history", first)[0] == 0 and run("delete", first)[0] == 0


def test_one_default_user_rule_on_the_cli_and_over_http(  # type: ignore[no-untyped-def]
    run, tmp_path: Path, embedder: Embedder, live_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    _added_id(run, "alice drinks green tea", "--user", "alice")
    anon = _added_id(run, "somebody drinks black coffee")  # no --user: the default user
    assert json.loads(run("get", anon, "--json")[1])["user_id"] == "default"
    # a read that names no user covers every user, on the CLI as over HTTP
    code, out = run("search", "what does somebody drink", "--json")
    cli_ids = {h["id"] for h in json.loads(out)["results"]}
    code, out = run("list", "--json")
    assert code == 0 and {r["user_id"] for r in json.loads(out)["results"]} == {"alice", "default"}
    settings = Settings()
    with Memory(settings, embedder=embedder) as mem, live_server(create_app(memory=mem)) as s:
        answer = httpx.post(f"{s.url}/memory/search", json={"query": "what does somebody drink"})
        assert {h["id"] for h in answer.json()["results"]} == cli_ids and len(cli_ids) == 2
        # a write that names no user goes to the default user over HTTP too
        added = httpx.post(f"{s.url}/memory/add", json={"text": "over http", "infer": False})
        assert added.status_code == 200, added.text
        got = httpx.get(f"{s.url}/memory/{added.json()['results'][0]['id']}").json()
        assert got["result"]["user_id"] == "default"
    # the default user is set once, for every write that names none
    monkeypatch.setenv("MEMORYD_DEFAULT_USER", "bob")
    bobs = _added_id(run, "bob reads the news")
    assert json.loads(run("get", bobs, "--json")[1])["user_id"] == "bob"
    assert Settings().mcp.user_id == "bob"  # MCP acts for it too, unless mcp.user_id is set


def test_unknown_agents_are_refused_by_every_workspace_command(  # type: ignore[no-untyped-def]
    run, tmp_path: Path
) -> None:
    assert run("init", "--agent", "dev")[0] == 0
    for args in (
        ["flush", "--agent", "typo", "a durable note"],
        ["wiki", "compile", "-a", "typo"],
        ["index", "--agent", "typo"],
        ["context", "--agent", "typo"],
        ["session-end", "--agent", "typo"],
    ):
        code, out = run(*args)
        assert code == 2, (args, out)
        assert "'typo' has no workspace" in out and "known agents: dev" in out, (args, out)
        assert "memoryd init --agent typo" in out
    assert not (tmp_path / "home" / "workspaces" / "typo").exists()
    code, out = run("flush", "--agent", "dev", "a durable note", "--json")
    assert code == 0 and json.loads(out)["appended"] == 1
    code, out = run("flush", "--agent", "typo", "x", "--json")
    assert code == 2 and "known agents: dev" in json.loads(out)["error"]


def test_add_lines_ends_with_a_summary_and_per_line_events_only_when_verbose(  # type: ignore[no-untyped-def]
    run, tmp_path: Path
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("".join(f"note number {n} about topic {n % 7}\n" for n in range(230)))
    code, out = run("add", "--lines", str(path), "--no-infer")
    assert code == 0, out
    assert out.strip().splitlines() == ["230 lines: ADD 230"]  # no progress bar off a TTY
    code, out = run("add", "--lines", str(path), "--no-infer", "--verbose")
    lines = out.strip().splitlines()
    assert len(lines) == 231 and lines[-1] == "230 lines: NONE 230", lines[-3:]
    assert lines[0].startswith("NONE ")


def test_version_help_and_readable_get_and_status(run) -> None:  # type: ignore[no-untyped-def]
    from memoryd import __version__

    code, out = run("--version")
    assert code == 0 and out.strip() == f"memoryd {__version__}"
    code, out = run("-h")
    assert code == 0 and "Usage" in out and "search" in out
    code, out = run("search", "-h")
    assert code == 0 and "--top-k" in out
    mid = _added_id(run, "plain facts", "--user", "alice")
    code, out = run("get", mid)
    assert code == 0 and re.search(rf"^id +{mid}$", out, re.MULTILINE), out
    assert "None" not in out and "{}" not in out
    code, out = run("status")
    assert code == 0 and "by_user" in out and "alice=1" in out and "{'" not in out


def test_errors_under_json_are_json(run) -> None:  # type: ignore[no-untyped-def]
    runner = CliRunner()
    result = runner.invoke(app, ["get", "no-such-id", "--json"])
    assert result.exit_code == 2
    error = json.loads(result.stderr)
    assert error["error"] == "no memory with id no-such-id" and "memoryd list" in error["hint"]
    assert result.stdout == ""
    result = runner.invoke(app, ["add", "--json"])  # a usage mistake of our own
    assert result.exit_code == 2 and "pass the text" in json.loads(result.stderr)["error"]
    result = runner.invoke(app, ["get", "x"])  # without --json: people's text
    assert result.exit_code == 2 and result.stderr.startswith("error: no memory")


def test_command_line_mistakes_under_json_are_json(tmp_path: Path) -> None:
    env = {**os.environ, "MEMORYD_HOME": str(tmp_path / "home")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    done = subprocess.run(
        [sys.executable, "-m", "memoryd.cli", "list", "--bogus", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert json.loads(done.stderr)["error"].startswith("No such option: --bogus")


def test_url_without_scheme_is_accepted(  # type: ignore[no-untyped-def]
    run, embedder: Embedder, live_server
) -> None:
    with (
        Memory(Settings(), embedder=embedder) as mem,
        live_server(create_app(memory=mem)) as server,
    ):
        bare = server.url.removeprefix("http://")
        code, out = run("add", "remote note", "--no-infer", "--url", bare, "--user", "u")
        assert code == 0 and "ADD" in out, out
        root = httpx.get(server.url + "/")
        assert root.status_code == 200 and root.json()["dashboard"] == "/ui"
        page = httpx.get(server.url + "/", headers={"accept": "text/html"})
        assert page.status_code == 307 and page.headers["location"] == "/ui"


def test_serve_on_a_busy_port_says_so_before_starting(run) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, out = run("serve", "--port", str(port))
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in out
    assert f"--port {port + 1}" in out


def test_long_work_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    """stderr on a real pseudo-terminal: the bar is drawn there; stdout (a pipe) gets
    the summary alone."""
    import pty

    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"line number {n}\n" for n in range(150)))
    env = {**os.environ, "MEMORYD_HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    main, secondary = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "memoryd.cli", "add", "--lines", str(lines), "--no-infer"],
        stdout=subprocess.PIPE, stderr=secondary, env=env, text=True,
    ) as proc:  # fmt: skip
        os.close(secondary)
        drawn = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        out = proc.stdout.read() if proc.stdout else ""
    os.close(main)
    assert proc.returncode == 0
    assert out == "150 lines: ADD 150\n"
    assert b"adding lines" in drawn and b"150/150" in drawn
