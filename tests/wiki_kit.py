"""Helpers of the memory wiki tests (tests/test_wiki*.py): a workspace with a MEMORY.md
and a diary, a few facts about Ana Ruiz and Orion, and readers of the compiled vault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memoryd.core import Memory
from memoryd.models import Source
from memoryd.settings import Settings
from memoryd.workspace import Workspace, resolve_workspace
from tests.pipelines_kit import pipeline_settings, workspace

MEMORY_MD = """# MEMORY.md

## Key Facts
- Owner timezone: EST
- Ana Ruiz runs the Lisbon office

## Infra / Servers
- Backups run nightly at 02:00
"""


def make_settings(tmp_path: Path) -> Settings:
    settings = pipeline_settings(tmp_path)
    root = workspace(settings, "dev")
    (root / "MEMORY.md").write_text(MEMORY_MD)
    (root / "memory" / "2026-03-09.md").write_text(
        "# 2026-03-09\n\n## 10:00\n- **user**: Ana Ruiz moved to Lisbon in May.\n"
    )
    return settings


def ws_of(m: Memory, agent: str = "dev") -> Workspace:
    return resolve_workspace(m.settings, agent, m.store)


def remember(m: Memory, text: str, agent: str = "dev", **kw: Any) -> str:
    (event,) = m.add(text, user_id=m.settings.workspace.user_id, agent_id=agent, **kw)
    assert event.id is not None
    return event.id


def seed(m: Memory) -> dict[str, str]:
    ids = {
        "moved": remember(
            m,
            "Ana Ruiz moved to Lisbon in May",
            source=Source(path="memory/2026-03-09.md", start_line=4, end_line=4),
        ),
        "tea": remember(m, "Ana Ruiz prefers tea over coffee"),
        "port1": remember(m, "The staging database of Orion listens on port 5433"),
        "port2": remember(m, "The staging database of Orion listens on port 5432"),
    }
    m.update(ids["tea"], "Ana Ruiz prefers green tea over coffee")
    return ids


def vault(m: Memory) -> dict[str, bytes]:
    """Every file of the vault but the lock, by vault-relative path."""
    root = ws_of(m).root / "wiki"
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "lock"
    }


def claims(m: Memory) -> dict[str, dict[str, Any]]:
    state = json.loads((ws_of(m).root / "wiki" / ".state" / "claims.json").read_text())
    return {c["text"]: c for p in state["pages"] for c in p["claims"]}


def pages(m: Memory) -> dict[str, dict[str, Any]]:
    state = json.loads((ws_of(m).root / "wiki" / ".state" / "claims.json").read_text())
    return {p["title"]: p for p in state["pages"]}
