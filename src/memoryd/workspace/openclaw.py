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

from memoryd.errors import InvalidInputError

log = logging.getLogger(__name__)

DEFAULT_AGENT = "main"


def read_config(openclaw_dir: Path) -> dict[str, Any]:
    """``openclaw.json`` as a dict; empty when it is missing or unreadable (logged)."""
    path = openclaw_dir / "openclaw.json"
    try:
        data = json5.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:  # RecursionError: nested too deep
        log.warning("ignoring %s: %s", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def configured_agents(openclaw_dir: Path) -> set[str]:
    """Agents OpenClaw knows whose workspace exists: ``main`` and the roster's."""
    config = read_config(openclaw_dir)
    found = set()
    for name in _roster_names(config) | {DEFAULT_AGENT}:
        try:
            if workspace_of(openclaw_dir, name).is_dir():
                found.add(name)
        except InvalidInputError as exc:  # refused: listed nowhere, named in the log
            log.warning("skipping agent %s: %s", name, exc)
    return found


#: folders of a workspace that hold its own data: another agent's workspace there would
#: be read and written as this one's (``memory/`` is the diary folder)
RESERVED_FOLDERS = ("memory", "wiki")


def workspace_of(openclaw_dir: Path, agent_id: str) -> Path:
    """The directory OpenClaw uses as ``agent_id``'s workspace (it may not exist).

    Raises :class:`InvalidInputError` when that directory lies in another configured
    agent's (the same folder, or inside its ``memory/``, ``wiki/`` or a hidden folder):
    this agent would then read and write the other's files. ``<root>/<id>`` beside
    the default agent's own folders stays allowed (OpenClaw's layout)."""
    config = read_config(openclaw_dir)
    path = _workspace_in(config, openclaw_dir, agent_id)
    for other in sorted(_roster_names(config) | {DEFAULT_AGENT}):
        if other == agent_id:
            continue
        theirs = _workspace_in(config, openclaw_dir, other)
        if not path.is_relative_to(theirs) or (path == theirs and agent_id == DEFAULT_AGENT):
            continue  # the default agent keeps its workspace; the one nested in it is refused
        rest = path.relative_to(theirs).parts
        if not rest or rest[0] in RESERVED_FOLDERS or rest[0].startswith("."):
            raise InvalidInputError(
                f"openclaw.json gives agents {agent_id!r} and {other!r} overlapping workspaces "
                f"({path} and {theirs}): each would read and write the other's memory files",
                f"give agent {agent_id!r} (or {other!r}) a workspace of its own in "
                f"{openclaw_dir / 'openclaw.json'} (agents.list[].workspace), outside the other's",
            )
    return path


def _roster_names(config: dict[str, Any]) -> set[str]:
    agents = config.get("agents")
    names: set[str] = set()
    if isinstance(agents, dict):
        if isinstance(agents.get("entries"), dict):
            names.update(str(k) for k in agents["entries"])
        if isinstance(agents.get("list"), list):
            names.update(str(a["id"]) for a in agents["list"] if isinstance(a, dict) and "id" in a)
    return names


def _workspace_in(config: dict[str, Any], openclaw_dir: Path, agent_id: str) -> Path:
    agents = config.get("agents")
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


def duplicate_jobs(openclaw_dir: Path, *, dream_enabled: bool) -> list[str]:
    """Jobs OpenClaw and memoryd both do for the same workspaces, as warnings: session
    notes on /new (OpenClaw's ``session-memory`` hook, memoryd's plugin) and the nightly
    rewrite of MEMORY.md (memory-core's managed dreaming, memoryd's ``dream``). Empty
    when memoryd's plugin is not configured in ``openclaw.json``."""
    config = read_config(openclaw_dir)
    entries = _at(config, "plugins", "entries")
    ours = entries.get("memoryd")
    if not isinstance(ours, dict) or ours.get("enabled") is False:
        return []
    fix = "run `memoryd setup openclaw --jobs memoryd` (or `--jobs openclaw`)"
    warnings = []
    hook = _at(config, "hooks", "internal", "entries", "session-memory")
    our_notes = _at(ours, "config").get("sessionNotes") is not False
    if hook.get("enabled") is True and our_notes:
        warnings.append(
            "OpenClaw's session-memory hook and memoryd both write a session note on /new "
            f"(two notes of the same messages in memory/): {fix}"
        )
    core = entries.get("memory-core")
    core = core if isinstance(core, dict) else {}
    dreaming = _at(core, "config", "dreaming")
    if core.get("enabled") is not False and dreaming.get("enabled") is not False and dream_enabled:
        warnings.append(
            "memory-core's managed dreaming (03:00) and memoryd's dream (02:00) both rewrite "
            f"MEMORY.md and DREAMS.md: {fix}, or add dream to pipelines.disabled"
        )
    return warnings


def _at(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        value = data.get(key)
        data = value if isinstance(value, dict) else {}
    return data
