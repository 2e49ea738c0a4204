"""The OpenClaw plugin's Node tests (``node --test``) against a live ``memoryd serve``.

The server is the real command in a subprocess, with an API key scoped to the
agent ``main`` and an OpenClaw layout under a temporary HOME, so the plugin's
turns land in ``~/.openclaw/workspace-main/memory/YYYY-MM-DD.md`` as they would
on a user's machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve_kit import memoryd_serve as serve
from tests.serve_kit import node_test_counts

PLUGIN = Path(__file__).resolve().parents[1] / "integrations" / "openclaw"
NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(NODE is None, reason="Node.js (>= 20) is not installed")


@pytest.fixture
def memoryd_serve(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``memoryd serve`` on a free port; yields its URL and the OpenClaw state dir."""
    openclaw = tmp_path / "userhome" / ".openclaw"
    (openclaw / "workspace-main").mkdir(parents=True)
    keys = [{"name": "openclaw-main", "key": "k-main", "users": ["default"], "agents": ["main"]}]
    with serve(tmp_path, MEMORYD_AUTH__KEYS=json.dumps(keys)) as url:
        yield url, openclaw


def test_plugin_posts_real_turns_into_the_agents_diary(memoryd_serve: tuple[str, Path]) -> None:
    url, openclaw = memoryd_serve
    env = {
        **os.environ,
        "MEMORYD_URL": url,
        "MEMORYD_TEST_KEY": "k-main",
        "MEMORYD_TEST_OPENCLAW_DIR": str(openclaw),
    }
    counts = node_test_counts(PLUGIN, env, NODE or "node")
    assert counts == {"pass": "14", "fail": "0", "skipped": "0", "cancelled": "0"}, counts
    notes = sorted((openclaw / "workspace-main" / "memory").glob("*.md"))
    diaries = [p for p in notes if re.fullmatch(r"\d{4}-\d\d-\d\d\.md", p.name)]
    assert len(diaries) == 1 and len(notes) == 2  # the diary and one session note (/new)
    text = diaries[0].read_text()
    assert text.count("· flush") == 1 and "+44 20 7946 0018" in text
    assert text.count("· session s-live-1") == 1 and "OOMKilled: the memory limit" in text
    assert not (openclaw / "workspace-ops").exists()


SKILL = PLUGIN / "skills" / "memoryd" / "SKILL.md"


def skill_commands() -> list[str]:
    """Every ``memoryd …`` command the skill shows, in code blocks and inline."""
    text = SKILL.read_text()
    found = re.findall(r"`(memoryd [^`\n]+)`", text)
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        found += [line.split("  #")[0].strip() for line in block.splitlines()]
    # a bare "memoryd add" in prose names the command; it is not an example
    return list(dict.fromkeys(c for c in found if c.startswith("memoryd ") and c.count(" ") > 1))


def test_every_command_the_skill_teaches_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shlex
    from datetime import UTC, datetime

    from typer.testing import CliRunner

    from memoryd.cli import app

    monkeypatch.setenv("HOME", str(tmp_path / "userhome"))
    monkeypatch.setenv("MEMORYD_HOME", str(tmp_path / "memoryd"))
    monkeypatch.delenv("MEMORYD_CONFIG", raising=False)
    ws = tmp_path / "memoryd" / "workspaces" / "main"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n- We deploy with ArgoCD\n")
    runner = CliRunner()
    added = runner.invoke(
        app,
        [
            "add",
            "--user",
            "default",
            "--agent",
            "main",
            "--text",
            "Deploys go through ArgoCD",
            "--json",
        ],
    )
    assert added.exit_code == 0, added.output
    memory_id = json.loads(added.output)["results"][0]["id"]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(
        json.dumps({"role": "user", "content": "Let us plan the Redis migration for Friday."})
        + "\n"
        + json.dumps({"role": "assistant", "content": "Planned: Redis on Friday, warmup first."})
    )
    values = {
        "<user>": "default",
        "<agent>": "main",
        "<topic>": "deploy",
        "<question or identifier>": "how do we deploy",
        "…": "deploy",
        "<fact>": "The staging database listens on 5433",
        "<note>": "Today we debug the flaky login test",
        "<YYYY-MM-DD>": datetime.now(UTC).date().isoformat(),
        "<path>": "MEMORY.md",
        "<id>": memory_id,
        "<transcript.jsonl>": str(transcript),
        " N ": " 1 ",
        " M": " 5",
    }
    commands = skill_commands()
    assert len(commands) >= 10 and any("--combined" in c for c in commands)
    # one run per distinct shape (subcommand and its options): each run loads the model
    shapes: dict[tuple[str, frozenset[str]], str] = {}
    for c in commands:
        words = shlex.split(c)
        shapes.setdefault((words[1], frozenset(w for w in words if w.startswith("--"))), c)
    for command in sorted(shapes.values(), key=lambda c: " delete " in c):  # delete last
        for placeholder, value in values.items():
            command = command.replace(placeholder, value)
        assert "<" not in command, command
        result = runner.invoke(app, shlex.split(command)[1:])
        assert result.exit_code == 0, f"{command}\n{result.output}"
