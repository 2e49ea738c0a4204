"""``memoryd status`` per agent: files, chunks, model, last index, what is waiting."""

from __future__ import annotations

import hashlib
from typing import Any

from memoryd.access import workspace_owner
from memoryd.core import Memory
from memoryd.models import Filters, Origin
from memoryd.workspace.files import SkippedFile, read_markdown
from memoryd.workspace.indexer import Indexer, last_index
from memoryd.workspace.layout import Workspace, known_agents, resolve_workspace


def workspace_status(memory: Memory, ws: Workspace) -> dict[str, Any]:
    """The state of one agent's workspace against its index (reads and hashes the files)."""
    indexer = Indexer(memory, ws)
    stored = indexer.indexed_files()
    files = ws.files() if ws.root.is_dir() else []
    pending: list[str] = []
    skipped: list[dict[str, str]] = []
    for path in files:
        rel = ws.rel(path)
        try:
            data, text = read_markdown(path, ws.settings.max_file_bytes, ws.fs)
        except SkippedFile as skip:
            skipped.append({"path": rel, "reason": skip.reason})
            continue
        if not text.strip():
            continue  # nothing to index in it
        if stored.get(rel) != (hashlib.sha256(data).hexdigest(), indexer.label(rel)):
            pending.append(rel)
    present = {ws.rel(p) for p in files}
    deleted = sorted(r for r in stored if r not in present)
    chunks = memory.store.count(
        Filters(
            user_id=workspace_owner(memory.settings),
            agent_id=ws.agent_id,
            origins=[Origin.CHUNK],
        )
    )
    last = last_index(memory, ws.agent_id) or {}
    return {
        "agent_id": ws.agent_id,
        "workspace": str(ws.root),
        "exists": ws.root.is_dir(),
        "files": len(files),
        "indexed_files": len(stored),
        "chunks": chunks,
        "model": memory.embedder.name,
        "chunk_tokens": indexer.plan.size,
        "chunk_overlap": indexer.plan.overlap,
        "last_index": last.get("at"),
        "pending": pending,
        "deleted": deleted,
        "skipped": skipped,
    }


def all_workspace_status(memory: Memory) -> list[dict[str, Any]]:
    settings = memory.settings
    return [
        workspace_status(memory, resolve_workspace(settings, agent, memory.store))
        for agent in known_agents(settings, memory.store)
    ]
