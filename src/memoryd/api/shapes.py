"""The JSON shapes memoryd speaks, in one place.

The HTTP routes answer with these, the CLI prints them (local or remote), so
``memoryd search --json`` and ``POST /memory/search`` look the same. Field
names follow the seed service and mem0: ``memory`` is the text, ``score`` the
ranking score, ``original_score`` the score before time decay.
"""

from __future__ import annotations

from typing import Any

from memoryd.models import HistoryEntry, MemoryEvent, MemoryRecord, SearchHit, State
from memoryd.search.tiers import memory_type
from memoryd.workspace.search import snippet


def _score(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def record_out(r: MemoryRecord, shared_categories: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": r.id,
        "memory": r.text,
        "hash": r.hash,
        "metadata": r.metadata,
        "category": r.category,
        "user_id": r.user_id,
        "agent_id": r.agent_id,
        "run_id": r.run_id,
        "memory_type": memory_type(r, shared_categories),
        "origin": str(r.origin),
        "state": str(r.state),
        "created_at": r.created_at.isoformat(),
        "updated_at": r.updated_at.isoformat(),
        "event_at": r.event_at.isoformat() if r.event_at else None,
    }
    if r.source is not None:
        out["source"] = r.source.model_dump()
        out["citation"] = r.source.citation
    return out


def hit_out(h: SearchHit) -> dict[str, Any]:
    r = h.record
    out: dict[str, Any] = {
        "id": h.id,
        "memory": h.text,
        "score": _score(h.score),
    }
    if h.original_score is not None:
        out["original_score"] = _score(h.original_score)
    out.update(
        {
            "memory_type": h.memory_type,
            "created_at": r.created_at.isoformat(),
            "updated_at": r.updated_at.isoformat(),
            "metadata": r.metadata,
            "category": r.category,
            "user_id": r.user_id,
            "agent_id": r.agent_id,
            "run_id": r.run_id,
            "origin": str(r.origin),
            "parts": {k: _score(v) for k, v in h.parts.model_dump(exclude_none=True).items()},
            "citation": r.source.citation if r.source else None,
        }
    )
    if r.source is not None:  # a chunk of a workspace file: the start of its lines
        out["snippet"] = snippet(r.text)
    if r.state != State.ACTIVE:
        out["state"] = str(r.state)  # archived by TTL decay (include_archived searches)
    return out


def event_out(e: MemoryEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"id": e.id, "memory": e.memory, "event": str(e.event)}
    if e.previous_memory is not None:
        out["previous_memory"] = e.previous_memory
    if e.message is not None:
        out["message"] = e.message
    return out


def history_out(h: HistoryEntry) -> dict[str, Any]:
    return {
        "id": h.id,
        "memory_id": h.memory_id,
        "event": str(h.event),
        "old_memory": h.old_text,
        "new_memory": h.new_text,
        "old_metadata": h.old_metadata,
        "new_metadata": h.new_metadata,
        "actor": h.actor,
        "reason": h.reason,
        "created_at": h.created_at.isoformat(),
    }
