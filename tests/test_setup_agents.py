"""``memoryd setup``: shows a diff, asks, never clobbers other entries, idempotent.

That what it writes really starts working MCP servers is shown end to end in
tests/test_setup_walkthrough.py."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from memoryd.cli import app

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = tmp_path / "userhome"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "memoryd"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    for name in ("OPENCLAW_CONFIG_PATH", "OPENCLAW_STATE_DIR", "OPENCLAW_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("MEMORYD_CONFIG", raising=False)
    monkeypatch.chdir(project)
    return {"home": home, "project": project, "memoryd": tmp_path / "memoryd"}


def setup(*args: str, answer: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["setup", *args], input=answer)
    return result.exit_code, result.output


def test_claude_code_project_config_is_shown_confirmed_and_written(env: dict[str, Path]) -> None:
    mcp_json = env["project"] / ".mcp.json"
    mcp_json.write_text(
        json.dumps({"mcpServers": {"github": {"command": "gh-mcp", "args": []}}}, indent=2) + "\n"
    )
    original = mcp_json.read_text()

    code, out = setup("claude-code", answer="n\n")
    assert code == 1 and "nothing written" in out
    assert '+    "memoryd": {' in out and "(now)" in out  # the diff came first
    assert mcp_json.read_text() == original

    code, out = setup("claude-code", answer="y\n")
    assert code == 0 and f"wrote {mcp_json}" in out and "restart Claude Code" in out
    data = json.loads(mcp_json.read_text())
    assert data["mcpServers"]["github"] == {"command": "gh-mcp", "args": []}
    entry = data["mcpServers"]["memoryd"]
    assert entry["type"] == "stdio" and Path(entry["command"]).name == "memoryd"
    assert entry["args"] == ["mcp", "--agent", "claude-code"]
    assert entry["env"] == {"MEMORYD_HOME": str(env["memoryd"])}

    code, out = setup("claude-code", "--yes")
    assert code == 0 and "nothing to change" in out
    code, out = setup("claude-code", "--dry-run", "--agent", "reviewer")
    assert code == 0 and '"reviewer"' in out
    assert json.loads(mcp_json.read_text())["mcpServers"]["memoryd"]["args"][-1] == "claude-code"


def test_claude_code_user_scope_keeps_everything_else_in_claude_json(env: dict[str, Path]) -> None:
    claude_json = env["home"] / ".claude.json"
    state = {
        "numStartups": 12,
        "projects": {"/src/app": {"mcpServers": {"local-only": {"command": "x"}}}},
        "mcpServers": {"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-fetch"]}},
    }
    claude_json.write_text(json.dumps(state, indent=2) + "\n")
    claude_json.chmod(0o600)
    code, out = setup("claude-code", "--scope", "user", "--yes")
    assert code == 0, out
    data = json.loads(claude_json.read_text())
    assert {k: v for k, v in data.items() if k != "mcpServers"} == {
        "numStartups": 12,
        "projects": state["projects"],
    }
    assert set(data["mcpServers"]) == {"fetch", "memoryd"}
    assert stat.S_IMODE(claude_json.stat().st_mode) == 0o600
    assert not (env["project"] / ".mcp.json").exists()


def test_codex_config_keeps_comments_and_other_servers(env: dict[str, Path]) -> None:
    config = env["home"] / ".codex" / "config.toml"
    config.parent.mkdir()
    original = (
        "# my codex settings\n"
        'model = "o3"  # keep this\n\n'
        "[mcp_servers.context7]\n"
        'command = "npx"\n'
        'args = ["-y", "@upstash/context7-mcp"]\n'
    )
    config.write_text(original)
    code, out = setup("codex", "--yes")
    assert code == 0, out
    text = config.read_text()
    assert text.startswith(original)
    parsed = tomllib.loads(text)
    assert parsed["model"] == "o3" and parsed["mcp_servers"]["context7"]["command"] == "npx"
    entry = parsed["mcp_servers"]["memoryd"]
    assert entry["args"] == ["mcp", "--agent", "codex"]
    assert entry["env"] == {"MEMORYD_HOME": str(env["memoryd"])}
    assert setup("codex", "--yes")[1].count("nothing to change") == 1

    code, out = setup(
        "codex", "--yes", "--transport", "http", "--url", "http://127.0.0.1:9000",
        "--api-key-env", "MEMORYD_API_KEY",
    )  # fmt: skip
    assert code == 0, out
    entry = tomllib.loads(config.read_text())["mcp_servers"]["memoryd"]
    assert entry == {
        "url": "http://127.0.0.1:9000/mcp",
        "bearer_token_env_var": "MEMORYD_API_KEY",
        "http_headers": {"X-Memoryd-Agent": "codex"},
    }
    assert "MEMORYD_API_KEY" in config.read_text() and "Bearer" not in config.read_text()


def test_openclaw_gets_plugin_hook_access_skill_and_mcp_without_losing_its_config(
    env: dict[str, Path],
) -> None:
    config = env["home"] / ".openclaw" / "openclaw.json"
    config.parent.mkdir()
    existing: dict[str, Any] = {
        "agents": {"entries": {"main": {"workspace": "/w/main"}}},
        "plugins": {
            "allow": ["voice-call"],
            "entries": {"voice-call": {"enabled": True}, "memoryd": {"hooks": {"timeoutMs": 9000}}},
        },
        "mcp": {"servers": {"docs": {"url": "https://mcp.example.com"}}},
    }
    config.write_text(json.dumps(existing, indent=2) + "\n")
    code, out = setup("openclaw", "--yes", "--api-key-env", "MEMORYD_API_KEY")
    assert code == 0, out
    assert "openclaw gateway restart" in out
    data = json.loads(config.read_text())
    assert data["agents"] == existing["agents"]
    plugins = data["plugins"]
    assert plugins["load"]["paths"] == [str(REPO / "integrations" / "openclaw")]
    assert plugins["allow"] == ["voice-call", "memoryd"]
    assert plugins["entries"]["voice-call"] == {"enabled": True}
    assert plugins["entries"]["memoryd"] == {
        "hooks": {"timeoutMs": 9000, "allowConversationAccess": True},
        "enabled": True,
        "config": {"url": "http://127.0.0.1:8230", "apiKey": "${MEMORYD_API_KEY}"},
    }
    servers = data["mcp"]["servers"]
    assert servers["docs"] == {"url": "https://mcp.example.com"}
    assert servers["memoryd"]["args"] == ["mcp", "--agent", "main"]
    assert setup("openclaw", "--yes", "--api-key-env", "MEMORYD_API_KEY")[0] == 0
    assert json.loads(config.read_text()) == data  # idempotent


def status_warnings() -> list[str]:
    result = CliRunner().invoke(app, ["status", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["warnings"]


def test_one_system_per_job_openclaws_duplicates_are_turned_off_or_memoryds(
    env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # as `openclaw onboard` leaves it: the session-memory hook on, dreaming by default
    state = env["home"] / "oc-state"
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(state))
    config = state / "openclaw.json"
    config.parent.mkdir()
    onboarded = {"hooks": {"internal": {"entries": {"session-memory": {"enabled": True}}}}}
    config.write_text(json.dumps(onboarded, indent=2) + "\n")
    assert status_warnings() == []  # memoryd is not connected: nothing is done twice

    code, out = setup("openclaw", "--yes", "--jobs", "openclaw")
    assert code == 0, out
    data = json.loads(config.read_text())
    assert data["plugins"]["entries"]["memoryd"]["config"]["sessionNotes"] is False
    assert data["hooks"] == onboarded["hooks"]  # OpenClaw keeps its jobs
    assert "pipelines.disabled" in out
    warnings = status_warnings()  # memoryd's dream still runs beside memory-core's
    assert len(warnings) == 1 and "managed dreaming" in warnings[0]

    data["plugins"]["entries"]["memoryd"]["config"].pop("sessionNotes")
    config.write_text(json.dumps(data, indent=2) + "\n")
    assert len(status_warnings()) == 2  # and now both write a note on /new

    code, out = setup("openclaw", "--yes")  # the default: memoryd does both jobs
    assert code == 0, out
    data = json.loads(config.read_text())
    assert data["hooks"]["internal"]["entries"]["session-memory"]["enabled"] is False
    assert data["plugins"]["entries"]["memory-core"]["config"]["dreaming"]["enabled"] is False
    assert "sessionNotes" not in data["plugins"]["entries"]["memoryd"]["config"]
    assert status_warnings() == []
    # openclaw is not on PATH here: the command that records the install is shown
    assert "openclaw plugins install --link --force --accept-capabilities" in out
    assert setup("openclaw", "--yes", "--jobs", "both")[0] == 2


def test_json5_configs_and_bad_options_fail_with_a_hint_and_write_nothing(
    env: dict[str, Path],
) -> None:
    config = env["home"] / ".openclaw" / "openclaw.json"
    config.parent.mkdir()
    json5 = "{\n  // my settings\n  agents: {},\n}\n"
    config.write_text(json5)
    code, out = setup("openclaw", "--yes")
    assert code == 2 and "not plain JSON" in out and "openclaw plugins install --link" in out
    assert config.read_text() == json5

    for args, needle in (
        (("cursor",), "unknown target"),
        (("openclaw", "--scope", "project"), "one configuration per user"),
        (("codex", "--api-key-env", "sk-live 123"), "not an environment variable name"),
        (("claude-code", "--agent", "../x"), "--agent"),
        (("claude-code", "--transport", "carrier-pigeon"), "unknown transport"),
        (("openclaw", "--plugin-dir", str(env["project"])), "openclaw.plugin.json is missing"),
    ):
        code, out = setup(*args, "--yes")
        assert code == 2 and needle in out, (args, out)
    assert not (env["project"] / ".mcp.json").exists()


def test_a_local_memoryd_toml_is_pinned_for_the_agents_server(env: dict[str, Path]) -> None:
    (env["project"] / "memoryd.toml").write_text("[search]\nvector_weight = 0.6\n")
    assert setup("codex", "--yes")[0] == 0
    entry = tomllib.loads((env["home"] / ".codex" / "config.toml").read_text())["mcp_servers"]
    assert entry["memoryd"]["env"]["MEMORYD_CONFIG"] == str(env["project"] / "memoryd.toml")
