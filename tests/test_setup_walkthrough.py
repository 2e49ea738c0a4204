"""docs/integrations.md stays true: its configs parse and match what ``memoryd setup``
writes, its tool table matches the server, and its walkthrough works end to end:
Claude Code and an OpenClaw agent on one memoryd find each other's lessons."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from memoryd.core import Memory
from memoryd.mcp.server import stdio_server
from tests.conftest import free_port
from tests.mcp_client import McpSession
from tests.pipelines_kit import code_under_test

REPO = Path(__file__).resolve().parents[1]
DOC = (REPO / "docs" / "integrations.md").read_text()
MEMORYD = str(Path(sys.executable).with_name("memoryd"))
NODE = shutil.which("node")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def test_the_documented_configs_parse_and_have_setups_shape() -> None:
    configs = [json.loads(b) for b in blocks("json")]
    claude_stdio, claude_http, openclaw = configs
    assert set(claude_stdio["mcpServers"]["memoryd"]) == {"type", "command", "args", "env"}
    assert claude_http["mcpServers"]["memoryd"]["url"].endswith("/mcp")
    assert openclaw["plugins"]["entries"]["memoryd"]["hooks"] == {"allowConversationAccess": True}
    codex_stdio, codex_http = (tomllib.loads(b) for b in blocks("toml"))
    assert set(codex_stdio["mcp_servers"]["memoryd"]) == {"command", "args", "env"}
    assert set(codex_http["mcp_servers"]["memoryd"]) == {
        "url",
        "bearer_token_env_var",
        "http_headers",
    }


def test_the_documented_tools_are_the_servers_tools(memory: Memory) -> None:
    documented = set(re.findall(r"^\| `((?:memory|wiki)_\w+)` \|", DOC, re.M))
    served = {t.name for t in anyio.run(stdio_server(memory).list_tools)}
    assert documented == served and len(served) == 16 and "its sixteen tools" in DOC


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[dict[str, object]]:
    """A user's machine: HOME with an OpenClaw install, a project, memoryd serve running."""
    home = tmp_path / "home"
    (home / ".openclaw" / "workspace-main").mkdir(parents=True)
    (home / ".openclaw" / "openclaw.json").write_text('{"agents": {"entries": {"main": {}}}}\n')
    project = tmp_path / "project"
    project.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        **code_under_test(),
        "MEMORYD_HOME": str(tmp_path / "memoryd"),
    }
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "serve.log").open("w")
    serve = subprocess.Popen(
        [MEMORYD, "serve", "--port", str(port)], env=env, cwd=tmp_path, stdout=log, stderr=log
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert serve.poll() is None and time.monotonic() < deadline, (
                tmp_path / "serve.log"
            ).read_text()
            time.sleep(0.2)
        yield {"home": home, "project": project, "env": env, "url": url}
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
        log.close()


def run(env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        [MEMORYD, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def mcp_from(entry: dict[str, object], env: dict[str, str]) -> McpSession:
    launch = {**env, **entry.get("env", {})}  # type: ignore[dict-item]
    return McpSession.stdio(str(entry["command"]), list(entry["args"]), launch)  # type: ignore[call-overload]


def test_claude_code_and_openclaw_share_lessons_through_one_memoryd(machine) -> None:  # type: ignore[no-untyped-def]
    env, home, project, url = machine["env"], machine["home"], machine["project"], machine["url"]
    # 2-3: connect both with memoryd setup
    run(env, project, "setup", "claude-code", "--yes")
    run(env, project, "setup", "openclaw", "--yes", "--url", url)
    claude = json.loads((project / ".mcp.json").read_text())["mcpServers"]["memoryd"]
    openclaw_config = json.loads((home / ".openclaw" / "openclaw.json").read_text())
    assert openclaw_config["agents"] == {"entries": {"main": {}}}
    openclaw_mcp = openclaw_config["mcp"]["servers"]["memoryd"]

    # 4: Claude Code remembers a recipe
    with mcp_from(claude, env) as cc:  # Claude Code's server stays up, as in a session
        recipe = cc.call(
            "memory_add",
            text="How we deploy the API: make release, then argocd app sync api",
            category="procedural",
        )["results"][0]["id"]

        # the OpenClaw plugin, configured by setup, captures a turn into the agent's diary
        if NODE is not None:
            plugin_config = openclaw_config["plugins"]["entries"]["memoryd"]["config"]
            script = (
                "const { default: plugin } = await import(process.argv[1]);"
                "const hooks = {}; const logs = [];"
                "plugin.register({ pluginConfig: JSON.parse(process.argv[2]),"
                "  logger: { info() {}, debug() {}, warn: (m) => logs.push(m) },"
                "  on: (name, fn) => { hooks[name] = fn; } });"
                "const answer = await hooks.agent_end({ success: true, runId: 'r1', messages: ["
                "  { role: 'user', content: 'The api pods keep restarting, why?' },"
                "  { role: 'assistant', content: 'They are OOMKilled: the limit is 512Mi.' }] },"
                "  { agentId: 'main', sessionId: 'walk' });"
                "console.log(JSON.stringify({ answer, logs }));"
            )
            proc = subprocess.run(
                [NODE, "--input-type=module", "-e", script,
                 (REPO / "integrations/openclaw/index.js").as_uri(), json.dumps(plugin_config)],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            out = json.loads(proc.stdout)
            assert out["answer"]["written"] is True, out
            diary = home / ".openclaw" / "workspace-main" / out["answer"]["path"]
            assert "OOMKilled: the limit is 512Mi" in diary.read_text()

        # 5: the OpenClaw agent finds Claude Code's recipe, as shared, and writes a lesson back
        with mcp_from(openclaw_mcp, env) as oc:
            hits = oc.call("memory_search", query="How do we deploy the API?")
            assert hits["scope"]["agent_id"] == "main"
            top = hits["results"][0]
            assert (top["id"], top["memory_type"], top["agent_id"]) == (
                recipe,
                "shared",
                "claude-code",
            )
            lesson = oc.call(
                "memory_add",
                text="The api pods were OOMKilled at 512Mi: raise the memory limit to 1Gi",
                category="experience",
            )["results"][0]["id"]
            private = oc.call(
                "memory_add",
                text="Boss prefers release notes in bullet points",
                category="preference",
            )["results"][0]["id"]

        # the skill's CLI search from the OpenClaw side sees the same shared pool
        cli = json.loads(
            run(
                env,
                project,
                "search",
                "--user",
                "default",
                "--agent",
                "main",
                "--query",
                "deploy the API",
                "--json",
            )  # as SKILL.md says it
        )
        assert recipe in {h["id"] for h in cli["results"]}

        # 6: Claude Code finds the OpenClaw agent's lesson, but not its private preference
        found = cc.call("memory_search", query="why were the api pods killed?")["results"]
        assert (found[0]["id"], found[0]["memory_type"]) == (lesson, "shared")
        notes = cc.call("memory_search", query="release notes format", top_k=20)["results"]
        assert private not in {h["id"] for h in notes}
