"""Where OpenClaw keeps an agent's workspace, read from OpenClaw's own config.

OpenClaw's rules (docs.openclaw.ai, "Agent workspace"): the default workspace is
``~/.openclaw/workspace``; ``agents.defaults.workspace`` in
``~/.openclaw/openclaw.json`` (JSON5) moves it; an agent's own entry
(``agents.entries.<id>.workspace``, or ``agents.list[]`` with that ``id`` in
older configs) names its workspace; the default agent ``main``, or a sole
configured agent, uses the default workspace; any other agent without a
workspace of its own uses ``<agents.defaults.workspace>/<id>`` when that root is
configured, else ``~/.openclaw/workspace-<id>``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import json5

log = logging.getLogger(__name__)

DEFAULT_AGENT = "main"


def read_config(openclaw_dir: Path) -> dict[str, Any]:
    """``openclaw.json`` as a dict; empty when it is missing or unreadable (logged)."""
    path = openclaw_dir / "openclaw.json"
    try:
        data = json5.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def configured_agents(openclaw_dir: Path) -> set[str]:
    """Agents OpenClaw knows whose workspace exists: ``main`` and the roster's."""
    agents = read_config(openclaw_dir).get("agents")
    names = {DEFAULT_AGENT}
    if isinstance(agents, dict):
        if isinstance(agents.get("entries"), dict):
            names.update(str(k) for k in agents["entries"])
        if isinstance(agents.get("list"), list):
            names.update(str(a["id"]) for a in agents["list"] if isinstance(a, dict) and "id" in a)
    return {n for n in names if workspace_of(openclaw_dir, n).is_dir()}


def workspace_of(openclaw_dir: Path, agent_id: str) -> Path:
    """The directory OpenClaw uses as ``agent_id``'s workspace (it may not exist)."""
    agents = read_config(openclaw_dir).get("agents")
    agents = agents if isinstance(agents, dict) else {}
    defaults = agents.get("defaults")
    root = defaults.get("workspace") if isinstance(defaults, dict) else None
    root = root if isinstance(root, str) and root.strip() else None
    roster: dict[str, dict[str, Any]] = {}
    entries = agents.get("entries")
    if isinstance(entries, dict):
        roster.update({str(k): v for k, v in entries.items() if isinstance(v, dict)})
    listed = agents.get("list")
    if isinstance(listed, list):
        roster.update({str(a["id"]): a for a in listed if isinstance(a, dict) and "id" in a})
    own = roster.get(agent_id, {}).get("workspace")
    if isinstance(own, str) and own.strip():
        return _path(own, openclaw_dir)
    default = _path(root, openclaw_dir) if root else openclaw_dir / "workspace"
    if agent_id == DEFAULT_AGENT or set(roster) == {agent_id}:
        return default
    if root:
        return default / agent_id
    return openclaw_dir / f"workspace-{agent_id}"


def _path(value: str, openclaw_dir: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else openclaw_dir / path
