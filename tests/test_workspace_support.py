"""Helpers shared by the workspace tests (no tests here)."""

from __future__ import annotations

from pathlib import Path

from memoryd.core import Memory
from memoryd.workspace import Workspace, resolve_workspace
from memoryd.workspace.bootstrap import init_workspace

DIARY = """# 2026-03-27

## 09:15
- Decided to use PostgreSQL for the project database: it handles the JSON queries well
- PR #7 submitted and merged

## 14:30
- The user prefers dark mode in every editor
- Deploys go through ArgoCD on cluster prod-eu-1
"""

MEMORY = """# MEMORY.md

## About the user
- Name is Sam; lives in Lisbon; time zone Europe/Lisbon

## Decisions
- The staging database runs on port 5433
"""


def make_workspace(memory: Memory, root: Path, agent: str = "dev") -> Workspace:
    """A fresh workspace for ``agent`` at ``root`` with a MEMORY.md and one diary day."""
    memory.settings.workspace.agents[agent] = root
    ws = resolve_workspace(memory.settings, agent, memory.store)
    init_workspace(ws.root)
    (ws.root / "MEMORY.md").write_text(MEMORY, encoding="utf-8")
    (ws.memory_dir / "2026-03-27.md").write_text(DIARY, encoding="utf-8")
    return ws


def calls(memory: Memory) -> int:
    """Texts the real ONNX model has embedded so far (its ``calls`` counter)."""
    return int(memory.embedder.calls)  # type: ignore[attr-defined]


def lines_of(path: Path, start: int, end: int) -> str:
    return "\n".join(path.read_text(encoding="utf-8").split("\n")[start - 1 : end])
