"""``memoryd mcp`` as a real subprocess over stdio, driven by the SDK's client."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memoryd.core import Memory
from memoryd.embed import Embedder
from memoryd.settings import Settings
from tests.mcp_client import McpSession
from tests.pipelines_kit import code_under_test

MEMORYD = str(Path(sys.executable).with_name("memoryd"))


def stdio(home: Path, *args: str) -> McpSession:
    env = {
        "MEMORYD_HOME": str(home),
        "HOME": str(home / "userhome"),
        "MEMORYD_CONFIG": "",
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        **code_under_test(),
    }
    return McpSession.stdio(MEMORYD, ["mcp", *args], env)


def test_stdio_server_writes_and_reads_in_its_configured_scope(
    tmp_path: Path, embedder: Embedder
) -> None:
    home = tmp_path / "home"
    with Memory(Settings(home=home), embedder=embedder) as mem:
        other = mem.add(
            "Codex agent note: the release branch is cut on Thursdays",
            user_id="default",
            agent_id="codex",
            category="project",
        )[0].id
    with stdio(home, "--agent", "claude-code") as s:
        assert "memory_search" in s.tools()
        added = s.call(
            "memory_add",
            text="We chose PostgreSQL over MongoDB for the billing service: strict schemas",
            category="decision",
        )
        mid = added["results"][0]["id"]
        hits = s.call("memory_search", query="which database for billing and why?")
        assert hits["scope"] == {"user_id": "default", "agent_id": "claude-code"}
        assert hits["results"][0]["id"] == mid
        assert other not in {h["id"] for h in hits["results"]}
        releases = s.call("memory_search", query="when is the release branch cut?", top_k=10)
        assert other not in {h["id"] for h in releases["results"]}
        error = s.error("memory_delete", memory_id=other)
        assert "NotFoundError" in error and "Hint:" in error
        notes = home / "workspaces" / "claude-code" / "MEMORY.md"
        notes.parent.mkdir(parents=True)
        notes.write_text("# Memory\n\n- Prefer small PRs\n")
        assert s.call("memory_get", path="MEMORY.md", **{"from": 3})["text"] == "- Prefer small PRs"
        assert "Prefer small PRs" in s.call("memory_context")["text"]
    with Memory(Settings(home=home), embedder=embedder) as mem:
        record = mem.get(mid)
        assert (record.user_id, record.agent_id, record.category) == (
            "default",
            "claude-code",
            "decision",
        )
        assert mem.history(mid)[0].actor == "mcp:local"
        assert mem.get(other).state == "active"


def test_a_bad_scope_in_configuration_fails_with_a_hint(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [MEMORYD, "mcp", "--agent", "../escape"],
        env={"MEMORYD_HOME": str(tmp_path), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "mcp.agent_id" in proc.stderr and "hint" in proc.stderr
    assert proc.stdout == ""


def test_a_subprocess_imports_the_code_under_test(tmp_path: Path) -> None:
    """The MCP and CLI subprocesses of the tests (face_env, stdio above) run this checkout's
    memoryd, not the copy the venv has installed (a worktree's tests would test main)."""
    import subprocess

    import memoryd
    from tests.pipelines_kit import face_env

    for env in (face_env(tmp_path), {"PATH": os.environ.get("PATH", ""), **code_under_test()}):
        out = subprocess.run(
            [sys.executable, "-c", "import memoryd; print(memoryd.__file__)"],
            env=env, capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        assert out.stdout.strip() == memoryd.__file__
