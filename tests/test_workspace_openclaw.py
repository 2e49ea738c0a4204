"""OpenClaw's own workspace layout is recognised: default, configured root, per-agent."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from memoryd.api import create_app
from memoryd.core import Memory
from memoryd.errors import InvalidInputError
from memoryd.workspace.layout import known_agents, resolve_workspace


def _openclaw(memory: Memory, tmp_path: Path, config: dict | None = None) -> Path:
    base = tmp_path / ".openclaw"
    base.mkdir()
    memory.settings.workspace.openclaw_dir = base
    if config is not None:
        # JSON5 as OpenClaw writes it: comments and trailing commas are fine
        text = "// openclaw config\n" + json.dumps(config, indent=2).replace("\n}", ",\n}")
        (base / "openclaw.json").write_text(text)
    return base


def test_the_default_agent_uses_openclaws_default_workspace(
    memory: Memory, tmp_path: Path, live_server
) -> None:  # type: ignore[no-untyped-def]
    base = _openclaw(memory, tmp_path)
    (base / "workspace" / "memory").mkdir(parents=True)
    assert resolve_workspace(memory.settings, "main").root == base / "workspace"
    assert "main" in known_agents(memory.settings)
    with live_server(create_app(memory=memory)) as server:
        r = httpx.post(
            f"{server.url}/v1/diary",
            json={
                "agent_id": "main",
                "messages": [
                    {"role": "user", "content": "Which region do we deploy the API to?"},
                    {"role": "assistant", "content": "eu-west-1, behind the ALB."},
                ],
            },
        )
    assert r.status_code == 200, r.text
    written = list((base / "workspace" / "memory").glob("*.md"))
    assert written and "eu-west-1" in written[0].read_text()  # not in $MEMORYD_HOME
    assert not (memory.settings.home / "workspaces" / "main").exists()


def test_configured_roots_and_per_agent_workspaces(memory: Memory, tmp_path: Path) -> None:
    ops = tmp_path / "ops-workspace"
    shared = tmp_path / "agents-root"
    config = {
        "agents": {
            "defaults": {"workspace": str(shared)},
            "list": [{"id": "main"}, {"id": "ops", "workspace": str(ops)}, {"id": "dev"}],
        }
    }
    _openclaw(memory, tmp_path, config)
    for root in (ops, shared, shared / "dev"):
        root.mkdir(parents=True, exist_ok=True)
    assert resolve_workspace(memory.settings, "ops").root == ops
    assert resolve_workspace(memory.settings, "main").root == shared
    assert resolve_workspace(memory.settings, "dev").root == shared / "dev"
    assert {"main", "ops", "dev"} <= set(known_agents(memory.settings))
    # an agent OpenClaw does not know, with no directory: memoryd's own place
    assert resolve_workspace(memory.settings, "other").root == (
        memory.settings.home / "workspaces" / "other"
    )


def test_a_broken_config_falls_back_instead_of_failing(memory: Memory, tmp_path: Path) -> None:
    base = _openclaw(memory, tmp_path)
    (base / "openclaw.json").write_text("{ agents: [not json")
    (base / "workspace-dev").mkdir()
    assert resolve_workspace(memory.settings, "dev").root == base / "workspace-dev"


def test_a_workspace_inside_another_agents_memory_folder_is_refused(
    memory: Memory, tmp_path: Path
) -> None:
    """``agents.defaults.workspace: ROOT`` puts agent ``memory`` at ROOT/memory, which is
    main's diary folder: that agent is refused with a clear error, main keeps working,
    and ``<root>/<id>`` beside main's folders stays allowed."""
    root = tmp_path / "root"
    config = {
        "agents": {
            "defaults": {"workspace": str(root)},
            "list": [{"id": "main"}, {"id": "memory"}, {"id": "dev"}, {"id": "twin"}],
        }
    }
    config["agents"]["list"][3]["workspace"] = str(root)  # type: ignore[index]
    _openclaw(memory, tmp_path, config)
    for folder in (root / "memory", root / "dev"):
        folder.mkdir(parents=True)
    for refused in ("memory", "twin"):
        with pytest.raises(InvalidInputError, match="overlapping workspaces") as err:
            resolve_workspace(memory.settings, refused)
        assert "openclaw.json" in (err.value.hint or "")
    assert resolve_workspace(memory.settings, "main").root == root
    assert resolve_workspace(memory.settings, "dev").root == root / "dev"
    agents = known_agents(memory.settings)
    assert "main" in agents and "dev" in agents and "memory" not in agents
