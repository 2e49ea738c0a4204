"""The seed's CLI commands, with `memoryd` in place of `python3 cli.py`, against the
local store and against a running server (--url); and `memoryd serve`'s bind rule."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from memoryd.api import create_app
from memoryd.api.app import check_bind
from memoryd.cli import app
from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.errors import PermissionDeniedError
from memoryd.settings import ApiKey, Settings
from tests.conftest import free_port

Run = Callable[..., tuple[int, str]]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MEMORYD_URL", raising=False)
    monkeypatch.delenv("MEMORYD_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    def invoke(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.output

    return invoke


SEED_ADD = [
    "add", "--user", "boss", "--agent", "dev",
    "--text", "Decided to use S3 Vectors as primary vector store",
    "--metadata", '{"category":"decision"}',
]  # fmt: skip
SEED_ADD_SHARED = [
    "add", "--user", "boss", "--agent", "dev",
    "--text", "kiro-cli: always use exec(pty=true, background=true, workdir=...). Never add & in command.",
    "--metadata", '{"category":"procedural"}',
]  # fmt: skip
SEED_SEARCH = [
    "search", "--user", "boss", "--agent", "main",
    "--query", "how do I run kiro-cli", "--combined", "--recent-days", "7",
]  # fmt: skip


def session(run: Run, *url: str) -> None:
    """The seed's documented commands, in order, checked end to end."""
    code, out = run(*SEED_ADD, *url)
    assert code == 0 and "ADD" in out, out
    code, out = run(*SEED_ADD_SHARED, *url, "--json")
    assert code == 0, out
    shared_id = json.loads(out)["results"][0]["id"]
    code, out = run(*SEED_SEARCH, *url, "--json")
    assert code == 0, out
    hits = json.loads(out)["results"]
    # another agent (main) finds dev's procedural through the shared pool
    assert hits[0]["id"] == shared_id and hits[0]["memory_type"] == "shared"
    code, out = run(*SEED_SEARCH, *url)  # the table form, for people
    assert code == 0 and "shared" in out
    code, out = run(
        "add", "--user", "boss", "--agent", "dev", "--run", "2026-03-23",
        "--messages", '[{"role":"user","content":"We discussed refactoring the digest job."}]',
        *url, "--json",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["results"][0]["event"] == "ADD", out
    code, out = run(
        "list", "--user", "boss", "--agent", "dev", "--run", "2026-03-23", *url, "--json"
    )
    listed = json.loads(out)["results"]
    # the extracted fact, once; the turn it came from is kept beside it as its evidence
    # and listed on request
    assert {(r["memory"], r["origin"]) for r in listed} == {
        ("We discussed refactoring the digest job.", "fact"),
    }
    code, out = run(
        "list", "--user", "boss", "--agent", "dev", "--run", "2026-03-23", "--turns", *url, "--json"
    )
    assert code == 0, out
    assert {(r["memory"], r["origin"]) for r in json.loads(out)["results"]} == {
        ("We discussed refactoring the digest job.", "fact"),
        ("We discussed refactoring the digest job.", "turn"),
    }
    code, out = run("get", "--id", shared_id, *url, "--json")
    assert code == 0 and json.loads(out)["metadata"] == {"category": "procedural"}
    code, out = run("delete", "--id", shared_id, *url)
    assert code == 0 and shared_id in out
    code, out = run("history", "--id", shared_id, *url, "--json")
    assert [e["event"] for e in json.loads(out)["results"]] == ["ADD", "DELETE"]
    code, out = run("restore", shared_id, *url, "--json")
    assert code == 0 and json.loads(out)["state"] == "active"
    code, out = run("get", "--id", "no-such-id", *url)
    assert code == 2 and "no memory with id no-such-id" in out and "hint" in out


def test_the_seed_commands_work_on_the_local_store(run: Run) -> None:
    session(run)


def test_the_seed_commands_work_against_a_running_server(
    run: Run, memory: Memory, live_server
) -> None:  # type: ignore[no-untyped-def]
    with live_server(create_app(memory=memory)) as server:
        session(run, "--url", server.url)
    # the writes landed in the server's store, not in a local one
    assert {r.agent_id for r in memory.list(user_id="boss")} == {"dev"}
    assert memory.count() == 4  # the two seed adds, and the conversation: its fact and turn


def add_lines(run: Run, tmp_path: Path, *url: str) -> list[str]:
    """``memoryd add --lines FILE``: each non-empty line one memory, in one batch."""
    facts = tmp_path / "facts.txt"
    facts.write_text("Ana likes sushi.\n\n  Ana's dog is called Pixel.  \nAna likes sushi.\n")
    code, out = run(
        "add", "--user", "boss", "--agent", "dev", "--lines", str(facts), "--no-infer",
        "--category", "preference", *url, "--json",
    )  # fmt: skip
    assert code == 0, out
    events = json.loads(out)["results"]
    assert [(e["event"], e["memory"]) for e in events] == [
        ("ADD", "Ana likes sushi."),
        ("ADD", "Ana's dog is called Pixel."),
        ("NONE", "Ana likes sushi."),
    ]
    (tmp_path / "blank.txt").write_text("\n  \n")
    code, out = run("add", "--user", "boss", "--lines", str(tmp_path / "blank.txt"), *url)
    assert code == 2 and "no non-empty line" in out
    code, out = run("add", "--user", "boss", "--lines", str(facts), "--text", "x", *url)
    assert code == 2 and "one of them" in out
    return [e["id"] for e in events[:2]]


def test_add_lines_stores_each_line_locally_and_on_a_server(
    run: Run, tmp_path: Path, memory: Memory, live_server
) -> None:  # type: ignore[no-untyped-def]
    local = add_lines(run, tmp_path)
    code, out = run("get", "--id", local[1], "--json")
    assert code == 0 and json.loads(out)["metadata"] == {"category": "preference"}
    with live_server(create_app(memory=memory)) as server:
        remote = add_lines(run, tmp_path, "--url", server.url)
    assert [memory.get(i).text for i in remote] == [
        "Ana likes sushi.",
        "Ana's dog is called Pixel.",
    ]


def test_add_lines_sends_a_long_file_in_batches_within_the_limit(
    run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYD_LIMITS__MAX_TEXTS", "2")
    assert Settings().limits.max_texts == 2  # so 5 lines in one add would be refused
    facts = tmp_path / "many.txt"
    facts.write_text("".join(f"Fact number {n} is kept.\n" for n in range(5)))
    code, out = run("add", "--user", "boss", "--lines", str(facts), "--no-infer", "--json")
    assert code == 0, out
    assert [e["event"] for e in json.loads(out)["results"]] == ["ADD"] * 5
    code, out = run("list", "--user", "boss", "--json")
    assert json.loads(out)["total"] == 5


def test_url_and_key_from_the_environment_and_clear_failures(
    run: Run, settings: Settings, embedder: Embedder, live_server, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    settings.auth.keys = [ApiKey(name="dev", key="k-123", users=["boss"])]  # type: ignore[arg-type]
    with Memory(settings, embedder=embedder) as mem, live_server(create_app(memory=mem)) as server:
        monkeypatch.setenv("MEMORYD_URL", server.url)
        code, out = run("add", "--user", "boss", "--text", "uses the env url")
        assert code == 2 and "API key is required" in out
        monkeypatch.setenv("MEMORYD_API_KEY", "k-123")
        code, out = run("add", "--user", "boss", "--text", "uses the env url", "--no-infer")
        assert code == 0 and "ADD" in out
        code, out = run("search", "--user", "carol", "--query", "anything")
        assert code == 2 and "not allowed" in out
        assert [r.text for r in mem.list(user_id="boss")] == ["uses the env url"]
    code, out = run("list", "--url", f"http://127.0.0.1:{free_port()}")
    assert code == 2 and "cannot reach memoryd" in out and "memoryd serve" in out


def test_cli_input_errors(run: Run) -> None:
    code, out = run("add", "--user", "boss", "--messages", '{"role": "user"}')
    assert code == 2 and "--messages must be a JSON list" in out
    code, out = run("add", "--user", "boss")
    assert code == 2 and "--messages" in out
    code, out = run("search", "--query", "x", "--combined", "--run", "2026-03-27")
    assert code == 2 and "leave out --run" in out
    code, out = run("get")
    assert code == 2 and "--id" in out


def test_serve_refuses_to_listen_beyond_loopback_without_keys(run: Run) -> None:
    code, out = run("serve", "--host", "0.0.0.0", "--port", str(free_port()))
    assert code == 2 and "refusing to listen on 0.0.0.0 without API keys" in out
    assert "--allow-remote-without-auth" in out


def test_the_bind_rule() -> None:
    def allowed(**server: object) -> bool:
        s = Settings(server=server)  # type: ignore[arg-type]
        try:
            check_bind(s)
        except PermissionDeniedError:
            return False
        return True

    assert allowed(host="127.0.0.1") and allowed(host="localhost") and allowed(host="::1")
    assert not allowed(host="0.0.0.0") and not allowed(host="10.1.2.3")
    assert not allowed(host="memory.example.com")
    assert allowed(host="0.0.0.0", allow_remote_without_auth=True)
    keyed = Settings(server={"host": "0.0.0.0"}, auth={"keys": [{"name": "a", "key": "k"}]})  # type: ignore[arg-type]
    check_bind(keyed)


def test_serve_with_keys_listens_on_every_interface(tmp_path: Path) -> None:
    port = free_port()
    env = dict(
        os.environ,
        MEMORYD_HOME=str(tmp_path / "home"),
        MEMORYD_AUTH__KEYS='[{"name": "admin", "key": "s3cret", "admin": true}]',
    )
    env.pop("MEMORYD_URL", None)
    memoryd = str(Path(sys.executable).with_name("memoryd"))
    proc = subprocess.Popen(
        [memoryd, "serve", "--host", "0.0.0.0", "--port", str(port)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120  # model load on a busy machine
        while True:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        proc.stdout.read().decode() if proc.stdout else ""
                    ) from None
                time.sleep(0.2)
        assert health.status_code == 200
        denied = httpx.post(f"http://127.0.0.1:{port}/memory/search", json={"query": "x"})
        assert denied.status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=20)
